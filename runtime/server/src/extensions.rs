//! The extensions this server advertises in `capabilities.extensions` (SEP-2133), decided from
//! the declaration. Only what the runtime implements is listed. Pure.
//!
//! Both authorization extensions are about how a client obtains its token from the
//! authorization server (client credentials; an enterprise identity assertion); the runtime's
//! part is what it already does with `spec.auth`: it validates the token (issuer, audience,
//! signature or introspection, scopes) whatever grant produced it. So they are advertised
//! exactly when `spec.auth` is set, and neither changes an MCP message: a client that declares
//! no extension gets the core protocol, as the spec asks.

use mcp_declaration::Compiled;
use mcp_protocol::extensions::{ENTERPRISE_MANAGED_AUTHORIZATION, OAUTH_CLIENT_CREDENTIALS};
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
    (!extensions.is_empty()).then_some(Value::Object(extensions))
}
