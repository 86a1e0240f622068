//! One session's state on this replica: version, log level, subscriptions, in-flight requests,
//! the server-to-client stream and outstanding pings. Each lock is per session, never global.

use crate::budget::{Budget, Held};
use crate::clients::ClientKey;
use mcp_declaration::LogLevel;
use mcp_protocol::{LegacyVersion, McpError};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// The sending end of a session's server-to-client stream (the same type as
/// `server::Notifier`; boxed messages keep the channel small, see there).
pub type StreamSender = mpsc::Sender<Box<crate::Outgoing>>;

/// Most requests one session may have running at once (HTTP+SSE answers 202 before running a
/// request, so nothing else would bound them).
pub const MAX_IN_FLIGHT: usize = 64;

/// Most bytes one session holds by default: its requests' parsed messages while they run,
/// the client's answers to its questions, and HTTP+SSE answers not yet written to its stream.
pub const DEFAULT_SESSION_BYTES: usize = 8 << 20;

/// A registered in-flight request; dropping it forgets the request.
pub struct InFlight<'a> {
    session: &'a Session,
    key: String,
    /// Cancelled by `notifications/cancelled` or when the session ends.
    pub token: CancellationToken,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.session.state().in_flight.remove(&self.key);
    }
}

/// How the session's client reaches us.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionTransport {
    /// Streamable HTTP on `/mcp` (2025-03-26 and later).
    StreamableHttp,
    /// HTTP+SSE: `GET /sse` + `POST /messages` (2024-11-05).
    Sse,
}

impl SessionTransport {
    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Self::StreamableHttp => "streamable_http",
            Self::Sse => "sse",
        }
    }
}

/// A session.
pub struct Session {
    /// The id the client sends.
    pub id: String,
    /// The transport.
    pub transport: SessionTransport,
    /// Cancelled when the session ends; its streams and requests stop.
    pub ended: CancellationToken,
    /// When the session was opened (on whichever replica), seconds since the Unix epoch.
    pub created: u64,
    /// Digest of the principal that opened it (authenticated servers): no one else may use it.
    pub principal: Option<[u8; 16]>,
    /// The `spec.views` view it was opened through (`None`: the whole server); every request
    /// on it is served through that view.
    pub view: Option<String>,
    /// Who holds it, for the per-client shares (its place in the session table, the
    /// resources it has polled).
    pub client: ClientKey,
    /// What the session holds in memory: parsed requests while they run, answers to its
    /// questions, HTTP+SSE answers not yet written ([`DEFAULT_SESSION_BYTES`] unless the store
    /// sets another).
    pub budget: Arc<Budget>,
    epoch: Instant,
    last_seen_ms: AtomicU64,
    used: AtomicBool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    version: Option<LegacyVersion>,
    log_level: Option<LogLevel>,
    subscriptions: HashSet<String>,
    stream: Option<StreamSender>,
    in_flight: HashMap<String, CancellationToken>,
    pings: HashMap<String, oneshot::Sender<()>>,
    client_capabilities: Value,
    asks: HashMap<String, oneshot::Sender<(Value, Held)>>,
}

impl Session {
    /// A session; `version` is `None` for an HTTP+SSE session until `initialize` arrives on it.
    pub fn new(
        id: String,
        transport: SessionTransport,
        version: Option<LegacyVersion>,
        created: u64,
    ) -> Self {
        let state = State {
            version,
            ..State::default()
        };
        Self {
            id,
            transport,
            created,
            principal: None,
            view: None,
            client: ClientKey::unknown(),
            budget: Budget::new(DEFAULT_SESSION_BYTES),
            ended: CancellationToken::new(),
            epoch: Instant::now(),
            last_seen_ms: AtomicU64::new(0),
            used: AtomicBool::new(false),
            state: Mutex::new(state),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock leaves plain data behind; keep serving.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks activity now.
    pub fn touch(&self) {
        let now = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_seen_ms.store(now, Ordering::Relaxed);
    }

    /// Records a request after `initialize` (see [`Self::used`]).
    pub fn mark_used(&self) {
        self.used.store(true, Ordering::Relaxed);
    }

    /// Whether the session served a request after the one that opened it.
    pub fn used(&self) -> bool {
        self.used.load(Ordering::Relaxed)
    }

    /// Time since the last activity.
    pub fn idle_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_seen_ms.load(Ordering::Relaxed));
        self.epoch.elapsed().saturating_sub(last)
    }

