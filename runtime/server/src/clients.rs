//! Per-client shares of a replica's limits (sessions, listen streams, polled resources), so
//! that one client cannot take every place: who a client is ([`ClientKey`]: its principal under
//! `spec.auth`, else its address), and a counting table per limit ([`ClientShares`]) whose
//! places ([`ClientPlace`]) are given back when dropped, so no way of ending a session or a
//! stream can leak a count. No I/O.

use crate::metrics::Metrics;
use dashmap::DashMap;
use dashmap::mapref::entry::Entry;
use mcp_protocol::McpError;
use prometheus_client::metrics::gauge::Gauge;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

/// The fraction of a replica-wide limit one client may hold by default: a quarter, so that at
/// least four clients are needed to fill it, while clients that share an address (behind a
/// proxy not named by `--trusted-proxy`) still get a useful part.
pub const DEFAULT_SHARE_DIVISOR: usize = 4;

/// One client's default share of a replica-wide limit of `global`: a quarter, at least one.
pub fn default_share(global: usize) -> usize {
    (global / DEFAULT_SHARE_DIVISOR).max(1)
}

/// The address of callers whose address is not known.
pub const UNKNOWN_ADDRESS: IpAddr = IpAddr::V4(Ipv4Addr::UNSPECIFIED);

/// Who a client is, for its shares.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum ClientKey {
    /// The digest of an authenticated principal (`spec.auth`): one client wherever it connects
    /// from.
    Principal([u8; 16]),
    /// The address of an unauthenticated client (its connection's peer, or the address a
    /// trusted proxy forwarded).
    Address(IpAddr),
}

impl ClientKey {
    /// The key of a client: its principal when authenticated, else its address.
    pub fn new(principal: Option<[u8; 16]>, address: IpAddr) -> Self {
        match principal {
            Some(digest) => Self::Principal(digest),
            None => Self::Address(address),
        }
    }

    /// The key of callers whose address is not known (requests that did not come through the
    /// listener, such as a router driven in-process): all of them share one.
    pub fn unknown() -> Self {
        Self::Address(UNKNOWN_ADDRESS)
    }
}

/// A limit shared out per client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientLimit {
    /// Legacy sessions (`--max-sessions-per-client`).
    Sessions,
    /// 2026-07-28 `subscriptions/listen` streams (`--max-listen-streams-per-client`).
    ListenStreams,
    /// Upstream-backed resources polled for subscribers (`--max-polled-per-client`).
    PolledResources,
}

impl ClientLimit {
    /// Every limit (the metric's label values).
    pub const ALL: [Self; 3] = [Self::Sessions, Self::ListenStreams, Self::PolledResources];

    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Sessions => "sessions",
            Self::ListenStreams => "listen_streams",
            Self::PolledResources => "polled_resources",
        }
    }

    /// What is limited, in a refusal's words.
    fn noun(self) -> &'static str {
        match self {
            Self::Sessions => "sessions",
            Self::ListenStreams => "listen streams",
            Self::PolledResources => "polled resources",
        }
    }

    /// The flag that sets the share.
    pub fn flag(self) -> &'static str {
        match self {
            Self::Sessions => "--max-sessions-per-client",
            Self::ListenStreams => "--max-listen-streams-per-client",
            Self::PolledResources => "--max-polled-per-client",
        }
    }
}

/// How many places of one limit each client holds. A client has an entry only while it holds a
/// place, so the table never has more entries than the limit has places.
pub struct ClientShares {
    limit: ClientLimit,
    share: usize,
    held: DashMap<ClientKey, usize>,
    metrics: Arc<Metrics>,
    /// The table's entries, as `mcp_client_share_clients{limit}` shows them.
    clients: Gauge,
}

impl ClientShares {
    /// A table for `limit` giving each client at most `share` places (at least one).
    pub fn new(limit: ClientLimit, share: usize, metrics: Arc<Metrics>) -> Arc<Self> {
        Arc::new(Self {
            limit,
            share: share.max(1),
            held: DashMap::new(),
            clients: metrics.share_clients_gauge(limit.label()),
            metrics,
        })
    }

    /// The share of each client.
    pub fn share(&self) -> usize {
        self.share
    }

