//! The verifier: beside the controller (not inside a reconcile), it asks every Ready pod of every
//! server which declaration it serves (`GET /declaration` on the runtime's admin port), from a
//! bounded pool of its own, and tells the controller which servers' answers changed; reconciles
//! only read what it found. It runs only while the operator leads (the controller starts it), so
//! a new leader asks every Ready pod once. I/O: the questions; the bookkeeping is `schedule`.

pub mod probe;
pub mod report;
pub mod schedule;

use crate::metrics::Metrics;
use crate::resource::CachedServer;
use futures_util::Stream;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
pub use probe::Prober;
use schedule::{PodFacts, Schedule, ServerKey, ServerView};
use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// How the operator reaches pods to ask them (`--verify`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Straight to each pod's IP (the operator runs in the cluster).
    #[default]
    Pods,
    /// Through the API server's pod proxy (an operator outside the cluster).
    ApiServerProxy,
    /// Not at all: no `Verified` condition.
    Off,
}

/// How the servers' pods are recognised (the build step's names, passed in so that the
/// verifier does not depend on the reconcile pipeline that reads it).
#[derive(Clone, Copy, Debug)]
pub struct PodShape {
    /// Label naming a pod's MCPServer.
    pub server_label: &'static str,
    /// The runtime's admin port, when the pod's container does not name a port `admin`.
    pub default_admin_port: u16,
}

/// Questions in flight at most: enough to ask 10,000 pods within seconds when they answer, few
/// enough that unreachable pods (each holding a slot up to the connect timeout) cost little.
pub const POOL: usize = 32;
/// Server changes queued for the controller at most; the verifier waits when it is full.
const QUEUE: usize = 1024;

/// The verifier, shared by its task, the pod watch (which feeds it) and reconciles (which read
/// it).
pub struct Verifier {
    state: Mutex<State>,
    /// Wakes the asking loop: a pod may be due earlier than it planned.
    wake: Notify,
    /// Wakes the loop that tells the controller: some server's answers changed.
    news: Notify,
    prober: Prober,
    shape: PodShape,
    metrics: Arc<Metrics>,
}

#[derive(Default)]
struct State {
    schedule: Schedule,
    /// Servers whose answers changed, not yet sent to the controller.
    changed: BTreeSet<ServerKey>,
    /// Pods seen during a re-listing of the pod cache.
    relisting: Option<HashSet<schedule::PodKey>>,
}

/// What the verifier needs of a pod: its server, and its IP and admin port when it is Ready and
/// not terminating.
pub fn facts(pod: &Pod, shape: PodShape) -> Option<PodFacts> {
    let server = pod.labels().get(shape.server_label)?.clone();
    let key = (pod.namespace()?, pod.name_any());
    let status = pod.status.as_ref();
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    let ip = status
        .and_then(|s| s.pod_ip.clone())
        .filter(|ip| !ip.is_empty());
    let port = pod
        .spec
        .iter()
        .flat_map(|s| &s.containers)
        .flat_map(|c| c.ports.iter().flatten())
        .find(|p| p.name.as_deref() == Some("admin"))
        .and_then(|p| u16::try_from(p.container_port).ok())
        .or(Some(shape.default_admin_port));
    let address = ip
        .zip(port)
        .filter(|_| ready && pod.metadata.deletion_timestamp.is_none());
    Some(PodFacts {
        key,
        uid: pod.uid().unwrap_or_default(),
        server,
        address,
    })
}

