//! The read cache of upstream-backed resources (`cacheTtlMs`): results reused for their TTL,
//! bounded in size, cleared on reload. In memory, no I/O.

use dashmap::DashMap;
use serde_json::Value;
use std::time::{Duration, Instant};

/// Most cached read results.
const MAX_CACHED: usize = 1_024;

/// Read results of upstream resources, reused for their TTL.
#[derive(Default)]
pub struct ReadCache {
    entries: DashMap<String, (Instant, Value)>,
}

impl ReadCache {
    /// A fresh cached result for `uri`.
    pub fn get(&self, uri: &str) -> Option<Value> {
        let entry = self.entries.get(uri)?;
        (entry.0 > Instant::now()).then(|| entry.1.clone())
    }

    /// Caches `contents` for `ttl` (skipped when the cache is full of fresh entries).
    pub fn put(&self, uri: &str, contents: Value, ttl: Duration) {
        if self.entries.len() >= MAX_CACHED {
            let now = Instant::now();
            self.entries.retain(|_, (expires, _)| *expires > now);
            if self.entries.len() >= MAX_CACHED {
                return;
            }
        }
        self.entries
            .insert(uri.to_owned(), (Instant::now() + ttl, contents));
    }

    /// Forgets `uri`, or everything (after a reload).
    pub fn forget(&self, uri: Option<&str>) {
        match uri {
            Some(uri) => {
                self.entries.remove(uri);
            }
            None => self.entries.clear(),
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
}
