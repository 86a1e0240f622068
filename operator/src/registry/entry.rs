//! One `MCPServer` as a registry entry: its `server.json` (the 2025-12-11 schema), the
//! registry's official `_meta` (status and times), and kube-mcp's own `_meta` (what it serves,
//! whether it is healthy). Pure: built from the object alone, so every operator replica
//! derives the same entry, times included.

use super::settings::Settings;
use crate::resource::{Condition, MCPServer};
use crate::suspend::SUSPENDED;
use jiff::Timestamp;
use kube::ResourceExt as _;
use mcp_declaration::Icon;
use serde_json::{Map, Value, json};

/// `$schema` of every published `server.json`.
pub const SERVER_SCHEMA: &str =
    "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json";
/// `_meta` key of the registry's own metadata (status, times).
pub const OFFICIAL_META: &str = "io.modelcontextprotocol.registry/official";
/// `_meta` key of what kube-mcp knows about the server.
pub const KUBE_MCP_META: &str = "io.kube-mcp/server";
/// Annotation choosing the part of the name after the `/` (default `<namespace>.<name>`).
pub const NAME_ANNOTATION: &str = "kube-mcp.io/registry-name";

/// Items of each kind listed in kube-mcp's `_meta` (a server may declare thousands of tools;
/// the entry stays small, and says how many it left out).
pub const MAX_LISTED_ITEMS: usize = 200;
/// Characters kept of an item's description in the listing.
const MAX_ITEM_DESCRIPTION: usize = 300;
/// `server.json` bounds `title` and `description` at 100 characters.
const MAX_SERVER_TEXT: usize = 100;
/// `statusMessage` is at most 500 characters.
const MAX_STATUS_MESSAGE: usize = 500;
/// Registry icons are `https:` links of at most 255 characters, of these types.
const ICON_TYPES: &[&str] = &[
    "image/png",
    "image/jpeg",
    "image/jpg",
    "image/svg+xml",
    "image/webp",
];

/// The registry's lifecycle status of an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Ready and Verified: clients may use it.
    Active,
    /// Suspended, or not (yet) serving what it declares.
    Deprecated,
    /// The MCPServer is gone (a tombstone).
    Deleted,
}

impl Status {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Deprecated => "deprecated",
            Self::Deleted => "deleted",
        }
    }
}

/// A published server, as the registry answers it.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// Registry name, `<prefix>/<suffix>`.
    pub name: String,
    /// Registry version.
    pub version: String,
    /// The MCPServer's uid (names may be reused after a deletion).
    pub uid: String,
    /// `namespace/name` of the MCPServer.
    pub object: String,
    /// Lifecycle status.
    pub status: Status,
    /// Why the status is not `active`.
    pub status_message: Option<String>,
    /// When the status last changed.
    pub status_changed_at: Option<Timestamp>,
    /// When the MCPServer was created.
    pub published_at: Timestamp,
    /// When anything the entry shows last changed.
    pub updated_at: Timestamp,
    /// The `server.json` document.
    pub server: Value,
    /// kube-mcp's `_meta` entry.
    pub kube_mcp: Value,
    /// Lower-cased name, title and description, for `search`.
    pub search_text: String,
}

impl Entry {
    /// The `ServerResponse` of the API.
    pub fn response(&self) -> Value {
        let mut official = json!({
            "status": self.status.as_str(),
            "publishedAt": self.published_at.to_string(),
            "updatedAt": self.updated_at.to_string(),
            "isLatest": true,
        });
        if let Some(message) = &self.status_message {
            official["statusMessage"] = json!(message);
        }
        if let Some(at) = self.status_changed_at {
            official["statusChangedAt"] = json!(at.to_string());
        }
        json!({
            "server": self.server,
            "_meta": {OFFICIAL_META: official, KUBE_MCP_META: self.kube_mcp},
        })
    }

    /// The same entry under another registry name.
    pub fn rename(&mut self, name: &str) {
        if self.name == name {
            return;
        }
        let rest = self
            .search_text
            .split_once('\n')
            .map_or("", |(_, rest)| rest)
            .to_owned();
        self.search_text = format!("{}\n{rest}", name.to_lowercase());
        self.name = name.to_owned();
        self.server["name"] = json!(name);
    }

