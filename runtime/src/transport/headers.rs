//! The MCP header names every transport reads (a leaf: names only, no logic).

/// The session header of Streamable HTTP.
pub const SESSION_HEADER: &str = "mcp-session-id";
/// The protocol version header.
pub const VERSION_HEADER: &str = "mcp-protocol-version";
/// The method header of 2026-07-28 requests.
pub const METHOD_HEADER: &str = "mcp-method";
/// The name header of 2026-07-28 requests that name a tool, prompt or resource.
pub const NAME_HEADER: &str = "mcp-name";

/// [`VERSION_HEADER`], [`METHOD_HEADER`], [`NAME_HEADER`] and [`SESSION_HEADER`] as header names:
/// looking a header up by a `&str` first checks and lower-cases the name, on every request.
pub mod names {
    use http::HeaderName;

    /// `mcp-protocol-version`.
    pub const VERSION: HeaderName = HeaderName::from_static(super::VERSION_HEADER);
    /// `mcp-method`.
    pub const METHOD: HeaderName = HeaderName::from_static(super::METHOD_HEADER);
    /// `mcp-name`.
    pub const NAME: HeaderName = HeaderName::from_static(super::NAME_HEADER);
    /// `mcp-session-id`.
    pub const SESSION: HeaderName = HeaderName::from_static(super::SESSION_HEADER);
}
