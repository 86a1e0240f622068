//! Routing a legacy session's requests to the replica that holds it. A session's state (its
//! `GET` stream and pings, log level, subscriptions, running requests and the questions they
//! wait on) lives on the replica that opened it, whose address the sealed id names
//! ([`mcp_server::sessions::SessionStore::remote_owner`]). A request another replica receives for it
//! is sent on to that owner's MCP port as it came (method, path, headers, body) and the answer
//! relayed back as it streams, so the owner applies every check itself (Host, Origin, token,
//! limits). Does network I/O to other replicas only.
//!
//! A forwarded request carries a hop token sealed under the session key: the owner serves it
//! itself (never forwards it again) and marks its answer; an answer without the mark came from
//! something that is not a replica of this server, and the request is served here. An owner
//! that cannot be reached (it is gone) or is no replica is left alone for a few seconds, and
//! its sessions are adopted here, as without routing. Nothing but the sealed id decides where a
//! request goes.

use super::AppState;
use super::authn::session_id;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use dashmap::DashMap;
use futures_util::StreamExt;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use mcp_server::sessions::{Sealer, unix_now};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// The request header of a forwarded request: a hop token (see [`Forwarder::hop_token`]).
const HOP_HEADER: &str = "kube-mcp-forwarded";

/// The response header with which a replica of this server marks the answer to a forwarded
/// request (never relayed to clients).
const SERVED_HEADER: &str = "kube-mcp-served";

/// The purpose a hop token is sealed for (a session id or request state never opens as one).
const HOP_PURPOSE: &[u8] = b"kube-mcp forwarded request";

/// A hop token older than this (or from further in the future: pods' clocks agree far better)
/// is ignored.
const HOP_TOKEN_AGE: u64 = 60;

/// Longest wait for a connection to the owner before it counts as gone.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// How long an owner that could not be reached is not tried again.
const UNREACHABLE_FOR: Duration = Duration::from_secs(10);

/// Most unreachable owners remembered (a few replicas at most, unless many restarted at once).
const MAX_UNREACHABLE: usize = 256;

/// Idle connections to owners are closed soon: owners come and go with their pods.
const POOL_IDLE: Duration = Duration::from_secs(5);

/// Headers of one connection, not of the request (RFC 9110, 7.6.1), and the hop headers.
const NOT_FORWARDED: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
    HOP_HEADER,
    SERVED_HEADER,
];

/// Sends requests on to the replicas that own their sessions.
pub struct Forwarder {
    client: Client<HttpConnector, Full<Bytes>>,
    sealer: Sealer,
    /// Forwards in flight (a relayed `GET` stream holds one as long as it is open).
    permits: Arc<Semaphore>,
    /// Owners that could not be reached, and when they may be tried again.
    unreachable: DashMap<SocketAddr, Instant>,
}

impl Forwarder {
    /// A forwarder sealing its hop tokens with `sealer` (the session key), with at most
    /// `max_forwards` requests in flight.
    pub fn new(sealer: Sealer, max_forwards: usize) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(CONNECT_TIMEOUT));
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(POOL_IDLE)
            .pool_max_idle_per_host(32)
            .build(connector);
        Self {
            client,
            sealer,
            permits: Arc::new(Semaphore::new(max_forwards.max(1))),
            unreachable: DashMap::new(),
        }
    }

    /// A fresh hop token: the time, sealed for [`HOP_PURPOSE`].
    fn hop_token(&self) -> String {
        self.sealer
            .seal_bytes(HOP_PURPOSE, &unix_now().to_be_bytes())
    }

    /// Whether `value` is a recent hop token sealed under our key (another replica forwarded
    /// the request). Anything else, a client's guess included, is ignored.
    fn is_hop(&self, value: &HeaderValue) -> bool {
        let Some(plain) = value
            .to_str()
            .ok()
            .and_then(|token| self.sealer.open_bytes(HOP_PURPOSE, token, 128))
        else {
            return false;
        };
        let Ok(sent) = <[u8; 8]>::try_from(plain.as_slice()).map(u64::from_be_bytes) else {
            return false;
        };
        unix_now().abs_diff(sent) <= HOP_TOKEN_AGE
    }

    fn recently_unreachable(&self, owner: SocketAddr) -> bool {
        match self.unreachable.get(&owner).map(|until| *until) {
            Some(until) if Instant::now() < until => true,
            Some(_) => {
                self.unreachable.remove(&owner);
                false
            }
            None => false,
        }
    }

    fn mark_unreachable(&self, owner: SocketAddr) {
        if self.unreachable.len() >= MAX_UNREACHABLE {
            self.unreachable.clear();
        }
        self.unreachable
            .insert(owner, Instant::now() + UNREACHABLE_FOR);
    }
}

