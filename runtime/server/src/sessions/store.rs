//! The sessions of this replica: opening (with a limit, and a share of it per client),
//! finding (adopting sessions another replica opened, via the sealed id), which replica owns a
//! session this one does not hold, ending, and idle expiry. Sharded map, no global lock.

use super::seal::{SealedSession, Sealer, unix_now};
use super::session::{Session, SessionTransport};
use crate::budget::Budget;
use crate::clients::{ClientKey, ClientLimit, ClientPlace, ClientShares};
use crate::metrics::Metrics;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use dashmap::DashMap;
use dashmap::mapref::entry::Entry;
use mcp_protocol::{LegacyVersion, McpError};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// The longest a session lives, however active: its sealed id is refused after that on every
/// replica, which bounds how long a leaked id can be replayed and how long tombstones are kept.
pub(super) const MAX_SESSION_AGE: Duration = Duration::from_secs(24 * 3600);

/// Most ended ids remembered. Past it (a flood of short sessions) the table is replaced by a
/// floor: no id sealed at or before the newest forgotten one is adopted from another replica
/// again, so a forgotten id can never be served again (sessions of other replicas from before
/// the flood must initialize again here; a flood is the only way to get there).
const MAX_TOMBSTONES: usize = 100_000;

/// Whether a session created at `created` (Unix seconds) is past [`MAX_SESSION_AGE`].
fn too_old(created: u64) -> bool {
    unix_now().saturating_sub(created) > MAX_SESSION_AGE.as_secs()
}

/// Session limits and timers.
#[derive(Clone, Debug)]
pub struct SessionSettings {
    /// A session with no request and no open stream for this long ends.
    pub idle_timeout: Duration,
    /// A session with no request since its `initialize` and no open stream ends this soon (a
    /// flood of `initialize` calls must not hold the table for `idle_timeout`).
    pub unused_timeout: Duration,
    /// Most sessions open at once on this replica.
    pub max_sessions: usize,
    /// Most sessions one client (principal, else address) holds at once on this replica.
    pub max_sessions_per_client: usize,
    /// Interval of server pings on open streams; `None` disables them.
    pub ping_interval: Option<Duration>,
    /// How long a ping may go unanswered before the session ends.
    pub ping_timeout: Duration,
    /// Most bytes one session holds: parsed requests while they run, answers to its
    /// questions, HTTP+SSE answers not yet written to its stream.
    pub max_session_bytes: usize,
}

impl Default for SessionSettings {
    fn default() -> Self {
        Self {
            idle_timeout: Duration::from_secs(30 * 60),
            unused_timeout: Duration::from_secs(30),
            max_sessions: 10_000,
            max_sessions_per_client: crate::clients::default_share(10_000),
            ping_interval: Some(Duration::from_secs(30)),
            ping_timeout: Duration::from_secs(10),
            max_session_bytes: super::DEFAULT_SESSION_BYTES,
        }
    }
}

impl SessionSettings {
    /// How often idle and unused sessions are looked for.
    pub fn sweep_interval(&self) -> Duration {
        (self.idle_timeout.min(self.unused_timeout) / 4)
            .clamp(Duration::from_millis(100), Duration::from_secs(30))
    }
}

/// A session in the table, with the place its client's share gives it: removing the entry
/// (whichever way a session ends) gives the place back.
struct Stored {
    session: Arc<Session>,
    _place: ClientPlace,
}

/// Every session of this replica.
pub struct SessionStore {
    sessions: DashMap<String, Stored>,
    /// How many sessions each client holds.
    shares: Arc<ClientShares>,
    /// Ended ids and when they were sealed (unix seconds).
    ended: DashMap<String, u64>,
    /// Ids sealed at or before this (unix seconds) are not adopted: see [`MAX_TOMBSTONES`].
    adopt_after: AtomicU64,
    max_tombstones: usize,
    count: AtomicUsize,
    sealer: Sealer,
    settings: SessionSettings,
    metrics: Arc<Metrics>,
    /// This replica's address as the others reach it, sealed into the ids it opens; `None`:
    /// replicas do not route to each other.
    owner: Option<SocketAddr>,
}