    /// The negotiated version, once known.
    pub fn version(&self) -> Option<LegacyVersion> {
        self.state().version
    }

    /// Records the negotiated version.
    pub fn set_version(&self, version: LegacyVersion) {
        self.state().version = Some(version);
    }

    /// The client's requested log level.
    pub fn log_level(&self) -> Option<LogLevel> {
        self.state().log_level
    }

    /// Sets the client's log level.
    pub fn set_log_level(&self, level: LogLevel) {
        self.state().log_level = Some(level);
    }

    /// Subscribes to or unsubscribes from a resource URI.
    pub fn subscribe(&self, uri: &str, on: bool) {
        let mut state = self.state();
        if on {
            state.subscriptions.insert(uri.to_owned());
        } else {
            state.subscriptions.remove(uri);
        }
    }

    /// How many resources the client subscribed to.
    pub fn subscription_count(&self) -> usize {
        self.state().subscriptions.len()
    }

    /// The resource URIs the client subscribed to.
    pub fn subscriptions(&self) -> Vec<String> {
        self.state().subscriptions.iter().cloned().collect()
    }

    /// Whether the client subscribed to `uri`.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.state().subscriptions.contains(uri)
    }

    /// Attaches the server-to-client stream; `false` when one is already open.
    pub fn attach_stream(&self, sender: StreamSender) -> bool {
        let mut state = self.state();
        if state.stream.as_ref().is_some_and(|s| !s.is_closed()) {
            return false;
        }
        state.stream = Some(sender);
        true
    }

    /// Detaches `sender`'s stream (not a newer one) so that, once in-flight senders finish, the
    /// client sees it end.
    pub fn detach_stream(&self, sender: &StreamSender) {
        let mut state = self.state();
        if state
            .stream
            .as_ref()
            .is_some_and(|s| s.same_channel(sender))
        {
            state.stream = None;
        }
    }

    /// The open server-to-client stream, if any.
    pub fn stream(&self) -> Option<StreamSender> {
        self.state().stream.clone().filter(|s| !s.is_closed())
    }

    /// Whether a server-to-client stream is open (an open stream is not idle).
    pub fn has_stream(&self) -> bool {
        self.state().stream.as_ref().is_some_and(|s| !s.is_closed())
    }

    /// Registers an in-flight request so `notifications/cancelled` can stop it; the guard
    /// forgets it when dropped, whether the request finished or its client went away. `None` at
    /// [`MAX_IN_FLIGHT`] requests or for an id already in flight ([`Self::try_start_request`]
    /// says which).
    pub fn start_request(&self, id: &Value) -> Option<InFlight<'_>> {
        self.try_start_request(id).ok()
    }

    /// [`Self::start_request`], with the reason for a refusal. Each request counts, and an id
    /// may be in flight once: a second request under it would replace the first's entry, run
    /// uncounted, and make the first uncancellable.
    pub fn try_start_request(&self, id: &Value) -> Result<InFlight<'_>, McpError> {
        let token = self.ended.child_token();
        let key = id.to_string();
        let mut state = self.state();
        if state.in_flight.len() >= MAX_IN_FLIGHT {
            return Err(McpError::TooManyRequests(MAX_IN_FLIGHT));
        }
        if state.in_flight.contains_key(&key) {
            return Err(McpError::InvalidRequest(
                "a request with this id is already in flight in this session".into(),
            ));
        }
        state.in_flight.insert(key.clone(), token.clone());
        Ok(InFlight {
            session: self,
            key,
            token,
        })
    }

    /// Cancels an in-flight request; unknown ids are ignored, as the protocol asks.
    pub fn cancel_request(&self, id: &Value) {
        if let Some(token) = self.state().in_flight.remove(&id.to_string()) {
            token.cancel();
        }
    }

    /// Registers an outstanding ping; the receiver fires when the client answers.
    pub fn expect_pong(&self, id: &Value) -> oneshot::Receiver<()> {
        let (sender, receiver) = oneshot::channel();
        self.state().pings.insert(id.to_string(), sender);
        receiver
    }

    /// Delivers a client's answer to a server request.
    pub fn answer(&self, id: &Value) {
        if let Some(sender) = self.state().pings.remove(&id.to_string()) {
            // The waiter may have timed out already.
            let _ = sender.send(());
        }
    }

    /// Forgets an outstanding ping.
    pub fn forget_ping(&self, id: &Value) {
        self.state().pings.remove(&id.to_string());
    }

    /// The capabilities the client declared in `initialize`.
    pub fn client_capabilities(&self) -> Value {
        self.state().client_capabilities.clone()
    }

    /// Records the client's declared capabilities (from `initialize`).
    pub fn set_client_capabilities(&self, capabilities: Option<&Value>) {
        self.state().client_capabilities = capabilities
            .filter(|c| c.is_object())
            .cloned()
            .unwrap_or(Value::Null);
    }

    /// Registers a request the server is about to send; the receiver gets the client's
    /// response message (`{result}` or `{error}`) and the budget charges its bytes hold.
    pub fn expect_answer(&self, id: &Value) -> oneshot::Receiver<(Value, Held)> {
        let (sender, receiver) = oneshot::channel();
        self.state().asks.insert(id.to_string(), sender);
        receiver
    }

    /// Delivers the client's response to a request the server sent, with the charges its
    /// bytes hold (the call keeps them as long as it keeps the answer); `false` when none
    /// waits under this id (it may be a ping's answer).
    pub fn deliver_answer(&self, id: &Value, response: Value, held: Held) -> bool {
        match self.state().asks.remove(&id.to_string()) {
            Some(sender) => {
                // The waiter may have given up already.
                let _ = sender.send((response, held));
                true
            }
            None => false,
        }
    }

    /// Forgets a request the server no longer waits for.
    pub fn forget_answer(&self, id: &Value) {
        self.state().asks.remove(&id.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_request_counts_and_an_id_runs_once() {
        let session = Session::new("s".into(), SessionTransport::Sse, None, 0);
        let first = session.try_start_request(&json!(7)).unwrap();
        // Before, a reused id replaced the entry: 200 requests under one id all ran.
        assert!(matches!(
            session.try_start_request(&json!(7)),
            Err(McpError::InvalidRequest(_))
        ));
        assert!(session.try_start_request(&json!("7")).is_ok());
        drop(first);
        let again = session.try_start_request(&json!(7)).unwrap();
        let others: Vec<_> = (0..MAX_IN_FLIGHT - 1)
            .map(|n| session.try_start_request(&json!(format!("r{n}"))).unwrap())
            .collect();
        assert!(matches!(
            session.try_start_request(&json!("one more")),
            Err(McpError::TooManyRequests(_))
        ));
        drop((again, others));
    }

    #[test]
    fn an_answer_arrives_with_its_charges() {
        let session = Session::new("s".into(), SessionTransport::Sse, None, 0);
        let waiting = session.expect_answer(&json!("q"));
        let held = Held::none().with(session.budget.charge(100).unwrap());
        assert!(session.deliver_answer(&json!("q"), json!({"result": {}}), held));
        let (answer, held) = waiting.blocking_recv().unwrap();
        assert_eq!(
            (answer, session.budget.used()),
            (json!({"result": {}}), 100)
        );
        drop(held);
        assert_eq!(session.budget.used(), 0);
        // Nobody waits under another id: the answer and its charges are dropped.
        let stray = Held::none().with(session.budget.charge(10).unwrap());
        assert!(!session.deliver_answer(&json!("x"), json!({}), stray));
        assert_eq!(session.budget.used(), 0);
    }
}