    /// This entry once its MCPServer is gone: status `deleted` since `at`.
    pub fn tombstone(mut self, at: Timestamp) -> Self {
        self.status = Status::Deleted;
        self.status_message = Some("the MCPServer was deleted".into());
        self.status_changed_at = Some(at);
        self.updated_at = self.updated_at.max(at);
        if let Some(meta) = self.kube_mcp.as_object_mut() {
            meta.insert("deleted".into(), json!(true));
        }
        self
    }
}

/// The default name suffix of a server: `<namespace>.<name>` (both DNS labels or subdomains,
/// so always within the registry's `[a-zA-Z0-9._-]+`).
pub fn default_suffix(server: &MCPServer) -> String {
    format!(
        "{}.{}",
        server.namespace().unwrap_or_default(),
        server.name_any()
    )
}

/// Whether `suffix` may follow the `/` of a registry name.
pub fn valid_suffix(suffix: &str) -> bool {
    (1..=100).contains(&suffix.len())
        && suffix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The name suffix a server asks for (its annotation, when valid), else the default.
pub fn wanted_suffix(server: &MCPServer) -> String {
    server
        .annotations()
        .get(NAME_ANNOTATION)
        .filter(|s| valid_suffix(s))
        .cloned()
        .unwrap_or_else(|| default_suffix(server))
}

/// The entry of `server` named `<prefix>/<suffix>`, or `None` when it is not published.
pub fn entry(server: &MCPServer, settings: &Settings, suffix: &str) -> Option<Entry> {
    if !settings.publishes(server) {
        return None;
    }
    let decl = &server.spec.declaration;
    let name = format!("{}/{suffix}", settings.prefix);
    let version = decl
        .version
        .clone()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            // No declared version: one derived from the generation still changes with every edit.
            format!("0.0.0-gen.{}", server.metadata.generation.unwrap_or(0))
        });
    let published_at = server
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(Timestamp::UNIX_EPOCH, |t| t.0);
    let (status, status_message, status_changed_at) = status_of(server);
    let updated_at = [Some(published_at), status_changed_at, edited_at(server)]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(published_at);
    let description = decl
        .description
        .clone()
        .or_else(|| decl.title.clone())
        .filter(|d| !d.trim().is_empty())
        .unwrap_or_else(|| format!("MCP server {}", server_path(server)));
    let mut json = json!({
        "$schema": SERVER_SCHEMA,
        "name": name,
        "description": truncate(&description, MAX_SERVER_TEXT),
        "version": version,
    });
    if let Some(title) = decl.title.as_deref().filter(|t| !t.trim().is_empty()) {
        json["title"] = json!(truncate(title, MAX_SERVER_TEXT));
    }
    if let Some(url) = decl.website_url.as_deref().filter(|u| web_url(u)) {
        json["websiteUrl"] = json!(url);
    }
    if let Some(repo) = decl.repository.as_ref().filter(|r| web_url(&r.url)) {
        json["repository"] = serde_json::to_value(repo).unwrap_or(Value::Null);
    }
    let icons: Vec<Value> = decl.icons.iter().filter_map(registry_icon).collect();
    if !icons.is_empty() {
        json["icons"] = json!(icons);
    }
    let url = server.status.as_ref().and_then(|s| s.url.clone());
    if let Some(remotes) = url.as_deref().and_then(remotes) {
        json["remotes"] = remotes;
    }
    let search_text = format!(
        "{name}\n{}\n{description}",
        decl.title.as_deref().unwrap_or_default()
    )
    .to_lowercase();
    Some(Entry {
        kube_mcp: kube_mcp_meta(server, url.as_deref()),
        name,
        version,
        uid: server.uid().unwrap_or_default(),
        object: server_path(server),
        status,
        status_message,
        status_changed_at,
        published_at,
        updated_at,
        server: json,
        search_text,
    })
}

fn server_path(server: &MCPServer) -> String {
    format!(
        "{}/{}",
        server.namespace().unwrap_or_default(),
        server.name_any()
    )
}

