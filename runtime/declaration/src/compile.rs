//! Compiling a declaration once: every check that can be made before serving, every template and
//! schema compiled, every list entry pre-built. The result (`compile/output.rs`) is immutable
//! and shared by all requests. This file holds the compiler and the checks every item kind
//! shares; each kind has its own file (`tools.rs`, `resources.rs`, `prompts.rs`, `http.rs`).
//! Pure, except that resources declared with `file` are read (unless disabled).

mod apps;
pub use apps::CompiledToolUi;
mod approval;
pub use approval::{
    CompiledApproval, DEFAULT_APPROVAL_TTL_MS, MAX_APPROVAL_TTL_MS, MIN_APPROVAL_TTL_MS,
};
mod discovery;
pub use discovery::{
    CompiledDiscovery, DEFAULT_SEARCH_LIMIT, DESCRIBE_TOOLS, MAX_DESCRIBE_NAMES, MAX_QUERY_CHARS,
    MAX_SEARCH_LIMIT, MetaTool, SEARCH_TOOLS,
};
mod http;
mod http_async;
mod http_async_types;
pub use http_async::{AsyncOutcome, CompiledAsync, StatusUrl};
mod http_auth;
mod http_params;
pub use http_params::RESERVED_HEADERS;
mod http_types;
mod interactive;
mod limits;
pub use limits::{CompiledLimit, CompiledLimits, Rate};
mod output;
mod param_headers;
pub use param_headers::{
    PARAM_HEADER_PREFIX, ParamHeader, ParamKind, X_MCP_HEADER, valid_param_header_name,
};
mod prompts;
mod resources;
mod schema_walk;
mod search_index;
pub use search_index::{MAX_QUERY_TOKENS, MAX_TOOL_TOKENS, SearchIndex};
mod server_info;
mod shared_schemas;
pub use shared_schemas::MAX_SHARED_SCHEMAS;
use shared_schemas::SharedSchemas;
mod tools;
mod url_elicit;
pub use url_elicit::CompiledUrlStep;
mod views;
pub use views::{CompiledView, CompiledViews, ItemSet, RESERVED_SEGMENTS};

pub use http_types::{
    BodyKind, ClientAuth, CompiledAssertion, CompiledAuth, CompiledBody, CompiledHttp,
    CompiledParam, CompiledResponse, Grant, ParamValue, Retry, StatusMatch,
};
pub use interactive::{
    CONFIRM_KEY, CompiledField, CompiledInteraction, CompiledSample, ROOTS_KEY, SAMPLE_KEY,
};
pub use output::{
    Compiled, CompiledLog, CompiledProgress, CompiledPrompt, CompiledResource,
    CompiledResourceTemplate, CompiledTool, ResolvedUri, UriItem,
};

use super::access::AccessRules;
use super::field_error::{FieldError, InvalidDeclaration};
use super::jq::JqProgram;
use super::load::Manifest;
use super::resource_uri::canonical as canonical_uri;
use super::template::{DEFAULT_FUEL, Templates, Text};
use super::transports::Transports;
use super::types::{ContentBlock, Declaration, Transport};
use super::value_template::ValueTemplate;
use base64::Engine as _;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// Where the projected ServiceAccount tokens of `serviceAccountToken` clients are read
    /// (`<dir>/<token_dir_name(audience)>/token`, at each token request, not at compile time).
    pub service_account_tokens_dir: PathBuf,
    /// Allow upstream URLs at link-local addresses (cloud metadata; `link_local.rs`).
    pub allow_link_local_upstreams: bool,
}

impl Default for CompileOptions {
    fn default() -> Self {
        Self {
            template_fuel: DEFAULT_FUEL,
            read_files: true,
            secrets_dir: None,
            service_account_tokens_dir: PathBuf::from(
                super::service_account_tokens::DEFAULT_SERVICE_ACCOUNT_TOKENS_DIR,
            ),
            allow_link_local_upstreams: false,
        }
    }
}

/// The fields of a content block that are templates over `args`.
const BLOCK_TEMPLATE_FIELDS: &[&[&str]] = &[
    &["text"],
    &["uri"],
    &["resource", "uri"],
    &["resource", "text"],
];

/// Compiles a manifest, reporting every problem with its field path.
pub fn compile(
    manifest: &Manifest,
    options: &CompileOptions,
) -> Result<Compiled, InvalidDeclaration> {
    let hash = match &manifest.hash {
        Some(stamped) => stamped.clone(),
        None => super::stamp::hash_of(&manifest.name, &manifest.declaration).map_err(|err| {
            InvalidDeclaration {
                errors: vec![FieldError {
                    path: "spec".into(),
                    message: format!("cannot be written as YAML: {err}"),
                }],
            }
        })?,
    };
    Compiler::new(options).run(
        &manifest.name,
        &manifest.declaration,
        &manifest.base_dir,
        hash,
    )
}

