//! mcp-runtime: serves the tools, resources and prompts an `MCPServer` manifest declares to MCP
//! clients of every protocol era.

pub mod declaration;
pub mod protocol;
