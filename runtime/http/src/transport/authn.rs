//! Bearer authentication of every MCP route (`POST/GET/DELETE /mcp`, `GET /sse`, each
//! `POST /messages`) when the served declaration has `spec.auth`, and the Protected Resource
//! Metadata document (RFC 9728). One layer (`gate::AuthnLayer`), so no route can be left out: it validates the
//! token, refuses a session opened by another principal, hands the caller to the handlers, and
//! ends a streamed response when the token expires. The handlers that parse a message
//! (`POST /mcp`, `POST /messages`) then call [`item_refusal`], and refuse a request for an item
//! whose scopes (or token-only `allow`) the caller lacks with a 403 challenge before any
//! dispatch, from the message they parsed (the body is read once). The token itself goes no
//! further than this file: handlers see only the validated principal.

use super::AppState;
use super::headers::SESSION_HEADER;
use crate::auth::{AuthConfigError, Authenticator, Principal, Refusal};
use axum::Json;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use mcp_declaration::{Access, Caller as AccessCaller, Compiled};
use mcp_protocol::{Era, Incoming, methods};
use mcp_server::MAX_SUBSCRIPTIONS;
use mcp_server::sessions::unix_now;
use serde_json::Value;
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

/// Authenticates a request (`decided`: the authenticator of the served declaration's
/// `spec.auth`, if any, see `AuthState::for_spec`) and, when it may pass, serves it with `run`
/// (the rest of the stack).
pub async fn authenticate<F, Fut>(
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
    let principal = match authenticator
        .authenticate(request.headers(), request.uri().query())
        .await
    {
        Ok(principal) => principal,
        Err(refusal) => return refuse(state, &authenticator, &refusal),
    };
    if let Some(id) = session_id(&request)
        && let Some(bound) = state.sessions.principal_of(&id)
        && bound != Some(principal.digest())
    {
        return refuse(state, &authenticator, &Refusal::WrongPrincipal);
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

/// A refusal as HTTP: its status, the challenge, and a count by reason.
fn refuse(state: &AppState, authenticator: &Authenticator, refusal: &Refusal) -> Response {
    state.server.metrics().auth_failure(refusal.reason());
    tracing::debug!(reason = refusal.reason(), "refused a request");
    let mut response = (
        refusal.status(),
        Json(serde_json::json!({"error": refusal.error_code().unwrap_or("unauthorized"), "error_description": refusal.to_string()})),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, authenticator.challenge(refusal));
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

/// Why `message` may not be served to the caller: it uses an item whose scopes (or token-only
/// `allow`) the caller lacks. Conditions over `args` are left to the dispatch (a tool error the
/// model can read). Answer a refusal with [`refuse_item`].
pub fn item_refusal(state: &AppState, caller: &Caller, message: &Incoming) -> Option<Refusal> {
    let compiled = state.server.declaration();
    if !compiled.access.has_item_rules() {
        return None;
    }
    let Incoming::Request { method, params, .. } = message else {
        return None;
    };
    check_item(&compiled, caller, method, params).err()
}

/// The 403 answer to a refusal from [`item_refusal`] of `message`, with its challenge; the
/// refused call is audited (served in `era`, in legacy `session` if any).
pub fn refuse_item(
    state: &AppState,
    caller: &Caller,
    message: &Incoming,
    refusal: &Refusal,
    era: Era,
    session: Option<&str>,
) -> Response {
    if let Incoming::Request { method, params, .. } = message {
        state
            .server
            .audit_refused(method, params, &caller.principal, era, session);
    }
    refuse(state, &caller.authenticator, refusal)
}

fn check_item(
    compiled: &Compiled,
    caller: &Caller,
    method: &str,
    params: &Value,
) -> Result<(), Refusal> {
    let text = |field: &str| params.get(field).and_then(Value::as_str);
    let access = match (method, text("name"), text("uri")) {
        (methods::TOOLS_CALL, Some(name), _) => compiled.access.tool(name),
        (methods::PROMPTS_GET, Some(name), _) => compiled.access.prompt(name),
        (methods::RESOURCES_READ | methods::RESOURCES_SUBSCRIBE, _, Some(uri)) => {
            match resource_access(compiled, uri) {
                Some(access) => access,
                None => return Ok(()),
            }
        }
        (methods::SUBSCRIPTIONS_LISTEN, _, _) => return check_listened(compiled, caller, params),
        _ => return Ok(()),
    };
    check_access(compiled, caller, &access.required_scopes, &[access])
}

/// The access rules of the resource or resource template that serves `uri` (`None`: nothing
/// serves it, and the dispatch answers that).
fn resource_access<'d>(compiled: &'d Compiled, uri: &str) -> Option<&'d Access> {
    if compiled.resource(uri).is_some() {
        return Some(compiled.access.resource(uri));
    }
    let template = compiled
        .resource_templates
        .iter()
        .find(|t| t.uri.matches(uri).is_some())
        .and_then(|t| t.descriptor.get("uriTemplate"))
        .and_then(Value::as_str)?;
    Some(compiled.access.resource_template(template))
}

/// A `subscriptions/listen` request tells its caller when the resources it names change: each
/// is checked as if it were read, and one challenge names every scope they need together. Past
/// [`MAX_SUBSCRIPTIONS`] the dispatch refuses the request anyway, so no more are looked at.
fn check_listened(compiled: &Compiled, caller: &Caller, params: &Value) -> Result<(), Refusal> {
    let uris = params
        .pointer("/notifications/resourceSubscriptions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let accesses: Vec<&Access> = uris
        .iter()
        .take(MAX_SUBSCRIPTIONS)
        .filter_map(Value::as_str)
        .filter_map(|uri| resource_access(compiled, uri))
        .collect();
    let mut scopes: Vec<String> = Vec::new();
    for scope in accesses.iter().flat_map(|access| &access.required_scopes) {
        if !scopes.contains(scope) {
            scopes.push(scope.clone());
        }
    }
    check_access(compiled, caller, &scopes, &accesses)
}

/// Refuses the caller unless it holds `scopes` and every token-only `allow` of `accesses`
/// admits it (an `allow` over arguments is the dispatch's to decide).
fn check_access(
    compiled: &Compiled,
    caller: &Caller,
    scopes: &[String],
    accesses: &[&Access],
) -> Result<(), Refusal> {
    let principal = &caller.principal;
    caller.authenticator.require(principal, scopes)?;
    let who = AccessCaller {
        scopes: &principal.scopes,
        claims: &principal.claims,
    };
    let refused = accesses
        .iter()
        .any(|access| !access.decided_at_call() && !compiled.access.listed(access, who));
    if refused {
        return Err(Refusal::Forbidden);
    }
    Ok(())
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
pub async fn metadata(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let compiled = state.server.declaration();
    let Ok(Some(authenticator)) = state
        .auth
        .for_spec(compiled.auth.as_ref(), &compiled.access.scopes)
    else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let path = request.uri().path();
    if request.method() != Method::GET
        || !authenticator
            .metadata_paths(&state.http.path_prefix)
            .iter()
            .any(|p| p == path)
    {
        return StatusCode::NOT_FOUND.into_response();
    }
    let mut response = Json(authenticator.metadata().clone()).into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("public, max-age=300"),
    );
    response
}
