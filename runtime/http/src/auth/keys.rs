//! The issuer's signing keys (JWKS), cached. Fetched on first use; fetched again when a token
//! names a key id the cache lacks (so a rotated key is picked up without a restart) and when the
//! set is older than its maximum age, never more often than the refresh interval (so a flood of
//! tokens with made-up key ids cannot turn into a flood of fetches). Only asymmetric signing keys
//! are kept: a symmetric (`oct`) key in the set is ignored. Does I/O (the fetches).

use super::discovery::discover;
use super::fetch::{self, FetchError};
use arc_swap::ArcSwap;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use mcp_declaration::trusted_url;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;

/// Most keys kept from one set (a larger set is cut: no real issuer publishes that many).
const MAX_KEYS: usize = 64;

/// One verification key.
pub struct Key {
    /// The key.
    pub key: DecodingKey,
    /// The algorithm the set pins the key to, if it does.
    pub algorithm: Option<Algorithm>,
}

/// A fetched key set.
#[derive(Default)]
pub struct KeySet {
    by_id: HashMap<String, Arc<Key>>,
    without_id: Vec<Arc<Key>>,
    /// Increases with every successful fetch (cached validations of an older set are redone).
    pub generation: u64,
    fetched_at: Option<Instant>,
}

impl KeySet {
    /// The key for a token's `kid` and `alg`: by id, or, for a token without `kid`, the only key
    /// of the set that fits the algorithm.
    pub fn find(&self, kid: Option<&str>, alg: Algorithm) -> Option<Arc<Key>> {
        let fits = |key: &Arc<Key>| {
            key.key.family() == alg.family() && key.algorithm.is_none_or(|pinned| pinned == alg)
        };
        match kid {
            Some(kid) => self.by_id.get(kid).filter(|k| fits(k)).cloned(),
            None => {
                let mut candidates = self
                    .by_id
                    .values()
                    .chain(&self.without_id)
                    .filter(|k| fits(k));
                let only = candidates.next()?;
                candidates.next().is_none().then(|| only.clone())
            }
        }
    }

    fn has_id(&self, kid: Option<&str>) -> bool {
        kid.is_none_or(|kid| self.by_id.contains_key(kid))
    }
}

/// Why no key could be had.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    /// Discovery or the key fetch failed (the issuer is unreachable or misconfigured).
    #[error("signing keys unavailable: {0}")]
    Unavailable(String),
}

/// Settings of the cache.
#[derive(Clone, Debug)]
pub struct KeySettings {
    /// Shortest time between two fetches.
    pub refresh_interval: Duration,
    /// Age after which the set is fetched again in the background.
    pub max_age: Duration,
    /// Longest an active introspection answer is trusted (a revoked token stops working
    /// within this, whatever its `exp`).
    pub introspection_ttl: Duration,
    /// Most introspection requests per second (more unknown tokens are refused with 503).
    pub introspection_rate: u32,
}

impl Default for KeySettings {
    fn default() -> Self {
        Self {
            refresh_interval: Duration::from_secs(10),
            max_age: Duration::from_secs(15 * 60),
            introspection_ttl: Duration::from_secs(60),
            introspection_rate: 20,
        }
    }
}

/// The cached key set of one issuer.
pub struct Keys {
    client: reqwest::Client,
    issuer: String,
    settings: KeySettings,
    current: ArcSwap<KeySet>,
    refresh: tokio::sync::Mutex<RefreshState>,
}

struct RefreshState {
    jwks_uri: Option<Url>,
    last_attempt: Option<Instant>,
}

impl Keys {
    /// A cache for `issuer`'s keys at `jwks_uri` (discovered from the issuer when `None`).
    pub fn new(
        client: reqwest::Client,
        issuer: String,
        jwks_uri: Option<Url>,
        settings: KeySettings,
    ) -> Arc<Self> {
        Arc::new(Self {
            client,
            issuer,
            settings,
            current: ArcSwap::from_pointee(KeySet::default()),
            refresh: tokio::sync::Mutex::new(RefreshState {
                jwks_uri,
                last_attempt: None,
            }),
        })
    }

    /// The current set, without fetching.
    pub fn current(&self) -> Arc<KeySet> {
        self.current.load_full()
    }

