//! Describing the server: `server/discover` (2026-07-28), `initialize` (legacy eras), and the
//! legacy `logging/setLevel` (which sets the session's level). Pure.

use super::RequestContext;
use mcp_declaration::{Compiled, LogLevel, SERVED_META};
use mcp_protocol::{LegacyVersion, McpError, SUPPORTED_VERSIONS};
use serde_json::{Value, json};

/// Everything this server can do; the same in both eras (lists may change on reload, so
/// `listChanged` is always offered), with the extensions `decl` supports.
fn capabilities(decl: &Compiled) -> Value {
    let mut capabilities = json!({
        "tools": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": true},
        "prompts": {"listChanged": true},
        "completions": {},
        "logging": {},
    });
    if let Some(extensions) = super::extensions::advertised(decl) {
        capabilities["extensions"] = extensions;
    }
    capabilities
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
        "capabilities": capabilities(decl),
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
    if let Some(info) = server_info.as_object_mut() {
        if version < LegacyVersion::V2025_11_25 {
            // `description`, `icons` and `websiteUrl` arrived in 2025-11-25 (SEP-973).
            for key in ["description", "icons", "websiteUrl"] {
                info.remove(key);
            }
        }
        if version < LegacyVersion::V2025_06_18 {
            // `title` arrived in 2025-06-18.
            info.remove("title");
        }
    }
    let mut result = json!({
        "protocolVersion": version.as_str(),
        "capabilities": capabilities(decl),
        "serverInfo": server_info,
        "_meta": {SERVED_META: served_declaration(decl)},
    });
    if version < LegacyVersion::V2025_03_26 {
        // `completions` was not a capability before 2025-03-26.
        result["capabilities"]
            .as_object_mut()
            .map(|c| c.remove("completions"));
    }
    if version >= LegacyVersion::V2025_11_25 && super::tasks::any(decl) {
        // Experimental core tasks; no `list`: a task lives only in its id (see `tasks.rs`).
        result["capabilities"]["tasks"] =
            json!({"cancel": {}, "requests": {"tools": {"call": {}}}});
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

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_declaration::{CompileOptions, compile, parse_manifest};

    #[test]
    fn server_info_fields_are_sent_only_to_versions_that_know_them() {
        let manifest = parse_manifest(
            "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {name: tracker}\nspec:\n  title: Tracker\n  description: Issues of the platform team\n  websiteUrl: https://wiki.example.com/tracker\n  icons: [{src: 'https://example.com/i.png'}]\n",
            ".".into(),
        )
        .unwrap();
        let decl = compile(&manifest, &CompileOptions::default()).unwrap();
        let keys = |version| {
            let result = initialize_result(&decl, version);
            let mut keys: Vec<String> = result["serverInfo"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
            keys.sort();
            keys.join(",")
        };
        assert_eq!(
            keys(LegacyVersion::V2025_11_25),
            "description,icons,name,title,version,websiteUrl"
        );
        assert_eq!(keys(LegacyVersion::V2025_06_18), "name,title,version");
        assert_eq!(keys(LegacyVersion::V2024_11_05), "name,version");
    }

    #[test]
    fn authorization_extensions_are_advertised_only_under_spec_auth() {
        let decl = |auth: &str| {
            let text = format!(
                "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {{name: a}}\nspec:\n{auth}"
            );
            compile(
                &parse_manifest(&text, ".".into()).unwrap(),
                &CompileOptions::default(),
            )
            .unwrap()
        };
        let open = decl("  title: Open\n");
        let guarded = decl("  auth: {issuer: 'https://issuer.example.com'}\n");
        let expected = json!({
            "io.modelcontextprotocol/oauth-client-credentials": {},
            "io.modelcontextprotocol/enterprise-managed-authorization": {},
        });
        assert_eq!(
            discover_result(&guarded)["capabilities"]["extensions"],
            expected
        );
        assert_eq!(
            initialize_result(&guarded, LegacyVersion::V2025_11_25)["capabilities"]["extensions"],
            expected
        );
        assert!(
            discover_result(&open)["capabilities"]
                .get("extensions")
                .is_none()
        );
        assert!(
            initialize_result(&open, LegacyVersion::V2025_11_25)["capabilities"]
                .get("extensions")
                .is_none()
        );
    }
}
