//! HTTP transports on the MCP port: `/mcp` (2026-07-28 stateless and legacy Streamable HTTP
//! sessions) and `/sse` + `/messages` (2024-11-05 HTTP+SSE). Transports decide no method: they
//! check HTTP, turn it into [`Server`] calls, and turn results back into HTTP.

mod authn;
mod body;
mod card;
mod client;
mod forward;
mod gate;
mod guard;
mod headers;
mod held;
mod legacy;
mod mcp_post;
mod param_headers;
mod reply;
mod session_stream;
mod sse;
mod stateless;
mod streamable;
mod switch;
mod view_route;
mod views;

use crate::auth::AuthState;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{any, get, post};
use mcp_server::sessions::SessionStore;
use mcp_server::{ListenLimit, Server};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use authn::Caller;
pub use body::BodyBudget;
pub use card::{CARD_META, CARD_SCHEMA, CARD_TYPE, card};
pub use forward::Forwarder;
pub use guard::OriginPolicy;
pub use view_route::ViewRoute;

/// HTTP settings of the MCP port.
#[derive(Clone, Debug)]
pub struct HttpSettings {
    /// Who may call: Host and Origin allow-lists.
    pub origins: OriginPolicy,
    /// Path prefix under which an ingress exposes the server: the routes are served under it as
    /// well as at the root, and the HTTP+SSE endpoint URI points under it. Empty, or `/` then
    /// segments without `/` at the end, `{`, `}` or `*` (see [`check_path_prefix`]).
    pub path_prefix: String,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// Interval of `:` keep-alive comments on SSE streams.
    pub keepalive: Duration,
    /// Bytes of large bodies (over 64 KiB) read and parsed at once, across all clients.
    pub large_body_budget: usize,
    /// Longest a large body waits for its share of that budget before a 503.
    pub large_body_wait: Duration,
    /// Longest a body may take to arrive before a 408.
    pub body_timeout: Duration,
    /// Bytes held for clients at once, across all of them: parsed messages (weighed before
    /// parsing) while their requests run, and HTTP+SSE answers not yet written. Over it, 503.
    pub max_held_bytes: usize,
    /// `--server-card`: serve the server card (SEP-2127, a draft) at `<mcp path>/server-card`.
    pub server_card: bool,
    /// Proxies whose `X-Forwarded-For` names the client, for its shares of the limits (empty:
    /// the connection's peer is the client).
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Most 2026-07-28 `subscriptions/listen` streams one client holds open (of as many as
    /// there may be sessions).
    pub max_listen_streams_per_client: usize,
    /// `--transports`: the transports this process may serve (those `spec.transports` allows
    /// too are served).
    pub transports: mcp_declaration::Transports,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            origins: OriginPolicy::default(),
            path_prefix: String::new(),
            max_body_bytes: 4 * 1024 * 1024,
            keepalive: Duration::from_secs(15),
            // Four of the largest bodies: each costs at most a few times its size to parse.
            large_body_budget: 16 * 1024 * 1024,
            large_body_wait: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            // A quarter of the default 256Mi pod limit; room for the largest body's weight.
            max_held_bytes: 64 * 1024 * 1024,
            server_card: false,
            trusted_proxies: Vec::new(),
            max_listen_streams_per_client: mcp_server::clients::default_share(
                mcp_server::sessions::SessionSettings::default().max_sessions,
            ),
            transports: mcp_declaration::Transports::default(),
        }
    }
}

/// `prefix` as a path prefix the routes can live under: empty, or starting with `/`, without a
/// trailing `/`, an empty segment, or a character axum's route syntax or a URL gives a meaning.
pub fn check_path_prefix(prefix: &str) -> Result<String, String> {
    let prefix = prefix.trim_end_matches('/');
    if prefix.is_empty() {
        return Ok(String::new());
    }
    let plain = |c: char| c.is_ascii_alphanumeric() || "-._~!$&'()+,;=@%/".contains(c);
    if !prefix.starts_with('/') || prefix.contains("//") || !prefix.chars().all(plain) {
        return Err(format!(
            "`{prefix}` is not a path prefix such as /weather (a leading `/`, no empty segment, no `{{`, `}}`, `*`, `:`, `?` or `#`)"
        ));
    }
    Ok(prefix.to_owned())
}

