//! The read cache of upstream-backed resources (`cacheTtlMs`): results reused for their TTL,
//! bounded in entries and bytes, keyed on the canonical URI (`mcp_declaration::canonical_uri`, the spelling every lookup uses),
//! cleared on reload. In memory, no
//! I/O.

use dashmap::DashMap;
use mcp_declaration::canonical_uri;
use serde_json::Value;
use std::time::{Duration, Instant};

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
pub(crate) struct ReadCache {
    entries: DashMap<String, (Instant, Value, usize)>,
    bytes: std::sync::atomic::AtomicUsize,
}

impl ReadCache {
    /// A fresh cached result for `uri`.
    pub(crate) fn get(&self, uri: &str) -> Option<Value> {
        let entry = self.entries.get(canonical_uri(uri).as_ref())?;
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
    pub(crate) fn put(&self, uri: &str, contents: Value, ttl: Duration) {
        use std::sync::atomic::Ordering;
        let key = canonical_uri(uri).into_owned();
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
    pub(crate) fn forget(&self, uri: Option<&str>) {
        use std::sync::atomic::Ordering;
        match uri {
            Some(uri) => {
                if let Some((_, (_, _, size))) = self.entries.remove(canonical_uri(uri).as_ref()) {
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

fn weight(value: &Value) -> usize {
    match value {
        Value::String(s) => s.len() + 24,
        Value::Array(items) => items.iter().map(weight).sum::<usize>() + 24,
        Value::Object(map) => map.iter().map(|(k, v)| k.len() + weight(v)).sum::<usize>() + 48,
        _ => 16,
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
}
