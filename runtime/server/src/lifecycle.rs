//! Describing the server: `server/discover` (2026-07-28), `initialize` (legacy eras), and the
//! legacy `logging/setLevel` (which sets the session's level). Pure.

use super::RequestContext;
use mcp_declaration::{Compiled, LogLevel, SERVED_META};
use mcp_protocol::{LegacyVersion, McpError, SUPPORTED_VERSIONS};
use serde_json::{Value, json};

/// Everything this server can do; the same in both eras (lists may change on reload, so
/// `listChanged` is always offered).
fn capabilities() -> Value {
    json!({
        "tools": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": true},
        "prompts": {"listChanged": true},
        "completions": {},
        "logging": {},
    })
}

/// What the server serves, for `_meta[SERVED_META]`: the declaration's hash and how many items
/// of each kind it holds (the operator's `Verified` check compares both with what it applied).
pub fn served_declaration(decl: &Compiled) -> Value {
    json!({
        "hash": decl.hash,
        "tools": decl.tools.len(),
        "resources": decl.resources.len(),
        "resourceTemplates": decl.resource_templates.len(),
        "prompts": decl.prompts.len(),
    })
}

/// The `server/discover` result (era fields are added by the dispatcher, which keeps `_meta`).
pub(crate) fn discover_result(decl: &Compiled) -> Value {
    let mut result = json!({
        "supportedVersions": SUPPORTED_VERSIONS,
        "capabilities": capabilities(),
        "_meta": {SERVED_META: served_declaration(decl)},
    });
    if let Some(instructions) = &decl.instructions {
        result["instructions"] = json!(instructions);
    }
    result
}

/// The `initialize` result for a negotiated legacy version.
pub fn initialize_result(decl: &Compiled, version: LegacyVersion) -> Value {
    let mut server_info = decl.server_info.clone();
    if version < LegacyVersion::V2025_06_18 {
        // `title` arrived in 2025-06-18.
        if let Some(info) = server_info.as_object_mut() {
            info.remove("title");
        }
    }
    let mut result = json!({
        "protocolVersion": version.as_str(),
        "capabilities": capabilities(),
        "serverInfo": server_info,
        "_meta": {SERVED_META: served_declaration(decl)},
    });
    if version < LegacyVersion::V2025_03_26 {
        // `completions` was not a capability before 2025-03-26.
        result["capabilities"]
            .as_object_mut()
            .map(|c| c.remove("completions"));
    }
    if let Some(instructions) = &decl.instructions {
        result["instructions"] = json!(instructions);
    }
    result
}

/// `logging/setLevel` (legacy): the session's log messages from now on are at or above
/// `params.level`.
pub(crate) fn set_level(ctx: &RequestContext, params: &Value) -> Result<Value, McpError> {
    let level = parse_level(params.get("level"))?;
    if let Some(session) = &ctx.session {
        session.set_log_level(level);
    }
    Ok(json!({}))
}

/// Parses a log level value.
pub fn parse_level(value: Option<&Value>) -> Result<LogLevel, McpError> {
    let value = value.ok_or_else(|| McpError::InvalidParams("missing `level`".into()))?;
    serde_json::from_value(value.clone()).map_err(|_| {
        McpError::InvalidParams(format!(
            "invalid log level {value}: expected debug, info, notice, warning, error, critical, alert or emergency"
        ))
    })
}
