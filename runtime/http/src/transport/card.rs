//! `GET <mcp path>/server-card` (with `--server-card`): the server's card of SEP-2127 (a draft,
//! hence the flag), built from the declaration being served: who it is (`serverInfo`'s name,
//! title, version, description, icons, website), where to connect (`remotes`, with the protocol
//! versions each transport serves and whether a token is needed) and the declaration's hash.
//! Public, like the OAuth metadata: not authenticated, readable from any origin (CORS `*`), the
//! Host still checked; `ETag` is the declaration's hash, so a client revalidates with
//! `If-None-Match` and gets a 304 until a reload changes what is served. No I/O.

use super::{AppState, guard};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mcp_declaration::Compiled;
use mcp_protocol::{MODERN_VERSION, SUPPORTED_VERSIONS};
use mcp_server::served_declaration;
use serde_json::{Value, json};
use std::sync::Arc;

/// `$schema` of every card.
pub const CARD_SCHEMA: &str =
    "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json";
/// The card's media type.
pub const CARD_TYPE: &str = "application/mcp-server-card+json";
/// `_meta` key of what kube-mcp adds (the declaration's hash and item counts).
pub const CARD_META: &str = "io.kube-mcp/declaration";
/// How long caches may keep a card without asking again (a reload changes it; the `ETag`
/// makes asking cheap).
const CACHE_CONTROL: &str = "public, max-age=300";
/// Longest `If-None-Match` header read (a client lists a few tags, not thousands).
const MAX_IF_NONE_MATCH: usize = 4096;

/// The card of `decl`, served at `public_url` (the `--public-url`, path prefix included; without
/// it the card has no `remotes` and a name under `local`).
pub fn card(decl: &Compiled, public_url: Option<&str>) -> Value {
    let info = &decl.server_info;
    let server = info["name"].as_str().unwrap_or_default();
    let base = public_url
        .and_then(|u| url::Url::parse(u).ok())
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some());
    // A name's namespace is reverse DNS: a host name, not an address or `localhost`.
    let namespace = match base.as_ref().and_then(url::Url::host) {
        Some(url::Host::Domain(domain)) if domain != "localhost" => reverse_dns(domain),
        _ => "local".to_owned(),
    };
    let mut card = json!({
        "$schema": CARD_SCHEMA,
        "name": format!("{namespace}/{}", name_part(server)),
        "version": info["version"].as_str().unwrap_or("0.0.0"),
    });
    for key in ["title", "description", "websiteUrl", "icons"] {
        if let Some(value) = info.get(key) {
            card[key] = value.clone();
        }
    }
    if let Some(base) = base {
        let base = base.as_str().trim_end_matches('/');
        let legacy: Vec<&str> = SUPPORTED_VERSIONS
            .iter()
            .copied()
            .filter(|v| *v != MODERN_VERSION)
            .collect();
        let mut remotes = vec![
            json!({"type": "streamable-http", "url": format!("{base}/mcp"), "supportedProtocolVersions": SUPPORTED_VERSIONS}),
            json!({"type": "sse", "url": format!("{base}/sse"), "supportedProtocolVersions": legacy}),
        ];
        if decl.auth.is_some() {
            for remote in &mut remotes {
                remote["authentication"] = json!({"required": true, "schemes": ["oauth2"]});
            }
        }
        card["remotes"] = json!(remotes);
    }
    card["_meta"] = json!({CARD_META: served_declaration(decl)});
    card
}

/// `mcp.example.com` as `com.example.mcp`; characters a registry name does not allow become
/// `-`.
fn reverse_dns(host: &str) -> String {
    let reversed: Vec<&str> = host.split('.').rev().collect();
    reversed
        .join(".")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect::<String>()
        .trim_matches(['.', '-'])
        .to_owned()
}

/// The part of a name after the `/`: `[a-zA-Z0-9._-]`, other characters become `-`.
fn name_part(name: &str) -> String {
    let part: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    if part.is_empty() {
        "server".into()
    } else {
        part
    }
}

