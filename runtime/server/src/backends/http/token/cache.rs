//! The cache of tokens obtained for `http.auth`: one entry per (backend's grant, token URL,
//! client, audience, resource, scope; the caller's token for token exchange), kept until
//! shortly before the token expires, never shared between subjects (the key holds the subject
//! token itself, compared whole: the one the validated principal holds, shared, not copied; a
//! hit costs the map's hash of it and a lookup). Bounded in entries: a full cache first drops
//! expired entries, then those expiring soonest. Concurrent misses of one key wait for one
//! request (single flight); a failed request is not cached, so the next caller asks again. In
//! memory, no I/O.

use crate::principal::SubjectToken;
use mcp_declaration::Secret;
use std::collections::HashMap;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::OnceCell;
use tokio::time::Instant;

/// Most tokens cached (each a few KB at most).
pub(crate) const MAX_TOKENS: usize = 4_096;

/// A token is reused until this long before it expires (or half its life, if shorter), so that
/// it does not expire on its way to the upstream.
const EXPIRY_MARGIN: Duration = Duration::from_secs(30);

/// A token the authorization server issued.
#[derive(Clone, Debug)]
pub(crate) struct Issued {
    /// The access token.
    pub(crate) token: Secret,
    /// When it stops being reused; `None`: not cached (the server gave no `expires_in`).
    pub(crate) reuse_until: Option<Instant>,
    /// Its `act` chain, for audit records and spans (empty for an opaque token).
    pub(crate) act: Arc<[String]>,
}

impl Issued {
    /// A token issued now that the server says lives `expires_in`.
    pub(crate) fn new(token: String, expires_in: Option<Duration>) -> Self {
        let now = Instant::now();
        Self {
            act: super::act::act_chain(&token).into(),
            token: Secret::new(token),
            reuse_until: expires_in.map(|life| now + life - EXPIRY_MARGIN.min(life / 2)),
        }
    }

    fn fresh(&self, now: Instant) -> bool {
        self.reuse_until.is_some_and(|until| now < until)
    }
}

/// Whether a token came from the cache or from the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// Reused (or obtained by a concurrent request for the same key).
    Cached,
    /// Obtained by this request.
    Obtained,
}

/// What a token is cached by: the backend's grant (its `cache_key`) and, for token exchange,
/// the caller's token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Key {
    grant: Arc<str>,
    subject: Option<SubjectToken>,
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.grant.hash(state);
        self.subject.as_ref().map(SubjectToken::expose).hash(state);
    }
}

/// Tokens by key.
#[derive(Debug)]
pub(crate) struct TokenCache {
    entries: Mutex<HashMap<Key, Arc<OnceCell<Issued>>>>,
    max: usize,
}

impl Default for TokenCache {
    fn default() -> Self {
        Self::with_capacity(MAX_TOKENS)
    }
}

impl TokenCache {
    /// A cache of at most `max` tokens.
    pub(crate) fn with_capacity(max: usize) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            max: max.max(1),
        }
    }

    /// The key of a backend's grant (`cache_key`) for `subject` (the caller's token; `None`
    /// for client credentials).
    pub(crate) fn key(cache_key: impl Into<Arc<str>>, subject: Option<&SubjectToken>) -> Key {
        Key {
            grant: cache_key.into(),
            subject: subject.cloned(),
        }
    }

    /// The cached token of `key`, or the one `obtain` gets (which concurrent callers of the
    /// same key wait for instead of asking themselves).
    pub(crate) async fn get_or_obtain<F, Fut, E>(
        &self,
        key: Key,
        obtain: F,
    ) -> Result<(Issued, Source), E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Issued, E>>,
    {
        let cell = self.cell(&key);
        let mut asked = false;
        let issued = cell
            .get_or_try_init(|| {
                asked = true;
                obtain()
            })
            .await?
            .clone();
        if issued.reuse_until.is_none() {
            self.forget(&key, &cell);
        }
        let source = if asked {
            Source::Obtained
        } else {
            Source::Cached
        };
        Ok((issued, source))
    }

    /// The entry of `key`: its fresh or in-flight cell, or a new one.
    fn cell(&self, key: &Key) -> Arc<OnceCell<Issued>> {
        let now = Instant::now();
        // The lock guards a map lookup only; a poisoned lock still holds a usable map.
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(cell) = entries.get(key) {
            match cell.get() {
                None => return cell.clone(),
                Some(issued) if issued.fresh(now) => return cell.clone(),
                Some(_) => {}
            }
        }
        if entries.len() >= self.max && !entries.contains_key(key) {
            evict(&mut entries, self.max, now);
        }
        let cell = Arc::new(OnceCell::new());
        entries.insert(key.clone(), cell.clone());
        cell
    }

    /// Drops `key` if it is still `cell` (a token that must not be reused).
    fn forget(&self, key: &Key, cell: &Arc<OnceCell<Issued>>) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.get(key).is_some_and(|c| Arc::ptr_eq(c, cell)) {
            entries.remove(key);
        }
    }

    /// Tokens cached now (in flight included).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().unwrap().len()
    }
}

/// Makes room for one entry: drops stale ones, then those expiring soonest. Requests in flight
/// keep their place.
fn evict(entries: &mut HashMap<Key, Arc<OnceCell<Issued>>>, max: usize, now: Instant) {
    entries.retain(|_, cell| cell.get().is_none_or(|issued| issued.fresh(now)));
    if entries.len() < max {
        return;
    }
    let mut by_expiry: Vec<(Instant, Key)> = entries
        .iter()
        .filter_map(|(key, cell)| Some((cell.get()?.reuse_until?, key.clone())))
        .collect();
    by_expiry.sort_unstable_by_key(|(until, _)| *until);
    // Down to 7/8 of the bound, so that a full cache does not sort on every miss.
    let excess = entries.len() + 1 - (max - max / 8).max(1).min(entries.len());
    for (_, key) in by_expiry.into_iter().take(excess) {
        entries.remove(&key);
    }
}

#[cfg(test)]
mod tests;
