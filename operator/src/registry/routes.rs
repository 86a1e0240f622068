//! The registry's HTTP routes: the read-only MCP Registry API `v0.1` (list, versions, one
//! version; writes answered 501), CORS for browser clients and organisation policy checks, and
//! the catalog page. `router(state)` is tested with `oneshot`; no I/O of its own.

use super::ai_catalog;
use super::catalog::Catalog;
use super::entry::Entry;
use super::page;
use super::query::{self, Page, QueryError, encode_cursor};
use super::state::{RegistryState, error};
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use serde_json::{Value, json};

/// The routes.
pub fn router(state: RegistryState) -> Router {
    Router::new()
        .route("/", get(page::catalog_page))
        .route("/catalog.css", get(page::stylesheet))
        .route("/catalog.js", get(page::script))
        .route("/.well-known/ai-catalog.json", get(ai_catalog::serve))
        .route("/v0.1/servers", get(list))
        .route("/v0.1/servers/{*rest}", any(server_routes))
        .route("/v0.1/publish", any(not_supported))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .layer(middleware::from_fn(cors))
        .with_state(state)
}

fn bad_query(problem: &QueryError) -> Response {
    error(StatusCode::BAD_REQUEST, problem.to_string())
}

/// Refuses work while the catalog is incomplete or too many requests are in flight.
async fn guard(State(state): State<RegistryState>, request: Request, next: Next) -> Response {
    if request.method() == Method::OPTIONS {
        return next.run(request).await;
    }
    let Ok(_permit) = state.in_flight.clone().try_acquire_owned() else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many requests in flight; retry",
        );
    };
    if !state.read(Catalog::synced) {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the registry is still reading the cluster's MCPServers; retry",
        );
    }
    next.run(request).await
}

/// CORS as registry clients need it: any origin may read (no credentials are involved), and a
/// preflight of any path is answered here.
async fn cors(request: Request, next: Next) -> Response {
    let preflight = request.method() == Method::OPTIONS;
    let mut response = if preflight {
        StatusCode::NO_CONTENT.into_response()
    } else {
        next.run(request).await
    };
    let headers = response.headers_mut();
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    if preflight {
        for (name, value) in [
            (header::ACCESS_CONTROL_ALLOW_METHODS, "GET, OPTIONS"),
            (
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                "Authorization, Content-Type",
            ),
            (header::ACCESS_CONTROL_MAX_AGE, "86400"),
        ] {
            headers.insert(name, HeaderValue::from_static(value));
        }
    }
    response
}

/// `GET /v0.1/servers`.
async fn list(State(state): State<RegistryState>, request: Request) -> Response {
    let query = match query::parse_list(request.uri().query()) {
        Ok(query) => query,
        Err(error) => return bad_query(&error),
    };
    let page = state.read(|catalog| catalog.list(&query));
    axum::Json(server_list(&page)).into_response()
}

/// The `ServerList` of a page.
pub fn server_list(page: &Page) -> Value {
    let mut metadata = json!({"count": page.entries.len()});
    if let Some(next) = &page.next_cursor {
        metadata["nextCursor"] = json!(encode_cursor(next));
    }
    json!({
        "servers": page.entries.iter().map(Entry::response).collect::<Vec<_>>(),
        "metadata": metadata,
    })
}

/// What a path under `/v0.1/servers/` names.
#[derive(Debug, PartialEq, Eq)]
enum ServerPath {
    /// `{serverName}/versions`.
    Versions(String),
    /// `{serverName}/versions/{version}`.
    Version(String, String),
    /// `{serverName}/status` or `{serverName}/versions/{version}/status` (writes).
    Status,
}

/// Splits a decoded path after `/v0.1/servers/`. A name has exactly one `/`, so it is the first
/// two segments whether the client encoded its `/` (`%2F`, as the API asks) or not.
fn parse_server_path(rest: &str) -> Option<ServerPath> {
    let segments: Vec<&str> = rest.split('/').collect();
    match segments.as_slice() {
        [ns, name, "versions"] => Some(ServerPath::Versions(format!("{ns}/{name}"))),
        [ns, name, "versions", version] if !version.is_empty() => Some(ServerPath::Version(
            format!("{ns}/{name}"),
            (*version).to_owned(),
        )),
        [_, _, "status"] | [_, _, "versions", _, "status"] => Some(ServerPath::Status),
        _ => None,
    }
}

