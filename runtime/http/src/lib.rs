//! mcp-http: the runtime over HTTP. The MCP port's routes and transports (`transport`), the
//! listener that serves them (`listener`), the OAuth 2.1 resource server (`auth`), the admin port
//! (`admin`), live reload (`reload`) and the wiring that binds it all (`app`). Every MCP method is
//! decided by `mcp-server`; this crate maps HTTP to it and back.

#![warn(missing_docs, unreachable_pub)]

pub mod admin;
pub mod app;
pub mod auth;
pub mod listener;
mod open_files;
pub mod reload;
pub mod transport;
