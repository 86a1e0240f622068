//! Authorization inside the dispatch, for authenticated callers (`spec.auth`): lists show a
//! caller only the items it may use (scopes, and `allow` conditions that read only the token),
//! and an `allow` condition over arguments is decided when the item is used: a tool answers with
//! a tool error the model can read, a prompt or resource with a JSON-RPC error. Requests for
//! items whose scopes the caller lacks never get here: the transport refuses them with a 403
//! challenge. Pure.

use super::RequestContext;
use mcp_declaration::{Access, Caller, Compiled, Verdict};
use serde_json::{Map, Value, json};

/// Which list an entry belongs to (how its access rules are found).
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// `tools/list` (by `name`).
    Tool,
    /// `prompts/list` (by `name`).
    Prompt,
    /// `resources/list` (by `uri`).
    Resource,
    /// `resources/templates/list` (by `uriTemplate`).
    ResourceTemplate,
}

fn rules<'d>(decl: &'d Compiled, kind: Kind, entry: &Value) -> &'d Access {
    let key = |field: &str| entry.get(field).and_then(Value::as_str).unwrap_or_default();
    match kind {
        Kind::Tool => decl.access.tool(key("name")),
        Kind::Prompt => decl.access.prompt(key("name")),
        Kind::Resource => decl.access.resource(key("uri")),
        Kind::ResourceTemplate => decl.access.resource_template(key("uriTemplate")),
    }
}

/// The entries of a list that the request's caller may see (all without authentication).
pub fn visible<'a>(
    decl: &Compiled,
    ctx: &RequestContext,
    kind: Kind,
    entries: impl Iterator<Item = &'a Value>,
) -> Vec<&'a Value> {
    let Some(principal) = ctx.caller.as_ref().filter(|_| decl.access.has_item_rules()) else {
        return entries.collect();
    };
    let caller = Caller {
        scopes: &principal.scopes,
        claims: &principal.claims,
    };
    entries
        .filter(|entry| decl.access.listed(rules(decl, kind, entry), caller))
        .collect()
}

/// Arguments of a call that sent none.
static NO_ARGS: Value = Value::Null;

/// Why the caller may not use an item with these arguments (`None`: it may).
pub fn refusal(
    decl: &Compiled,
    ctx: &RequestContext,
    access: &Access,
    args: &Value,
) -> Option<String> {
    let principal = ctx.caller.as_ref()?;
    let caller = Caller {
        scopes: &principal.scopes,
        claims: &principal.claims,
    };
    match decl.access.check(access, caller, args) {
        Verdict::Allowed => None,
        Verdict::MissingScopes => Some("the caller lacks the scopes this needs".into()),
        Verdict::Denied => Some("the caller is not allowed to do this with these arguments".into()),
    }
}

/// For `tools/call`: the tool error to answer instead of calling, when `allow` refuses.
pub fn tool_refusal(decl: &Compiled, ctx: &RequestContext, params: &Value) -> Option<Value> {
    ctx.caller
        .as_ref()
        .filter(|_| decl.access.has_item_rules())?;
    let name = params.get("name").and_then(Value::as_str)?;
    let access = decl.access.tool(name);
    if access.is_open() {
        return None;
    }
    let args = params.get("arguments").unwrap_or(&NO_ARGS);
    let message = refusal(decl, ctx, access, args)?;
    Some(json!({"content": [{"type": "text", "text": message}], "isError": true}))
}

/// For a tool or prompt whose arguments were completed by elicitation: `allow` decided on the
/// arguments the call sent, so it is decided again on the ones the user supplied.
pub fn elicited_refusal(
    decl: &Compiled,
    ctx: &RequestContext,
    kind: Kind,
    name: &str,
    args: &Value,
) -> Option<String> {
    ctx.caller
        .as_ref()
        .filter(|_| decl.access.has_item_rules())?;
    let access = match kind {
        Kind::Prompt => decl.access.prompt(name),
        _ => decl.access.tool(name),
    };
    refusal(decl, ctx, access, args)
}

/// For `prompts/get`: the refusal message, when `allow` refuses.
pub fn prompt_refusal(decl: &Compiled, ctx: &RequestContext, params: &Value) -> Option<String> {
    ctx.caller
        .as_ref()
        .filter(|_| decl.access.has_item_rules())?;
    let name = params.get("name").and_then(Value::as_str)?;
    let args = params.get("arguments").unwrap_or(&NO_ARGS);
    refusal(decl, ctx, decl.access.prompt(name), args)
}

/// For `resources/read` and `resources/subscribe`: the refusal message, when the resource's
/// rules refuse (a template's `args` are the URI's variables).
pub fn resource_refusal(decl: &Compiled, ctx: &RequestContext, params: &Value) -> Option<String> {
    ctx.caller
        .as_ref()
        .filter(|_| decl.access.has_item_rules())?;
    let uri = params.get("uri").and_then(Value::as_str)?;
    if decl.resource(uri).is_some() {
        return refusal(decl, ctx, decl.access.resource(uri), &json!({}));
    }
    let (template, vars) = decl
        .resource_templates
        .iter()
        .find_map(|t| t.uri.matches(uri).map(|vars| (t, vars)))?;
    let key = template
        .descriptor
        .get("uriTemplate")
        .and_then(Value::as_str)?;
    let args: Map<String, Value> = vars
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    refusal(
        decl,
        ctx,
        decl.access.resource_template(key),
        &Value::Object(args),
    )
}
