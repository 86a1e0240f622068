//! Approval gates (`tools[].approval`): a call of a gated tool runs only once a person of the
//! declared group has approved that exact call (caller, server, tool, arguments, declaration
//! version), and then once. The sealed call and its digest (`call.rs`), the record (`record.rs`),
//! the stores (`store.rs`: a directory for local `serve`, `MCPApproval` objects in a cluster),
//! the gate's verdict (`gate.rs`) and what a stopped caller reads (`reply.rs`).

mod call;
mod directory;
mod gate;
mod kube;
mod open;
mod record;
mod reply;
mod store;

pub use call::{ANONYMOUS, SealedCall};
pub use directory::{DecideError, DirectoryStore, MAX_RECORDS};
pub use gate::{Ask, Gate, check};
pub use kube::{KubeConfig, KubeStore, Owner};
pub use open::StoreConfig;
pub use record::{Approval, MAX_ID_CHARS, State, format_time, valid_id};
pub use reply::{AUTHORIZATION_META, refusal, waiting_text};
pub use store::{ApprovalStore, MAX_OUTCOME_CHARS, StoreError};
