//! The MCP header names every transport reads (a leaf: names only, no logic).

/// The session header of Streamable HTTP.
pub const SESSION_HEADER: &str = "mcp-session-id";
/// The protocol version header.
pub const VERSION_HEADER: &str = "mcp-protocol-version";
/// The method header of 2026-07-28 requests.
pub const METHOD_HEADER: &str = "mcp-method";
/// The name header of 2026-07-28 requests that name a tool, prompt or resource.
pub const NAME_HEADER: &str = "mcp-name";