/// Everything under `/v0.1/servers/`: reads answered, writes refused with 501.
async fn server_routes(State(state): State<RegistryState>, request: Request) -> Response {
    // The raw path, decoded once here (axum's wildcard capture would too; reading the URI
    // keeps `%2F` handling in one place).
    let raw = request
        .uri()
        .path()
        .strip_prefix("/v0.1/servers/")
        .unwrap_or_default();
    let decoded = match percent_decode(raw) {
        Some(decoded) => decoded,
        None => return error(StatusCode::BAD_REQUEST, "the path is not valid UTF-8"),
    };
    let Some(path) = parse_server_path(&decoded) else {
        return not_found().await;
    };
    let method = request.method().clone();
    match (&method, &path) {
        (&Method::GET | &Method::HEAD, ServerPath::Versions(name)) => {
            let include_deleted = match query::parse_include_deleted(request.uri().query()) {
                Ok(include) => include,
                Err(error) => return bad_query(&error),
            };
            let entry = state.read(|c| c.get(name, include_deleted).cloned());
            match entry {
                Some(entry) => axum::Json(server_list(&Page {
                    entries: vec![entry],
                    next_cursor: None,
                }))
                .into_response(),
                None => error(StatusCode::NOT_FOUND, "Server not found"),
            }
        }
        (&Method::GET | &Method::HEAD, ServerPath::Version(name, version)) => {
            let include_deleted = match query::parse_include_deleted(request.uri().query()) {
                Ok(include) => include,
                Err(error) => return bad_query(&error),
            };
            let entry = state.read(|c| c.get(name, include_deleted).cloned());
            match entry {
                Some(entry) if version == "latest" || *version == entry.version => {
                    axum::Json(entry.response()).into_response()
                }
                Some(_) => error(StatusCode::NOT_FOUND, "Server version not found"),
                None => error(StatusCode::NOT_FOUND, "Server not found"),
            }
        }
        (&Method::PUT | &Method::DELETE, ServerPath::Version(..))
        | (&Method::PATCH, ServerPath::Status) => not_supported().await,
        _ => error(StatusCode::METHOD_NOT_ALLOWED, "method not allowed"),
    }
}

/// Publishing, updating and deleting: servers are published by applying MCPServers.
async fn not_supported() -> Response {
    error(
        StatusCode::NOT_IMPLEMENTED,
        "this registry is read-only: it lists the cluster's MCPServers; publish one by applying it with spec.registry.publish: true",
    )
}

async fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "not found")
}

