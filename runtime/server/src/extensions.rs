//! The extensions this server advertises in `capabilities.extensions` (SEP-2133), decided from
//! the declaration, and whether the client of a request declared one. Only what the runtime
//! implements is listed. Pure.
//!
//! MCP Apps (`io.modelcontextprotocol/ui`) is advertised when a tool declares a view; only a
//! client that declares it (with the view's MIME type) sees `_meta.ui` on tools and the tools
//! only the view may call: everyone else gets the plain tools, whose content is the answer.
//!
//! Both authorization extensions are about how a client obtains its token from the
//! authorization server (client credentials; an enterprise identity assertion); the runtime's
//! part is what it already does with `spec.auth`: it validates the token (issuer, audience,
//! signature or introspection, scopes) whatever grant produced it. So they are advertised
//! exactly when `spec.auth` is set, and neither changes an MCP message: a client that declares
//! no extension gets the core protocol, as the spec asks.

use super::RequestContext;
use mcp_declaration::{Compiled, MCP_APP_MIME_TYPE};
use mcp_protocol::extensions::{
    ENTERPRISE_MANAGED_AUTHORIZATION, OAUTH_CLIENT_CREDENTIALS, TASKS, UI,
};
use mcp_protocol::{Era, meta};
use serde_json::{Map, Value, json};

/// `capabilities.extensions` for `decl`; `None` when it supports none (the key is then left
/// out, as for a server without extensions).
pub(crate) fn advertised(decl: &Compiled) -> Option<Value> {
    let mut extensions = Map::new();
    if decl.auth.is_some() {
        for id in [OAUTH_CLIENT_CREDENTIALS, ENTERPRISE_MANAGED_AUTHORIZATION] {
            extensions.insert(id.to_owned(), json!({}));
        }
    }
    if decl.tools.iter().any(|t| t.ui.is_some()) {
        extensions.insert(UI.to_owned(), json!({}));
    }
    if super::tasks::any(decl) {
        extensions.insert(TASKS.to_owned(), json!({}));
    }
    (!extensions.is_empty()).then_some(Value::Object(extensions))
}

/// Whether the client of a request declared MCP Apps with the view's MIME type: in the
/// request's `_meta` (2026-07-28) or in its session's `initialize` (legacy eras).
pub(crate) fn client_shows_views(ctx: &RequestContext, params: &Value) -> bool {
    let capabilities = match (ctx.era, &ctx.session) {
        (Era::Modern, _) => params
            .get("_meta")
            .and_then(|m| m.get(meta::CLIENT_CAPABILITIES))
            .cloned(),
        (Era::Legacy(_), Some(session)) => Some(session.client_capabilities()),
        (Era::Legacy(_), None) => None,
    };
    capabilities
        .as_ref()
        .and_then(|c| c.pointer("/extensions"))
        .and_then(|e| e.get(UI))
        .and_then(|ui| ui.get("mimeTypes"))
        .and_then(Value::as_array)
        .is_some_and(|types| types.iter().any(|t| t == MCP_APP_MIME_TYPE))
}
