//! A request parsed once (the `Command::from_frame` shape): its method, its params, and its
//! **target**, the item it names, resolved once against the compiled declaration the request will
//! be served from. Authorization, dispatch, caching, subscriptions, metrics and audit all read the
//! target; nothing later reads a name back out of the JSON or matches a URI again. Pure.

use super::Served;
use super::param_headers;
use super::params::{CallTool, Complete, CompletionRef, GetPrompt, ResourceUri};
use super::view::ViewRef;
use mcp_declaration::{Access, Compiled, MetaTool, ResolvedUri, UriItem};
use mcp_protocol::{McpError, methods};
use serde_json::Value;
use std::sync::Arc;

/// Most resource URIs one listen stream (or one legacy session) may subscribe to.
pub const MAX_SUBSCRIPTIONS: usize = 100;

/// One request, parsed and resolved.
pub struct Request {
    /// The JSON-RPC method.
    pub method: String,
    /// Its params.
    pub params: Value,
    /// The item it names.
    pub target: Target,
    /// The `spec.views` view it came through: an item outside it is resolved as undeclared.
    pub view: ViewRef,
    /// The name of that view as the transport gave it (kept when the declaration no longer
    /// has it: a session opened by the request is still bound to it, and serves nothing).
    view_name: Option<Box<str>>,
    /// The declaration `target` was resolved against, and that serves the request (a reload
    /// between authorization and dispatch cannot change which item either sees).
    pub(crate) decl: Arc<Served>,
}

/// The item a request names.
#[derive(Debug)]
pub enum Target {
    /// The method names no item (lists, `ping`, `server/discover`, ...).
    Nothing,
    /// `tools/call` of a declared tool (index into `Compiled::tools`).
    Tool(usize),
    /// `tools/call` of a meta tool of discovery's search mode (open to every caller; what it
    /// finds is filtered by the caller's rules).
    Meta(MetaTool),
    /// `prompts/get`, or a `completion/complete` of a prompt argument.
    Prompt(usize),
    /// `resources/read`, `resources/subscribe` or `resources/unsubscribe` of a URI this server
    /// serves, in its canonical spelling.
    Resource(ResolvedUri),
    /// A `completion/complete` of a resource template's variable.
    Template(usize),
    /// `subscriptions/listen`: every resource its filter names that this server serves (the
    /// first [`MAX_SUBSCRIPTIONS`]; past that the method refuses the request anyway).
    Resources(Vec<ResolvedUri>),
    /// The request names an item wrongly (missing or not declared): the method answers this.
    Invalid(McpError),
}

impl Request {
    /// Parses `method` and `params` and resolves the item they name against `decl`, as seen
    /// through the view named `view` (`None`: the whole server). An item the view does not
    /// publish is resolved as one that is not declared, so every method answers it alike.
    pub fn from_message(
        decl: Arc<Served>,
        method: String,
        params: Value,
        view: Option<&str>,
    ) -> Self {
        let resolved = ViewRef::resolve(&decl, view);
        let target = within(&decl, resolved, resolve(&decl, &method, &params), &params);
        Self {
            method,
            params,
            target,
            view: resolved,
            view_name: view.map(Into::into),
            decl,
        }
    }

    /// The name of the view the request came through (`None`: the whole server).
    pub fn view_name(&self) -> Option<&str> {
        self.view_name.as_deref()
    }

    /// The declaration this request is served from.
    pub fn declaration(&self) -> &Arc<Served> {
        &self.decl
    }

    /// Checks the `Mcp-Param-*` headers `sent` with the request (lower-cased names, raw values)
    /// against the arguments of a `tools/call`; every other request has none to check.
    pub fn check_param_headers(
        &self,
        sent: &[(&str, &[u8])],
        expect: param_headers::Expect,
    ) -> Result<(), McpError> {
        let Target::Tool(i) = self.target else {
            return Ok(());
        };
        param_headers::check(
            &self.decl.tools[i].param_headers,
            self.params.get("arguments"),
            sent,
            expect,
        )
    }

    /// The access rules of each item the request names (none for [`Target::Nothing`] and
    /// [`Target::Invalid`]), with the arguments an `allow` condition reads.
    pub(crate) fn accesses(&self) -> Vec<(&Access, Value)> {
        let decl: &Compiled = &self.decl;
        let args = || {
            self.params
                .get("arguments")
                .filter(|a| a.is_object())
                .cloned()
                .unwrap_or_else(|| Value::Object(Default::default()))
        };
        match &self.target {
            Target::Nothing | Target::Meta(_) | Target::Invalid(_) => Vec::new(),
            Target::Tool(i) => vec![(&decl.tools[*i].access, args())],
            Target::Prompt(i) => vec![(&decl.prompts[*i].access, args())],
            Target::Template(i) => vec![(&decl.resource_templates[*i].access, Value::Null)],
            Target::Resource(resolved) => vec![uri_access(decl, resolved)],
            Target::Resources(all) => all.iter().map(|r| uri_access(decl, r)).collect(),
        }
    }
}