/// Percent-decodes a path; `None` when the bytes are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied(),
            bytes.get(i + 2).copied(),
        ) {
            (b'%', Some(h), Some(l)) if hex(h).is_some() && hex(l).is_some() => {
                let value = hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0);
                out.push(u8::try_from(value).unwrap_or(b'?'));
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::catalog::tests::{catalog_of, server};
    use crate::registry::settings::Settings;
    use crate::registry::state::MAX_IN_FLIGHT;
    use axum::body::Body;
    use tower::ServiceExt as _;

    async fn send(state: &RegistryState, method: Method, uri: &str) -> (StatusCode, Response) {
        let response = router(state.clone())
            .oneshot(
                axum::http::Request::builder()
                    .method(method)
                    .uri(uri)
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        (response.status(), response)
    }

    async fn json_of(response: Response) -> Value {
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    fn state() -> RegistryState {
        RegistryState::new(catalog_of(&[
            server("ns", "weather", "2025-01-01T00:00:00Z", true),
            server("ns", "tracker", "2025-01-01T00:00:00Z", false),
        ]))
    }

    #[tokio::test]
    async fn a_client_lists_one_then_reads_latest_by_encoded_name() {
        let state = state();
        let (status, response) = send(&state, Method::GET, "/v0.1/servers?limit=1").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(response.headers()["access-control-allow-origin"], "*");
        let list = json_of(response).await;
        assert_eq!(list["metadata"]["count"], 1);
        let name = list["servers"][0]["server"]["name"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(name, "local.kube-mcp/ns.tracker");
        let encoded = name.replace('/', "%2F");
        for path in [
            format!("/v0.1/servers/{encoded}/versions/latest"),
            format!("/v0.1/servers/{name}/versions/latest"),
            format!("/v0.1/servers/{encoded}/versions/0.0.0-gen.2"),
        ] {
            let (status, response) = send(&state, Method::GET, &path).await;
            assert_eq!(status, StatusCode::OK, "{path}");
            assert_eq!(json_of(response).await["server"]["name"], name.as_str());
        }
        let (status, response) = send(
            &state,
            Method::GET,
            &format!("/v0.1/servers/{encoded}/versions"),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            json_of(response).await["servers"][0]["server"]["version"],
            "0.0.0-gen.2"
        );
        let next = list["metadata"]["nextCursor"].as_str().unwrap();
        let (_, response) = send(
            &state,
            Method::GET,
            &format!("/v0.1/servers?limit=1&cursor={next}"),
        )
        .await;
        let page = json_of(response).await;
        assert_eq!(
            page["servers"][0]["server"]["name"],
            "local.kube-mcp/ns.weather"
        );
        assert!(page["metadata"].get("nextCursor").is_none());
    }

    #[tokio::test]
    async fn unknown_names_versions_and_bad_queries_are_errors() {
        let state = state();
        for (uri, want) in [
            ("/v0.1/servers/x%2Fy/versions/latest", StatusCode::NOT_FOUND),
            ("/v0.1/servers/x%2Fy/versions", StatusCode::NOT_FOUND),
            (
                "/v0.1/servers/local.kube-mcp%2Fns.weather/versions/9.9.9",
                StatusCode::NOT_FOUND,
            ),
            (
                "/v0.1/servers/local.kube-mcp%2Fns.weather",
                StatusCode::NOT_FOUND,
            ),
            ("/v0.1/servers?limit=0", StatusCode::BAD_REQUEST),
            ("/v0.1/servers?cursor=!!", StatusCode::BAD_REQUEST),
            ("/v0.2/servers", StatusCode::NOT_FOUND),
        ] {
            let (status, response) = send(&state, Method::GET, uri).await;
            assert_eq!(status, want, "{uri}");
            assert!(json_of(response).await["error"].is_string(), "{uri}");
        }
    }

    #[tokio::test]
    async fn writes_are_not_implemented_and_preflights_are_answered() {
        let state = state();
        for (method, uri) in [
            (Method::POST, "/v0.1/publish"),
            (Method::PUT, "/v0.1/servers/a%2Fb/versions/1.0.0"),
            (Method::DELETE, "/v0.1/servers/a%2Fb/versions/1.0.0"),
            (Method::PATCH, "/v0.1/servers/a%2Fb/status"),
            (Method::PATCH, "/v0.1/servers/a%2Fb/versions/1.0.0/status"),
        ] {
            let (status, _) = send(&state, method.clone(), uri).await;
            assert_eq!(status, StatusCode::NOT_IMPLEMENTED, "{method} {uri}");
        }
        let (status, response) = send(&state, Method::OPTIONS, "/v0.1/servers").await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        let headers = response.headers();
        assert_eq!(headers["access-control-allow-origin"], "*");
        assert_eq!(headers["access-control-allow-methods"], "GET, OPTIONS");
        assert_eq!(
            headers["access-control-allow-headers"],
            "Authorization, Content-Type"
        );
    }

    #[tokio::test]
    async fn nothing_is_answered_before_the_first_list() {
        let state = RegistryState::new(Catalog::new(Settings::default(), vec![None]));
        let (status, _) = send(&state, Method::GET, "/v0.1/servers").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        let (status, _) = send(&state, Method::OPTIONS, "/v0.1/servers").await;
        assert_eq!(status, StatusCode::NO_CONTENT);
    }

    #[tokio::test]
    async fn requests_past_the_in_flight_bound_are_refused_at_once() {
        let state = state();
        let held = state
            .in_flight
            .clone()
            .acquire_many_owned(MAX_IN_FLIGHT as u32)
            .await
            .unwrap();
        let (status, _) = send(&state, Method::GET, "/v0.1/servers").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        drop(held);
        let (status, _) = send(&state, Method::GET, "/v0.1/servers").await;
        assert_eq!(status, StatusCode::OK);
    }

    #[test]
    fn server_paths_split_on_the_name_s_one_slash() {
        assert_eq!(
            parse_server_path("a.b/c/versions"),
            Some(ServerPath::Versions("a.b/c".into()))
        );
        assert_eq!(
            parse_server_path("a.b/versions/versions/1.0+x"),
            Some(ServerPath::Version("a.b/versions".into(), "1.0+x".into()))
        );
        assert_eq!(parse_server_path("a/b/versions/1/x"), None);
        assert_eq!(percent_decode("a%2Fb%2B%zz").as_deref(), Some("a/b+%zz"));
        assert_eq!(percent_decode("%ff"), None);
    }
}
