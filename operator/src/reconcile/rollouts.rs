//! Fleet rollouts: at most `--max-concurrent-rollouts` servers roll their pods at once. An
//! operator upgrade (a new runtime image, a new flag) changes every server's pod template; applied
//! all at once, every server would surge a pod together and every replica's legacy sessions would
//! move at once. A server whose template changed takes a slot before its Deployment is written,
//! keeps it until its rollout is over, and otherwise waits in line: the first in line is woken
//! when a slot frees. New servers take no slot (there is nothing to roll).
//!
//! A rollout ends when the Deployment has rolled out, or when it passed its progress deadline
//! (`ProgressDeadlineExceeded`, 10 minutes by default): its old pods keep serving, since no pod
//! is taken down before its replacement is available, so a broken release rolls on one wave
//! per deadline without an outage.

use super::build::TEMPLATE_HASH_ANNOTATION;
use super::cache::Stores;
use super::status::rollout;
use crate::resource::{CachedServer, MCPServer};
use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt as _;
use kube::runtime::reflector::ObjectRef;
use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;
use tokio::sync::mpsc;

/// Servers woken at once when slots free; past it, a woken server waits for its requeue.
const WAKE_QUEUE: usize = 1024;

/// The rollout slots, shared by all reconciles of one leader.
#[derive(Debug)]
pub struct Rollouts {
    /// Slots; `None`: unlimited.
    max: Option<usize>,
    inner: Mutex<Inner>,
    wake: mpsc::Sender<ObjectRef<CachedServer>>,
}

#[derive(Debug, Default)]
struct Inner {
    /// UIDs of the servers rolling.
    rolling: HashSet<String>,
    /// Servers waiting for a slot, first come first.
    waiting: VecDeque<(String, ObjectRef<CachedServer>)>,
    /// Whether the rollouts already under way when this leader started were counted.
    counted: bool,
}

impl Rollouts {
    /// Slots for `max` rollouts at once (`0`: unlimited); waiting servers are woken through the
    /// returned receiver (feed it to the controller).
    pub fn new(max: usize) -> (Self, mpsc::Receiver<ObjectRef<CachedServer>>) {
        let (wake, woken) = mpsc::channel(WAKE_QUEUE);
        let rollouts = Self {
            max: (max > 0).then_some(max),
            inner: Mutex::default(),
            wake,
        };
        (rollouts, woken)
    }

    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        // A poisoned lock only means a reconcile panicked mid-update; the sets are still sound.
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut inner)
    }

    /// Whether `server` may roll its pods now; if so it holds a slot until [`Self::done`].
    /// `under_way` lists the UIDs of the servers already rolling when this leader started (read
    /// from the watch cache once, on the first call).
    pub fn may_roll(
        &self,
        uid: &str,
        server: ObjectRef<CachedServer>,
        under_way: impl FnOnce() -> Vec<String>,
    ) -> bool {
        self.with(|inner| {
            if !inner.counted {
                inner.rolling.extend(under_way());
                inner.counted = true;
            }
            if inner.rolling.contains(uid) {
                return true;
            }
            // Free slots go to the first in line: a server may take one when fewer wait ahead
            // of it than there are free slots.
            let free = self
                .max
                .map_or(usize::MAX, |max| max.saturating_sub(inner.rolling.len()));
            let ahead = inner
                .waiting
                .iter()
                .position(|(w, _)| w == uid)
                .unwrap_or(inner.waiting.len());
            if ahead < free {
                inner.waiting.retain(|(w, _)| w != uid);
                inner.rolling.insert(uid.to_owned());
                return true;
            }
            if ahead == inner.waiting.len() {
                inner.waiting.push_back((uid.to_owned(), server));
            }
            false
        })
    }

    /// `server`'s rollout is over, or it no longer rolls (deleted, refused): frees its slot
    /// and its place in line, and wakes whoever may take the slot.
    pub fn done(&self, uid: &str) {
        let woken = self.with(|inner| {
            let freed = inner.rolling.remove(uid);
            inner.waiting.retain(|(w, _)| w != uid);
            if !freed {
                return Vec::new();
            }
            let free = self.max.map_or(inner.waiting.len(), |max| {
                max.saturating_sub(inner.rolling.len())
            });
            inner
                .waiting
                .iter()
                .take(free)
                .map(|(_, server)| server.clone())
                .collect()
        });
        for server in woken {
            if self.wake.try_send(server).is_err() {
                tracing::debug!("rollout wake-up dropped; the server retries on its requeue");
            }
        }
    }

    /// Servers rolling, and servers waiting for a slot.
    pub fn counts(&self) -> (usize, usize) {
        self.with(|inner| (inner.rolling.len(), inner.waiting.len()))
    }

    /// Whether `server` may apply `desired`: yes, unless it changes the pod template of its
    /// existing Deployment (`cached`), which is a rollout, and no slot is free.
    pub fn may_apply(
        &self,
        stores: &Stores,
        server: &MCPServer,
        cached: Option<&Deployment>,
        desired: &Deployment,
    ) -> bool {
        let Some(cached) = cached else {
            return true;
        };
        if template_hash(cached) == template_hash(desired) {
            return true;
        }
        let reference =
            ObjectRef::new(&server.name_any()).within(&server.namespace().unwrap_or_default());
        self.may_roll(&server.uid().unwrap_or_default(), reference, || {
            under_way(stores)
        })
    }

    /// Frees `server`'s slot once the rollout of the `desired` template (when known) is over
    /// in `deployment`: a watch cache that lags the write still shows the previous template,
    /// rolled out, which is not the end of this rollout.
    pub fn observe(
        &self,
        server: &MCPServer,
        deployment: Option<&Deployment>,
        desired: Option<&str>,
    ) {
        let current = |d: &&Deployment| desired.is_none() || template_hash(d).as_deref() == desired;
        if deployment.filter(current).is_some_and(ended) {
            self.done(&server.uid().unwrap_or_default());
        }
    }
}