/// `active` when Ready and Verified (when the operator verifies at all); `deprecated` when
/// suspended or not serving, with the reason; and when that last changed.
fn status_of(server: &MCPServer) -> (Status, Option<String>, Option<Timestamp>) {
    let status = server.status.clone().unwrap_or_default();
    let condition = |type_: &str| status.condition(type_).cloned();
    let (ready, verified, suspended) = (
        condition("Ready"),
        condition("Verified"),
        condition(SUSPENDED).filter(|c| c.status == "True"),
    );
    let changed = [&ready, &verified, &suspended]
        .into_iter()
        .flatten()
        .map(|c| c.last_transition_time.0)
        .max();
    if server.spec.deployment.suspend == Some(true) || suspended.is_some() {
        return (
            Status::Deprecated,
            Some("suspended: spec.suspend is true".into()),
            changed,
        );
    }
    let not_true = |c: &Option<Condition>, type_: &str| match c {
        Some(c) if c.status == "True" => None,
        Some(c) => Some(format!(
            "{type_}={} ({}): {}",
            c.status, c.reason, c.message
        )),
        None => Some(format!("{type_} not reported yet")),
    };
    // Without a Verified condition at all the operator does not verify; Ready decides alone.
    let problem = not_true(&ready, "Ready").or_else(|| {
        verified
            .as_ref()
            .and_then(|_| not_true(&verified, "Verified"))
    });
    match problem {
        None => (Status::Active, None, changed),
        Some(problem) => (
            Status::Deprecated,
            Some(truncate(
                &format!("not serving: {problem}"),
                MAX_STATUS_MESSAGE,
            )),
            changed,
        ),
    }
}

/// When someone last changed the object (spec, labels, annotations): the newest time of a
/// managed-fields entry other than status writes.
fn edited_at(server: &MCPServer) -> Option<Timestamp> {
    server
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|f| f.subresource.as_deref() != Some("status"))
        .filter_map(|f| f.time.as_ref().map(|t| t.0))
        .max()
}

/// `streamable-http` at the MCP URL, and `sse` beside it (every runtime serves both).
fn remotes(url: &str) -> Option<Value> {
    if !web_url(url) {
        return None;
    }
    let mut remotes = vec![json!({"type": "streamable-http", "url": url})];
    if let Some(base) = url.strip_suffix("/mcp") {
        remotes.push(json!({"type": "sse", "url": format!("{base}/sse")}));
    }
    Some(Value::Array(remotes))
}

/// A declared icon as the registry accepts it, or `None` (data: URIs, long links and other
/// types are left to `serverInfo`).
fn registry_icon(icon: &Icon) -> Option<Value> {
    let usable = icon.src.len() <= 255
        && url::Url::parse(&icon.src).is_ok_and(|u| u.scheme() == "https" && u.has_host());
    if !usable {
        return None;
    }
    let mut out = json!({"src": icon.src});
    if let Some(mime) = icon.mime_type.as_deref().filter(|m| ICON_TYPES.contains(m)) {
        out["mimeType"] = json!(mime);
    }
    let sizes: Vec<&String> = icon.sizes.iter().filter(|s| icon_size(s)).collect();
    if !sizes.is_empty() {
        out["sizes"] = json!(sizes);
    }
    if let Some(theme) = icon.theme {
        out["theme"] = serde_json::to_value(theme).unwrap_or(Value::Null);
    }
    Some(out)
}

fn icon_size(size: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    size == "any"
        || size
            .split_once('x')
            .is_some_and(|(w, h)| digits(w) && digits(h))
}

fn web_url(text: &str) -> bool {
    !text.chars().any(char::is_whitespace)
        && url::Url::parse(text)
            .is_ok_and(|u| matches!(u.scheme(), "https" | "http") && u.has_host())
}

