//! Bearer authentication of every MCP route (`POST/GET/DELETE /mcp`, `GET /sse`, each
//! `POST /messages`) when the served declaration has `spec.auth`, and the Protected Resource
//! Metadata document (RFC 9728). One layer (`gate::AuthnLayer`), so no route can be left out: it validates the
//! token, refuses a session opened by another principal, hands the caller to the handlers, and
//! ends a streamed response when the token expires. The handlers that parse a message
//! (`POST /mcp`, `POST /messages`) then call [`authorize`], which has the server decide the
//! request (`mcp_server::Server::authorize`) and only turns a decision that scopes are missing
//! into the 403 challenge; it decides nothing itself. The token itself goes no further than
//! this file: handlers see only the validated principal.

use super::AppState;
use super::headers::SESSION_HEADER;
use super::view_route::ViewRoute;
use crate::auth::{AuthConfigError, Authenticator, Principal, Refusal};
use axum::Json;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use mcp_protocol::{Era, Incoming, RequestId};
use mcp_server::sessions::unix_now;
use mcp_server::{Authorized, Decision};
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The authenticated caller of a request (a request extension; absent without `spec.auth`).
#[derive(Clone)]
pub struct Caller {
    /// Who is calling.
    pub principal: Arc<Principal>,
    /// What authenticated it (for the item check and its challenge).
    authenticator: Arc<Authenticator>,
}

/// A request the owner accepted from another replica (set by `forward::accept`, which checked
/// its hop token): who that replica authenticated, trusted instead of a token.
#[derive(Clone)]
pub(super) struct Forwarded {
    /// The caller the forwarding replica sealed (`None` without `spec.auth` there).
    pub(super) principal: Option<Arc<Principal>>,
}

/// Authenticates a request (`decided`: the authenticator of the served declaration's
/// `spec.auth`, if any, see `AuthState::for_spec`) and, when it may pass, serves it with `run`
/// (the rest of the stack).
pub(super) async fn authenticate<F, Fut>(
    state: &AppState,
    decided: Result<Option<Arc<Authenticator>>, AuthConfigError>,
    request: Request,
    run: F,
) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Result<Response, Infallible>>,
{
    let authenticator = match decided {
        Ok(None) => {
            let Ok(response) = run(request).await;
            return response;
        }
        Ok(Some(authenticator)) => authenticator,
        Err(err) => {
            // Fail closed: a server that should authenticate but cannot serves nobody.
            tracing::error!(error = %err, "cannot authenticate requests");
            state
                .server
                .metrics()
                .auth_failure(Refusal::Unavailable.reason());
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                "authentication is misconfigured",
            )
                .into_response();
        }
    };
    // A request another replica forwarded carries no token: that replica authenticated it and
    // sealed who it is (checked in `forward::accept`).
    let forwarded = request
        .extensions()
        .get::<Forwarded>()
        .map(|f| f.principal.clone());
    // The view the request came through: its challenges point to the view's metadata, and a
    // token for the view's URL is good for it only.
    let view = request
        .extensions()
        .get::<ViewRoute>()
        .map(|v| v.name.clone());
    let view = view.as_deref();
    let authenticated = match forwarded {
        Some(Some(principal)) if principal.expires_at >= unix_now() => Ok(principal),
        Some(_) => Err(Refusal::Missing),
        None => {
            authenticator
                .authenticate(request.headers(), request.uri().query())
                .await
        }
    };
    let principal = match authenticated {
        Ok(principal) if !authenticator.audience_fits(&principal, view) => {
            return refuse(state, &authenticator, &Refusal::WrongAudience, view);
        }
        Ok(principal) => principal,
        Err(refusal) => return refuse(state, &authenticator, &refusal, view),
    };
    if let Some(id) = session_id(&request)
        && let Some(bound) = state.sessions.principal_of(&id)
        && bound != Some(principal.digest())
    {
        return refuse(state, &authenticator, &Refusal::WrongPrincipal, view);
    }
    let mut request = request;
    let expires_at = principal.expires_at;
    request.extensions_mut().insert(Caller {
        principal,
        authenticator,
    });
    let Ok(response) = run(request).await;
    end_at_expiry(response, expires_at)
}

