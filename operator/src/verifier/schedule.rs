//! When to ask each pod next, and what it said last: the verifier's bookkeeping, without I/O or
//! clocks of its own (callers pass `now`), so every rule is a plain test.
//!
//! A pod is asked when it becomes Ready or changes IP, when the operator expects a new
//! declaration hash of its server, after a failure (backoff 250 ms doubling to 5 min), while it
//! still serves another hash than the expected one (2 s doubling to 1 min), and otherwise on a
//! slow re-check (5 min). Every wait is jittered by +-20 % so pods started together spread out.

use super::probe::Target;
use super::report::Report;
use rand::Rng as _;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// Re-check of a pod that serves the expected declaration.
pub const RECHECK: Duration = Duration::from_secs(300);
/// First wait after a failed question; doubles per failure in a row, up to [`MAX_BACKOFF`].
/// Short, so that an unreachable pod is known as such ([`UNREACHABLE_AFTER`]) before its
/// Deployment reports it available (the ReplicaSet and Deployment controllers each write once
/// after the pod turns Ready), well inside the controller's debounce: both land in one reconcile
/// and one status write. With 1 s, 45 % of 1,000 new unreachable servers took a status write
/// more (bench/results/2026-12-02-operator-scale.md).
pub const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// Longest wait after failures.
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);
/// First wait for a pod that still serves another hash (a ConfigMap update takes up to about a
/// minute to reach a pod's volume); doubles per such answer, up to [`MAX_PROPAGATION_WAIT`].
pub const FIRST_PROPAGATION_WAIT: Duration = Duration::from_secs(2);
/// Longest wait between questions to a pod that serves another hash.
pub const MAX_PROPAGATION_WAIT: Duration = Duration::from_secs(60);
/// Failures in a row before a pod counts as unreachable (one may be a pod just starting).
pub const UNREACHABLE_AFTER: u32 = 2;

/// A pod: namespace and name.
pub type PodKey = (String, String);
/// A server: namespace and name.
pub type ServerKey = (String, String);

/// What the verifier needs of a pod, read from the pod cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodFacts {
    /// Namespace and name.
    pub key: PodKey,
    /// The pod's UID (a re-created pod of the same name is another pod).
    pub uid: String,
    /// Name of its MCPServer.
    pub server: String,
    /// IP and admin port, when the pod is Ready and not terminating (else it is not asked).
    pub address: Option<(String, u16)>,
}

/// What is known of one pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodView {
    /// Pod name.
    pub name: String,
    /// Its IP.
    pub ip: String,
    /// The last answer (`None`: not asked yet, or asked at its current address not yet).
    pub result: Option<Result<Report, String>>,
    /// Failed questions in a row.
    pub failures: u32,
}

/// What is known of one server's Ready pods.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerView {
    /// The hash expected, and since when.
    pub want: Option<(String, Instant)>,
    /// Its Ready pods, by name.
    pub pods: Vec<PodView>,
}

#[derive(Clone, Debug)]
struct Entry {
    uid: String,
    server: String,
    ip: String,
    port: u16,
    due: Option<(Instant, u64)>,
    in_flight: bool,
    result: Option<Result<Report, String>>,
    failures: u32,
    stale: u32,
}

#[derive(Clone, Debug, Default)]
struct Server {
    want: Option<(String, Instant)>,
    pods: BTreeSet<String>,
}

/// What of a pod's answers the `Verified` condition can see: an answer, or a failure once it
/// counts ([`UNREACHABLE_AFTER`]); a first failure looks like no answer yet.
fn visible(entry: &Entry) -> Option<&Result<Report, String>> {
    entry
        .result
        .as_ref()
        .filter(|r| r.is_ok() || entry.failures >= UNREACHABLE_AFTER)
}

/// Every Ready pod's state and the queue of questions due.
#[derive(Debug, Default)]
pub struct Schedule {
    pods: HashMap<PodKey, Entry>,
    servers: HashMap<ServerKey, Server>,
    queue: BTreeMap<(Instant, u64), PodKey>,
    seq: u64,
}

/// `wait` scaled by a random factor in [0.8, 1.2].
pub fn jitter(wait: Duration) -> Duration {
    wait.mul_f64(rand::rng().random_range(0.8..=1.2))
}

fn doubling(first: Duration, max: Duration, times: u32) -> Duration {
    first
        .saturating_mul(1u32 << times.saturating_sub(1).min(16))
        .min(max)
}

