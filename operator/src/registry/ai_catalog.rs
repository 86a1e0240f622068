//! `GET /.well-known/ai-catalog.json` (with `--server-cards`): the AI Catalog of one host, that
//! is the server cards (SEP-2127, a draft) of the published servers whose MCP URL is on the host
//! the request names. The registry's Ingress routes that path of each such host here; the cards
//! themselves are served by the runtimes, at `<mcp url>/server-card`. Pure over the catalog.

use super::catalog::Catalog;
use super::entry::Entry;
use super::state::{RegistryState, error};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The card's media type, as catalog entries name it.
pub const CARD_TYPE: &str = "application/mcp-server-card+json";
/// The AI Catalog version written.
const SPEC_VERSION: &str = "1.0";
/// Most entries one catalog lists (the rest are left out, oldest names last).
pub const MAX_ENTRIES: usize = 1000;

/// The catalog of `host` (a host name, any port and case).
pub fn ai_catalog(catalog: &Catalog, host: &str) -> Value {
    let host = bare_host(host);
    let entries: Vec<Value> = catalog
        .live()
        .filter_map(|entry| card_entry(entry, &host))
        .take(MAX_ENTRIES)
        .collect();
    json!({"specVersion": SPEC_VERSION, "entries": entries})
}

/// `entry`'s line in the catalog of `host`, when its MCP URL is on that host.
fn card_entry(entry: &Entry, host: &str) -> Option<Value> {
    let mcp = entry.server["remotes"]
        .as_array()?
        .iter()
        .find(|r| r["type"] == "streamable-http")?["url"]
        .as_str()?;
    let url = url::Url::parse(mcp).ok()?;
    if url.host_str().map(str::to_ascii_lowercase).as_deref() != Some(host) {
        return None;
    }
    let server = &entry.server;
    let mut line = json!({
        "identifier": entry.name,
        "displayName": server.get("title").unwrap_or(&server["name"]),
        "type": CARD_TYPE,
        "url": format!("{}/server-card", mcp.trim_end_matches('/')),
        "version": entry.version,
        "updatedAt": entry.updated_at.to_string(),
    });
    if let Some(description) = server.get("description") {
        line["description"] = description.clone();
    }
    Some(line)
}

/// `Host` without its port, lower-cased (`[::1]:80` keeps its brackets, as URLs write them).
fn bare_host(host: &str) -> String {
    let host = host.trim();
    let without_port = match host.rsplit_once(':') {
        Some((name, port)) if !name.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => {
            if name.starts_with('[') && !name.ends_with(']') {
                host
            } else {
                name
            }
        }
        _ => host,
    };
    without_port.to_ascii_lowercase()
}

/// The handler: 404 unless the runtimes serve cards.
pub async fn serve(State(state): State<RegistryState>, request: Request) -> Response {
    if !state.read(|c| c.settings().server_cards) {
        return error(StatusCode::NOT_FOUND, "server cards are not enabled");
    }
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| request.uri().host().map(str::to_owned))
        .unwrap_or_default();
    let body = state.read(|c| ai_catalog(c, &host));
    let mut response = axum::Json(body).into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=60"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::catalog::tests::{at, server};
    use crate::registry::settings::Settings;

    fn catalog() -> Catalog {
        let mut on_other_host = server("ns", "elsewhere", "2025-01-01T00:00:00Z", true);
        on_other_host.status.as_mut().unwrap().url =
            Some("https://tools.example.org/elsewhere/mcp".into());
        let mut catalog = Catalog::new(
            Settings {
                server_cards: true,
                ..Settings::default()
            },
            vec![None],
        );
        catalog.list_started(None);
        for s in [
            server("ns", "weather", "2025-01-01T00:00:00Z", true),
            server("ns", "tracker", "2025-01-01T00:00:00Z", false),
            on_other_host,
        ] {
            catalog.apply(None, &s, at("2026-01-01T00:00:00Z"));
        }
        catalog.list_done(None, at("2026-01-01T00:00:00Z"));
        catalog
    }

    #[test]
    fn a_host_lists_the_cards_of_its_servers_only() {
        let catalog = catalog();
        let listed = ai_catalog(&catalog, "MCP.example.com:443");
        assert_eq!(listed["specVersion"], "1.0");
        let entries = listed["entries"].as_array().unwrap();
        let ids: Vec<&str> = entries
            .iter()
            .map(|e| e["identifier"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            ["local.kube-mcp/ns.tracker", "local.kube-mcp/ns.weather"]
        );
        let weather = &entries[1];
        assert_eq!(weather["type"], CARD_TYPE);
        assert_eq!(
            weather["url"],
            "https://mcp.example.com/weather/mcp/server-card"
        );
        assert_eq!(weather["displayName"], "weather title");
        assert_eq!(weather["description"], "The weather server");
        assert_eq!(weather["version"], "0.0.0-gen.2");
        let other = ai_catalog(&catalog, "tools.example.org");
        assert_eq!(other["entries"].as_array().unwrap().len(), 1);
        assert_eq!(
            other["entries"][0]["url"],
            "https://tools.example.org/elsewhere/mcp/server-card"
        );
        assert!(
            ai_catalog(&catalog, "registry.example.com")["entries"]
                .as_array()
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_deleted_server_leaves_the_catalog() {
        let mut catalog = catalog();
        catalog.delete(
            &server("ns", "weather", "2025-01-01T00:00:00Z", true),
            at("2026-02-01T00:00:00Z"),
        );
        let listed = ai_catalog(&catalog, "mcp.example.com");
        assert_eq!(listed["entries"].as_array().unwrap().len(), 1);
        assert_eq!(
            listed["entries"][0]["identifier"],
            "local.kube-mcp/ns.tracker"
        );
    }

    #[tokio::test]
    async fn the_route_answers_by_host_and_only_when_cards_are_on() {
        use axum::body::Body;
        use tower::ServiceExt as _;
        let get = |state: RegistryState, host: &'static str| async move {
            let response = crate::registry::router(state)
                .oneshot(
                    axum::http::Request::get("/.well-known/ai-catalog.json")
                        .header("host", host)
                        .body(Body::empty())
                        .unwrap(),
                )
                .await
                .unwrap();
            let status = response.status();
            let cors = response
                .headers()
                .get("access-control-allow-origin")
                .cloned();
            let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
                .await
                .unwrap();
            (
                status,
                cors,
                serde_json::from_slice::<Value>(&bytes).unwrap(),
            )
        };
        let (status, cors, body) = get(RegistryState::new(catalog()), "mcp.example.com").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(cors.unwrap(), "*");
        assert_eq!(body["entries"].as_array().unwrap().len(), 2);
        let off = crate::registry::catalog::tests::catalog_of(&[server(
            "ns",
            "weather",
            "2025-01-01T00:00:00Z",
            true,
        )]);
        let (status, _, _) = get(RegistryState::new(off), "mcp.example.com").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }

    #[test]
    fn hosts_lose_their_port_and_case() {
        assert_eq!(bare_host("MCP.Example.com:8443"), "mcp.example.com");
        assert_eq!(bare_host("mcp.example.com"), "mcp.example.com");
        assert_eq!(bare_host("[::1]:80"), "[::1]");
        assert_eq!(bare_host("[::1]"), "[::1]");
    }
}
