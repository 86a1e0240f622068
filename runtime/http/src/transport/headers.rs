//! The MCP header names every transport reads (a leaf: names only, no logic). Typed header
//! names: looking a header up by a `&str` would check and lower-case the name on every request.

use http::HeaderName;

/// The session header of Streamable HTTP.
pub(super) const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
/// The protocol version header.
pub(super) const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// The method header of 2026-07-28 requests.
pub(super) const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
/// The name header of 2026-07-28 requests that name a tool, prompt or resource.
pub(super) const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");