/// Middleware on the MCP routes (outside authentication: the owner authenticates): serves a
/// request here, or hands it to the owner of its session.
pub async fn route(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let Some(forwarder) = &state.forwarder else {
        return next.run(request).await;
    };
    // `GET /sse` opens a session: never forwarded, whatever its query says.
    let Some(id) = session_id(&request).filter(|_| !request.uri().path().ends_with("/sse")) else {
        return next.run(request).await;
    };
    if request
        .headers()
        .get(HOP_HEADER)
        .is_some_and(|token| forwarder.is_hop(token))
    {
        // Forwarded to us: served here, whoever the id names (one hop at most).
        let mut response = next.run(request).await;
        response
            .headers_mut()
            .insert(SERVED_HEADER, HeaderValue::from_static("1"));
        return response;
    }
    let Some(owner) = state.sessions.remote_owner(&id) else {
        return next.run(request).await;
    };
    match forward(&state, forwarder, owner, request).await {
        Ok(response) => response,
        Err(request) => next.run(request).await,
    }
}

/// Forwards `request` to `owner` and relays the answer; `Err` hands the request back to be
/// served here (the owner is gone, or is no replica of this server).
async fn forward(
    state: &AppState,
    forwarder: &Forwarder,
    owner: SocketAddr,
    request: Request,
) -> Result<Response, Request> {
    let metrics = state.server.metrics();
    if forwarder.recently_unreachable(owner) {
        metrics.session_forward("unreachable");
        return Err(request);
    }
    let Ok(permit) = forwarder.permits.clone().try_acquire_owned() else {
        metrics.session_forward("busy");
        return Ok((
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "1")],
            "too many requests in flight to other replicas",
        )
            .into_response());
    };
    let (parts, body) = request.into_parts();
    // The body is kept (bounded as any body is) to serve the request here if the owner is gone.
    let (bytes, share) = if parts.method == Method::POST {
        match state.bodies.read(&parts.headers, body).await {
            Ok(read) => (read.0, Some(read.1)),
            Err(refusal) => return Ok(refusal),
        }
    } else {
        (Bytes::new(), None)
    };
    let here = |parts, bytes: Bytes| Request::from_parts(parts, Body::from(bytes));
    let Some(outgoing) = outgoing(forwarder, owner, &parts, bytes.clone()) else {
        return Err(here(parts, bytes));
    };
    let answer = forwarder.client.request(outgoing).await;
    drop(share);
    let gone = match answer {
        Ok(answer) if answer.headers().contains_key(SERVED_HEADER) => {
            metrics.session_forward("forwarded");
            return Ok(relay(answer, permit, state.shutdown.clone()));
        }
        Ok(_) => {
            // The owner's address was reused by something that is not a replica of this server.
            tracing::warn!(%owner, "the address owning a session is no longer a replica; serving it here");
            "not_owner"
        }
        Err(err) if err.is_connect() => {
            tracing::warn!(%owner, "the replica owning a session is unreachable; serving it here");
            "unreachable"
        }
        Err(err) => {
            tracing::warn!(%owner, error = %err, "a request forwarded to the replica owning its session failed");
            metrics.session_forward("error");
            return Ok((
                StatusCode::BAD_GATEWAY,
                "the replica holding this session failed",
            )
                .into_response());
        }
    };
    // Served here; that address is left alone for a while.
    forwarder.mark_unreachable(owner);
    metrics.session_forward(gone);
    Err(here(parts, bytes))
}