/// At most `max` characters of `text` (an ellipsis marks a cut).
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// kube-mcp's `_meta`: where the object is, its health, the exact items it declares (names,
/// titles, annotations, required scopes), the auth issuer and the protocol versions served.
fn kube_mcp_meta(server: &MCPServer, url: Option<&str>) -> Value {
    let decl = &server.spec.declaration;
    let status = server.status.clone().unwrap_or_default();
    let condition = |type_: &str| {
        status.condition(type_).map(|c| {
            json!({"status": c.status, "reason": c.reason, "message": truncate(&c.message, MAX_STATUS_MESSAGE)})
        })
    };
    let mut meta = Map::new();
    meta.insert("namespace".into(), json!(server.namespace()));
    meta.insert("name".into(), json!(server.name_any()));
    meta.insert("generation".into(), json!(server.metadata.generation));
    if let Ok(hash) = mcp_declaration::hash_of(&server.name_any(), decl) {
        meta.insert("declarationHash".into(), json!(hash));
    }
    meta.insert("url".into(), json!(url));
    for (key, type_) in [
        ("accepted", "Accepted"),
        ("ready", "Ready"),
        ("verified", "Verified"),
    ] {
        meta.insert(key.into(), condition(type_).unwrap_or(Value::Null));
    }
    meta.insert(
        "suspended".into(),
        json!(server.spec.deployment.suspend == Some(true)),
    );
    meta.insert(
        "protocolVersions".into(),
        json!(mcp_protocol::SUPPORTED_VERSIONS),
    );
    if let Some(auth) = &decl.auth {
        meta.insert(
            "auth".into(),
            json!({"issuer": auth.issuer, "requiredScopes": auth.required_scopes}),
        );
    }
    if let Some(counts) = status.counts {
        meta.insert(
            "counts".into(),
            serde_json::to_value(counts).unwrap_or(Value::Null),
        );
    }
    items(
        &mut meta,
        "tools",
        decl.tools.iter().map(|t| {
            let mut item = json!({"name": t.name});
            optional(&mut item, "title", t.title.as_deref());
            optional(&mut item, "description", t.description.as_deref());
            if let Some(annotations) = &t.annotations {
                item["annotations"] = serde_json::to_value(annotations).unwrap_or(Value::Null);
            }
            scopes(&mut item, &t.required_scopes);
            item
        }),
    );
    items(
        &mut meta,
        "prompts",
        decl.prompts.iter().map(|p| {
            let mut item = json!({"name": p.name});
            optional(&mut item, "title", p.title.as_deref());
            optional(&mut item, "description", p.description.as_deref());
            scopes(&mut item, &p.required_scopes);
            item
        }),
    );
    items(
        &mut meta,
        "resources",
        decl.resources.iter().map(|r| {
            let mut item = json!({"uri": r.uri, "name": r.name});
            optional(&mut item, "title", r.title.as_deref());
            optional(&mut item, "description", r.description.as_deref());
            optional(&mut item, "mimeType", r.mime_type.as_deref());
            scopes(&mut item, &r.required_scopes);
            item
        }),
    );
    items(
        &mut meta,
        "resourceTemplates",
        decl.resource_templates.iter().map(|r| {
            let mut item = json!({"uriTemplate": r.uri_template, "name": r.name});
            optional(&mut item, "title", r.title.as_deref());
            optional(&mut item, "description", r.description.as_deref());
            optional(&mut item, "mimeType", r.mime_type.as_deref());
            scopes(&mut item, &r.required_scopes);
            item
        }),
    );
    Value::Object(meta)
}

/// Lists at most [`MAX_LISTED_ITEMS`] items under `key`, and how many were left out.
fn items(meta: &mut Map<String, Value>, key: &str, all: impl ExactSizeIterator<Item = Value>) {
    let total = all.len();
    let listed: Vec<Value> = all.take(MAX_LISTED_ITEMS).collect();
    meta.insert(key.into(), Value::Array(listed));
    if total > MAX_LISTED_ITEMS {
        meta.insert(format!("{key}Omitted"), json!(total - MAX_LISTED_ITEMS));
    }
}

fn optional(item: &mut Value, key: &str, value: Option<&str>) {
    if let Some(value) = value {
        item[key] = json!(truncate(value, MAX_ITEM_DESCRIPTION));
    }
}

