//! Compiling a declaration once: every check that can be made before serving, every template and
//! schema compiled, every list entry pre-built. The result is immutable and shared by all
//! requests. Pure, except that resources declared with `file` are read (unless disabled).

mod http;
mod http_params;
mod http_types;

pub use http_types::{
    BodyKind, CompiledBody, CompiledHttp, CompiledParam, CompiledResponse, ParamValue, Retry,
    StatusMatch,
};

use super::access::AccessRules;
use super::load::Manifest;
use super::template::{DEFAULT_FUEL, Templates, Text};
use super::types::{
    Auth, CachePolicy, ContentBlock, Declaration, LogLevel, Prompt, Resource, Tool,
};
use super::uri_template::UriTemplate;
use super::value_template::ValueTemplate;
use base64::Engine as _;
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One problem in a declaration, located by its field path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// Such as `spec.tools[2].content[0].text`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Every problem found in a declaration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", .errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct InvalidDeclaration {
    /// The problems, in declaration order.
    pub errors: Vec<FieldError>,
}

/// How to compile.
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// Fuel for one template render.
    pub template_fuel: u64,
    /// Read resources declared with `file`; the operator turns this off (the files exist only in
    /// the pod), the runtime keeps it on.
    pub read_files: bool,
    /// Where `secretKeyRef`s are read (`<dir>/<name>/<key>`); `None` checks the references
    /// without reading them (the operator validates without the pod's files).
    pub secrets_dir: Option<PathBuf>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        Self {
            template_fuel: DEFAULT_FUEL,
            read_files: true,
            secrets_dir: None,
        }
    }
}

/// A declaration ready to serve.
#[derive(Debug)]
pub struct Compiled {
    /// `serverInfo` as sent to clients.
    pub server_info: Value,
    /// Server instructions.
    pub instructions: Option<String>,
    /// Caching hints for 2026-07-28 results.
    pub cache: CachePolicy,
    /// Tools in declaration order.
    pub tools: Vec<CompiledTool>,
    /// Fixed resources in declaration order.
    pub resources: Vec<CompiledResource>,
    /// Resource templates in declaration order.
    pub resource_templates: Vec<CompiledResourceTemplate>,
    /// Prompts in declaration order.
    pub prompts: Vec<CompiledPrompt>,
    /// Every template of the declaration.
    pub templates: Templates,
    /// `spec.auth`, when requests must be authenticated.
    pub auth: Option<Auth>,
    /// Per-item scopes and `allow` conditions.
    pub access: AccessRules,
    tool_index: HashMap<String, usize>,
    resource_index: HashMap<String, usize>,
    prompt_index: HashMap<String, usize>,
}

/// A tool ready to call.
#[derive(Debug)]
pub struct CompiledTool {
    /// Its `tools/list` entry.
    pub descriptor: Value,
    /// Argument validator.
    pub input: jsonschema::Validator,
    /// Validator of `structuredContent`, when an `outputSchema` is declared.
    pub output: Option<jsonschema::Validator>,
    /// Declared content blocks.
    pub content: Vec<ValueTemplate>,
    /// Declared structured content.
    pub structured: Option<ValueTemplate>,
    /// The declared reply is a tool error.
    pub is_error: bool,
    /// Progress notifications, in order.
    pub progress: Vec<CompiledProgress>,
    /// Log messages, in order.
    pub logs: Vec<CompiledLog>,
    /// The upstream call that answers instead of the declared content.
    pub http: Option<Arc<CompiledHttp>>,
}

/// A declared progress step.
#[derive(Debug)]
pub struct CompiledProgress {
    /// Progress so far.
    pub progress: f64,
    /// Total, when known.
    pub total: Option<f64>,
    /// Message template.
    pub message: Option<Text>,
    /// Wait before sending.
    pub delay: std::time::Duration,
}

/// A declared log message.
#[derive(Debug)]
pub struct CompiledLog {
    /// Severity.
    pub level: LogLevel,
    /// Message template.
    pub message: Text,
    /// Logger name.
    pub logger: Option<String>,
}

