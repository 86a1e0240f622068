//! State for upstream-backed resources: the read cache (`cacheTtlMs`) and the poller that turns
//! changes of subscribed resources into `notifications/resources/updated`. Only URIs someone
//! subscribed to are polled, at most [`MAX_POLLED`] at once, one task each, ending when the last
//! subscriber leaves. The poll tasks do network I/O.

use super::Changes;
use super::resources;
use crate::admin::metrics::Metrics;
use crate::declaration::Compiled;
use arc_swap::ArcSwap;
use dashmap::DashMap;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// Most resources polled at once per replica.
pub const MAX_POLLED: usize = 256;
/// Most polled resources one subscriber (session) may start, so one client cannot take every
/// polling slot.
pub const MAX_POLLED_PER_WATCHER: usize = MAX_POLLED / 16;

/// Most cached read results.
const MAX_CACHED: usize = 1_024;
/// Most bytes (of text, blobs and keys) the read cache holds.
const MAX_CACHED_BYTES: usize = 32 << 20;
/// Larger results are not cached (one would crowd out the rest).
const MAX_ENTRY_BYTES: usize = MAX_CACHED_BYTES / 8;

/// Read results of upstream resources, reused for their TTL. Bounded in entries and in bytes,
/// and keyed on the normalized URI, so spellings of one URI (`%7e` and `~`, `%2f` and `%2F`)
/// share one entry instead of each pinning a copy.
#[derive(Default)]
pub struct ReadCache {
    entries: DashMap<String, (Instant, Value, usize)>,
    bytes: std::sync::atomic::AtomicUsize,
}

impl ReadCache {
    /// A fresh cached result for `uri`.
    pub fn get(&self, uri: &str) -> Option<Value> {
        let entry = self.entries.get(&normalize(uri))?;
        (entry.0 > Instant::now()).then(|| {
            let mut contents = entry.1.clone();
            // The entry may have been stored under another spelling of the URI.
            if contents.get("uri").is_some() {
                contents["uri"] = Value::String(uri.to_owned());
            }
            contents
        })
    }

    /// Caches `contents` for `ttl` (skipped when the cache is full of fresh entries, or the
    /// result is large).
    pub fn put(&self, uri: &str, contents: Value, ttl: Duration) {
        use std::sync::atomic::Ordering;
        let key = normalize(uri);
        let size = key.len() + weight(&contents);
        if size > MAX_ENTRY_BYTES {
            return;
        }
        let full = |cache: &Self| {
            cache.entries.len() >= MAX_CACHED
                || cache.bytes.load(Ordering::Acquire) + size > MAX_CACHED_BYTES
        };
        if full(self) {
            let now = Instant::now();
            self.entries.retain(|_, (expires, _, size)| {
                let keep = *expires > now;
                if !keep {
                    self.bytes.fetch_sub(*size, Ordering::AcqRel);
                }
                keep
            });
            if full(self) {
                return;
            }
        }
        self.bytes.fetch_add(size, Ordering::AcqRel);
        if let Some((_, _, replaced)) = self
            .entries
            .insert(key, (Instant::now() + ttl, contents, size))
        {
            self.bytes.fetch_sub(replaced, Ordering::AcqRel);
        }
    }

    /// Forgets `uri`, or everything (after a reload).
    pub fn forget(&self, uri: Option<&str>) {
        use std::sync::atomic::Ordering;
        match uri {
            Some(uri) => {
                if let Some((_, (_, _, size))) = self.entries.remove(&normalize(uri)) {
                    self.bytes.fetch_sub(size, Ordering::AcqRel);
                }
            }
            None => {
                self.entries.clear();
                self.bytes.store(0, Ordering::Release);
            }
        }
    }
}