impl Schedule {
    /// Pods tracked (Ready, with an address).
    pub fn len(&self) -> usize {
        self.pods.len()
    }

    /// Whether no pod is tracked.
    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    fn server_key(key: &PodKey, server: &str) -> ServerKey {
        (key.0.clone(), server.to_owned())
    }

    fn set_due(&mut self, key: &PodKey, at: Instant) {
        let seq = self.seq;
        self.seq += 1;
        if let Some(entry) = self.pods.get_mut(key) {
            if let Some(old) = entry.due.take() {
                self.queue.remove(&old);
            }
            // A question in flight is followed by its own next date when it returns.
            if !entry.in_flight {
                entry.due = Some((at, seq));
                self.queue.insert((at, seq), key.clone());
            }
        }
    }

    /// Takes in a pod as the cache now has it; returns its server when what the verifier knows
    /// of the server changed (a Ready pod came or went).
    pub fn observe(&mut self, pod: PodFacts, now: Instant) -> Option<ServerKey> {
        let Some((ip, port)) = pod.address else {
            return self.forget(&pod.key);
        };
        if let Some(entry) = self.pods.get(&pod.key)
            && entry.uid == pod.uid
            && entry.ip == ip
            && entry.port == port
            && entry.server == pod.server
        {
            return None;
        }
        // New, re-created or moved: what it said before is no longer about this address.
        self.forget(&pod.key);
        let server = Self::server_key(&pod.key, &pod.server);
        self.pods.insert(
            pod.key.clone(),
            Entry {
                uid: pod.uid,
                server: pod.server,
                ip,
                port,
                due: None,
                in_flight: false,
                result: None,
                failures: 0,
                stale: 0,
            },
        );
        self.servers
            .entry(server.clone())
            .or_default()
            .pods
            .insert(pod.key.1.clone());
        self.set_due(&pod.key, now);
        Some(server)
    }

    /// Forgets a pod (deleted, no longer Ready); returns its server if it was tracked.
    pub fn forget(&mut self, key: &PodKey) -> Option<ServerKey> {
        let entry = self.pods.remove(key)?;
        if let Some(due) = entry.due {
            self.queue.remove(&due);
        }
        let server = Self::server_key(key, &entry.server);
        if let Some(s) = self.servers.get_mut(&server) {
            s.pods.remove(&key.1);
        }
        Some(server)
    }

    /// Keeps only the pods `keep` says still exist (after the pod cache re-listed); returns the
    /// servers that lost pods.
    pub fn retain(&mut self, keep: impl Fn(&PodKey) -> bool) -> Vec<ServerKey> {
        let gone: Vec<PodKey> = self.pods.keys().filter(|k| !keep(k)).cloned().collect();
        gone.iter().filter_map(|key| self.forget(key)).collect()
    }

    /// Forgets a deleted server's expectation.
    pub fn forget_server(&mut self, server: &ServerKey) {
        if self.servers.get(server).is_some_and(|s| s.pods.is_empty()) {
            self.servers.remove(server);
        } else if let Some(s) = self.servers.get_mut(server) {
            s.want = None;
        }
    }

    /// Sets the hash the server's pods should serve. A new hash makes every pod that does not
    /// serve it due soon (the ConfigMap update needs a moment to reach the pods).
    pub fn expect(&mut self, server: &ServerKey, hash: &str, now: Instant) {
        let entry = self.servers.entry(server.clone()).or_default();
        if entry.want.as_ref().is_some_and(|(want, _)| want == hash) {
            return;
        }
        entry.want = Some((hash.to_owned(), now));
        let pods: Vec<PodKey> = entry
            .pods
            .iter()
            .map(|name| (server.0.clone(), name.clone()))
            .collect();
        for key in pods {
            let serves = self
                .pods
                .get_mut(&key)
                .map(|e| {
                    e.stale = 0;
                    matches!(&e.result, Some(Ok(report)) if report.hash == hash)
                })
                .unwrap_or(true);
            if !serves {
                self.set_due(&key, now + FIRST_PROPAGATION_WAIT);
            }
        }
    }