impl SessionStore {
    /// An empty store.
    pub fn new(sealer: Sealer, settings: SessionSettings, metrics: Arc<Metrics>) -> Self {
        let shares = ClientShares::new(
            ClientLimit::Sessions,
            settings.max_sessions_per_client,
            metrics.clone(),
        );
        Self {
            sessions: DashMap::new(),
            shares,
            ended: DashMap::new(),
            adopt_after: AtomicU64::new(0),
            max_tombstones: MAX_TOMBSTONES,
            count: AtomicUsize::new(0),
            sealer,
            settings,
            metrics,
            owner: None,
        }
    }

    /// The store of a replica the others reach at `owner`: the ids it opens name it, and
    /// [`Self::remote_owner`] names other replicas' sessions.
    pub fn with_owner(mut self, owner: Option<SocketAddr>) -> Self {
        self.owner = owner;
        self
    }

    /// The settings.
    pub fn settings(&self) -> &SessionSettings {
        &self.settings
    }

    /// Open sessions.
    pub fn len(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Whether no session is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sessions `client` holds on this replica.
    pub fn held_by(&self, client: &ClientKey) -> usize {
        self.shares.held_by(client)
    }

    /// Clients holding a session on this replica.
    pub fn clients(&self) -> usize {
        self.shares.clients()
    }

    /// Opens a session for a client whose address is not known, or refuses at the limit.
    pub fn open(
        &self,
        transport: SessionTransport,
        version: Option<LegacyVersion>,
    ) -> Result<Arc<Session>, McpError> {
        self.open_for(transport, version, None, ClientKey::unknown())
    }

    /// Opens a session bound to `principal` (a digest of who opened it; sealed into the id so
    /// every replica knows it) and counted in `client`'s share, or refuses at the limit or
    /// when the client holds its share.
    pub fn open_for(
        &self,
        transport: SessionTransport,
        version: Option<LegacyVersion>,
        principal: Option<[u8; 16]>,
        client: ClientKey,
    ) -> Result<Arc<Session>, McpError> {
        self.open_in(transport, version, principal, client, None)
    }

    /// [`SessionStore::open_for`] through the `spec.views` view `view` (sealed into the id:
    /// the session serves that view only).
    pub fn open_in(
        &self,
        transport: SessionTransport,
        version: Option<LegacyVersion>,
        principal: Option<[u8; 16]>,
        client: ClientKey,
        view: Option<&str>,
    ) -> Result<Arc<Session>, McpError> {
        // Refuse before sealing: at the limit, a refusal costs no cryptography.
        if self.len() >= self.settings.max_sessions {
            self.metrics.session_refused();
            return Err(McpError::TooManySessions(self.settings.max_sessions));
        }
        if !self.shares.has_room(&client) {
            self.shares.count_refusal();
            return Err(self.shares.refusal());
        }
        let sealed = SealedSession {
            version: version
                .map(LegacyVersion::as_str)
                .unwrap_or("2024-11-05")
                .to_owned(),
            created: unix_now(),
            principal: principal.map(|p| URL_SAFE_NO_PAD.encode(p)),
            owner: self.owner.map(|owner| owner.to_string()),
            view: view.map(str::to_owned),
        };
        let id = self.sealer.seal(&sealed);
        let mut session = Session::new(id, transport, version, sealed.created);
        session.principal = principal;
        session.view = sealed.view;
        session.client = client;
        session.budget = self.session_budget();
        self.insert(Arc::new(session))
    }

    /// Who a session id is bound to: `None` for an id that names no session of ours (the
    /// transport answers those), `Some(None)` for a session opened without authentication.
    pub fn principal_of(&self, id: &str) -> Option<Option<[u8; 16]>> {
        if let Some(entry) = self.sessions.get(id) {
            return Some(entry.session.principal);
        }
        self.sealer.open(id).map(|sealed| sealed_principal(&sealed))
    }

    /// The view a session id was opened through: `None` for an id that names no session of
    /// ours, `Some(None)` for a session of the whole server.
    pub fn view_of(&self, id: &str) -> Option<Option<String>> {
        if let Some(entry) = self.sessions.get(id) {
            return Some(entry.session.view.clone());
        }
        self.sealer.open(id).map(|sealed| sealed.view)
    }

    /// The replica to hand a request for session `id` to: the owner its sealed id names, when
    /// this replica routes, does not hold the session itself (a session adopted here stays
    /// here), did not end it, and is not that owner. `None`: serve the request here, as for an
    /// id that does not open, is too old, or names no owner (sealed before owners existed).
    pub fn remote_owner(&self, id: &str) -> Option<SocketAddr> {
        let me = self.owner?;
        if self.sessions.contains_key(id) || self.ended.contains_key(id) {
            return None;
        }
        let sealed = self.sealer.open(id)?;
        if too_old(sealed.created) {
            return None;
        }
        let owner: SocketAddr = sealed.owner?.parse().ok()?;
        (owner != me).then_some(owner)
    }

    /// A new session's byte budget, counted in the `session` gauge.
    fn session_budget(&self) -> Arc<Budget> {
        Budget::with_gauge(
            self.settings.max_session_bytes,
            Some(self.metrics.held_gauge("session")),
        )
    }

    /// Inserts `session` (counted in its client's share), or returns the one a concurrent
    /// request already inserted under its id (two requests may adopt one id at once; counting
    /// both would leak a place).
    fn insert(&self, session: Arc<Session>) -> Result<Arc<Session>, McpError> {
        let slot = match self.sessions.entry(session.id.clone()) {
            Entry::Occupied(existing) => return Ok(existing.get().session.clone()),
            Entry::Vacant(slot) => slot,
        };
        // Taken first: a refusal by the global limit below gives it back when dropped.
        let place = self.shares.take(session.client)?;
        let limit = self.settings.max_sessions;
        if self
            .count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < limit).then_some(n + 1)
            })
            .is_err()
        {
            self.metrics.session_refused();
            return Err(McpError::TooManySessions(limit));
        }
        session.touch();
        self.metrics.sessions(session.transport.label(), 1);
        slot.insert(Stored {
            session: session.clone(),
            _place: place,
        });
        Ok(session)
    }

    /// Finds a Streamable HTTP session: one of ours, or one another replica opened (its sealed id
    /// carries what we need), which is adopted here in `client`'s share. Ended or forged ids
    /// find nothing.
    pub fn find(&self, id: &str, client: ClientKey) -> Result<Option<Arc<Session>>, McpError> {
        if let Some(entry) = self.sessions.get(id) {
            let session = &entry.session;
            session.touch();
            session.mark_used();
            return Ok(Some(session.clone()));
        }
        if self.ended.contains_key(id) {
            return Ok(None);
        }
        let Some(sealed) = self.sealer.open(id) else {
            return Ok(None);
        };
        let Some(version) = LegacyVersion::parse(&sealed.version) else {
            return Ok(None);
        };
        if too_old(sealed.created) || sealed.created <= self.adopt_after.load(Ordering::Acquire) {
            return Ok(None);
        }
        let mut session = Session::new(
            id.to_owned(),
            SessionTransport::StreamableHttp,
            Some(version),
            sealed.created,
        );
        session.principal = sealed_principal(&sealed);
        session.view = sealed.view;
        session.client = client;
        session.budget = self.session_budget();
        session.mark_used();
        self.insert(Arc::new(session)).map(Some)
    }

    /// Finds a session of this replica only (HTTP+SSE sessions live where their stream is).
    pub fn find_local(&self, id: &str) -> Option<Arc<Session>> {
        let session = self.sessions.get(id)?.session.clone();
        session.touch();
        session.mark_used();
        Some(session)
    }

    /// Ends a session: its streams close, its requests stop, its id is never served again here.
    pub fn end(&self, id: &str) -> bool {
        let Some(created) = self.sessions.get(id).map(|e| e.session.created) else {
            return false;
        };
        // The tombstone first, so a concurrent request cannot adopt the id again in between.
        if self.ended.len() >= self.max_tombstones {
            let newest = self.ended.iter().map(|e| *e.value()).max().unwrap_or(0);
            self.adopt_after.fetch_max(newest, Ordering::AcqRel);
            self.ended.clear();
        }
        self.ended.insert(id.to_owned(), created);
        // Removing the entry gives its client's place back.
        let Some((_, Stored { session, .. })) = self.sessions.remove(id) else {
            return false;
        };
        self.count.fetch_sub(1, Ordering::AcqRel);
        self.metrics.sessions(session.transport.label(), -1);
        session.ended.cancel();
        true
    }

    /// Ends sessions idle past the timeout and forgets old tombstones; returns how many ended.
    pub fn expire_idle(&self) -> usize {
        let idle: Vec<String> = self
            .sessions
            .iter()
            .filter(|e| {
                let s = &e.session;
                let idle = s.idle_for();
                let limit = if s.used() {
                    self.settings.idle_timeout
                } else {
                    self.settings.unused_timeout.min(self.settings.idle_timeout)
                };
                (!s.has_stream() && idle >= limit) || too_old(s.created)
            })
            .map(|e| e.session.id.clone())
            .collect();
        let ended = idle.iter().filter(|id| self.end(id)).count();
        // Past the age limit a sealed id is refused anyway.
        let now = unix_now();
        self.ended
            .retain(|_, created| now.saturating_sub(*created) <= MAX_SESSION_AGE.as_secs());
        ended
    }

    /// Ends every session (shutdown).
    pub fn end_all(&self) {
        let ids: Vec<String> = self.sessions.iter().map(|e| e.session.id.clone()).collect();
        for id in ids {
            self.end(&id);
        }
    }
}