/// A fixed resource ready to read.
#[derive(Debug)]
pub struct CompiledResource {
    /// Its `resources/list` entry.
    pub descriptor: Value,
    /// Its `resources/read` contents entry (for `http` resources: `uri` and `mimeType` only).
    pub contents: Value,
    /// The upstream call that provides the contents.
    pub http: Option<Arc<CompiledHttp>>,
}

/// A resource template ready to match and read.
#[derive(Debug)]
pub struct CompiledResourceTemplate {
    /// Its `resources/templates/list` entry.
    pub descriptor: Value,
    /// The parsed URI template.
    pub uri: UriTemplate,
    /// MIME type of the contents.
    pub mime_type: Option<String>,
    /// Contents template (absent for `http` templates).
    pub text: Option<Text>,
    /// The upstream call that provides the contents.
    pub http: Option<Arc<CompiledHttp>>,
    /// Completion values per variable.
    pub completions: HashMap<String, Vec<String>>,
}

/// A prompt ready to render.
#[derive(Debug)]
pub struct CompiledPrompt {
    /// Its `prompts/list` entry.
    pub descriptor: Value,
    /// Declared description.
    pub description: Option<String>,
    /// Arguments: name, required, completion values.
    pub arguments: Vec<(String, bool, Vec<String>)>,
    /// Message templates (`{role, content}`).
    pub messages: Vec<ValueTemplate>,
}

/// The fields of a content block that are templates over `args`.
const BLOCK_TEMPLATE_FIELDS: &[&[&str]] = &[
    &["text"],
    &["uri"],
    &["resource", "uri"],
    &["resource", "text"],
];

/// Longest progress delay a declaration may ask for.
const MAX_PROGRESS_DELAY_MS: u64 = 10_000;

impl Compiled {
    /// Looks a tool up by name.
    pub fn tool(&self, name: &str) -> Option<&CompiledTool> {
        self.tool_index.get(name).map(|&i| &self.tools[i])
    }

    /// Looks a fixed resource up by URI.
    pub fn resource(&self, uri: &str) -> Option<&CompiledResource> {
        self.resource_index.get(uri).map(|&i| &self.resources[i])
    }

    /// Looks a prompt up by name.
    pub fn prompt(&self, name: &str) -> Option<&CompiledPrompt> {
        self.prompt_index.get(name).map(|&i| &self.prompts[i])
    }
}

/// Compiles a manifest, reporting every problem with its field path.
pub fn compile(
    manifest: &Manifest,
    options: &CompileOptions,
) -> Result<Compiled, InvalidDeclaration> {
    Compiler::new(options).run(&manifest.name, &manifest.declaration, &manifest.base_dir)
}

struct Compiler<'a> {
    options: &'a CompileOptions,
    templates: Templates,
    errors: Vec<FieldError>,
}

impl<'a> Compiler<'a> {
    fn new(options: &'a CompileOptions) -> Self {
        Self {
            options,
            templates: Templates::new(options.template_fuel),
            errors: Vec::new(),
        }
    }

    fn error(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.errors.push(FieldError {
            path: path.into(),
            message: message.into(),
        });
    }

    fn run(
        mut self,
        name: &str,
        decl: &Declaration,
        base_dir: &Path,
    ) -> Result<Compiled, InvalidDeclaration> {
        let mut server_info =
            json!({"name": name, "version": decl.version.as_deref().unwrap_or("0.0.0")});
        if let Some(title) = &decl.title {
            server_info["title"] = json!(title);
        }
        let tools = self.tools(&decl.tools);
        let resources = self.resources(&decl.resources, base_dir);
        let resource_templates = self.resource_templates(decl);
        let prompts = self.prompts(&decl.prompts);
        let access = AccessRules::compile(decl, self.options.template_fuel)
            .map_err(|errors| self.errors.extend(errors))
            .unwrap_or_default();
        if !self.errors.is_empty() {
            return Err(InvalidDeclaration {
                errors: self.errors,
            });
        }
        let index = |keys: Vec<String>| keys.into_iter().enumerate().map(|(i, k)| (k, i)).collect();
        Ok(Compiled {
            server_info,
            instructions: decl.instructions.clone(),
            cache: decl.cache.clone().unwrap_or_default(),
            tool_index: index(decl.tools.iter().map(|t| t.name.clone()).collect()),
            resource_index: index(decl.resources.iter().map(|r| r.uri.clone()).collect()),
            prompt_index: index(decl.prompts.iter().map(|p| p.name.clone()).collect()),
            tools,
            resources,
            resource_templates,
            prompts,
            templates: self.templates,
            auth: decl.auth.clone(),
            access,
        })
    }