    /// When the next question is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.queue.keys().next().map(|(at, _)| *at)
    }

    /// The next pod due at `now`, marked in flight.
    pub fn take_due(&mut self, now: Instant) -> Option<Target> {
        let (&(at, seq), _) = self.queue.iter().next()?;
        if at > now {
            return None;
        }
        let key = self.queue.remove(&(at, seq))?;
        let entry = self.pods.get_mut(&key)?;
        entry.due = None;
        entry.in_flight = true;
        Some(Target {
            namespace: key.0,
            pod: key.1,
            ip: entry.ip.clone(),
            port: entry.port,
        })
    }

    /// Records the answer of `target`, schedules its next question, and returns its server when
    /// what decides the server's `Verified` condition changed.
    pub fn record(
        &mut self,
        target: &Target,
        result: Result<Report, String>,
        now: Instant,
    ) -> Option<ServerKey> {
        let key = (target.namespace.clone(), target.pod.clone());
        let entry = self.pods.get_mut(&key)?;
        entry.in_flight = false;
        if entry.ip != target.ip || entry.port != target.port {
            // The pod moved while it was asked: ask it at its new address.
            self.set_due(&key, now);
            return None;
        }
        let server = Self::server_key(&key, &entry.server);
        let want = self
            .servers
            .get(&server)
            .and_then(|s| s.want.as_ref())
            .map(|(hash, _)| hash.clone());
        let before = visible(entry).cloned();
        let wait = match &result {
            Err(_) => {
                entry.failures = entry.failures.saturating_add(1);
                doubling(FIRST_BACKOFF, MAX_BACKOFF, entry.failures)
            }
            Ok(report) if want.as_deref().is_some_and(|w| w != report.hash) => {
                entry.failures = 0;
                entry.stale = entry.stale.saturating_add(1);
                doubling(FIRST_PROPAGATION_WAIT, MAX_PROPAGATION_WAIT, entry.stale)
            }
            Ok(_) => {
                entry.failures = 0;
                entry.stale = 0;
                RECHECK
            }
        };
        // A failure below the threshold keeps the last answer: one lost question is not news.
        if result.is_ok() || entry.failures >= UNREACHABLE_AFTER || entry.result.is_none() {
            entry.result = Some(result);
        }
        let after = visible(entry).cloned();
        self.set_due(&key, now + jitter(wait));
        (before != after).then_some(server)
    }

    /// What is known of the server's Ready pods, by name.
    pub fn view(&self, server: &ServerKey) -> ServerView {
        let Some(s) = self.servers.get(server) else {
            return ServerView::default();
        };
        ServerView {
            want: s.want.clone(),
            pods: s
                .pods
                .iter()
                .filter_map(|name| {
                    let entry = self.pods.get(&(server.0.clone(), name.clone()))?;
                    Some(PodView {
                        name: name.clone(),
                        ip: entry.ip.clone(),
                        result: entry.result.clone(),
                        failures: entry.failures,
                    })
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, ip: Option<&str>) -> PodFacts {
        PodFacts {
            key: ("n".into(), name.into()),
            uid: format!("uid-{name}"),
            server: "s".into(),
            address: ip.map(|ip| (ip.to_owned(), 9090)),
        }
    }

    fn report(hash: &str) -> Report {
        crate::verifier::report::parse(
            format!(r#"{{"hash": "{hash}", "tools": 1, "resources": 0, "resourceTemplates": 0, "prompts": 0}}"#)
                .as_bytes(),
        )
        .unwrap()
    }

    fn server() -> ServerKey {
        ("n".into(), "s".into())
    }

    fn in_range(wait: Duration, nominal: Duration) -> bool {
        wait >= nominal.mul_f64(0.8) && wait <= nominal.mul_f64(1.2)
    }

    #[test]
    fn a_ready_pod_is_asked_at_once_and_then_rarely() {
        let mut s = Schedule::default();
        let t0 = Instant::now();
        assert_eq!(s.observe(pod("a", Some("10.0.0.1")), t0), Some(server()));
        // Seeing it again unchanged is not news and does not ask again.
        assert_eq!(s.observe(pod("a", Some("10.0.0.1")), t0), None);
        let target = s.take_due(t0).unwrap();
        assert_eq!((target.ip.as_str(), target.port), ("10.0.0.1", 9090));
        assert!(s.take_due(t0).is_none(), "in flight: not handed out twice");
        s.expect(&server(), "h1", t0);
        assert_eq!(s.record(&target, Ok(report("h1")), t0), Some(server()));
        assert!(in_range(s.next_due().unwrap() - t0, RECHECK));
        // The same answer again changes nothing the condition reads.
        let target = s.take_due(t0 + RECHECK * 2).unwrap();
        assert_eq!(s.record(&target, Ok(report("h1")), t0), None);
    }

    #[test]
    fn failures_back_off_and_only_a_second_one_is_news() {
        let mut s = Schedule::default();
        let t0 = Instant::now();
        s.observe(pod("a", Some("10.0.0.1")), t0);
        let target = s.take_due(t0).unwrap();
        s.record(&target, Ok(report("h1")), t0);
        let mut waits = Vec::new();
        let mut news = Vec::new();
        let mut now = t0 + RECHECK * 2;
        for _ in 0..8 {
            let target = s.take_due(now).unwrap();
            news.push(s.record(&target, Err("refused".into()), now).is_some());
            let due = s.next_due().unwrap();
            waits.push(due - now);
            now = due;
        }
        assert_eq!(
            news,
            [false, true, false, false, false, false, false, false]
        );
        for (times, wait) in waits.iter().enumerate() {
            let nominal = FIRST_BACKOFF * (1 << times);
            assert!(in_range(*wait, nominal), "{wait:?} vs {nominal:?}");
        }
        let view = s.view(&server());
        assert_eq!(view.pods[0].failures, 8);
        assert_eq!(view.pods[0].result, Some(Err("refused".into())));
    }

    #[test]
    fn a_first_failure_of_a_new_pod_is_not_news_but_a_second_is() {
        let mut s = Schedule::default();
        let t0 = Instant::now();
        s.observe(pod("a", Some("10.0.0.1")), t0);
        let target = s.take_due(t0).unwrap();
        assert_eq!(s.record(&target, Err("refused".into()), t0), None);
        let next = s.next_due().unwrap();
        assert!(in_range(next - t0, FIRST_BACKOFF));
        let target = s.take_due(next).unwrap();
        assert_eq!(
            s.record(&target, Err("refused".into()), next),
            Some(server())
        );
    }

    #[test]
    fn a_new_hash_asks_the_pods_that_do_not_serve_it_soon_and_often() {
        let mut s = Schedule::default();
        let t0 = Instant::now();
        s.expect(&server(), "old", t0);
        s.observe(pod("a", Some("10.0.0.1")), t0);
        let target = s.take_due(t0).unwrap();
        s.record(&target, Ok(report("old")), t0);
        let t1 = t0 + Duration::from_secs(30);
        s.expect(&server(), "new", t1);
        assert_eq!(s.next_due(), Some(t1 + FIRST_PROPAGATION_WAIT));
        assert_eq!(s.view(&server()).want, Some(("new".into(), t1)));
        let mut now = t1 + FIRST_PROPAGATION_WAIT;
        let mut waits = Vec::new();
        for _ in 0..7 {
            let target = s.take_due(now).unwrap();
            s.record(&target, Ok(report("old")), now);
            let due = s.next_due().unwrap();
            waits.push(due - now);
            now = due;
        }
        for (wait, secs) in waits.iter().zip([2, 4, 8, 16, 32, 60, 60]) {
            assert!(in_range(*wait, Duration::from_secs(secs)), "{wait:?}");
        }
        let target = s.take_due(now).unwrap();
        assert_eq!(s.record(&target, Ok(report("new")), now), Some(server()));
        assert!(in_range(s.next_due().unwrap() - now, RECHECK));
    }

    #[test]
    fn a_pod_that_moves_or_stops_being_ready_is_forgotten() {
        let mut s = Schedule::default();
        let t0 = Instant::now();
        s.observe(pod("a", Some("10.0.0.1")), t0);
        let target = s.take_due(t0).unwrap();
        // It moved while being asked: the answer is not about its new address.
        s.observe(pod("a", Some("10.0.0.2")), t0);
        assert_eq!(s.record(&target, Ok(report("h")), t0), None);
        assert_eq!(s.view(&server()).pods[0].result, None);
        assert_eq!(s.take_due(t0).unwrap().ip, "10.0.0.2");
        assert_eq!(s.observe(pod("a", None), t0), Some(server()));
        assert!(s.view(&server()).pods.is_empty());
        assert!(s.is_empty());
        assert_eq!(s.next_due(), None);
        s.observe(pod("b", Some("10.0.0.3")), t0);
        assert_eq!(s.retain(|k| k.1 != "b"), vec![server()]);
        assert!(s.is_empty());
    }
}