/// The principal digest a sealed id carries.
fn sealed_principal(sealed: &SealedSession) -> Option<[u8; 16]> {
    sealed.principal.as_ref().map(|p| {
        let mut digest = [0u8; 16];
        // A sealed digest was written by `open_for`: 16 bytes. Anything else binds to no one
        // (all zeros matches no principal's digest in practice).
        if let Ok(bytes) = URL_SAFE_NO_PAD.decode(p)
            && bytes.len() == 16
        {
            digest.copy_from_slice(&bytes);
        }
        digest
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::KEY_LEN;

    fn store(key: u8, settings: SessionSettings) -> SessionStore {
        SessionStore::new(
            Sealer::new(&[key; KEY_LEN]),
            settings,
            Arc::new(Metrics::default()),
        )
    }

    #[test]
    fn refuses_past_the_limit() {
        let store = store(
            1,
            SessionSettings {
                max_sessions: 2,
                ..SessionSettings::default()
            },
        );
        let version = Some(LegacyVersion::V2025_11_25);
        store
            .open(SessionTransport::StreamableHttp, version)
            .unwrap();
        let second = store
            .open(SessionTransport::StreamableHttp, version)
            .unwrap();
        assert_eq!(
            store.open(SessionTransport::StreamableHttp, version).err(),
            Some(McpError::TooManySessions(2))
        );
        store.end(&second.id);
        assert!(
            store
                .open(SessionTransport::StreamableHttp, version)
                .is_ok()
        );
    }

    fn client(last: u8) -> ClientKey {
        ClientKey::Address(std::net::IpAddr::from([10, 0, 0, last]))
    }

    #[test]
    fn one_client_gets_its_share_of_sessions_and_another_still_gets_one() {
        let store = store(
            1,
            SessionSettings {
                max_sessions: 10,
                max_sessions_per_client: 2,
                ..SessionSettings::default()
            },
        );
        let version = Some(LegacyVersion::V2025_11_25);
        let open = |c| store.open_for(SessionTransport::StreamableHttp, version, None, c);
        let first = open(client(1)).unwrap();
        open(client(1)).unwrap();
        // Before, one client could take every session of the replica.
        let Err(refused) = open(client(1)) else {
            panic!("a third session for one client")
        };
        assert!(matches!(
            refused,
            McpError::ClientShare {
                limit: "sessions",
                max: 2,
                flag: "--max-sessions-per-client"
            }
        ));
        assert!(open(client(2)).is_ok());
        // A principal is one client, whatever address it comes from.
        let principal = |c| {
            store.open_for(
                SessionTransport::Sse,
                None,
                Some([9; 16]),
                ClientKey::new(Some([9; 16]), c),
            )
        };
        let ip = |n| std::net::IpAddr::from([10, 0, 1, n]);
        principal(ip(1)).unwrap();
        principal(ip(2)).unwrap();
        assert!(principal(ip(3)).is_err());
        assert_eq!(store.held_by(&ClientKey::Principal([9; 16])), 2);
        assert!(store.end(&first.id));
        assert!(open(client(1)).is_ok());
    }

    #[test]
    fn every_way_a_session_goes_gives_its_clients_place_back() {
        let settings = SessionSettings {
            idle_timeout: Duration::from_millis(30),
            max_sessions_per_client: 3,
            ..SessionSettings::default()
        };
        let owner = store(1, settings.clone());
        let adopter = store(1, settings);
        let version = Some(LegacyVersion::V2025_11_25);
        let open = |c| {
            owner
                .open_for(SessionTransport::StreamableHttp, version, None, c)
                .unwrap()
                .id
                .clone()
        };
        // Ended by id.
        let ended = open(client(1));
        assert_eq!(owner.held_by(&client(1)), 1);
        assert!(owner.end(&ended));
        assert_eq!(owner.held_by(&client(1)), 0);
        // Adopted from another replica: counted in the adopting client's share, once however
        // many requests adopt it at once, and given back when it ends.
        let adopted = open(client(2));
        for _ in 0..3 {
            assert!(adopter.find(&adopted, client(3)).unwrap().is_some());
        }
        assert_eq!(adopter.held_by(&client(3)), 1);
        assert!(adopter.end(&adopted));
        assert_eq!(adopter.held_by(&client(3)), 0);
        // A client at its share adopts nothing more.
        let taken: Vec<String> = (10..13).map(|n| open(client(n))).collect();
        for id in &taken {
            adopter.find(id, client(5)).unwrap();
        }
        let one_more = open(client(13));
        assert!(matches!(
            adopter.find(&one_more, client(5)),
            Err(McpError::ClientShare { .. })
        ));
        assert_eq!(adopter.held_by(&client(5)), 3);
        // Expired, and ended at shutdown.
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(adopter.expire_idle(), 3);
        assert_eq!(adopter.clients(), 0);
        assert!(owner.clients() > 0);
        owner.end_all();
        assert_eq!((owner.clients(), owner.len()), (0, 0));
    }

    #[test]
    fn another_replica_adopts_a_session_but_not_an_ended_one() {
        let first = store(1, SessionSettings::default());
        let second = store(1, SessionSettings::default());
        let session = first
            .open(
                SessionTransport::StreamableHttp,
                Some(LegacyVersion::V2025_06_18),
            )
            .unwrap();
        let adopted = second
            .find(&session.id, ClientKey::unknown())
            .unwrap()
            .unwrap();
        assert_eq!(adopted.version(), Some(LegacyVersion::V2025_06_18));
        assert!(first.end(&session.id));
        assert!(
            first
                .find(&session.id, ClientKey::unknown())
                .unwrap()
                .is_none()
        );
        assert!(
            store(2, SessionSettings::default())
                .find(&session.id, ClientKey::unknown())
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn ended_ids_stay_ended_when_the_tombstones_overflow() {
        let mut first = store(1, SessionSettings::default());
        first.max_tombstones = 4;
        let second = store(1, SessionSettings::default());
        let version = Some(LegacyVersion::V2025_11_25);
        let ids: Vec<String> = (0..20)
            .map(|_| {
                let id = first
                    .open(SessionTransport::StreamableHttp, version)
                    .unwrap()
                    .id
                    .clone();
                assert!(first.end(&id));
                id
            })
            .collect();
        // Before, the ids ended while the table was full were forgotten and adopted again.
        for id in &ids {
            assert!(first.find(id, ClientKey::unknown()).unwrap().is_none());
        }
        // Another replica's sessions still open.
        let other = second
            .open(SessionTransport::StreamableHttp, version)
            .unwrap();
        assert!(
            second
                .find(&other.id, ClientKey::unknown())
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn concurrent_adoptions_of_one_id_count_once() {
        let first = store(1, SessionSettings::default());
        let second = Arc::new(store(1, SessionSettings::default()));
        for _ in 0..50 {
            let id = first
                .open(
                    SessionTransport::StreamableHttp,
                    Some(LegacyVersion::V2025_11_25),
                )
                .unwrap()
                .id
                .clone();
            let adopters: Vec<_> = (0..8)
                .map(|_| {
                    let (second, id) = (second.clone(), id.clone());
                    std::thread::spawn(move || {
                        second.find(&id, ClientKey::unknown()).unwrap().unwrap()
                    })
                })
                .collect();
            let adopted: Vec<_> = adopters.into_iter().map(|t| t.join().unwrap()).collect();
            assert!(adopted.iter().all(|s| Arc::ptr_eq(s, &adopted[0])));
            assert_eq!(second.len(), 1);
            assert!(second.end(&id));
            assert!(second.is_empty());
        }
    }

    #[test]
    fn ids_older_than_the_maximum_age_are_not_adopted() {
        let sealer = Sealer::new(&[1; KEY_LEN]);
        let old = SealedSession {
            principal: None,
            version: "2025-11-25".into(),
            created: unix_now() - MAX_SESSION_AGE.as_secs() - 10,
            owner: None,
            view: None,
        };
        let store = store(1, SessionSettings::default());
        assert!(
            store
                .find(&sealer.seal(&old), ClientKey::unknown())
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn requests_for_another_replicas_session_go_to_its_owner() {
        let a: SocketAddr = "10.0.0.1:8080".parse().unwrap();
        let b: SocketAddr = "10.0.0.2:8080".parse().unwrap();
        let first = store(1, SessionSettings::default()).with_owner(Some(a));
        let second = store(1, SessionSettings::default()).with_owner(Some(b));
        let version = Some(LegacyVersion::V2025_11_25);
        let id = first
            .open(SessionTransport::StreamableHttp, version)
            .unwrap()
            .id
            .clone();
        // The owner serves its own sessions; the other replica hands them over.
        assert_eq!(first.remote_owner(&id), None);
        assert_eq!(second.remote_owner(&id), Some(a));
        // A replica that does not route, and a foreign key, serve locally.
        assert_eq!(store(1, SessionSettings::default()).remote_owner(&id), None);
        let foreign = store(2, SessionSettings::default()).with_owner(Some(b));
        assert_eq!(foreign.remote_owner(&id), None);
        // Once adopted here (its owner was unreachable), the session stays here.
        assert!(second.find(&id, ClientKey::unknown()).unwrap().is_some());
        assert_eq!(second.remote_owner(&id), None);
        // Ids without an owner (sealed by a replica that does not route) stay where they land.
        let unowned = store(1, SessionSettings::default())
            .open(SessionTransport::StreamableHttp, version)
            .unwrap()
            .id
            .clone();
        assert_eq!(second.remote_owner(&unowned), None);
        // Ended here: answered here (404), not handed over.
        let third = store(1, SessionSettings::default()).with_owner(Some(b));
        let other = first.open(SessionTransport::Sse, None).unwrap().id.clone();
        assert!(third.find(&other, ClientKey::unknown()).unwrap().is_some());
        assert!(third.end(&other));
        assert_eq!(third.remote_owner(&other), None);
    }

    #[test]
    fn idle_sessions_expire() {
        let store = store(
            1,
            SessionSettings {
                idle_timeout: Duration::ZERO,
                ..SessionSettings::default()
            },
        );
        let session = store
            .open(
                SessionTransport::StreamableHttp,
                Some(LegacyVersion::V2025_11_25),
            )
            .unwrap();
        assert_eq!(store.expire_idle(), 1);
        assert!(session.ended.is_cancelled());
        assert!(
            store
                .find(&session.id, ClientKey::unknown())
                .unwrap()
                .is_none()
        );
        assert!(store.is_empty());
    }

    #[test]
    fn sessions_unused_since_initialize_expire_first() {
        let store = store(
            1,
            SessionSettings {
                unused_timeout: Duration::from_millis(50),
                ..SessionSettings::default()
            },
        );
        let version = Some(LegacyVersion::V2025_11_25);
        let unused = store
            .open(SessionTransport::StreamableHttp, version)
            .unwrap();
        let used = store
            .open(SessionTransport::StreamableHttp, version)
            .unwrap();
        assert!(
            store
                .find(&used.id, ClientKey::unknown())
                .unwrap()
                .is_some()
        );
        std::thread::sleep(Duration::from_millis(80));
        // Before, both held their place for the 30-minute idle timeout.
        assert_eq!(store.expire_idle(), 1);
        assert!(unused.ended.is_cancelled() && !used.ended.is_cancelled());
        assert!(store.settings().sweep_interval() <= Duration::from_millis(100));
    }
}
