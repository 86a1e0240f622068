//! `spec.views` over HTTP: a view at `/readers` is served at `{prefix}/readers/mcp`,
//! `/readers/sse` and `/readers/messages`. [`Views`] runs in front of the routes: it rewrites
//! such a path to the endpoint's own (`{prefix}/mcp`) and attaches the view as a [`ViewRoute`]
//! extension, which the handlers hand to `Server::request` (where the view is decided:
//! `mcp-server`'s `view.rs`). A legacy session serves the view it was opened through (sealed
//! into its id): a request naming it through another view, or through none, finds no session.
//! No I/O.

use super::authn::session_id;
use super::view_route::ViewRoute;
use super::{AppState, reply};
use axum::extract::Request;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use futures_util::future::{Either, Ready, ready};
use mcp_protocol::{LATEST_LEGACY, McpError};
use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower_service::Service;

/// The endpoints a view serves under its path.
const ENDPOINTS: [&str; 3] = ["/mcp", "/sse", "/messages"];

/// The service in front of the routes (see the module docs).
#[derive(Clone)]
pub(super) struct Views<S> {
    pub(super) state: Arc<AppState>,
    pub(super) inner: S,
}

impl<S> Service<Request> for Views<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Ready<Result<Response, Infallible>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        match route(&self.state, request) {
            Ok(request) => Either::Right(self.inner.call(request)),
            Err(refusal) => Either::Left(ready(Ok(refusal))),
        }
    }
}

/// Rewrites a view's endpoint path to the endpoint's own and attaches the view; refuses a
/// request whose session was opened through another view (or through none).
fn route(state: &AppState, mut request: Request) -> Result<Request, Response> {
    let decl = state.server.declaration();
    if !decl.views.is_empty()
        && let Some((rewritten, view)) =
            rewrite(&decl.views, &state.http.path_prefix, request.uri())
    {
        *request.uri_mut() = rewritten;
        request.extensions_mut().insert(view);
    }
    // Checked with or without views now: a reload that removed a session's view must not
    // open the whole server to it.
    let view = request
        .extensions()
        .get::<ViewRoute>()
        .map(|v| v.name.as_str());
    if let Some(id) = session_id(&request)
        && let Some(sealed) = state.sessions.view_of(&id)
        && sealed.as_deref() != view
    {
        return Err(no_session());
    }
    Ok(request)
}

/// The endpoint's own URI for a view's endpoint URI, and the view (`None`: not a view's).
fn rewrite(
    views: &mcp_declaration::CompiledViews,
    prefix: &str,
    uri: &Uri,
) -> Option<(Uri, ViewRoute)> {
    let path = uri.path();
    [prefix, ""]
        .iter()
        .find_map(|base| {
            let below = path.strip_prefix(base)?;
            let (view, endpoint) = views.route(below)?;
            ENDPOINTS.contains(&endpoint).then(|| {
                let original = uri
                    .path_and_query()
                    .map_or_else(|| path.to_owned(), |pq| pq.as_str().to_owned());
                let rewritten = match uri.query() {
                    Some(query) => format!("{base}{endpoint}?{query}"),
                    None => format!("{base}{endpoint}"),
                };
                let route = ViewRoute {
                    name: view.name.clone(),
                    path: view.path.clone(),
                    original,
                };
                (rewritten, route)
            })
        })
        .and_then(|(rewritten, route)| Some((rewritten.parse().ok()?, route)))
}

/// What a request naming a session of another view gets: what an unknown session gets.
fn no_session() -> Response {
    let err =
        McpError::InvalidRequest("session not found: it ended or expired; initialize again".into());
    let era = mcp_protocol::Era::Legacy(LATEST_LEGACY);
    (StatusCode::NOT_FOUND, reply::error_body(None, &err, era)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_declaration::{CompileOptions, compile, parse_manifest};

    fn views() -> mcp_declaration::CompiledViews {
        let manifest = parse_manifest(
            r#"
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: v}
spec:
  tools:
    - {name: get_pod, content: [{type: text, text: ok}]}
  views:
    - {name: readers, path: /readers, tools: [get_*]}
    - {name: ops, path: /teams/ops, tools: [get_*]}
"#,
            ".".into(),
        )
        .unwrap();
        compile(&manifest, &CompileOptions::default())
            .unwrap()
            .views
    }

    fn rewritten(prefix: &str, uri: &str) -> Option<(String, String)> {
        let (uri, route) = rewrite(&views(), prefix, &uri.parse().unwrap())?;
        Some((uri.to_string(), route.name))
    }

    #[test]
    fn view_endpoints_are_rewritten_to_the_endpoints() {
        let pair = |a: &str, b: &str| Some((a.to_owned(), b.to_owned()));
        assert_eq!(rewritten("", "/readers/mcp"), pair("/mcp", "readers"));
        assert_eq!(rewritten("", "/teams/ops/sse"), pair("/sse", "ops"));
        assert_eq!(
            rewritten("", "/readers/messages?sessionId=x"),
            pair("/messages?sessionId=x", "readers")
        );
        assert_eq!(
            rewritten("/weather", "/weather/readers/mcp"),
            pair("/weather/mcp", "readers")
        );
        // At the root too, as the endpoints themselves are (in-cluster clients).
        assert_eq!(
            rewritten("/weather", "/readers/mcp"),
            pair("/mcp", "readers")
        );
        for not_a_view in [
            "/mcp",
            "/readers",
            "/readers/other",
            "/readers/mcp/server-card",
            "/readersx/mcp",
            "/weather/readers/mcp",
        ] {
            assert_eq!(rewritten("", not_a_view), None, "{not_a_view}");
        }
    }

    #[test]
    fn the_original_path_is_kept() {
        let (_, route) = rewrite(
            &views(),
            "",
            &"/readers/messages?sessionId=x".parse().unwrap(),
        )
        .unwrap();
        assert_eq!(route.original, "/readers/messages?sessionId=x");
        assert_eq!(route.path, "/readers");
    }
}
