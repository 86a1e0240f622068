//! The poller that turns changes of subscribed upstream-backed resources into
//! `notifications/resources/updated`. Only URIs someone
//! subscribed to are polled, at most [`MAX_POLLED`] at once, one task each, ending when the last
//! subscriber leaves. The poll tasks do network I/O.

use super::Changes;
use super::Served;
use super::read_cache::ReadCache;
use super::resources;
use crate::metrics::Metrics;
use arc_swap::ArcSwap;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// Most resources polled at once per replica.
pub const MAX_POLLED: usize = 256;
/// Most polled resources one subscriber (session) may start, so one client cannot take every
/// polling slot.
pub(crate) const MAX_POLLED_PER_WATCHER: usize = MAX_POLLED / 16;

/// Who watches a polled URI: each subscriber's token, cancelled when it goes away.
type Watchers = HashMap<String, CancellationToken>;

/// Whether `watcher` may start polling one more URI: under the replica's limit and under its
/// own share.
fn may_poll_another(watched: &HashMap<String, Watchers>, watcher: &str) -> bool {
    let own = watched
        .values()
        .filter(|w| w.get(watcher).is_some_and(|t| !t.is_cancelled()))
        .count();
    watched.len() < MAX_POLLED && own < MAX_POLLED_PER_WATCHER
}

/// Polls subscribed upstream resources.
pub(crate) struct Poller {
    current: Arc<ArcSwap<Served>>,
    metrics: Arc<Metrics>,
    changes: broadcast::Sender<Arc<Changes>>,
    cache: Arc<ReadCache>,
    watched: Arc<Mutex<HashMap<String, Watchers>>>,
}

impl Poller {
    /// A poller over the served declaration.
    pub(crate) fn new(
        current: Arc<ArcSwap<Served>>,
        metrics: Arc<Metrics>,
        changes: broadcast::Sender<Arc<Changes>>,
        cache: Arc<ReadCache>,
    ) -> Self {
        Self {
            current,
            metrics,
            changes,
            cache,
            watched: Arc::default(),
        }
    }

    /// Starts watching `uri` for `watcher` until `until` is cancelled or [`Poller::unwatch`].
    /// URIs that are not upstream-backed need no polling (reloads report their changes).
    pub(crate) fn watch(&self, uri: &str, watcher: &str, until: CancellationToken) {
        let Some(every) = resources::poll_interval(&self.current.load(), uri) else {
            return;
        };
        let mut watched = self.watched.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(watchers) = watched.get_mut(uri) {
            watchers.insert(watcher.to_owned(), until);
            return;
        }
        if !may_poll_another(&watched, watcher) {
            tracing::warn!(
                limit = MAX_POLLED,
                per_subscriber = MAX_POLLED_PER_WATCHER,
                "not polling another subscribed resource: at the limit"
            );
            return;
        }
        watched.insert(uri.to_owned(), HashMap::from([(watcher.to_owned(), until)]));
        tokio::spawn(self.poll(uri.to_owned(), every));
    }

    /// Stops watching `uri` for `watcher`.
    pub(crate) fn unwatch(&self, uri: &str, watcher: &str) {
        let mut watched = self.watched.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(watchers) = watched.get_mut(uri) {
            watchers.remove(watcher);
        }
    }

    fn poll(&self, uri: String, every: Duration) -> impl Future<Output = ()> + Send + 'static {
        let (current, metrics, changes, cache, watched) = (
            self.current.clone(),
            self.metrics.clone(),
            self.changes.clone(),
            self.cache.clone(),
            self.watched.clone(),
        );
        async move {
            let mut last: Option<Value> = None;
            let mut timer = tokio::time::interval(every);
            timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                timer.tick().await;
                {
                    let mut watched = watched.lock().unwrap_or_else(PoisonError::into_inner);
                    let watchers = watched.entry(uri.clone()).or_default();
                    watchers.retain(|_, token| !token.is_cancelled());
                    if watchers.is_empty() {
                        watched.remove(&uri);
                        return;
                    }
                }
                let decl = current.load_full();
                let Ok(contents) = resources::contents_of(&decl, &metrics, &uri).await else {
                    continue;
                };
                if last.as_ref().is_some_and(|previous| *previous != contents) {
                    cache.forget(Some(&uri));
                    let update = Changes {
                        updated_uris: vec![uri.clone()],
                        ..Changes::default()
                    };
                    // No receivers is fine: nobody listens right now.
                    let _ = changes.send(Arc::new(update));
                }
                last = Some(contents);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_subscriber_cannot_take_every_polling_slot() {
        let mut watched: HashMap<String, Watchers> = HashMap::new();
        let mut started = 0;
        for n in 0..MAX_POLLED {
            // Before, every one of these was polled: all 256 slots to one session.
            if may_poll_another(&watched, "greedy") {
                let token = CancellationToken::new();
                watched.insert(
                    format!("a://{n}"),
                    HashMap::from([("greedy".into(), token)]),
                );
                started += 1;
            }
        }
        assert_eq!(started, MAX_POLLED_PER_WATCHER);
        assert!(may_poll_another(&watched, "other"));
    }
}
