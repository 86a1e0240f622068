//! The poller that turns changes of subscribed upstream-backed resources into
//! `notifications/resources/updated`. Only URIs someone
//! subscribed to are polled, at most [`MAX_POLLED`] at once and a share of them per client, one
//! task each, ending when the last subscriber leaves. The poll tasks do network I/O.

use super::Changes;
use super::Served;
use super::read_cache::ReadCache;
use super::resources;
use crate::clients::{ClientKey, ClientLimit};
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

/// Who watches a polled URI: each subscriber's token, cancelled when it goes away, and the
/// client it belongs to.
type Watchers = HashMap<String, (CancellationToken, ClientKey)>;

/// Why another URI is not polled.
#[derive(Debug, PartialEq)]
enum Full {
    /// The replica polls [`MAX_POLLED`].
    Replica,
    /// The client's subscribers watch its share.
    Client,
}

/// Whether `client` may start polling one more URI: under the replica's limit and under its
/// share (the polled URIs any of its live subscribers watches).
fn may_poll_another(
    watched: &HashMap<String, Watchers>,
    client: &ClientKey,
    share: usize,
) -> Result<(), Full> {
    if watched.len() >= MAX_POLLED {
        return Err(Full::Replica);
    }
    let own = watched
        .values()
        .filter(|w| w.values().any(|(t, c)| c == client && !t.is_cancelled()))
        .count();
    if own >= share {
        return Err(Full::Client);
    }
    Ok(())
}

/// Polls subscribed upstream resources.
pub(crate) struct Poller {
    current: Arc<ArcSwap<Served>>,
    metrics: Arc<Metrics>,
    changes: broadcast::Sender<Arc<Changes>>,
    cache: Arc<ReadCache>,
    watched: Arc<Mutex<HashMap<String, Watchers>>>,
    /// Most polled URIs one client's subscribers may watch.
    per_client: usize,
}

impl Poller {
    /// A poller over the served declaration, polling at most `per_client` URIs for one
    /// client's subscribers.
    pub(crate) fn new(
        current: Arc<ArcSwap<Served>>,
        metrics: Arc<Metrics>,
        changes: broadcast::Sender<Arc<Changes>>,
        cache: Arc<ReadCache>,
        per_client: usize,
    ) -> Self {
        Self {
            current,
            metrics,
            changes,
            cache,
            watched: Arc::default(),
            per_client: per_client.max(1),
        }
    }

    /// Starts watching `uri` for `watcher` (a subscriber of `client`) until `until` is
    /// cancelled or [`Poller::unwatch`]. URIs that are not upstream-backed need no polling
    /// (reloads report their changes). Past a limit the subscription stands but is not polled.
    pub(crate) fn watch(
        &self,
        uri: &str,
        watcher: &str,
        client: ClientKey,
        until: CancellationToken,
    ) {
        let Some(every) = resources::poll_interval(&self.current.load(), uri) else {
            return;
        };
        let mut watched = self.watched.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(watchers) = watched.get_mut(uri) {
            watchers.insert(watcher.to_owned(), (until, client));
            return;
        }
        match may_poll_another(&watched, &client, self.per_client) {
            Ok(()) => {}
            Err(Full::Replica) => {
                tracing::warn!(
                    limit = MAX_POLLED,
                    "not polling another subscribed resource: the replica polls its most"
                );
                return;
            }
            Err(Full::Client) => {
                let limit = ClientLimit::PolledResources;
                self.metrics.client_share_refused(limit.label());
                tracing::warn!(
                    share = self.per_client,
                    flag = limit.flag(),
                    "not polling another subscribed resource: its client's subscribers watch their share"
                );
                return;
            }
        }
        watched.insert(
            uri.to_owned(),
            HashMap::from([(watcher.to_owned(), (until, client))]),
        );
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
                    watchers.retain(|_, (token, _)| !token.is_cancelled());
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
    fn one_client_cannot_take_every_polling_slot_with_many_subscribers() {
        let greedy = ClientKey::Address([10, 0, 0, 1].into());
        let other = ClientKey::Address([10, 0, 0, 2].into());
        let share = 16;
        let mut watched: HashMap<String, Watchers> = HashMap::new();
        let mut started = 0;
        for n in 0..MAX_POLLED {
            // Before, each of its sessions had a share of its own: 16 sessions took all 256.
            if may_poll_another(&watched, &greedy, share).is_ok() {
                let watcher = (CancellationToken::new(), greedy);
                watched.insert(
                    format!("a://{n}"),
                    HashMap::from([(format!("session-{n}"), watcher)]),
                );
                started += 1;
            }
        }
        assert_eq!(started, share);
        assert_eq!(
            may_poll_another(&watched, &greedy, share),
            Err(Full::Client)
        );
        assert_eq!(may_poll_another(&watched, &other, share), Ok(()));
        // Subscribers that went away no longer count.
        for watchers in watched.values() {
            watchers.values().for_each(|(token, _)| token.cancel());
        }
        assert_eq!(may_poll_another(&watched, &greedy, share), Ok(()));
    }
}