/// The request to send to `owner`: the client's, with its path and query, end-to-end headers
/// (Host included, so the owner checks what the client sent) and a fresh hop token.
fn outgoing(
    forwarder: &Forwarder,
    owner: SocketAddr,
    parts: &http::request::Parts,
    body: Bytes,
) -> Option<http::Request<Full<Bytes>>> {
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", http::uri::PathAndQuery::as_str);
    let uri: Uri = format!("http://{owner}{path}").parse().ok()?;
    let mut request = http::Request::builder()
        .method(parts.method.clone())
        .uri(uri)
        .body(Full::new(body))
        .ok()?;
    let headers = request.headers_mut();
    copy_headers(&parts.headers, headers);
    // An HTTP/2 client names the host in the request target only: the owner checks it as Host.
    if !headers.contains_key(header::HOST)
        && let Some(authority) = parts.uri.authority()
    {
        headers.insert(
            header::HOST,
            HeaderValue::from_str(authority.as_str()).ok()?,
        );
    }
    headers.insert(
        HOP_HEADER,
        HeaderValue::from_str(&forwarder.hop_token()).ok()?,
    );
    Some(request)
}

fn copy_headers(from: &HeaderMap, to: &mut HeaderMap) {
    for (name, value) in from {
        if !NOT_FORWARDED.contains(&name.as_str()) {
            to.append(name.clone(), value.clone());
        }
    }
}

/// The owner's answer as ours: status, end-to-end headers, and the body as it streams (a
/// session stream stays open as long as the owner keeps it open and the client stays, or until
/// this replica shuts down, as its own streams do).
fn relay(
    answer: http::Response<hyper::body::Incoming>,
    permit: tokio::sync::OwnedSemaphorePermit,
    shutdown: tokio_util::sync::CancellationToken,
) -> Response {
    let (parts, body) = answer.into_parts();
    let chunks = body.into_data_stream();
    let chunks = chunks.take_until(shutdown.cancelled_owned());
    let chunks = chunks.map(move |chunk| {
        // The forward counts until the relayed body ends.
        let _held = &permit;
        chunk
    });
    let mut response = Response::new(Body::from_stream(chunks));
    *response.status_mut() = parts.status;
    copy_headers(&parts.headers, response.headers_mut());
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_server::sessions::KEY_LEN;

    #[test]
    fn hop_tokens_open_only_under_the_key_and_while_fresh() {
        let forwarder = Forwarder::new(Sealer::new(&[1; KEY_LEN]), 4);
        let token = HeaderValue::from_str(&forwarder.hop_token()).unwrap();
        assert!(forwarder.is_hop(&token));
        let foreign = Forwarder::new(Sealer::new(&[2; KEY_LEN]), 4);
        assert!(!foreign.is_hop(&token));
        assert!(!forwarder.is_hop(&HeaderValue::from_static("1")));
        let sealer = Sealer::new(&[1; KEY_LEN]);
        let stale = sealer.seal_bytes(HOP_PURPOSE, &(unix_now() - 600).to_be_bytes());
        assert!(!forwarder.is_hop(&HeaderValue::from_str(&stale).unwrap()));
        // A session id (sealed for another purpose) is no hop token.
        let id = sealer.seal_bytes(b"", &unix_now().to_be_bytes());
        assert!(!forwarder.is_hop(&HeaderValue::from_str(&id).unwrap()));
    }

    #[test]
    fn only_end_to_end_headers_are_forwarded() {
        let mut from = HeaderMap::new();
        from.insert(header::HOST, HeaderValue::from_static("mcp.example.com"));
        from.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer t"));
        from.insert(header::CONNECTION, HeaderValue::from_static("close"));
        from.insert(HOP_HEADER, HeaderValue::from_static("forged"));
        from.insert(header::CONTENT_LENGTH, HeaderValue::from_static("9"));
        let mut to = HeaderMap::new();
        copy_headers(&from, &mut to);
        assert_eq!(to.len(), 2);
        assert!(to.contains_key(header::HOST) && to.contains_key(header::AUTHORIZATION));
    }

    #[tokio::test]
    async fn unreachable_owners_are_remembered_for_a_while() {
        let forwarder = Forwarder::new(Sealer::random(), 4);
        let owner: SocketAddr = "127.0.0.1:9".parse().unwrap();
        assert!(!forwarder.recently_unreachable(owner));
        forwarder.mark_unreachable(owner);
        assert!(forwarder.recently_unreachable(owner));
        forwarder
            .unreachable
            .insert(owner, Instant::now() - Duration::from_secs(1));
        assert!(!forwarder.recently_unreachable(owner));
        assert!(forwarder.unreachable.is_empty());
    }
}
