//! Identifiers of the official MCP extensions the runtime knows (SEP-2133: keys of
//! `capabilities.extensions`, each mapped to a settings object). Names only.

/// OAuth 2.1 client credentials (SEP-1046): machine-to-machine tokens, no user present.
pub const OAUTH_CLIENT_CREDENTIALS: &str = "io.modelcontextprotocol/oauth-client-credentials";

/// Enterprise-managed authorization (SEP-990): tokens obtained with an identity assertion
/// (ID-JAG) from the enterprise's identity provider.
pub const ENTERPRISE_MANAGED_AUTHORIZATION: &str =
    "io.modelcontextprotocol/enterprise-managed-authorization";

/// MCP Apps (SEP-1865): tools shown in HTML views hosts render.
pub const UI: &str = "io.modelcontextprotocol/ui";

/// Tasks (SEP-2663): a `tools/call` may answer with a task handle polled with `tasks/get`.
pub const TASKS: &str = "io.modelcontextprotocol/tasks";
