//! mcp-runtime: serves the tools, resources and prompts an `MCPServer` manifest declares to MCP
//! clients of every protocol era.

pub mod admin;
pub mod app;
pub mod auth;
pub mod backends;
pub mod check;
pub mod declaration;
pub mod import;
pub mod listener;
pub mod metrics;
pub mod protocol;
pub mod reload;
pub mod server;
pub mod sessions;
pub mod transport;