fn scopes(item: &mut Value, scopes: &[String]) {
    if !scopes.is_empty() {
        item["requiredScopes"] = json!(scopes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::catalog::tests::server;

    fn entry_of(server: &MCPServer) -> Entry {
        entry(server, &Settings::default(), &wanted_suffix(server)).unwrap()
    }

    #[test]
    fn a_ready_verified_server_is_active_with_both_remotes() {
        let e = entry_of(&server("ns", "weather", "2025-01-01T00:00:00Z", true));
        assert_eq!(e.status, Status::Active);
        assert_eq!(e.name, "local.kube-mcp/ns.weather");
        assert_eq!(
            e.server["remotes"],
            json!([
                {"type": "streamable-http", "url": "https://mcp.example.com/weather/mcp"},
                {"type": "sse", "url": "https://mcp.example.com/weather/sse"},
            ])
        );
        let meta = &e.response()["_meta"][KUBE_MCP_META];
        assert_eq!(
            meta["tools"],
            json!([{"name": "greet", "title": "Greet", "annotations": {"readOnlyHint": true}, "requiredScopes": ["greet"]}])
        );
        assert_eq!(meta["ready"]["status"], "True");
        assert_eq!(meta["protocolVersions"][0], mcp_protocol::MODERN_VERSION);
    }

    #[test]
    fn status_says_why_a_server_is_not_active() {
        let not_ready = entry_of(&server("ns", "a", "2025-01-01T00:00:00Z", false));
        assert_eq!(not_ready.status, Status::Deprecated);
        assert_eq!(
            not_ready.status_message.as_deref(),
            Some("not serving: Ready=False (Available): ok")
        );
        let mut suspended = server("ns", "a", "2025-01-01T00:00:00Z", true);
        suspended.spec.deployment.suspend = Some(true);
        let e = entry_of(&suspended);
        assert_eq!(
            (e.status, e.status_message.as_deref()),
            (Status::Deprecated, Some("suspended: spec.suspend is true"))
        );
        // An operator that does not verify reports no Verified condition: Ready decides.
        let mut unverified = server("ns", "a", "2025-01-01T00:00:00Z", true);
        if let Some(status) = unverified.status.as_mut() {
            status.conditions.retain(|c| c.type_ != "Verified");
        }
        assert_eq!(entry_of(&unverified).status, Status::Active);
    }

    #[test]
    fn fields_are_fitted_to_server_json() {
        let mut s = server("ns", "a", "2025-01-01T00:00:00Z", true);
        let decl = &mut s.spec.declaration;
        decl.title = Some("T".repeat(150));
        decl.description = None;
        decl.version = Some("1.4.0".into());
        decl.icons = serde_json::from_value(json!([
            {"src": "data:image/png;base64,AAAA"},
            {"src": "https://example.com/i.png", "mimeType": "image/gif", "sizes": ["48x48", "big"]},
        ]))
        .unwrap();
        decl.website_url = Some("javascript:alert(1)".into());
        let e = entry_of(&s);
        assert_eq!(e.server["title"].as_str().unwrap().chars().count(), 100);
        assert_eq!(
            e.server["description"].as_str().unwrap().chars().count(),
            100
        );
        assert_eq!(e.version, "1.4.0");
        assert_eq!(
            e.server["icons"],
            json!([{"src": "https://example.com/i.png", "sizes": ["48x48"]}])
        );
        assert!(e.server.get("websiteUrl").is_none());
    }

    #[test]
    fn updated_at_is_the_latest_edit_status_change_or_creation() {
        let mut s = server("ns", "a", "2025-01-01T00:00:00Z", true);
        s.metadata.managed_fields = Some(
            serde_json::from_value(json!([
                {"manager": "kubectl", "operation": "Apply", "time": "2025-03-01T00:00:00Z"},
                {"manager": "mcp-operator", "operation": "Apply", "subresource": "status", "time": "2025-09-01T00:00:00Z"},
            ]))
            .unwrap(),
        );
        assert_eq!(entry_of(&s).updated_at.to_string(), "2025-03-01T00:00:00Z");
        let e = entry_of(&s).tombstone("2026-01-01T00:00:00Z".parse().unwrap());
        assert_eq!(e.status, Status::Deleted);
        assert_eq!(e.updated_at.to_string(), "2026-01-01T00:00:00Z");
    }
}