impl Verifier {
    /// A verifier asking pods of `shape` with `prober`.
    pub fn new(prober: Prober, shape: PodShape, metrics: Arc<Metrics>) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::default(),
            wake: Notify::new(),
            news: Notify::new(),
            prober,
            shape,
            metrics,
        })
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        // A poisoned lock only means a panic mid-update; the data is still bookkeeping.
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut state)
    }

    /// Takes in a watch event of the pod cache (called for every event, in order).
    pub fn observe(&self, event: &watcher::Event<Pod>) {
        let now = Instant::now();
        let changed = self.with(|state| {
            let mut changed = Vec::new();
            match event {
                watcher::Event::Apply(pod) | watcher::Event::InitApply(pod) => {
                    if let Some(facts) = facts(pod, self.shape) {
                        if let Some(seen) = &mut state.relisting {
                            seen.insert(facts.key.clone());
                        }
                        changed.extend(state.schedule.observe(facts, now));
                    }
                }
                watcher::Event::Delete(pod) => {
                    if let Some(facts) = facts(pod, self.shape) {
                        changed.extend(state.schedule.forget(&facts.key));
                    }
                }
                watcher::Event::Init => state.relisting = Some(HashSet::new()),
                watcher::Event::InitDone => {
                    let seen = state.relisting.take().unwrap_or_default();
                    changed.extend(state.schedule.retain(|key| seen.contains(key)));
                }
            }
            self.metrics.set_verify_pods(state.schedule.len());
            let any = !changed.is_empty();
            state.changed.extend(changed);
            any
        });
        if changed {
            self.news.notify_one();
        }
        // Also when nothing changed for the controller: a new pod may be due now.
        self.wake.notify_one();
    }

    /// Sets the declaration hash the server's pods should serve (called by each reconcile).
    pub fn expect(&self, namespace: &str, name: &str, hash: &str) {
        let server = (namespace.to_owned(), name.to_owned());
        self.with(|state| state.schedule.expect(&server, hash, Instant::now()));
        self.wake.notify_one();
    }

    /// Forgets a deleted server.
    pub fn forget_server(&self, namespace: &str, name: &str) {
        let server = (namespace.to_owned(), name.to_owned());
        self.with(|state| state.schedule.forget_server(&server));
    }

    /// What is known of the server's Ready pods.
    pub fn view(&self, namespace: &str, name: &str) -> ServerView {
        let server = (namespace.to_owned(), name.to_owned());
        self.with(|state| state.schedule.view(&server))
    }

    /// Asks pods as they fall due, [`POOL`] at a time, and sends the servers whose answers
    /// changed to `changes` (the controller's trigger), until `stop`.
    pub async fn run(
        self: Arc<Self>,
        changes: mpsc::Sender<ObjectRef<CachedServer>>,
        stop: CancellationToken,
    ) {
        tokio::join!(self.clone().ask(stop.clone()), self.forward(changes, stop));
    }

    async fn ask(self: Arc<Self>, stop: CancellationToken) {
        let mut in_flight = JoinSet::new();
        loop {
            let now = Instant::now();
            while in_flight.len() < POOL {
                let Some(target) = self.with(|state| state.schedule.take_due(now)) else {
                    break;
                };
                let prober = self.prober.clone();
                in_flight.spawn(async move {
                    let result = prober.ask(&target).await;
                    (target, result)
                });
            }
            self.metrics.set_verify_in_flight(in_flight.len());
            let next = self.with(|state| state.schedule.next_due());
            let full = in_flight.len() >= POOL;
            let sleep = async {
                match next {
                    // Full pool: the next slot frees up when a question returns.
                    Some(at) if !full => {
                        tokio::time::sleep_until(at.into()).await;
                    }
                    _ => std::future::pending().await,
                }
            };
            tokio::select! {
                () = stop.cancelled() => break,
                Some(done) = in_flight.join_next(), if !in_flight.is_empty() => {
                    let Ok((target, result)) = done else { continue };
                    self.metrics.verify_probe(result.is_ok());
                    if let Err(error) = &result {
                        tracing::debug!(pod = %format!("{}/{}", target.namespace, target.pod), error = %error, "verify: no answer");
                    }
                    let changed = self.with(|state| {
                        let changed = state.schedule.record(&target, result, Instant::now());
                        state.changed.extend(changed.clone());
                        changed.is_some()
                    });
                    if changed {
                        self.news.notify_one();
                    }
                }
                () = sleep => {}
                () = self.wake.notified() => {}
            }
        }
        in_flight.shutdown().await;
    }

    /// Sends the servers whose answers changed to the controller, waiting when its queue is
    /// full (a server changed twice meanwhile is sent once).
    async fn forward(
        self: Arc<Self>,
        tx: mpsc::Sender<ObjectRef<CachedServer>>,
        stop: CancellationToken,
    ) {
        loop {
            let changed: Vec<ServerKey> =
                self.with(|state| std::mem::take(&mut state.changed).into_iter().collect());
            for (namespace, name) in changed {
                tokio::select! {
                    sent = tx.send(ObjectRef::new(&name).within(&namespace)) => {
                        if sent.is_err() {
                            return;
                        }
                    }
                    () = stop.cancelled() => return,
                }
            }
            tokio::select! {
                () = self.news.notified() => {}
                () = stop.cancelled() => return,
            }
        }
    }
}

/// The servers whose answers changed, as a stream for the controller.
pub fn changes(
    rx: mpsc::Receiver<ObjectRef<CachedServer>>,
) -> impl Stream<Item = ObjectRef<CachedServer>> + Send + 'static {
    tokio_stream::wrappers::ReceiverStream::new(rx)
}

/// A channel for [`Verifier::run`] and [`changes`], bounded: the verifier waits when it is full.
pub fn channel() -> (
    mpsc::Sender<ObjectRef<CachedServer>>,
    mpsc::Receiver<ObjectRef<CachedServer>>,
) {
    mpsc::channel(QUEUE)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPE: PodShape = PodShape {
        server_label: "kube-mcp.io/server",
        default_admin_port: 9090,
    };

    fn pod(yaml: &str) -> Pod {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    #[test]
    fn only_a_ready_pod_with_an_ip_has_an_address() {
        let ready = pod("
            metadata: {name: p, namespace: n, uid: u, labels: {kube-mcp.io/server: s}}
            spec: {containers: [{name: mcp-runtime, ports: [{name: http, containerPort: 8080}, {name: admin, containerPort: 9191}]}]}
            status: {podIP: 10.0.0.7, conditions: [{type: Ready, status: 'True'}]}
        ");
        let facts = facts(&ready, SHAPE).unwrap();
        assert_eq!(facts.server, "s");
        assert_eq!(facts.address, Some(("10.0.0.7".into(), 9191)));
        let mut terminating = ready.clone();
        terminating.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::now()),
        );
        assert_eq!(super::facts(&terminating, SHAPE).unwrap().address, None);
        let unready = pod("
            metadata: {name: p, namespace: n, labels: {kube-mcp.io/server: s}}
            status: {podIP: 10.0.0.7, conditions: [{type: Ready, status: 'False'}]}
        ");
        assert_eq!(super::facts(&unready, SHAPE).unwrap().address, None);
        let foreign = pod("metadata: {name: p, namespace: n}");
        assert_eq!(super::facts(&foreign, SHAPE), None);
    }
}
