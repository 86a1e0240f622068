//! Self-describing session ids: the session's facts sealed with ChaCha20-Poly1305 under a key all
//! replicas share, so any replica can serve any session without sticky routing or a shared store.
//! Pure (randomness aside).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use rand::RngCore;
use serde::{Deserialize, Serialize};

/// Bytes of a session key.
pub const KEY_LEN: usize = 32;
const NONCE_LEN: usize = 12;

/// What a session id carries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedSession {
    /// Negotiated protocol version.
    #[serde(rename = "v")]
    pub version: String,
    /// Creation time, seconds since the Unix epoch.
    #[serde(rename = "t")]
    pub created: u64,
    /// Digest of the (issuer, subject) that opened the session, when requests are
    /// authenticated: the session serves only that principal (base64).
    #[serde(rename = "p", default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// Address (`IP:PORT`) of the replica that holds the session's state, when replicas route
    /// to each other (`--advertise-address`): requests another replica receives for it go
    /// there. Sealed, so a client cannot point a replica anywhere else. Ids sealed before
    /// owners existed have none and are served wherever they arrive.
    #[serde(rename = "o", default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The `spec.views` view the session was opened through: it serves that view only, on
    /// every replica (sealed, so a client cannot move it to another view or to the whole
    /// server). Absent: the whole server.
    #[serde(rename = "w", default, skip_serializing_if = "Option::is_none")]
    pub view: Option<String>,
}

/// Seconds since the Unix epoch: the clock of every time sealed into an id or token (session
/// creation, hop tokens, request state, token expiry). 0 on a clock before 1970.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Seals and opens session ids (and other tokens, each sealed for its purpose).
#[derive(Clone)]
pub struct Sealer {
    cipher: ChaCha20Poly1305,
    /// The key this one replaced, kept during a rotation: it opens what it sealed but seals
    /// nothing new, so ids issued before the rotation keep working until they expire.
    previous: Option<ChaCha20Poly1305>,
}

impl Sealer {
    /// A sealer with a shared key.
    pub fn new(key: &[u8; KEY_LEN]) -> Self {
        Self {
            cipher: ChaCha20Poly1305::new(Key::from_slice(key)),
            previous: None,
        }
    }

    /// This sealer, also opening what `previous` (the key it replaces) sealed.
    pub fn with_previous(self, previous: &[u8; KEY_LEN]) -> Self {
        Self {
            previous: Some(ChaCha20Poly1305::new(Key::from_slice(previous))),
            ..self
        }
    }

    /// A sealer with a fresh random key (one replica only).
    pub fn random() -> Self {
        let mut key = [0u8; KEY_LEN];
        rand::rng().fill_bytes(&mut key);
        Self::new(&key)
    }

    /// A new id for `session` (a random nonce makes every id unique). Ids are URL-safe base64,
    /// which is visible ASCII as Streamable HTTP requires.
    pub fn seal(&self, session: &SealedSession) -> String {
        // Serializing plain strings and a number cannot fail.
        let plain = serde_json::to_vec(session).unwrap_or_default();
        self.seal_bytes(b"", &plain)
    }

    /// Opens an id; `None` when it was not sealed under this key or was altered.
    pub fn open(&self, id: &str) -> Option<SealedSession> {
        let plain = self.open_bytes(b"", id, 512)?;
        serde_json::from_slice(&plain).ok()
    }

    /// Seals `plain` for the purpose `aad` (authenticated, not encrypted into the token: a token
    /// sealed for one purpose never opens for another). URL-safe base64.
    pub fn seal_bytes(&self, aad: &[u8], plain: &[u8]) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        let Ok(sealed) = self
            .cipher
            .encrypt(Nonce::from_slice(&nonce), Payload { msg: plain, aad })
        else {
            // Encryption only fails for inputs larger than the cipher's limit (GiBs).
            return String::new();
        };
        let mut bytes = nonce.to_vec();
        bytes.extend_from_slice(&sealed);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// Opens a token sealed for `aad`, refusing tokens longer than `max_len` before any work.
    pub fn open_bytes(&self, aad: &[u8], token: &str, max_len: usize) -> Option<Vec<u8>> {
        if token.len() > max_len {
            return None;
        }
        let bytes = URL_SAFE_NO_PAD.decode(token).ok()?;
        if bytes.len() <= NONCE_LEN {
            return None;
        }
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        let open = |cipher: &ChaCha20Poly1305| {
            cipher
                .decrypt(Nonce::from_slice(nonce), Payload { msg: sealed, aad })
                .ok()
        };
        open(&self.cipher).or_else(|| self.previous.as_ref().and_then(open))
    }
}