/// The rules of the item serving a resolved URI; a template's `args` are the URI's variables.
fn uri_access<'d>(decl: &'d Compiled, resolved: &ResolvedUri) -> (&'d Access, Value) {
    match &resolved.item {
        UriItem::Resource(i) => (
            &decl.resources[*i].access,
            Value::Object(Default::default()),
        ),
        UriItem::Template(i, vars) => (&decl.resource_templates[*i].access, vars.clone()),
    }
}

/// `target` as seen through `view`: an item the view does not publish gets the answer an
/// undeclared one gets (the same error text), and a listen filter loses the URIs it does not
/// publish.
fn within(decl: &Compiled, view: ViewRef, target: Target, params: &Value) -> Target {
    if view == ViewRef::All {
        return target;
    }
    let name = |key: &str| {
        params
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match target {
        Target::Tool(i) if !view.tool(decl, i) => {
            unknown(format!("unknown tool: {}", name("name")))
        }
        Target::Prompt(i) if !view.prompt(decl, i) => {
            let name = params
                .pointer("/ref/name")
                .and_then(Value::as_str)
                .map_or_else(|| name("name"), str::to_owned);
            unknown(format!("unknown prompt: {name}"))
        }
        Target::Template(i) if !view.template(decl, i) => unknown(format!(
            "unknown resource template: {}",
            params
                .pointer("/ref/uri")
                .and_then(Value::as_str)
                .unwrap_or_default()
        )),
        Target::Resource(resolved) if !view.uri(decl, &resolved.item) => {
            Target::Invalid(McpError::ResourceNotFound { uri: name("uri") })
        }
        Target::Resources(all) => Target::Resources(
            all.into_iter()
                .filter(|resolved| view.uri(decl, &resolved.item))
                .collect(),
        ),
        other => other,
    }
}

fn resolve(decl: &Compiled, method: &str, params: &Value) -> Target {
    match method {
        methods::TOOLS_CALL => match CallTool::parse(params) {
            Ok(call) => match (
                decl.discovery.meta_tool(call.name),
                decl.tool_index(call.name),
            ) {
                (Some(meta), _) => Target::Meta(meta),
                (None, Some(i)) => Target::Tool(i),
                (None, None) => unknown(format!("unknown tool: {}", call.name)),
            },
            Err(err) => Target::Invalid(err),
        },
        methods::PROMPTS_GET => match GetPrompt::parse(params) {
            Ok(get) => prompt(decl, get.name),
            Err(err) => Target::Invalid(err),
        },
        methods::RESOURCES_READ | methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => {
            match ResourceUri::parse(params) {
                Ok(ResourceUri { uri }) => match decl.resolve_uri(uri) {
                    Some(resolved) => Target::Resource(resolved),
                    None => Target::Invalid(McpError::ResourceNotFound {
                        uri: uri.to_owned(),
                    }),
                },
                Err(err) => Target::Invalid(err),
            }
        }
        methods::SUBSCRIPTIONS_LISTEN => Target::Resources(
            params
                .pointer("/notifications/resourceSubscriptions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .take(MAX_SUBSCRIPTIONS)
                .filter_map(Value::as_str)
                .filter_map(|uri| decl.resolve_uri(uri))
                .collect(),
        ),
        methods::COMPLETION_COMPLETE => match Complete::parse(params) {
            Ok(Complete {
                reference: CompletionRef::Prompt(name),
                ..
            }) => prompt(decl, name),
            Ok(Complete {
                reference: CompletionRef::Resource(uri_template),
                ..
            }) => match decl.resource_template(uri_template) {
                Some(i) => Target::Template(i),
                None => unknown(format!("unknown resource template: {uri_template}")),
            },
            Err(err) => Target::Invalid(err),
        },
        _ => Target::Nothing,
    }
}

fn prompt(decl: &Compiled, name: &str) -> Target {
    match decl.prompt_index(name) {
        Some(i) => Target::Prompt(i),
        None => unknown(format!("unknown prompt: {name}")),
    }
}

fn unknown(message: String) -> Target {
    Target::Invalid(McpError::InvalidParams(message))
}