    /// The key for a token, fetching the set first when it lacks `kid` (rate-limited).
    pub async fn find(
        self: &Arc<Self>,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Option<Arc<Key>>, KeysError> {
        let set = self.current.load_full();
        if set.fetched_at.is_some() && set.has_id(kid) {
            if set
                .fetched_at
                .is_some_and(|at| at.elapsed() > self.settings.max_age)
            {
                let keys = self.clone();
                let generation = set.generation;
                tokio::spawn(async move { keys.refresh(generation).await });
            }
            return Ok(set.find(kid, alg));
        }
        let fetched = self.refresh(set.generation).await;
        let set = self.current.load_full();
        match fetched {
            Err(err) if set.fetched_at.is_none() => Err(err),
            _ => Ok(set.find(kid, alg)),
        }
    }

    /// Fetches the set unless another task already did since `seen_generation` or the last
    /// attempt is more recent than the refresh interval.
    async fn refresh(&self, seen_generation: u64) -> Result<(), KeysError> {
        let mut state = self.refresh.lock().await;
        if self.current.load().generation != seen_generation {
            return Ok(());
        }
        if state
            .last_attempt
            .is_some_and(|at| at.elapsed() < self.settings.refresh_interval)
        {
            return Ok(());
        }
        state.last_attempt = Some(Instant::now());
        let jwks_uri = match &state.jwks_uri {
            Some(uri) => uri.clone(),
            None => {
                let metadata = discover(&self.client, &self.issuer)
                    .await
                    .map_err(|err| KeysError::Unavailable(err.to_string()))?;
                let uri = metadata.jwks_uri.ok_or_else(|| {
                    KeysError::Unavailable(format!(
                        "the metadata of {} names no jwks_uri",
                        self.issuer
                    ))
                })?;
                state.jwks_uri = Some(uri.clone());
                uri
            }
        };
        let document = fetch::get_json(&self.client, &jwks_uri)
            .await
            .map_err(|err: FetchError| KeysError::Unavailable(err.to_string()))?;
        let mut set = parse_set(&document);
        set.generation = seen_generation + 1;
        set.fetched_at = Some(Instant::now());
        tracing::info!(
            jwks_uri = %jwks_uri,
            keys = set.by_id.len() + set.without_id.len(),
            "fetched the issuer's signing keys"
        );
        self.current.store(Arc::new(set));
        Ok(())
    }
}

/// The usable keys of a JWKS document; keys this runtime cannot use are skipped one by one, so
/// one exotic key does not hide the others.
pub fn parse_set(document: &Value) -> KeySet {
    let mut set = KeySet::default();
    let keys = document.get("keys").and_then(Value::as_array);
    for raw in keys.into_iter().flatten().take(MAX_KEYS) {
        let Ok(jwk) = serde_json::from_value::<Jwk>(raw.clone()) else {
            continue;
        };
        if let Some(key) = usable(&jwk) {
            match jwk.common.key_id {
                Some(kid) => {
                    set.by_id.insert(kid, Arc::new(key));
                }
                None => set.without_id.push(Arc::new(key)),
            }
        }
    }
    set
}

fn usable(jwk: &Jwk) -> Option<Key> {
    if matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)) {
        return None;
    }
    if jwk
        .common
        .public_key_use
        .as_ref()
        .is_some_and(|u| *u != PublicKeyUse::Signature)
    {
        return None;
    }
    let algorithm = match jwk.common.key_algorithm {
        Some(alg) => Some(Algorithm::try_from(alg).ok()?),
        None => None,
    };
    let key = DecodingKey::from_jwk(jwk).ok()?;
    if algorithm.is_some_and(|alg| alg.family() != key.family()) {
        return None;
    }
    Some(Key { key, algorithm })
}

/// Checks a configured `jwksUri`.
pub(super) fn jwks_url(text: &str) -> Result<Url, String> {
    trusted_url(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const N: &str = "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw";

    #[test]
    fn keeps_signing_keys_and_drops_the_rest() {
        let set = parse_set(&json!({"keys": [
            {"kty": "RSA", "kid": "a", "alg": "RS256", "use": "sig", "n": N, "e": "AQAB"},
            {"kty": "RSA", "kid": "enc", "use": "enc", "n": N, "e": "AQAB"},
            {"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"},
            {"kty": "RSA", "kid": "mislabelled", "alg": "ES256", "n": N, "e": "AQAB"},
            {"kty": "weird", "kid": "w"},
            {"kty": "RSA", "n": N, "e": "AQAB"}
        ]}));
        assert!(set.find(Some("a"), Algorithm::RS256).is_some());
        // A key pinned to RS256 is not used for PS256, nor an RSA key for ES256.
        assert!(set.find(Some("a"), Algorithm::PS256).is_none());
        assert!(set.find(Some("a"), Algorithm::ES256).is_none());
        for kid in ["enc", "hmac", "mislabelled", "w"] {
            assert!(set.find(Some(kid), Algorithm::RS256).is_none(), "{kid}");
            assert!(set.find(Some(kid), Algorithm::HS256).is_none(), "{kid}");
        }
        // Without kid: two RSA keys fit, so none is chosen.
        assert!(set.find(None, Algorithm::RS256).is_none());
    }
}
