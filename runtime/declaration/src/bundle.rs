//! Several manifest files read as one server: exactly one `MCPServer`, and the `MCPToolSet`s and
//! `MCPToolSetGrant`s its `spec.include` may take (any number of `---`-separated documents per
//! file). What `mcp-runtime serve --manifest A --manifest B` serves locally, with the cluster's
//! rules: objects without a namespace are in `default`. Pure: the caller reads the files.

use crate::include::{IncludedSet, ToolSet, ToolSetGrant, resolve_includes};
use crate::load::{
    Envelope, LoadError, Manifest, envelope, served_api_version, served_api_versions,
    server_manifest, spec_from_value,
};
use crate::stamp::{GRANT_KIND, KIND, TOOLSET_KIND};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The namespace of an object that names none, as `kubectl` assumes.
pub const DEFAULT_NAMESPACE: &str = "default";

/// A server read from several manifests, its includes merged in.
#[derive(Clone, Debug, PartialEq)]
pub struct Bundle {
    /// The server, its declaration holding the included items (its `include` empty).
    pub manifest: Manifest,
    /// The sets it took.
    pub sets: Vec<IncludedSet>,
}

/// Reads `files` (each a path and its text) as one server. Relative `file` paths of resources
/// are resolved against the directory of the file holding the `MCPServer`. A problem's path names
/// its file when there are several, and its document when its file has several.
pub fn read_bundle(files: &[(PathBuf, String)]) -> Result<Bundle, LoadError> {
    let mut server: Option<(Manifest, String, &Path)> = None;
    let mut sets = Vec::new();
    let mut grants = Vec::new();
    for (path, text) in files {
        let several_files = files.len() > 1;
        let at_file = |err: LoadError| {
            if several_files {
                in_file(path, err)
            } else {
                err
            }
        };
        let documents = crate::bounded_yaml::parse_all(text).map_err(|err| {
            at_file(LoadError::Shape {
                path: "manifest".into(),
                message: err.to_string(),
            })
        })?;
        let several_documents = documents.len() > 1;
        for (index, document) in documents.into_iter().enumerate() {
            let at = |err: LoadError| {
                at_file(if several_documents {
                    in_document(index, err)
                } else {
                    err
                })
            };
            let envelope = envelope(document).map_err(at)?;
            let namespace = envelope
                .metadata
                .namespace
                .clone()
                .unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned());
            match kind_of(&envelope).map_err(at)? {
                KIND => {
                    if let Some((_, _, first)) = &server {
                        return Err(at(shape(format!(
                            "a second {KIND}; {} holds the first, and one server is served",
                            first.display()
                        ))));
                    }
                    let base = path.parent().map(Path::to_owned).unwrap_or_default();
                    let manifest = server_manifest(envelope, base).map_err(at)?;
                    server = Some((manifest, namespace, path));
                }
                TOOLSET_KIND => sets.push(ToolSet {
                    namespace,
                    name: envelope.metadata.name,
                    labels: envelope.metadata.labels,
                    spec: spec_from_value(Value::Object(envelope.spec)).map_err(at)?,
                }),
                _ => grants.push(ToolSetGrant {
                    namespace,
                    name: envelope.metadata.name,
                    spec: spec_from_value(Value::Object(envelope.spec)).map_err(at)?,
                }),
            }
        }
    }
    let Some((manifest, namespace, _)) = server else {
        return Err(shape(format!("no {KIND} among the manifests")));
    };
    let resolved = resolve_includes(&namespace, &manifest.declaration, &sets, &grants)
        .map_err(LoadError::Include)?;
    Ok(Bundle {
        manifest: Manifest {
            declaration: resolved.declaration,
            ..manifest
        },
        sets: resolved.sets,
    })
}

/// The document's kind, when it is one of this group's served versions.
fn kind_of(envelope: &Envelope) -> Result<&'static str, LoadError> {
    let kind = [KIND, TOOLSET_KIND, GRANT_KIND]
        .into_iter()
        .find(|kind| *kind == envelope.kind);
    match kind {
        Some(kind) if served_api_version(&envelope.api_version) => Ok(kind),
        _ => Err(shape(format!(
            "expected apiVersion {} and kind {KIND}, {TOOLSET_KIND} or {GRANT_KIND}, found {} {}",
            served_api_versions(),
            envelope.api_version,
            envelope.kind
        ))),
    }
}