/// Reads a session key file: at least 32 bytes, of which the first 32 are the key. Kubernetes
/// Secrets mount as files, so that is the contract.
pub fn read_key(path: &std::path::Path) -> std::io::Result<[u8; KEY_LEN]> {
    let bytes = std::fs::read(path)?;
    bytes
        .get(..KEY_LEN)
        .and_then(|key| key.try_into().ok())
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "session key file {} holds {} bytes; at least {KEY_LEN} are needed",
                    path.display(),
                    bytes.len()
                ),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> SealedSession {
        SealedSession {
            principal: None,
            version: "2025-11-25".into(),
            created: 1_700_000_000,
            owner: None,
            view: None,
        }
    }

    #[test]
    fn a_rotated_sealer_opens_old_ids_and_seals_only_with_the_new_key() {
        let (old, new) = ([1u8; KEY_LEN], [2u8; KEY_LEN]);
        let before = Sealer::new(&old).seal(&session());
        let rotated = Sealer::new(&new).with_previous(&old);
        assert_eq!(rotated.open(&before), Some(session()));
        let after = rotated.seal(&session());
        assert_eq!(Sealer::new(&new).open(&after), Some(session()));
        assert_eq!(Sealer::new(&old).open(&after), None);
        // Once the previous key is retired, what it sealed no longer opens.
        assert_eq!(Sealer::new(&new).open(&before), None);
    }

    #[test]
    fn another_replica_with_the_key_opens_the_id() {
        let key = [7u8; KEY_LEN];
        let id = Sealer::new(&key).seal(&session());
        assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)));
        assert_eq!(Sealer::new(&key).open(&id), Some(session()));
    }

    #[test]
    fn the_owner_round_trips_and_ids_without_one_still_open() {
        let key = [7u8; KEY_LEN];
        let owned = SealedSession {
            owner: Some("10.0.0.7:8080".into()),
            ..session()
        };
        let id = Sealer::new(&key).seal(&owned);
        assert_eq!(Sealer::new(&key).open(&id), Some(owned));
        // An id sealed before owners existed: the same JSON without "o".
        let old = Sealer::new(&key).seal_bytes(b"", br#"{"v":"2025-11-25","t":1700000000}"#);
        assert_eq!(Sealer::new(&key).open(&old), Some(session()));
    }

    #[test]
    fn the_view_round_trips() {
        let key = [7u8; KEY_LEN];
        let viewed = SealedSession {
            view: Some("readers".into()),
            ..session()
        };
        let id = Sealer::new(&key).seal(&viewed);
        assert_eq!(Sealer::new(&key).open(&id), Some(viewed));
        assert_ne!(Sealer::new(&key).open(&id), Some(session()));
    }

    #[test]
    fn foreign_or_altered_ids_do_not_open() {
        let sealer = Sealer::new(&[7u8; KEY_LEN]);
        let id = sealer.seal(&session());
        assert_eq!(Sealer::new(&[8u8; KEY_LEN]).open(&id), None);
        let mut altered = id.into_bytes();
        let last = altered.len() - 2;
        altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
        assert_eq!(sealer.open(&String::from_utf8(altered).unwrap()), None);
        assert_eq!(sealer.open("not-base64!"), None);
    }

    #[test]
    fn tokens_open_only_for_their_purpose() {
        let sealer = Sealer::new(&[7u8; KEY_LEN]);
        let token = sealer.seal_bytes(b"state", b"hello");
        assert_eq!(
            sealer.open_bytes(b"state", &token, 1024).as_deref(),
            Some(&b"hello"[..])
        );
        assert_eq!(sealer.open_bytes(b"", &token, 1024), None);
        assert_eq!(sealer.open_bytes(b"state", &token, 10), None);
        assert_eq!(sealer.open(&token), None);
    }

    #[test]
    fn ids_are_unique() {
        let sealer = Sealer::random();
        assert_ne!(sealer.seal(&session()), sealer.seal(&session()));
    }

    proptest::proptest! {
        #[test]
        fn seals_round_trip_and_any_change_is_refused(
            version in ".{0,40}",
            created in proptest::prelude::any::<u64>(),
            at in proptest::prelude::any::<usize>(),
            with in "[A-Za-z0-9_-]",
            principal in proptest::option::of("[A-Za-z0-9_-]{22}"),
            owner in proptest::option::of("[0-9.:]{7,21}"),
        ) {
            let sealer = Sealer::new(&[3u8; KEY_LEN]);
            let sealed = SealedSession { version, created, principal, owner, view: None };
            let id = sealer.seal(&sealed);
            proptest::prop_assert_eq!(sealer.open(&id), Some(sealed));
            let at = at % id.len();
            if id[at..].chars().next() != with.chars().next() {
                let altered = format!("{}{with}{}", &id[..at], &id[at + 1..]);
                proptest::prop_assert_eq!(sealer.open(&altered), None);
            }
        }

        #[test]
        fn opening_never_panics(id in ".{0,200}") {
            let _ = Sealer::new(&[3u8; KEY_LEN]).open(&id);
        }
    }
}