/// RFC 3986 normalization of percent-encoding: escapes of unreserved characters are decoded
/// and the hex digits of the others upper-cased.
fn normalize(uri: &str) -> String {
    let bytes = uri.as_bytes();
    let mut out = String::with_capacity(uri.len());
    let mut at = 0;
    while at < bytes.len() {
        let escaped = (bytes[at] == b'%')
            .then(|| uri.get(at + 1..at + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) => {
                out.push(char::from(byte));
                at += 3;
            }
            Some(byte) => {
                out.push_str(&format!("%{byte:02X}"));
                at += 3;
            }
            None => {
                let c = uri[at..].chars().next().unwrap_or_default();
                out.push(c);
                at += c.len_utf8().max(1);
            }
        }
    }
    out
}

/// Roughly how many bytes a cached value holds.
fn weight(value: &Value) -> usize {
    match value {
        Value::String(s) => s.len() + 24,
        Value::Array(items) => items.iter().map(weight).sum::<usize>() + 24,
        Value::Object(map) => map.iter().map(|(k, v)| k.len() + weight(v)).sum::<usize>() + 48,
        _ => 16,
    }
}

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
pub struct Poller {
    current: Arc<ArcSwap<Compiled>>,
    metrics: Arc<Metrics>,
    changes: broadcast::Sender<Arc<Changes>>,
    cache: Arc<ReadCache>,
    watched: Arc<Mutex<HashMap<String, Watchers>>>,
}

impl Poller {
    /// A poller over the served declaration.
    pub fn new(
        current: Arc<ArcSwap<Compiled>>,
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
    pub fn watch(&self, uri: &str, watcher: &str, until: CancellationToken) {
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
    pub fn unwatch(&self, uri: &str, watcher: &str) {
        let mut watched = self.watched.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(watchers) = watched.get_mut(uri) {
            watchers.remove(watcher);
        }
    }

    /// How many URIs are being polled.
    pub fn polled(&self) -> usize {
        self.watched
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
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
                let Ok(contents) = resources::contents(&decl, &metrics, None, &uri).await else {
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
    use serde_json::json;

    #[test]
    fn cached_reads_expire() {
        let cache = ReadCache::default();
        cache.put("a://x", json!({"text": "1"}), Duration::from_secs(60));
        cache.put("a://y", json!({"text": "2"}), Duration::ZERO);
        assert_eq!(cache.get("a://x"), Some(json!({"text": "1"})));
        assert_eq!(cache.get("a://y"), None);
        cache.forget(Some("a://x"));
        assert_eq!(cache.get("a://x"), None);
    }

    #[test]
    fn the_cache_stays_bounded() {
        let cache = ReadCache::default();
        for i in 0..MAX_CACHED + 10 {
            cache.put(&format!("a://{i}"), json!(i), Duration::from_secs(60));
        }
        assert_eq!(cache.entries.len(), MAX_CACHED);
    }

    #[test]
    fn the_cache_is_bounded_in_bytes_and_shares_spellings() {
        let cache = ReadCache::default();
        let big = "x".repeat(1 << 20);
        for i in 0..300 {
            cache.put(
                &format!("a://{i}"),
                json!({"text": big}),
                Duration::from_secs(60),
            );
        }
        // Before, all 300 were kept (318 MB pinned in the run).
        let held = cache.bytes.load(std::sync::atomic::Ordering::Acquire);
        assert!(held <= MAX_CACHED_BYTES, "{held}");
        assert!(cache.entries.len() < 40);
        let cache = ReadCache::default();
        cache.put(
            "a://r/%7eme%2f",
            json!({"uri": "a://r/%7eme%2f", "text": "t"}),
            Duration::from_secs(60),
        );
        assert_eq!(
            cache.get("a://r/~me%2F"),
            Some(json!({"uri": "a://r/~me%2F", "text": "t"}))
        );
        assert_eq!(cache.entries.len(), 1);
        cache.forget(Some("a://r/%7Eme%2F"));
        assert!(cache.entries.is_empty());
        assert_eq!(cache.bytes.load(std::sync::atomic::Ordering::Acquire), 0);
    }

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
