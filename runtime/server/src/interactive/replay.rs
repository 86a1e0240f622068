//! What 2026-07-28 rounds need beyond the pure state: the key `requestState` is sealed with, and
//! the nonces of the states already used. Each state carries a fresh random nonce and opens
//! once within its lifetime: a replayed state (the same answers sent again, after the call they
//! completed ran) is refused, so a confirmed action runs once per confirmation. The table of
//! used nonces is bounded; entries leave it when their state expires. In memory, no I/O.

use crate::sessions::{Sealer, unix_now};
use base64::Engine as _;
use dashmap::DashMap;
use mcp_protocol::McpError;
use rand::RngCore;
use std::sync::Arc;

/// Most used nonces remembered (about 80 bytes each). When full of unexpired ones, completing
/// a round is refused with 503 until some expire: forgetting one would let its state replay.
const MAX_USED: usize = 100_000;

/// The sealing key of `requestState` and the nonces already used on this replica.
pub(crate) struct Rounds {
    /// Seals and opens states (the session key all replicas share).
    pub(crate) sealer: Arc<Sealer>,
    used: DashMap<String, u64>,
    max_used: usize,
}

impl Rounds {
    /// Rounds sealed with `sealer`.
    pub(crate) fn new(sealer: Arc<Sealer>) -> Self {
        Self {
            sealer,
            used: DashMap::new(),
            max_used: MAX_USED,
        }
    }

    /// A fresh nonce for a state.
    pub(crate) fn nonce() -> String {
        let mut bytes = [0u8; 16];
        rand::rng().fill_bytes(&mut bytes);
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    /// Records the state with `nonce`, valid until `expiry` (Unix seconds), as used; refuses a
    /// state used before.
    pub(crate) fn redeem(&self, nonce: &str, expiry: u64) -> Result<(), McpError> {
        if self.used.len() >= self.max_used {
            let now = unix_now();
            self.used.retain(|_, until| *until >= now);
            if self.used.len() >= self.max_used {
                return Err(McpError::Overloaded(
                    "too many interactive rounds completed recently".into(),
                ));
            }
        }
        match self.used.entry(nonce.to_owned()) {
            dashmap::mapref::entry::Entry::Occupied(_) => Err(McpError::InvalidParams(
                "requestState refused: it was used already; call again without it".into(),
            )),
            dashmap::mapref::entry::Entry::Vacant(slot) => {
                slot.insert(expiry);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nonce_is_redeemed_once() {
        let rounds = Rounds::new(Arc::new(Sealer::random()));
        let nonce = Rounds::nonce();
        assert!(rounds.redeem(&nonce, unix_now() + 60).is_ok());
        assert!(rounds.redeem(&nonce, unix_now() + 60).is_err());
        assert!(rounds.redeem(&Rounds::nonce(), unix_now() + 60).is_ok());
    }

    #[test]
    fn when_full_only_expired_nonces_are_forgotten() {
        let mut rounds = Rounds::new(Arc::new(Sealer::random()));
        rounds.max_used = 2;
        let old = Rounds::nonce();
        rounds.redeem(&old, 0).unwrap();
        rounds.redeem(&Rounds::nonce(), unix_now() + 60).unwrap();
        // Full: the expired one goes, room for one more.
        rounds.redeem(&Rounds::nonce(), unix_now() + 60).unwrap();
        assert!(matches!(
            rounds.redeem(&Rounds::nonce(), unix_now() + 60),
            Err(McpError::Overloaded(_))
        ));
    }
}
