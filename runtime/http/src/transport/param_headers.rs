//! The `Mcp-Param-*` headers of a POST, handed to mcp-server's check (SEP-2243) as plain
//! name/value pairs: the transport translates, the server decides. Pure.

use axum::http::HeaderMap;
use mcp_protocol::McpError;
use mcp_server::Authorized;
use mcp_server::param_headers::Expect;

/// The lower-cased prefix of every parameter header (`HeaderName`s are lower-case).
const PREFIX: &str = "mcp-param-";

/// Checks the `Mcp-Param-*` headers of a request against its body.
pub(super) fn check(
    authorized: &Authorized,
    headers: &HeaderMap,
    expect: Expect,
) -> Result<(), McpError> {
    let sent: Vec<(&str, &[u8])> = headers
        .iter()
        .filter(|(name, _)| name.as_str().starts_with(PREFIX))
        .map(|(name, value)| (name.as_str(), value.as_bytes()))
        .collect();
    authorized.check_param_headers(&sent, expect)
}