/// Everything a handler needs.
pub struct AppState {
    /// The dispatch layer.
    pub server: Arc<Server>,
    /// Legacy sessions.
    pub sessions: Arc<SessionStore>,
    /// HTTP settings.
    pub http: HttpSettings,
    /// Cancelled on shutdown: open streams end.
    pub shutdown: CancellationToken,
    /// Bounds open 2026-07-28 `subscriptions/listen` streams (sized like the session limit),
    /// in all and per client.
    pub listen_streams: ListenLimit,
    /// Who may call, when the declaration has `spec.auth`.
    pub auth: Arc<AuthState>,
    /// Bounds the large bodies read and parsed at once.
    pub bodies: BodyBudget,
    /// Bytes held for every client at once (`max_held_bytes`).
    pub held: Arc<mcp_server::budget::Budget>,
    /// Hands requests for another replica's sessions to it (`--advertise-address`); `None`:
    /// every session is served wherever its requests arrive.
    pub forwarder: Option<Forwarder>,
}

/// The MCP routes: at the root (in-cluster clients, through the Service) and, with a path
/// prefix, under it as well (clients through an ingress or gateway that forwards the path as it
/// is: no rewriting, so any controller routes it the same way). The endpoints of each
/// `spec.views` view (`{prefix}{view}/mcp`, ...) reach the same routes through
/// `transport/views.rs`, which runs before routing.
pub fn router(state: Arc<AppState>) -> Router {
    let routes = routes(state.clone());
    Router::new().fallback_service(views::Views {
        state,
        inner: routes,
    })
}

fn routes(state: Arc<AppState>) -> Router {
    let max_body = state.http.max_body_bytes;
    let mut bases = vec![String::new()];
    if !state.http.path_prefix.is_empty() {
        bases.push(state.http.path_prefix.clone());
    }
    let mut router = Router::new();
    let mut cards = Router::new();
    for base in bases {
        router = router
            .route(
                &format!("{base}/mcp"),
                post(mcp_post::post)
                    .get(streamable::get)
                    .delete(streamable::delete),
            )
            .route(&format!("{base}/sse"), get(sse::get))
            .route(&format!("{base}/messages"), post(sse::post));
        if state.http.server_card {
            cards = cards.route(&format!("{base}/mcp/server-card"), any(card::serve));
        }
    }
    router
        // After authentication: a request is forwarded to the replica owning its session only
        // once this replica knows who sent it (the hop token seals that, not the token). Only a
        // request that names a session can be another replica's.
        .route_layer(gate::SessionsOnly(axum::middleware::from_fn_with_state(
            state.clone(),
            forward::route,
        )))
        // Every MCP route is authenticated (when the declaration asks for it); the metadata is
        // not (clients read it to learn how to authenticate).
        .route_layer(gate::AuthnLayer(state.clone()))
        // Before authentication: a request another replica forwarded here brings the caller
        // that replica authenticated, bound to the request (and its answer is tagged).
        .route_layer(gate::SessionsOnly(axum::middleware::from_fn_with_state(
            state.clone(),
            forward::accept,
        )))
        .fallback(authn::metadata)
        .layer(gate::EdgeLayer(state.clone()))
        .layer(DefaultBodyLimit::max(max_body))
        // The server card is public and any origin may read it: outside authentication and the
        // Origin check (it checks the Host itself).
        .merge(cards)
        .with_state(state)
}

/// Serves the MCP routes on `listener` until `shutdown`, then drains for at most `drain`.
/// Sessions expire in the background meanwhile.
pub async fn serve(
    listener: TcpListener,
    state: Arc<AppState>,
    limits: crate::listener::ConnectionLimits,
    drain: Duration,
) -> std::io::Result<()> {
    let shutdown = state.shutdown.clone();
    let reaper = tokio::spawn(expire_sessions(state.clone()));
    let app = router(state.clone());
    let server = crate::listener::serve(listener, app, limits, shutdown.clone());
    let mut server = std::pin::pin!(server);
    let result = tokio::select! {
        result = &mut server => result,
        () = async { shutdown.cancelled().await; tokio::time::sleep(drain).await } => {
            tracing::warn!(?drain, "connections still open after the drain deadline; closing them");
            Ok(())
        }
    };
    reaper.abort();
    state.sessions.end_all();
    result
}

async fn expire_sessions(state: Arc<AppState>) {
    let every = state.sessions.settings().sweep_interval();
    let mut timer = tokio::time::interval(every);
    loop {
        timer.tick().await;
        let ended = state.sessions.expire_idle();
        if ended > 0 {
            tracing::info!(ended, "ended idle sessions");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::check_path_prefix;

    #[test]
    fn path_prefixes_are_checked() {
        assert_eq!(check_path_prefix("").unwrap(), "");
        assert_eq!(check_path_prefix("/").unwrap(), "");
        assert_eq!(check_path_prefix("/weather/").unwrap(), "/weather");
        assert_eq!(check_path_prefix("/a/b-c.d").unwrap(), "/a/b-c.d");
        for bad in ["weather", "/a//b", "/{x}", "/*", "/a?b", "/a#b", "/a:b"] {
            assert!(check_path_prefix(bad).is_err(), "{bad}");
        }
    }
}
