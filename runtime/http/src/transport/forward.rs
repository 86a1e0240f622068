//! Routing a legacy session's requests to the replica that holds it. A session's state (its
//! `GET` stream and pings, log level, subscriptions, running requests and the questions they
//! wait on) lives on the replica that opened it, whose address the sealed id names
//! ([`mcp_server::sessions::SessionStore::remote_owner`]). A request another replica receives for it
//! is sent on to that owner's MCP port (method, path, end-to-end headers, body) and the answer
//! relayed back as it streams. Does network I/O to other replicas only.
//!
//! The forward carries no credential a stranger could use: the forwarding replica authenticates
//! the client itself (an unauthenticated request is refused there, never forwarded), strips
//! `Authorization`, and sends a hop token sealed under the session key that binds the validated
//! principal to the request (its method and body digest, path, session) for 60 s. The token
//! the principal was validated from rides encrypted in it, for the owner's token exchanges
//! (`http.auth`) only. The owner
//! ([`accept`]) checks that binding, trusts the sealed principal instead of a token, serves the
//! request itself (never forwards it again) and tags its answer with a seal over the hop token.
//! An answer without that tag came from something that is not a replica of this server (an
//! address reused by another pod): it is discarded and the request served here. An owner that
//! cannot be reached (it is gone) or is no replica is left alone for a few seconds, and its
//! sessions are adopted here, as without routing. Nothing but the sealed id decides where a
//! request goes.

use super::AppState;
use super::authn::{Caller, Forwarded, session_id};
use super::view_route::ViewRoute;
use crate::auth::Principal;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use dashmap::DashMap;
use futures_util::StreamExt;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use ipnet::IpNet;
use mcp_server::sessions::{Sealer, unix_now};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// The request header of a forwarded request: a hop token (see [`Forwarder::hop_token`]).
const HOP_HEADER: &str = "kube-mcp-forwarded";

/// The response header with which a replica of this server tags the answer to a forwarded
/// request (never relayed to clients): a seal over the hop token.
const SERVED_HEADER: &str = "kube-mcp-served";

/// The purpose a hop token is sealed for (a session id or request state never opens as one).
const HOP_PURPOSE: &[u8] = b"kube-mcp forwarded request v2";

/// The purpose an answer's tag is sealed for.
const TAG_PURPOSE: &[u8] = b"kube-mcp forwarded answer v1";

/// Longest hop token accepted (a principal's claims and its token, up to 8 KiB, included).
const MAX_HOP_LEN: usize = 32 * 1024;

/// What a hop token binds: when it was sent, the request (method and body digest, path and
/// query, session) and who the forwarding replica authenticated.
#[derive(Serialize, Deserialize)]
struct Hop {
    /// Sent at, seconds since the Unix epoch.
    t: u64,
    /// SHA-256 of the method and body, base64.
    d: String,
    /// Path and query.
    p: String,
    /// The session the request names.
    s: String,
    /// The validated caller (with `spec.auth`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    c: Option<Principal>,
    /// The caller's validated token, which the owner may need as the subject of a token
    /// exchange (`http.auth.tokenExchange`); encrypted with the rest, never used to
    /// authenticate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    k: Option<String>,
}

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
    // The client's credential stays with the replica that checked it.
    "authorization",
    HOP_HEADER,
    SERVED_HEADER,
];

/// Where replicas may live when no `--replica-network` is given: private, shared (CGNAT, some
/// CNIs) and loopback ranges. Pod networks are private; a public address is never dialled.
pub(super) const DEFAULT_REPLICA_NETWORKS: &[&str] = &[
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "fc00::/7",
    "::1/128",
];

/// Sends requests on to the replicas that own their sessions.
pub struct Forwarder {
    client: Client<HttpConnector, Full<Bytes>>,
    sealer: Sealer,
    /// The networks replicas live in: a sealed owner outside them is never dialled.
    networks: Vec<IpNet>,
    /// Forwards in flight (a relayed `GET` stream holds one as long as it is open).
    permits: Arc<Semaphore>,
    /// Owners that could not be reached, and when they may be tried again.
    unreachable: DashMap<SocketAddr, Instant>,
}