fn shape(message: String) -> LoadError {
    LoadError::Shape {
        path: "manifest".into(),
        message,
    }
}

/// Prefixes a problem's path with the document's position (`document 2: spec.tools[0]`).
fn in_document(index: usize, err: LoadError) -> LoadError {
    match err {
        LoadError::Shape { path, message } => LoadError::Shape {
            path: format!("document {}: {path}", index + 1),
            message,
        },
        other => other,
    }
}

/// Prefixes a problem's path with the file it is in.
fn in_file(file: &Path, err: LoadError) -> LoadError {
    match err {
        LoadError::Shape { path, message } => LoadError::Shape {
            path: format!("{}: {path}", file.display()),
            message,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVER: &str = "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\n\
        metadata: {name: ops}\nspec:\n  include:\n  - {selector: {matchLabels: {api: k8s}}, \
        prefix: k8s_, exclude: [delete_*]}\n  tools:\n  - {name: hello, content: []}\n";
    const SETS: &str = "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPToolSet\n\
        metadata: {name: core, labels: {api: k8s}}\nspec:\n  tools:\n  \
        - {name: get_pod, content: []}\n  - {name: delete_pod, content: []}\n---\n\
        apiVersion: kube-mcp.io/v1beta1\nkind: MCPToolSet\nmetadata: {name: other}\n\
        spec:\n  tools:\n  - {name: unrelated, content: []}\n";

    fn files(texts: &[&str]) -> Vec<(PathBuf, String)> {
        texts
            .iter()
            .enumerate()
            .map(|(i, text)| (PathBuf::from(format!("dir/{i}.yaml")), (*text).to_owned()))
            .collect()
    }

    fn tool_names(bundle: &Bundle) -> Vec<&str> {
        let tools = &bundle.manifest.declaration.tools;
        tools.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn a_server_takes_the_selected_sets_prefixed_and_without_the_excluded() {
        let bundle = read_bundle(&files(&[SERVER, SETS])).unwrap();
        assert_eq!(tool_names(&bundle), ["hello", "k8s_get_pod"]);
        assert!(bundle.manifest.declaration.include.is_empty());
        assert_eq!(bundle.manifest.base_dir, PathBuf::from("dir"));
        assert_eq!(
            bundle.sets,
            [IncludedSet {
                namespace: "default".into(),
                name: "core".into(),
                items: 1
            }]
        );
    }

    #[test]
    fn one_file_may_hold_the_server_and_its_sets() {
        let bundle = read_bundle(&files(&[&format!("{SERVER}---\n{SETS}")])).unwrap();
        assert_eq!(tool_names(&bundle), ["hello", "k8s_get_pod"]);
    }

    #[test]
    fn problems_name_the_file_and_the_document() {
        let broken = SETS.replace("content: []}\n---", "contnet: []}\n---");
        let err = read_bundle(&files(&[SERVER, &broken])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "dir/1.yaml: document 1: spec.tools[1].contnet: unknown field"
        );
        let err = read_bundle(&files(&[SETS])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "manifest: no MCPServer among the manifests"
        );
        let err = read_bundle(&files(&[SERVER, SERVER])).unwrap_err();
        assert!(
            err.to_string().starts_with(
                "dir/1.yaml: manifest: a second MCPServer; dir/0.yaml holds the first"
            ),
            "{err}"
        );
        let err = read_bundle(&files(&[
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
        ]))
        .unwrap_err();
        assert!(err.to_string().contains("found v1 ConfigMap"), "{err}");
    }

    #[test]
    fn an_include_problem_is_reported_with_its_field() {
        let named = SERVER.replace("selector: {matchLabels: {api: k8s}}", "name: missing");
        let err = read_bundle(&files(&[&named, SETS])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "spec.include[0].name: MCPToolSet default/missing does not exist"
        );
    }
}
