//! MCP Apps (SEP-1865) at compile time: a tool's `ui` must name a declared view (a `ui://`
//! resource of type `text/html;profile=mcp-app`), and a view's CSP origins must be literal
//! `https` origins, since hosts let the view reach exactly those and nothing else. Builds the
//! `_meta.ui` objects the lists and reads carry. Pure.

use super::Compiler;
use crate::types::{MCP_APP_MIME_TYPE, Resource, ResourceUi, ToolUi, UiVisibility};
use serde_json::{Value, json};
use std::collections::HashSet;

/// Most origins in one CSP list.
const MAX_ORIGINS: usize = 32;

/// What a tool's view changes in how it is listed.
#[derive(Debug)]
pub struct CompiledToolUi {
    /// Only the view may call it: not listed to clients without MCP Apps.
    pub app_only: bool,
    /// Its `tools/list` entry without `_meta.ui`, for clients without MCP Apps.
    pub plain: Value,
}

impl Compiler<'_> {
    /// `_meta.ui` of a tool whose `ui` (at `path`) names one of `resources`.
    pub(super) fn tool_ui(&mut self, path: &str, ui: &ToolUi, resources: &[Resource]) -> Value {
        let view = resources.iter().find(|r| r.uri == ui.resource);
        match view {
            None => self.error(
                format!("{path}.resource"),
                format!("names no resource of spec.resources: `{}`", ui.resource),
            ),
            Some(view) if !is_view(view) => self.error(
                format!("{path}.resource"),
                format!(
                    "`{}` is not an MCP Apps view: a `ui://` resource with mimeType `{MCP_APP_MIME_TYPE}`",
                    ui.resource
                ),
            ),
            Some(_) => {}
        }
        let mut seen = HashSet::new();
        for (i, who) in ui.visibility.iter().enumerate() {
            if !seen.insert(*who) {
                self.error(format!("{path}.visibility[{i}]"), "listed twice");
            }
        }
        let mut meta = json!({"resourceUri": ui.resource});
        if !ui.visibility.is_empty() {
            meta["visibility"] = json!(ui.visibility);
        }
        meta
    }

    /// `_meta.ui` of a view resource (at `path`), when it declares `ui`; checks that a resource
    /// of the MCP Apps type is a `ui://` one.
    pub(super) fn resource_ui(&mut self, path: &str, resource: &Resource) -> Option<Value> {
        let typed = resource.mime_type.as_deref() == Some(MCP_APP_MIME_TYPE);
        if typed && !resource.uri.starts_with("ui://") {
            self.error(
                format!("{path}.uri"),
                format!("a resource of type `{MCP_APP_MIME_TYPE}` needs a `ui://` URI"),
            );
        }
        let ui = resource.ui.as_ref()?;
        if !is_view(resource) {
            self.error(
                format!("{path}.ui"),
                format!("only on a `ui://` resource with mimeType `{MCP_APP_MIME_TYPE}`"),
            );
        }
        if resource.http.is_some() {
            self.error(
                format!("{path}.ui"),
                "a view's HTML is declared (`text`, `blob` or `file`), not fetched with `http`",
            );
        }
        if let Some(csp) = &ui.csp {
            let lists = [
                ("connectDomains", &csp.connect_domains, true),
                ("resourceDomains", &csp.resource_domains, false),
                ("frameDomains", &csp.frame_domains, false),
                ("baseUriDomains", &csp.base_uri_domains, false),
            ];
            for (name, origins, sockets) in lists {
                let at = format!("{path}.ui.csp.{name}");
                if origins.len() > MAX_ORIGINS {
                    self.error(at.clone(), format!("at most {MAX_ORIGINS} origins"));
                }
                for (i, origin) in origins.iter().enumerate() {
                    if let Err(why) = literal_origin(origin, sockets) {
                        self.error(format!("{at}[{i}]"), why);
                    }
                }
            }
        }
        Some(meta(ui))
    }
}

/// Whether `resource` is an MCP Apps view.
fn is_view(resource: &Resource) -> bool {
    resource.uri.starts_with("ui://") && resource.mime_type.as_deref() == Some(MCP_APP_MIME_TYPE)
}

fn meta(ui: &ResourceUi) -> Value {
    serde_json::to_value(ui).unwrap_or_else(|_| json!({}))
}

/// Whether `tools` and a tool's `visibility` leave it to the view alone.
pub(super) fn app_only(visibility: &[UiVisibility]) -> bool {
    !visibility.is_empty() && !visibility.contains(&UiVisibility::Model)
}

/// `origin` as a literal origin: `https://host[:port]` (or `wss://` where `sockets`), with no
/// path, query, credentials or wildcard: the host lets the view reach exactly it.
fn literal_origin(origin: &str, sockets: bool) -> Result<(), String> {
    let why = || {
        format!(
            "`{origin}` is not a literal origin such as https://api.example.com{}",
            if sockets { " (or wss://…)" } else { "" }
        )
    };
    let rest = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("wss://").filter(|_| sockets))
        .ok_or_else(why)?;
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (rest, None),
    };
    let host_ok = !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.parse::<u16>().is_ok_and(|p| p > 0));
    if host_ok && port_ok {
        Ok(())
    } else {
        Err(why())
    }
}

#[cfg(test)]
mod tests {
    use super::literal_origin;

    #[test]
    fn origins_are_literal_https() {
        for good in [
            "https://api.example.com",
            "https://cdn.example.com:8443",
            "https://a-b.c",
        ] {
            assert_eq!(literal_origin(good, false), Ok(()), "{good}");
        }
        assert_eq!(literal_origin("wss://live.example.com", true), Ok(()));
        for bad in [
            "http://api.example.com",
            "wss://live.example.com",
            "https://*.example.com",
            "https://api.example.com/",
            "https://api.example.com/v1",
            "https://user@api.example.com",
            "https://api.example.com:0",
            "https://",
            "api.example.com",
            "https://api..example.com",
            "'self'",
        ] {
            assert!(literal_origin(bad, false).is_err(), "{bad}");
        }
    }
}
