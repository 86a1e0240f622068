//! Compiling `spec.resources` and `spec.resourceTemplates`: URIs and templates, declared text,
//! blobs and files (read here, unless disabled), HTTP backends, and the pre-built list entries.
//! Pure, except that `file` resources are read.

use super::http;
use super::{CompiledResource, CompiledResourceTemplate, Compiler, insert_some};
use crate::access::Access;
use crate::resource_uri::UriTemplate;
use crate::types::{Declaration, Resource};
use base64::Engine as _;
use serde_json::json;
use std::collections::HashSet;
use std::path::Path;

impl Compiler<'_> {
    pub(super) fn resources(
        &mut self,
        resources: &[Resource],
        base_dir: &Path,
    ) -> Vec<CompiledResource> {
        // Two spellings of one URI would be one resource to every lookup.
        let canonical: Vec<String> = resources
            .iter()
            .map(|r| crate::resource_uri::canonical(&r.uri).into_owned())
            .collect();
        self.unique(
            "resource URI",
            canonical
                .iter()
                .enumerate()
                .map(|(i, uri)| (format!("spec.resources[{i}].uri"), uri.as_str())),
        );
        resources
            .iter()
            .enumerate()
            .filter_map(|(i, resource)| {
                self.resource(&format!("spec.resources[{i}]"), resource, base_dir)
            })
            .collect()
    }

    fn resource(
        &mut self,
        path: &str,
        resource: &Resource,
        base_dir: &Path,
    ) -> Option<CompiledResource> {
        let sources = [
            resource.text.is_some(),
            resource.blob.is_some(),
            resource.file.is_some(),
            resource.http.is_some(),
        ];
        if sources.iter().filter(|&&set| set).count() != 1 {
            self.error(
                path,
                "declare exactly one of `text`, `blob`, `file` or `http`",
            );
            return None;
        }
        let http = resource.http.as_ref().and_then(|spec| {
            let target = http::Target::Resource {
                label: format!("resource:{}", resource.name),
                args: HashSet::new(),
            };
            self.http(&format!("{path}.http"), spec, target)
        });
        if resource.uri.is_empty() || !resource.uri.contains(':') {
            self.error(
                format!("{path}.uri"),
                "must be an absolute URI such as `docs://readme`",
            );
        }
        let ui = self.resource_ui(path, resource);
        let mut contents = json!({"uri": resource.uri});
        insert_some(&mut contents, "mimeType", &resource.mime_type);
        let size = if let Some(text) = &resource.text {
            contents["text"] = json!(text);
            Some(text.len())
        } else if let Some(blob) = &resource.blob {
            self.base64(&format!("{path}.blob"), blob);
            contents["blob"] = json!(blob);
            base64::engine::general_purpose::STANDARD
                .decode(blob)
                .ok()
                .map(|b| b.len())
        } else if let (Some(file), true) = (&resource.file, self.options.read_files) {
            match crate::read_within(base_dir, file) {
                Ok(bytes) => {
                    let size = bytes.len();
                    match String::from_utf8(bytes) {
                        Ok(text) => contents["text"] = json!(text),
                        Err(err) => {
                            contents["blob"] = json!(
                                base64::engine::general_purpose::STANDARD.encode(err.into_bytes())
                            )
                        }
                    }
                    Some(size)
                }
                Err(err) => {
                    self.error(format!("{path}.file"), format!("cannot read {file}: {err}"));
                    None
                }
            }
        } else {
            None
        };
        let mut descriptor = json!({"uri": resource.uri, "name": resource.name});
        insert_some(&mut descriptor, "title", &resource.title);
        insert_some(&mut descriptor, "description", &resource.description);
        insert_some(&mut descriptor, "mimeType", &resource.mime_type);
        insert_some(&mut descriptor, "size", &size);
        insert_some(&mut descriptor, "annotations", &resource.annotations);
        if !resource.icons.is_empty() {
            descriptor["icons"] = json!(resource.icons);
        }
        if let Some(ui) = ui {
            // Hosts read the view's sandbox rules from the list entry and from the contents.
            descriptor["_meta"] = json!({"ui": ui});
            contents["_meta"] = json!({"ui": ui});
        }
        if resource.http.is_some() && http.is_none() {
            return None;
        }
        Some(CompiledResource {
            access: Access::default(),
            descriptor,
            contents,
            http,
        })
    }

    pub(super) fn resource_templates(
        &mut self,
        decl: &Declaration,
    ) -> Vec<CompiledResourceTemplate> {
        let templates = &decl.resource_templates;
        self.unique(
            "resource template",
            templates.iter().enumerate().map(|(i, t)| {
                (
                    format!("spec.resourceTemplates[{i}].uriTemplate"),
                    t.uri_template.as_str(),
                )
            }),
        );
        let mut compiled = Vec::new();
        for (i, template) in templates.iter().enumerate() {
            let path = format!("spec.resourceTemplates[{i}]");
            let uri = match UriTemplate::parse(&template.uri_template) {
                Ok(uri) => uri,
                Err(message) => {
                    self.error(format!("{path}.uriTemplate"), message);
                    continue;
                }
            };
            let variables: HashSet<&str> = uri.variables().collect();
            for name in template.completions.keys() {
                if !variables.contains(name.as_str()) {
                    self.error(
                        format!("{path}.completions.{name}"),
                        "is not a variable of uriTemplate",
                    );
                }
            }
            let http = match (&template.text, &template.http) {
                (Some(_), None) => None,
                (None, Some(spec)) => {
                    let target = http::Target::Resource {
                        label: format!("resource:{}", template.name),
                        args: variables.iter().map(|v| (*v).to_owned()).collect(),
                    };
                    let Some(http) = self.http(&format!("{path}.http"), spec, target) else {
                        continue;
                    };
                    Some(http)
                }
                _ => {
                    self.error(&path, "declare exactly one of `text` or `http`");
                    continue;
                }
            };
            let text = match &template.text {
                Some(source) => match self.text(&format!("{path}.text"), source) {
                    Some(text) => Some(text),
                    None => continue,
                },
                None => None,
            };
            let mut descriptor =
                json!({"uriTemplate": template.uri_template, "name": template.name});
            insert_some(&mut descriptor, "title", &template.title);
            insert_some(&mut descriptor, "description", &template.description);
            insert_some(&mut descriptor, "mimeType", &template.mime_type);
            insert_some(&mut descriptor, "annotations", &template.annotations);
            compiled.push(CompiledResourceTemplate {
                access: Access::default(),
                descriptor,
                uri,
                mime_type: template.mime_type.clone(),
                text,
                http,
                completions: template.completions.clone().into_iter().collect(),
            });
        }
        compiled
    }
}
