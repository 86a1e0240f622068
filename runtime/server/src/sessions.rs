//! Legacy-era sessions (2024-11-05 … 2025-11-25): ids, per-session state, limits, idle expiry,
//! and the server-to-client stream with pings. The 2026-07-28 protocol has no sessions.

mod seal;
mod session;
mod store;

pub use seal::{KEY_LEN, SealedSession, Sealer, read_key, unix_now};
pub use session::{
    DEFAULT_SESSION_BYTES, InFlight, MAX_IN_FLIGHT, Session, SessionTransport, StreamSender,
};
pub use store::{SessionSettings, SessionStore};