    /// Places `client` holds now.
    pub fn held_by(&self, client: &ClientKey) -> usize {
        self.held.get(client).map_or(0, |n| *n)
    }

    /// Clients holding a place now.
    pub fn clients(&self) -> usize {
        self.held.len()
    }

    /// One more place for `client`, or the refusal naming the limit (counted).
    pub fn take(self: &Arc<Self>, client: ClientKey) -> Result<ClientPlace, McpError> {
        match self.held.entry(client) {
            // A share is at least one.
            Entry::Vacant(slot) => {
                slot.insert(1);
                self.clients.inc();
            }
            Entry::Occupied(held) if *held.get() >= self.share => {
                drop(held);
                self.metrics.client_share_refused(self.limit.label());
                return Err(self.refusal());
            }
            Entry::Occupied(mut held) => *held.get_mut() += 1,
        }
        Ok(ClientPlace {
            shares: self.clone(),
            client,
        })
    }

    /// Whether `client` may take one more place now (for a limit that refuses silently).
    pub fn has_room(&self, client: &ClientKey) -> bool {
        self.held_by(client) < self.share
    }

    /// The refusal when a client's share is taken.
    pub fn refusal(&self) -> McpError {
        McpError::ClientShare {
            limit: self.limit.noun(),
            max: self.share,
            flag: self.limit.flag(),
        }
    }

    /// Counts a refusal decided elsewhere (see [`Self::has_room`]).
    pub fn count_refusal(&self) {
        self.metrics.client_share_refused(self.limit.label());
    }

    fn give_back(&self, client: &ClientKey) {
        if let Entry::Occupied(mut held) = self.held.entry(*client) {
            *held.get_mut() = held.get().saturating_sub(1);
            if *held.get() == 0 {
                held.remove();
                self.clients.dec();
            }
        }
    }
}

/// One place a client holds; given back when dropped.
pub struct ClientPlace {
    shares: Arc<ClientShares>,
    client: ClientKey,
}

impl ClientPlace {
    /// Who holds it.
    pub fn client(&self) -> ClientKey {
        self.client
    }
}

impl Drop for ClientPlace {
    fn drop(&mut self) {
        self.shares.give_back(&self.client);
    }
}

impl std::fmt::Debug for ClientPlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientPlace")
            .field("client", &self.client)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(last: u8) -> ClientKey {
        ClientKey::Address(IpAddr::V4(Ipv4Addr::new(10, 0, 0, last)))
    }

    #[test]
    fn a_client_gets_its_share_and_no_more_while_others_still_get_theirs() {
        let metrics = Arc::new(Metrics::default());
        let shares = ClientShares::new(ClientLimit::Sessions, 2, metrics.clone());
        let first = shares.take(address(1)).unwrap();
        let _second = shares.take(address(1)).unwrap();
        let refused = shares.take(address(1)).unwrap_err();
        assert!(refused.to_string().contains("--max-sessions-per-client"));
        assert!(shares.take(address(2)).is_ok());
        drop(first);
        assert!(shares.take(address(1)).is_ok());
        assert!(
            metrics
                .encode()
                .contains(r#"mcp_client_share_refusals_total{limit="sessions"} 1"#)
        );
    }

    #[test]
    fn dropped_places_leave_no_entry_behind() {
        let shares = ClientShares::new(ClientLimit::ListenStreams, 8, Arc::new(Metrics::default()));
        let places: Vec<_> = (0..50)
            .map(|n| shares.take(address(n % 7)).unwrap())
            .collect();
        assert_eq!(shares.clients(), 7);
        assert_eq!(shares.clients.get(), 7);
        drop(places);
        assert_eq!(shares.clients(), 0);
        assert_eq!(shares.clients.get(), 0);
        assert_eq!(shares.held_by(&address(1)), 0);
    }

    #[test]
    fn a_principal_is_one_client_wherever_it_connects_from() {
        let ip = |n| IpAddr::V4(Ipv4Addr::new(10, 0, 0, n));
        assert_eq!(
            ClientKey::new(Some([7; 16]), ip(1)),
            ClientKey::new(Some([7; 16]), ip(2))
        );
        assert_ne!(ClientKey::new(None, ip(1)), ClientKey::new(None, ip(2)));
        assert_eq!(default_share(10_000), 2_500);
        assert_eq!(default_share(1), 1);
    }
}
