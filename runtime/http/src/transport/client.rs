//! Who a client is, for its shares of the replica's limits (`mcp_server::clients`): its
//! principal under `spec.auth`, else its address. The address is the connection's peer (the
//! listener hands it over as `ConnectInfo`), or, when that peer is a proxy named by
//! `--trusted-proxy`, the rightmost `X-Forwarded-For` hop that is not itself a trusted proxy.
//! No proxy is trusted by default: a client cannot choose its own address. No I/O.

use super::AppState;
use super::authn::Caller;
use crate::auth::Principal;
use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{Extensions, HeaderMap};
use ipnet::IpNet;
use mcp_server::clients::{ClientKey, UNKNOWN_ADDRESS};
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// The header proxies append the address they received a request from to.
const X_FORWARDED_FOR: &str = "x-forwarded-for";

/// Most `X-Forwarded-For` hops looked at, from the right (a chain of trusted proxies longer
/// than this ends at the last one looked at).
const MAX_HOPS: usize = 16;

/// The address of the client that sent a request: its peer, or what trusted proxies forwarded.
/// A request that did not come through the listener (a router driven in-process) has no peer:
/// all such requests are one unknown client.
pub(super) fn address(state: &AppState, extensions: &Extensions, headers: &HeaderMap) -> IpAddr {
    let Some(ConnectInfo(peer)) = extensions.get::<ConnectInfo<SocketAddr>>() else {
        return UNKNOWN_ADDRESS;
    };
    forwarded_for(peer.ip(), headers, &state.http.trusted_proxies)
}

/// `peer`, or, when `peer` is a trusted proxy, the rightmost `X-Forwarded-For` hop that is not
/// (each trusted proxy appended the address it received the request from; what lies left of
/// the first untrusted hop was written by the client and proves nothing). When every hop is
/// trusted, or a hop does not parse, the last trusted address stands.
pub(super) fn forwarded_for(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let peer = peer.to_canonical();
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(&peer) {
        return peer;
    }
    let hops: Vec<&str> = headers
        .get_all(X_FORWARDED_FOR)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .collect();
    let mut client = peer;
    for hop in hops.iter().rev().take(MAX_HOPS) {
        let Some(ip) = parse_hop(hop.trim()) else {
            break;
        };
        client = ip;
        if !is_trusted(&ip) {
            break;
        }
    }
    client
}

/// One hop: an address, with or without a port (`[v6]:port`).
fn parse_hop(hop: &str) -> Option<IpAddr> {
    hop.parse::<IpAddr>()
        .ok()
        .or_else(|| hop.parse::<SocketAddr>().ok().map(|a| a.ip()))
        .map(|ip| ip.to_canonical())
}

/// Who sent a request: its authenticated principal (the authentication layer put the
/// [`Caller`] there), else its address.
fn key(state: &AppState, extensions: &Extensions, headers: &HeaderMap) -> ClientKey {
    let principal = extensions.get::<Caller>().map(|c| c.principal.digest());
    ClientKey::new(principal, address(state, extensions, headers))
}

/// The key of a caller (`None` without `spec.auth`) at `address`. Computed only where a share
/// is taken: a principal's digest is a hash, which stateless requests need not pay for.
pub(super) fn key_of(caller: Option<&Principal>, address: IpAddr) -> ClientKey {
    ClientKey::new(caller.map(Principal::digest), address)
}

/// Who sent a request (see [`key`]), for handlers that extract their arguments.
pub(super) struct Client(pub(super) ClientKey);

impl FromRequestParts<Arc<AppState>> for Client {
    type Rejection = Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        Ok(Self(key(state, &parts.extensions, &parts.headers)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(X_FORWARDED_FOR, value.parse().unwrap());
        }
        headers
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn forwarded_for_counts_only_from_a_trusted_proxy() {
        let trusted: Vec<IpNet> = vec!["10.1.0.0/16".parse().unwrap()];
        let spoofed = headers(&["203.0.113.9"]);
        // An untrusted peer's header is ignored, and so is everyone's by default.
        assert_eq!(
            forwarded_for(ip("198.51.100.7"), &spoofed, &trusted),
            ip("198.51.100.7")
        );
        assert_eq!(forwarded_for(ip("10.1.2.3"), &spoofed, &[]), ip("10.1.2.3"));
        // A trusted proxy: the rightmost hop it did not itself trust.
        assert_eq!(
            forwarded_for(ip("10.1.2.3"), &spoofed, &trusted),
            ip("203.0.113.9")
        );
        // What the client wrote left of the hop its proxy appended proves nothing.
        let chain = headers(&["1.1.1.1, 203.0.113.9", "10.1.9.9"]);
        assert_eq!(
            forwarded_for(ip("10.1.2.3"), &chain, &trusted),
            ip("203.0.113.9")
        );
        // Ports and IPv4-mapped addresses name the same client.
        let ported = headers(&["[2001:db8::1]:4711"]);
        assert_eq!(
            forwarded_for(ip("::ffff:10.1.2.3"), &ported, &trusted),
            ip("2001:db8::1")
        );
        // Nothing usable: the proxy's own address (never an address the client chose).
        assert_eq!(
            forwarded_for(ip("10.1.2.3"), &headers(&["nonsense"]), &trusted),
            ip("10.1.2.3")
        );
        assert_eq!(
            forwarded_for(ip("10.1.2.3"), &HeaderMap::new(), &trusted),
            ip("10.1.2.3")
        );
    }
}