/// A refusal as HTTP (of a request through `view`, if any): its status, the challenge, and a
/// count by reason.
fn refuse(
    state: &AppState,
    authenticator: &Authenticator,
    refusal: &Refusal,
    view: Option<&str>,
) -> Response {
    state.server.metrics().auth_failure(refusal.reason());
    tracing::debug!(reason = refusal.reason(), "refused a request");
    let mut response = (
        refusal.status(),
        Json(serde_json::json!({"error": refusal.error_code().unwrap_or("unauthorized"), "error_description": refusal.to_string()})),
    )
        .into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        authenticator.challenge_in(refusal, view),
    );
    response
}

/// The session a request names, where its handler reads it: the `sessionId` query of
/// `/messages`, the `Mcp-Session-Id` header elsewhere (checking one while the handler serves the
/// other would let a request bound to one principal reach another's session).
pub(super) fn session_id(request: &Request) -> Option<String> {
    if !request.uri().path().ends_with("/messages") {
        let value = request.headers().get(SESSION_HEADER)?;
        return value.to_str().ok().map(str::to_owned);
    }
    form_urlencoded::parse(request.uri().query()?.as_bytes())
        .find(|(name, _)| name == "sessionId")
        .map(|(_, value)| value.into_owned())
}

/// A client message once parsed: a request is parsed once into a typed request, resolved
/// against the declaration and decided by the server's one authorization decision.
pub(super) enum Message {
    /// A request, with its decision.
    Request {
        /// Its JSON-RPC id.
        id: RequestId,
        /// The request and the decision.
        authorized: Authorized,
    },
    /// A notification or a response.
    Other(Incoming),
}

/// Parses `message` once and has the server decide it for the caller. A request for items whose
/// scopes the caller lacks is answered here with the 403 challenge naming them (and audited,
/// served in `era`, in legacy `session` if any); every other decision is the dispatch's to
/// answer (an `allow` refusal is a result the model can read, never a scope challenge).
pub(super) fn authorize(
    state: &AppState,
    caller: Option<&Caller>,
    message: Incoming,
    era: Era,
    session: Option<&str>,
    view: Option<&str>,
) -> Result<Message, (Refusal, Response)> {
    let Incoming::Request { id, method, params } = message else {
        return Ok(Message::Other(message));
    };
    let request = state.server.request(method, params, view);
    let authorized = state
        .server
        .authorize(caller.map(|c| &*c.principal), request);
    if let (Some(caller), Decision::NeedsScopes(scopes)) = (caller, authorized.decision())
        && let Err(refusal) = caller.authenticator.require(&caller.principal, scopes)
    {
        state
            .server
            .audit_refused(authorized.request(), &caller.principal, era, session);
        let response = refuse(state, &caller.authenticator, &refusal, view);
        return Err((refusal, response));
    }
    Ok(Message::Request { id, authorized })
}

/// Ends a streamed response when its token expires (the client must come back with a fresh
/// token); plain responses pass as they are.
fn end_at_expiry(response: Response, expires_at: u64) -> Response {
    let streamed = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !streamed {
        return response;
    }
    let left = Duration::from_secs(expires_at.saturating_sub(unix_now()));
    let (parts, body) = response.into_parts();
    let deadline = tokio::time::sleep(left);
    let stream = body.into_data_stream().take_until(deadline);
    Response::from_parts(parts, Body::from_stream(stream))
}

/// `GET` of the Protected Resource Metadata (at every path [`Authenticator::metadata_paths`]
/// names); 404 elsewhere and when the server does not authenticate.
pub(super) async fn metadata(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let compiled = state.server.declaration();
    let Ok(Some(authenticator)) = state.auth.for_spec(&compiled) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let path = request.uri().path();
    if request.method() != Method::GET {
        return StatusCode::NOT_FOUND.into_response();
    }
    let prefix = &state.http.path_prefix;
    let document = if authenticator
        .metadata_paths(prefix)
        .iter()
        .any(|p| p == path)
    {
        authenticator.metadata()
    } else if let Some(document) = authenticator.view_metadata(path, prefix) {
        // A view's own metadata (RFC 9728 path form of the view's URL).
        document
    } else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let mut response = Json(document.clone()).into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("public, max-age=300"),
    );
    response
}
