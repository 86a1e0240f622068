//! mcp-openapi: the offline subcommands of `mcp-runtime`: `import openapi` (an OpenAPI document
//! to an MCPServer manifest) and `check` (manifests compiled as the operator would).

#![warn(missing_docs, unreachable_pub)]

pub mod check;
pub mod import;