struct Compiler<'a> {
    options: &'a CompileOptions,
    templates: Templates,
    errors: Vec<FieldError>,
    /// Every HTTP backend compiled so far, in slot order.
    upstreams: Vec<Arc<CompiledHttp>>,
    /// `spec.schemas`, checked before any item refers to them.
    shared: SharedSchemas,
    /// Every distinct jq program compiled so far (or why it does not compile): a declaration
    /// often maps many answers with the same program, and each compile takes about a
    /// millisecond (jaq compiles its whole standard library with it).
    jq: HashMap<String, Result<Arc<JqProgram>, String>>,
    /// Whether the declaration has `spec.auth` (a caller's token to exchange).
    authenticates: bool,
    /// The `serviceAccountToken` audiences seen so far, by their token directory's name (two
    /// audiences whose names collide would read one file).
    token_dirs: HashMap<String, String>,
}

impl<'a> Compiler<'a> {
    fn new(options: &'a CompileOptions) -> Self {
        Self {
            options,
            templates: Templates::new(options.template_fuel),
            errors: Vec::new(),
            upstreams: Vec::new(),
            shared: SharedSchemas::default(),
            jq: HashMap::new(),
            authenticates: false,
            token_dirs: HashMap::new(),
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
        hash: String,
    ) -> Result<Compiled, InvalidDeclaration> {
        if !decl.include.is_empty() {
            // Sets are merged in before compiling (`resolve_includes`); compiling the server
            // alone would silently serve it without them.
            self.errors.push(FieldError {
                path: "spec.include".into(),
                message: "names MCPToolSets that were not merged in: serve their manifests \
                          too (`serve --manifest` once per file or a directory), or apply them \
                          to the cluster"
                    .into(),
            });
        }
        self.authenticates = decl.auth.is_some();
        self.shared = SharedSchemas::compile(&decl.schemas, &mut self.errors);
        let server_info = self.server_info(name, decl);
        let tools = self.tools(&decl.tools, &decl.resources);
        let resources = self.resources(&decl.resources, base_dir);
        let resource_templates = self.resource_templates(decl);
        let prompts = self.prompts(&decl.prompts);
        let transports = self.transports(decl.transports.as_deref());
        let tool_names: Vec<&str> = decl.tools.iter().map(|t| t.name.as_str()).collect();
        let limits = self.limits(decl.limits.as_ref(), &tool_names);
        let mut discovery = self.discovery(decl.discovery.as_ref(), &decl.tools);
        let views = self.views(decl);
        let (access, items) = AccessRules::compile(decl, self.options.template_fuel)
            .map_err(|errors| self.errors.extend(errors))
            .unwrap_or_default();
        if !self.errors.is_empty() {
            return Err(InvalidDeclaration {
                errors: self.errors,
            });
        }
        // Each compiled item carries its own rules (the compiler made one item per declared one).
        let (mut tools, mut resources, mut resource_templates, mut prompts) =
            (tools, resources, resource_templates, prompts);
        for (tool, access) in tools.iter_mut().zip(items.tools) {
            tool.access = access;
        }
        for (prompt, access) in prompts.iter_mut().zip(items.prompts) {
            prompt.access = access;
        }
        for (resource, access) in resources.iter_mut().zip(items.resources) {
            resource.access = access;
        }
        for (template, access) in resource_templates.iter_mut().zip(items.resource_templates) {
            template.access = access;
        }
        Self::discovery_index(&mut discovery, &tools);
        let index = |keys: Vec<String>| keys.into_iter().enumerate().map(|(i, k)| (k, i)).collect();
        Ok(Compiled {
            server_info,
            hash,
            instructions: decl.instructions.clone(),
            cache: decl.cache.clone().unwrap_or_default(),
            tool_index: index(decl.tools.iter().map(|t| t.name.clone()).collect()),
            resource_index: index(
                decl.resources
                    .iter()
                    .map(|r| canonical_uri(&r.uri).into_owned())
                    .collect(),
            ),
            prompt_index: index(decl.prompts.iter().map(|p| p.name.clone()).collect()),
            tools,
            resources,
            resource_templates,
            prompts,
            templates: self.templates,
            upstreams: self.upstreams,
            allow_link_local_upstreams: self.options.allow_link_local_upstreams,
            auth: decl.auth.clone(),
            access,
            transports,
            limits,
            discovery,
            views,
        })
    }

    /// `spec.transports`: at least one, each once (absent: all).
    fn transports(&mut self, list: Option<&[Transport]>) -> Transports {
        let Some(list) = list else {
            return Transports::default();
        };
        if list.is_empty() {
            self.error(
                "spec.transports",
                "list at least one of modern, streamable, sse (or leave it out for all)",
            );
        }
        self.unique(
            "transport",
            list.iter()
                .enumerate()
                .map(|(i, t)| (format!("spec.transports[{i}]"), t.name())),
        );
        Transports::of(list)
    }

    fn unique<'n>(&mut self, what: &str, items: impl Iterator<Item = (String, &'n str)>) {
        let mut seen = HashSet::new();
        for (path, key) in items {
            if !seen.insert(key) {
                self.error(path, format!("duplicate {what} `{key}`"));
            }
        }
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
    use crate::parse_manifest;

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