    fn unique<'n>(&mut self, what: &str, items: impl Iterator<Item = (String, &'n str)>) {
        let mut seen = HashSet::new();
        for (path, key) in items {
            if !seen.insert(key) {
                self.error(path, format!("duplicate {what} `{key}`"));
            }
        }
    }

    fn tools(&mut self, tools: &[Tool]) -> Vec<CompiledTool> {
        self.unique(
            "tool name",
            tools
                .iter()
                .enumerate()
                .map(|(i, t)| (format!("spec.tools[{i}].name"), t.name.as_str())),
        );
        tools
            .iter()
            .enumerate()
            .filter_map(|(i, tool)| self.tool(&format!("spec.tools[{i}]"), tool))
            .collect()
    }

    fn tool(&mut self, path: &str, tool: &Tool) -> Option<CompiledTool> {
        let errors_before = self.errors.len();
        if tool.name.is_empty()
            || tool.name.len() > 128
            || !tool
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        {
            self.error(
                format!("{path}.name"),
                "must be 1-128 characters of A-Z, a-z, 0-9, `_`, `-` and `.`",
            );
        }
        let input_schema = tool.input_schema.clone().unwrap_or_else(|| {
            let mut schema = Map::new();
            schema.insert("type".into(), json!("object"));
            schema
        });
        if input_schema.get("type") != Some(&json!("object")) {
            self.error(format!("{path}.inputSchema.type"), "must be \"object\"");
        }
        let input = self.schema(&format!("{path}.inputSchema"), &input_schema);
        let output = tool
            .output_schema
            .as_ref()
            .and_then(|schema| self.schema(&format!("{path}.outputSchema"), schema));
        let declared_reply = tool.content.is_some() || tool.structured_content.is_some();
        if tool.http.is_some() && (declared_reply || tool.is_error) {
            self.error(
                format!("{path}.http"),
                "declare either `http` or a declared reply (`content`, `structuredContent`, `isError`)",
            );
        } else if tool.http.is_none() && !declared_reply {
            self.error(
                path.to_owned(),
                "declare the reply: `content`, `structuredContent` or both, or `http`",
            );
        }
        if tool.output_schema.is_some() && tool.structured_content.is_none() && tool.http.is_none()
        {
            self.error(
                format!("{path}.structuredContent"),
                "required when `outputSchema` is declared",
            );
        }
        let content = self.blocks(
            &format!("{path}.content"),
            tool.content.as_deref().unwrap_or_default(),
        );
        let structured = tool.structured_content.as_ref().and_then(|value| {
            self.value_template(&format!("{path}.structuredContent"), value.clone(), None)
        });
        if let (Some(validator), Some(literal)) = (
            &output,
            structured.as_ref().and_then(ValueTemplate::literal),
        ) && let Some(err) = validator.iter_errors(literal).next()
        {
            self.error(
                format!("{path}.structuredContent"),
                format!("does not match outputSchema: {err}"),
            );
        }
        let annotations = tool.annotations.as_ref();
        let http = tool.http.as_ref().and_then(|spec| {
            let target = http::Target::Tool {
                label: &tool.name,
                retry_allowed: annotations.is_some_and(|a| {
                    a.read_only_hint == Some(true) || a.idempotent_hint == Some(true)
                }),
                args: http::declared_args(&input_schema),
            };
            self.http(&format!("{path}.http"), spec, target)
                .map(Arc::new)
        });
        let progress = self.progress(path, tool);
        let logs = tool
            .logs
            .iter()
            .enumerate()
            .filter_map(|(i, log)| {
                let message = self.text(&format!("{path}.logs[{i}].message"), &log.message)?;
                Some(CompiledLog {
                    level: log.level,
                    message,
                    logger: log.logger.clone(),
                })
            })
            .collect();
        if self.errors.len() > errors_before {
            return None;
        }
        let mut descriptor = json!({"name": tool.name});
        insert_some(&mut descriptor, "title", &tool.title);
        insert_some(&mut descriptor, "description", &tool.description);
        descriptor["inputSchema"] = Value::Object(input_schema);
        insert_some(&mut descriptor, "outputSchema", &tool.output_schema);
        insert_some(&mut descriptor, "annotations", &tool.annotations);
        if !tool.icons.is_empty() {
            descriptor["icons"] = json!(tool.icons);
        }
        Some(CompiledTool {
            descriptor,
            input: input?,
            output,
            content,
            structured,
            is_error: tool.is_error,
            progress,
            logs,
            http,
        })
    }

    fn progress(&mut self, path: &str, tool: &Tool) -> Vec<CompiledProgress> {
        let mut last = f64::NEG_INFINITY;
        let mut steps = Vec::new();
        for (i, step) in tool.progress.iter().enumerate() {
            let step_path = format!("{path}.progress[{i}]");
            if step.progress <= last {
                self.error(
                    format!("{step_path}.progress"),
                    "must increase from step to step",
                );
            }
            last = step.progress;
            let delay_ms = step.delay_ms.unwrap_or(0);
            if delay_ms > MAX_PROGRESS_DELAY_MS {
                self.error(
                    format!("{step_path}.delayMs"),
                    format!("must be at most {MAX_PROGRESS_DELAY_MS}"),
                );
            }
            let message = step
                .message
                .as_ref()
                .and_then(|m| self.text(&format!("{step_path}.message"), m));
            steps.push(CompiledProgress {
                progress: step.progress,
                total: step.total,
                message,
                delay: std::time::Duration::from_millis(delay_ms),
            });
        }
        steps
    }

    fn text(&mut self, path: &str, source: &str) -> Option<Text> {
        match self.templates.compile(path, source) {
            Ok(text) => Some(text),
            Err(message) => {
                self.error(path, message);
                None
            }
        }
    }

    fn value_template(
        &mut self,
        path: &str,
        value: Value,
        fields: Option<&[&[&str]]>,
    ) -> Option<ValueTemplate> {
        let compiled = match fields {
            Some(fields) => ValueTemplate::fields(&mut self.templates, path, value, fields),
            None => ValueTemplate::all_strings(&mut self.templates, path, value),
        };
        compiled
            .map_err(|(path, message)| self.error(path, message))
            .ok()
    }

    fn schema(&mut self, path: &str, schema: &Map<String, Value>) -> Option<jsonschema::Validator> {
        // No retriever is compiled in, so a remote or file `$ref` fails here instead of fetching.
        match jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&Value::Object(schema.clone()))
        {
            Ok(validator) => Some(validator),
            Err(err) => {
                self.error(path, format!("invalid JSON Schema: {err}"));
                None
            }
        }
    }

    fn blocks(&mut self, path: &str, blocks: &[ContentBlock]) -> Vec<ValueTemplate> {
        blocks
            .iter()
            .enumerate()
            .filter_map(|(i, block)| self.block(&format!("{path}[{i}]"), block))
            .collect()
    }

    fn block(&mut self, path: &str, block: &ContentBlock) -> Option<ValueTemplate> {
        self.check_block(path, block);
        let value = serde_json::to_value(block).ok()?;
        self.value_template(path, value, Some(BLOCK_TEMPLATE_FIELDS))
    }

    fn check_block(&mut self, path: &str, block: &ContentBlock) {
        match block {
            ContentBlock::Image { data, .. } | ContentBlock::Audio { data, .. } => {
                self.base64(&format!("{path}.data"), data);
            }
            ContentBlock::Resource { resource, .. } => {
                if resource.text.is_some() == resource.blob.is_some() {
                    self.error(
                        format!("{path}.resource"),
                        "declare exactly one of `text` or `blob`",
                    );
                }
                if let Some(blob) = &resource.blob {
                    self.base64(&format!("{path}.resource.blob"), blob);
                }
            }
            ContentBlock::Text { .. } | ContentBlock::ResourceLink { .. } => {}
        }
    }

    fn base64(&mut self, path: &str, data: &str) {
        if base64::engine::general_purpose::STANDARD
            .decode(data)
            .is_err()
        {
            self.error(path, "is not valid base64");
        }
    }

    fn resources(&mut self, resources: &[Resource], base_dir: &Path) -> Vec<CompiledResource> {
        self.unique(
            "resource URI",
            resources
                .iter()
                .enumerate()
                .map(|(i, r)| (format!("spec.resources[{i}].uri"), r.uri.as_str())),
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
                .map(Arc::new)
        });
        if resource.uri.is_empty() || !resource.uri.contains(':') {
            self.error(
                format!("{path}.uri"),
                "must be an absolute URI such as `docs://readme`",
            );
        }
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
            match std::fs::read(base_dir.join(file)) {
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
        if resource.http.is_some() && http.is_none() {
            return None;
        }
        Some(CompiledResource {
            descriptor,
            contents,
            http,
        })
    }

    fn resource_templates(&mut self, decl: &Declaration) -> Vec<CompiledResourceTemplate> {
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
                    match self.http(&format!("{path}.http"), spec, target) {
                        Some(http) => Some(Arc::new(http)),
                        None => continue,
                    }
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

    fn prompts(&mut self, prompts: &[Prompt]) -> Vec<CompiledPrompt> {
        self.unique(
            "prompt name",
            prompts
                .iter()
                .enumerate()
                .map(|(i, p)| (format!("spec.prompts[{i}].name"), p.name.as_str())),
        );
        let mut compiled = Vec::new();
        for (i, prompt) in prompts.iter().enumerate() {
            let path = format!("spec.prompts[{i}]");
            self.unique(
                "argument name",
                prompt
                    .arguments
                    .iter()
                    .enumerate()
                    .map(|(j, a)| (format!("{path}.arguments[{j}].name"), a.name.as_str())),
            );
            let messages = prompt
                .messages
                .iter()
                .enumerate()
                .filter_map(|(j, message)| {
                    let message_path = format!("{path}.messages[{j}]");
                    self.check_block(&format!("{message_path}.content"), &message.content);
                    let value = json!({"role": message.role, "content": message.content});
                    let fields: &[&[&str]] = &[
                        &["content", "text"],
                        &["content", "uri"],
                        &["content", "resource", "uri"],
                        &["content", "resource", "text"],
                    ];
                    self.value_template(&message_path, value, Some(fields))
                })
                .collect();
            let mut descriptor = json!({"name": prompt.name});
            insert_some(&mut descriptor, "title", &prompt.title);
            insert_some(&mut descriptor, "description", &prompt.description);
            if !prompt.arguments.is_empty() {
                descriptor["arguments"] = prompt
                    .arguments
                    .iter()
                    .map(|a| {
                        let mut argument = json!({"name": a.name, "required": a.required});
                        insert_some(&mut argument, "title", &a.title);
                        insert_some(&mut argument, "description", &a.description);
                        argument
                    })
                    .collect();
            }
            if !prompt.icons.is_empty() {
                descriptor["icons"] = json!(prompt.icons);
            }
            compiled.push(CompiledPrompt {
                descriptor,
                description: prompt.description.clone(),
                arguments: prompt
                    .arguments
                    .iter()
                    .map(|a| (a.name.clone(), a.required, a.completions.clone()))
                    .collect(),
                messages,
            });
        }
        compiled
    }
}

fn insert_some<T: serde::Serialize>(target: &mut Value, key: &str, value: &Option<T>) {
    if let Some(value) = value
        && let Ok(value) = serde_json::to_value(value)
    {
        target[key] = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declaration::parse_manifest;

    pub(crate) fn compiled(spec: &str) -> Result<Compiled, InvalidDeclaration> {
        let text = format!(
            "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {{name: t}}\nspec:\n{spec}"
        );
        let manifest = parse_manifest(&text, std::path::PathBuf::new()).unwrap();
        compile(&manifest, &CompileOptions::default())
    }

    #[test]
    fn compiles_resources() {
        let c = compiled(
            "  resources:\n  - {uri: 'test://a', name: a, mimeType: text/plain, text: hello}\n",
        )
        .unwrap();
        assert_eq!(c.resources.len(), 1);
        assert_eq!(c.resource("test://a").unwrap().contents["text"], "hello");
    }
}