/// The pod template hash a Deployment records.
pub fn template_hash(deployment: &Deployment) -> Option<String> {
    deployment
        .annotations()
        .get(TEMPLATE_HASH_ANNOTATION)
        .cloned()
}

/// Whether a Deployment's rollout is over: rolled out, or past its progress deadline (its old
/// pods keep serving: none is taken down before its replacement is available).
fn ended(deployment: &Deployment) -> bool {
    let rollout = rollout(deployment, deployment.spec.replicas.unwrap_or(1));
    rollout.rolled_out || rollout.stuck.is_some()
}

/// The servers whose Deployments the watch cache shows rolling to a changed template (a
/// revision past the first, not over): when a leader starts, they hold slots.
fn under_way(stores: &Stores) -> Vec<String> {
    stores
        .deployments
        .state()
        .iter()
        .filter(|d| {
            let revision = d
                .annotations()
                .get("deployment.kubernetes.io/revision")
                .and_then(|r| r.parse::<u64>().ok());
            revision.is_some_and(|r| r > 1) && !ended(d)
        })
        .filter_map(|d| {
            d.owner_references()
                .iter()
                .find(|o| o.controller == Some(true) && o.kind == "MCPServer")
                .map(|o| o.uid.clone())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(name: &str) -> ObjectRef<CachedServer> {
        ObjectRef::new(name).within("tools")
    }

    #[test]
    fn no_more_than_the_slots_roll_and_the_line_is_served_in_order() {
        let (rollouts, mut woken) = Rollouts::new(2);
        assert!(rollouts.may_roll("a", server("a"), Vec::new));
        assert!(rollouts.may_roll("b", server("b"), Vec::new));
        assert!(!rollouts.may_roll("c", server("c"), Vec::new));
        assert!(!rollouts.may_roll("d", server("d"), Vec::new));
        // Asking again keeps a slot, or a place in line.
        assert!(rollouts.may_roll("a", server("a"), Vec::new));
        assert!(!rollouts.may_roll("c", server("c"), Vec::new));
        assert_eq!(rollouts.counts(), (2, 2));
        rollouts.done("a");
        assert_eq!(woken.try_recv().unwrap(), server("c"));
        assert!(woken.try_recv().is_err());
        // d may not jump the line while c has not taken the slot.
        assert!(!rollouts.may_roll("d", server("d"), Vec::new));
        assert!(rollouts.may_roll("c", server("c"), Vec::new));
        assert_eq!(rollouts.counts(), (2, 1));
    }

    #[test]
    fn rollouts_under_way_when_leading_starts_hold_slots() {
        let (rollouts, _woken) = Rollouts::new(2);
        let under_way = || vec!["x".to_owned(), "y".to_owned()];
        assert!(!rollouts.may_roll("a", server("a"), under_way));
        rollouts.done("x");
        assert!(rollouts.may_roll("a", server("a"), || unreachable!()));
    }

    #[test]
    fn a_server_that_stops_rolling_leaves_the_line() {
        let (rollouts, mut woken) = Rollouts::new(1);
        assert!(rollouts.may_roll("a", server("a"), Vec::new));
        assert!(!rollouts.may_roll("b", server("b"), Vec::new));
        assert!(!rollouts.may_roll("c", server("c"), Vec::new));
        rollouts.done("b");
        assert!(woken.try_recv().is_err(), "b held no slot");
        rollouts.done("a");
        assert_eq!(woken.try_recv().unwrap(), server("c"));
    }

    #[test]
    fn zero_means_unlimited() {
        let (rollouts, _woken) = Rollouts::new(0);
        for name in ["a", "b", "c", "d"] {
            assert!(rollouts.may_roll(name, server(name), Vec::new));
        }
    }
}