/// `GET`, `HEAD` and `OPTIONS` of the card.
pub(super) async fn serve(State(state): State<Arc<AppState>>, request: Request) -> Response {
    if let Err(why) = guard::host_check(&state.http.origins, request.headers(), request.uri()) {
        return guard::forbidden(why);
    }
    let mut response = match *request.method() {
        Method::OPTIONS => StatusCode::NO_CONTENT.into_response(),
        Method::GET | Method::HEAD => {
            let served = state.server.declaration();
            let etag = format!("\"{}\"", served.hash);
            if matches(request.headers(), &etag) {
                StatusCode::NOT_MODIFIED.into_response()
            } else {
                let body = card(&served, state.auth.settings().public_url.as_deref());
                let mut response = axum::Json(body).into_response();
                response
                    .headers_mut()
                    .insert(header::CONTENT_TYPE, HeaderValue::from_static(CARD_TYPE));
                response
            }
            .with_etag(&etag)
        }
        _ => {
            let mut response = StatusCode::METHOD_NOT_ALLOWED.into_response();
            response.headers_mut().insert(
                header::ALLOW,
                HeaderValue::from_static("GET, HEAD, OPTIONS"),
            );
            response
        }
    };
    let headers = response.headers_mut();
    for (name, value) in [
        (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
        (header::ACCESS_CONTROL_ALLOW_METHODS, "GET, HEAD, OPTIONS"),
        (
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            "Content-Type, If-None-Match",
        ),
        (header::ACCESS_CONTROL_EXPOSE_HEADERS, "ETag"),
        (header::ACCESS_CONTROL_MAX_AGE, "86400"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

trait WithEtag {
    fn with_etag(self, etag: &str) -> Self;
}

impl WithEtag for Response {
    fn with_etag(mut self, etag: &str) -> Self {
        let headers = self.headers_mut();
        if let Ok(value) = HeaderValue::from_str(etag) {
            headers.insert(header::ETAG, value);
        }
        headers.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static(CACHE_CONTROL),
        );
        self
    }
}

/// Whether `If-None-Match` names `etag` (weakly, as RFC 9110 compares for it) or is `*`.
fn matches(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter(|v| v.len() <= MAX_IF_NONE_MATCH)
        .flat_map(|v| v.split(','))
        .map(|tag| tag.trim())
        .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_declaration::{CompileOptions, compile, parse_manifest};

    fn compiled(spec: &str) -> Compiled {
        let manifest = parse_manifest(&format!(
            "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {{name: tracker}}\nspec:\n{spec}"
        ), ".".into())
        .unwrap();
        compile(&manifest, &CompileOptions::default()).unwrap()
    }

    #[test]
    fn the_card_names_the_server_by_its_host_and_lists_both_transports() {
        let decl = compiled(
            "  title: Tracker\n  version: 1.4.0\n  description: Issues <b>here</b>\n  auth: {issuer: 'https://id.example.com'}\n  tools: [{name: t, content: [{type: text, text: x}]}]\n",
        );
        let card = card(&decl, Some("https://mcp.example.com/tracker"));
        assert_eq!(card["name"], "com.example.mcp/tracker");
        assert_eq!(card["version"], "1.4.0");
        assert_eq!(card["description"], "Issues <b>here</b>");
        assert_eq!(
            card["remotes"][0]["url"],
            "https://mcp.example.com/tracker/mcp"
        );
        assert_eq!(
            card["remotes"][1]["url"],
            "https://mcp.example.com/tracker/sse"
        );
        assert_eq!(
            card["remotes"][0]["supportedProtocolVersions"][0],
            MODERN_VERSION
        );
        assert!(
            !card["remotes"][1]["supportedProtocolVersions"]
                .as_array()
                .unwrap()
                .contains(&json!(MODERN_VERSION))
        );
        assert_eq!(card["remotes"][1]["authentication"]["required"], true);
        assert_eq!(card["_meta"][CARD_META]["hash"], decl.hash.as_str());
        assert_eq!(card["_meta"][CARD_META]["tools"], 1);
    }

    #[test]
    fn without_a_public_url_there_is_nothing_to_connect_to() {
        let card = card(&compiled("  tools: []\n"), None);
        assert_eq!(card["name"], "local/tracker");
        assert!(card.get("remotes").is_none());
        assert!(card.get("title").is_none());
        for local in [
            "http://127.0.0.1:8080",
            "http://[::1]:8080",
            "http://localhost:8080",
        ] {
            let card = super::card(&compiled("  tools: []\n"), Some(local));
            assert_eq!(card["name"], "local/tracker", "{local}");
            assert!(
                card["remotes"][0]["url"]
                    .as_str()
                    .unwrap()
                    .starts_with(local)
            );
        }
        assert_eq!(reverse_dns("a.b_c.example"), "example.b-c.a");
        assert_eq!(name_part("a b/c"), "a-b-c");
    }

    #[test]
    fn if_none_match_lists_are_compared_weakly() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_static("\"x\", W/\"abc\""),
        );
        assert!(matches(&headers, "\"abc\""));
        assert!(!matches(&headers, "\"abd\""));
        headers.insert(header::IF_NONE_MATCH, HeaderValue::from_static("*"));
        assert!(matches(&headers, "\"abd\""));
        assert!(!matches(&HeaderMap::new(), "\"abc\""));
    }
}