impl Forwarder {
    /// A forwarder sealing its hop tokens with `sealer` (the session key), with at most
    /// `max_forwards` requests in flight, dialling owners in `networks` only (empty: the
    /// [`DEFAULT_REPLICA_NETWORKS`]).
    pub fn new(sealer: Sealer, max_forwards: usize, networks: Vec<IpNet>) -> Self {
        let networks = if networks.is_empty() {
            DEFAULT_REPLICA_NETWORKS
                .iter()
                .filter_map(|net| net.parse().ok())
                .collect()
        } else {
            networks
        };
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
            networks,
            permits: Arc::new(Semaphore::new(max_forwards.max(1))),
            unreachable: DashMap::new(),
        }
    }

    /// A fresh hop token for a request to `session` at `path` with this method and body,
    /// authenticated as `caller`.
    fn hop_token(
        &self,
        session: &str,
        path: &str,
        method: &Method,
        body: &[u8],
        caller: Option<&Principal>,
    ) -> Option<String> {
        let hop = Hop {
            t: unix_now(),
            d: digest(method, body),
            p: path.to_owned(),
            s: session.to_owned(),
            c: caller.cloned(),
            k: caller
                .and_then(|c| c.token.as_ref())
                .map(|t| t.expose().to_owned()),
        };
        let plain = serde_json::to_vec(&hop).ok()?;
        Some(self.sealer.seal_bytes(HOP_PURPOSE, &plain))
    }

    /// The hop `value` seals under our key, if it is recent (another replica forwarded the
    /// request). Anything else, a client's guess included, opens as nothing.
    fn open_hop(&self, value: &HeaderValue) -> Option<Hop> {
        let token = value.to_str().ok()?;
        let plain = self.sealer.open_bytes(HOP_PURPOSE, token, MAX_HOP_LEN)?;
        let hop: Hop = serde_json::from_slice(&plain).ok()?;
        (unix_now().abs_diff(hop.t) <= HOP_TOKEN_AGE).then_some(hop)
    }

    /// The tag of the answer to the request that carried `hop`.
    fn tag(&self, hop: &HeaderValue) -> Option<HeaderValue> {
        let over = Sha256::digest(hop.as_bytes());
        HeaderValue::from_str(&self.sealer.seal_bytes(TAG_PURPOSE, &over)).ok()
    }

    /// Whether `tag` is the owner's tag for the answer to the request that carried `hop`.
    fn tag_matches(&self, hop: &str, tag: Option<&HeaderValue>) -> bool {
        tag.and_then(|tag| tag.to_str().ok())
            .and_then(|tag| self.sealer.open_bytes(TAG_PURPOSE, tag, 256))
            .is_some_and(|over| over == Sha256::digest(hop.as_bytes()).as_slice())
    }

    /// Whether `owner` lies in the replicas' networks.
    pub fn may_dial(&self, owner: SocketAddr) -> bool {
        self.networks.iter().any(|net| net.contains(&owner.ip()))
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

/// Middleware on the MCP routes, outermost (before authentication): a request another replica
/// forwarded here is checked against its hop token (method and body digest, path, session) and
/// marked [`Forwarded`], so that authentication trusts the principal it seals; its answer is
/// tagged. A hop token that does not open is ignored (a client's guess); one that opens but
/// does not match its request is refused.
pub(super) async fn accept(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(forwarder) = &state.forwarder else {
        return next.run(request).await;
    };
    let Some(token) = request.headers().get(HOP_HEADER).cloned() else {
        return next.run(request).await;
    };
    let mut request = request;
    request.headers_mut().remove(HOP_HEADER);
    let Some(hop) = forwarder.open_hop(&token) else {
        return next.run(request).await;
    };
    // A view's endpoint was rewritten here as on the sending replica: the hop names the path
    // the client sent.
    let path = match request.extensions().get::<ViewRoute>() {
        Some(view) => view.original.as_str(),
        None => request
            .uri()
            .path_and_query()
            .map_or("/", http::uri::PathAndQuery::as_str),
    };
    if session_id(&request).as_deref() != Some(hop.s.as_str()) || path != hop.p {
        return mismatch();
    }
    let (parts, body) = request.into_parts();
    let bytes = if parts.method == Method::POST {
        match state.bodies.read(&parts.headers, body).await {
            // The share is dropped here: the handler reads this body again under its own.
            Ok((bytes, _share)) => bytes,
            Err(refusal) => return refusal,
        }
    } else {
        Bytes::new()
    };
    if digest(&parts.method, &bytes) != hop.d {
        return mismatch();
    }
    let mut request = Request::from_parts(parts, Body::from(bytes));
    request.extensions_mut().insert(Forwarded {
        principal: hop.c.map(|principal| {
            Arc::new(match &hop.k {
                Some(token) => principal.with_token(token),
                None => principal,
            })
        }),
    });
    let mut response = next.run(request).await;
    if let Some(tag) = forwarder.tag(&token) {
        response.headers_mut().insert(SERVED_HEADER, tag);
    }
    response
}

/// A forwarded request whose hop token names another request.
fn mismatch() -> Response {
    tracing::warn!("refused a forwarded request that does not match its hop token");
    (
        StatusCode::FORBIDDEN,
        "the forwarded request does not match its hop token",
    )
        .into_response()
}

/// SHA-256 of a request's method and body, as a hop token carries it.
fn digest(method: &Method, body: &[u8]) -> String {
    let mut hash = Sha256::new();
    hash.update(method.as_str().as_bytes());
    hash.update([0]);
    hash.update(body);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(hash.finalize())
}

/// Middleware on the MCP routes, inside authentication (the caller is known, and an
/// unauthenticated request was refused already): serves a request here, or hands it to the
/// owner of its session.
pub(super) async fn route(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(forwarder) = &state.forwarder else {
        return next.run(request).await;
    };
    if request.extensions().get::<Forwarded>().is_some() {
        // Forwarded to us: served here, whoever the id names (one hop at most).
        return next.run(request).await;
    }
    // `GET /sse` opens a session: never forwarded, whatever its query says.
    let Some(id) = session_id(&request).filter(|_| !request.uri().path().ends_with("/sse")) else {
        return next.run(request).await;
    };
    let Some(owner) = state.sessions.remote_owner(&id) else {
        return next.run(request).await;
    };
    match forward(&state, forwarder, owner, &id, request).await {
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
    session: &str,
    request: Request,
) -> Result<Response, Request> {
    let metrics = state.server.metrics();
    if !forwarder.may_dial(owner) {
        // Sealed by a replica of ours, yet outside the replica network: never dialled.
        tracing::warn!(%owner, "a session names an owner outside the replica network; serving it here");
        metrics.session_forward("outside");
        return Err(request);
    }
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
    let caller = parts
        .extensions
        .get::<Caller>()
        .map(|c| c.principal.clone());
    let Some((outgoing, hop)) = outgoing(
        forwarder,
        owner,
        session,
        &parts,
        bytes.clone(),
        caller.as_deref(),
    ) else {
        return Err(here(parts, bytes));
    };
    let answer = forwarder.client.request(outgoing).await;
    drop(share);
    let gone = match answer {
        Ok(answer) if forwarder.tag_matches(&hop, answer.headers().get(SERVED_HEADER)) => {
            metrics.session_forward("forwarded");
            return Ok(relay(answer, permit, state.shutdown.clone()));
        }
        Ok(_) => {
            // Untagged or wrongly tagged: the owner's address was reused by something that is
            // not a replica of this server. Its answer is dropped unread.
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

/// The request to send to `owner`, and its hop token: the client's, with its path and query,
/// end-to-end headers but no credential (Host included, so the owner checks what the client
/// sent) and a fresh hop token sealing who `caller` is.
fn outgoing(
    forwarder: &Forwarder,
    owner: SocketAddr,
    session: &str,
    parts: &http::request::Parts,
    body: Bytes,
    caller: Option<&Principal>,
) -> Option<(http::Request<Full<Bytes>>, String)> {
    // The path the client sent: a view's endpoint goes to the owner as such, so that the
    // owner serves it through the same view.
    let path = match parts.extensions.get::<ViewRoute>() {
        Some(view) => view.original.as_str(),
        None => parts
            .uri
            .path_and_query()
            .map_or("/", http::uri::PathAndQuery::as_str),
    };
    let hop = forwarder.hop_token(session, path, &parts.method, &body, caller)?;
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
    headers.insert(HOP_HEADER, HeaderValue::from_str(&hop).ok()?);
    Some((request, hop))
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

    fn hop(forwarder: &Forwarder) -> HeaderValue {
        let token = forwarder
            .hop_token("s1", "/mcp", &Method::POST, b"{}", None)
            .unwrap();
        HeaderValue::from_str(&token).unwrap()
    }

    #[test]
    fn the_callers_token_rides_encrypted_for_the_owners_exchanges() {
        let forwarder = Forwarder::new(Sealer::new(&[1; KEY_LEN]), 4, Vec::new());
        let mut claims = serde_json::Map::new();
        claims.insert("sub".into(), "alice".into());
        let caller =
            Principal::from_claims(claims, unix_now() + 60).with_token("the.callers.token");
        let token = forwarder
            .hop_token("s1", "/mcp", &Method::POST, b"{}", Some(&caller))
            .unwrap();
        assert!(!token.contains("callers"));
        let opened = forwarder
            .open_hop(&HeaderValue::from_str(&token).unwrap())
            .unwrap();
        assert_eq!(opened.k.as_deref(), Some("the.callers.token"));
        assert_eq!(opened.c.unwrap().subject.as_deref(), Some("alice"));
    }

    #[test]
    fn hop_tokens_open_only_under_the_key_and_while_fresh() {
        let forwarder = Forwarder::new(Sealer::new(&[1; KEY_LEN]), 4, Vec::new());
        let token = hop(&forwarder);
        let opened = forwarder.open_hop(&token).unwrap();
        assert_eq!((opened.s.as_str(), opened.p.as_str()), ("s1", "/mcp"));
        assert_eq!(opened.d, digest(&Method::POST, b"{}"));
        let foreign = Forwarder::new(Sealer::new(&[2; KEY_LEN]), 4, Vec::new());
        assert!(foreign.open_hop(&token).is_none());
        assert!(forwarder.open_hop(&HeaderValue::from_static("1")).is_none());
        let sealer = Sealer::new(&[1; KEY_LEN]);
        let stale = Hop {
            t: unix_now() - 600,
            d: String::new(),
            p: "/mcp".into(),
            s: "s1".into(),
            c: None,
            k: None,
        };
        let stale = sealer.seal_bytes(HOP_PURPOSE, &serde_json::to_vec(&stale).unwrap());
        assert!(
            forwarder
                .open_hop(&HeaderValue::from_str(&stale).unwrap())
                .is_none()
        );
        // A session id (sealed for another purpose) is no hop token.
        let id = sealer.seal_bytes(b"", &unix_now().to_be_bytes());
        assert!(
            forwarder
                .open_hop(&HeaderValue::from_str(&id).unwrap())
                .is_none()
        );
    }

    #[test]
    fn answers_are_tagged_over_their_own_hop_token() {
        let forwarder = Forwarder::new(Sealer::new(&[1; KEY_LEN]), 4, Vec::new());
        let (first, second) = (hop(&forwarder), hop(&forwarder));
        let tag = forwarder.tag(&first).unwrap();
        assert!(forwarder.tag_matches(first.to_str().unwrap(), Some(&tag)));
        // Another request's tag, a bare mark, no tag, or a stranger's key: not the owner.
        assert!(!forwarder.tag_matches(second.to_str().unwrap(), Some(&tag)));
        let bare = HeaderValue::from_static("1");
        assert!(!forwarder.tag_matches(first.to_str().unwrap(), Some(&bare)));
        assert!(!forwarder.tag_matches(first.to_str().unwrap(), None));
        let stranger = Forwarder::new(Sealer::new(&[2; KEY_LEN]), 4, Vec::new());
        let forged = stranger.tag(&first).unwrap();
        assert!(!forwarder.tag_matches(first.to_str().unwrap(), Some(&forged)));
    }

    #[test]
    fn only_end_to_end_headers_and_no_credential_are_forwarded() {
        let mut from = HeaderMap::new();
        from.insert(header::HOST, HeaderValue::from_static("mcp.example.com"));
        from.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer t"));
        from.insert(header::CONNECTION, HeaderValue::from_static("close"));
        from.insert(HOP_HEADER, HeaderValue::from_static("forged"));
        from.insert(header::CONTENT_LENGTH, HeaderValue::from_static("9"));
        let mut to = HeaderMap::new();
        copy_headers(&from, &mut to);
        assert_eq!(to.len(), 1);
        assert!(to.contains_key(header::HOST));
    }

    #[test]
    fn owners_outside_the_replica_networks_are_not_dialled() {
        let default = Forwarder::new(Sealer::random(), 4, Vec::new());
        for inside in ["10.244.1.7:8080", "127.0.0.1:8080", "[fd00::7]:8080"] {
            assert!(default.may_dial(inside.parse().unwrap()), "{inside}");
        }
        for outside in ["8.8.8.8:443", "[2001:db8::1]:8080", "169.254.169.254:80"] {
            assert!(!default.may_dial(outside.parse().unwrap()), "{outside}");
        }
        let pods = Forwarder::new(Sealer::random(), 4, vec!["10.244.0.0/16".parse().unwrap()]);
        assert!(pods.may_dial("10.244.3.4:8080".parse().unwrap()));
        assert!(!pods.may_dial("10.96.0.1:443".parse().unwrap()));
    }

    #[tokio::test]
    async fn unreachable_owners_are_remembered_for_a_while() {
        let forwarder = Forwarder::new(Sealer::random(), 4, Vec::new());
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
