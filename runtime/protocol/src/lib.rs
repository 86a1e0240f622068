//! The wire protocol: JSON-RPC 2.0 messages, MCP protocol versions and eras, and the one mapping
//! from errors to JSON-RPC codes. Pure, no I/O.

#![warn(missing_docs, unreachable_pub)]

mod envelope;
mod error;
pub mod extensions;
mod jsonrpc;
pub mod methods;
mod version;
pub mod weight;

pub use error::McpError;
pub use jsonrpc::{
    Incoming, RequestId, Success, error_response, member, notification, object, parse_message,
    parse_weighed, request, success_response,
};
pub use version::{Era, LATEST_LEGACY, LegacyVersion, MODERN_VERSION, SUPPORTED_VERSIONS, meta};
