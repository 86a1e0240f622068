//! Where approvals live: one small trait the gate calls, with a directory implementation
//! (`directory.rs`, local `serve --approvals-dir`) and a Kubernetes one (`kube.rs`,
//! `MCPApproval` objects). Deciding (approve, deny) is not part of it: people decide with the
//! CLI or `kubectl`, never through the runtime.

use super::record::Approval;
use async_trait::async_trait;

/// Longest sealed outcome a store records: well under the API server's object limit (about
/// 1.5 MiB in etcd), leaving room for the rest of the object. A larger result is recorded as a
/// tool error saying so.
pub const MAX_OUTCOME_CHARS: usize = 256 * 1024;

/// A store of approvals.
#[async_trait]
pub trait ApprovalStore: Send + Sync + std::fmt::Debug {
    /// The approvals recorded for calls with `digest` (a `SealedCall` digest), in any order.
    async fn find(&self, digest: &str) -> Result<Vec<Approval>, StoreError>;

    /// Records `approval`, new and pending.
    async fn create(&self, approval: &Approval) -> Result<(), StoreError>;

    /// Marks `approval` (as read by `find`: approved, unused) used, atomically: `Ok(false)`
    /// when another request or replica marked it first, so the call must not run.
    async fn claim(&self, approval: &Approval) -> Result<bool, StoreError>;

    /// Records `outcome` (sealed text of at most [`MAX_OUTCOME_CHARS`]) on `approval` (as read
    /// by `find`: used), once: `Ok(false)` when an outcome is recorded already, which stands.
    async fn settle(&self, approval: &Approval, outcome: &str) -> Result<bool, StoreError>;

    /// How an approver approves `id`, as a command line to show the caller.
    fn approve_hint(&self, id: &str) -> String;
}

/// Why a store could not answer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file of the approvals directory.
    #[error("approvals directory {path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// A record that does not parse.
    #[error("approval record {path} is not valid: {message}")]
    Invalid {
        /// Where it was read.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The directory holds more records than it may.
    #[error("approvals directory holds more than {max} records; remove old ones")]
    Full {
        /// The bound.
        max: usize,
    },
    /// An outcome larger than [`MAX_OUTCOME_CHARS`], or on an approval not used.
    #[error("approval {id}: {message}")]
    Refused {
        /// The approval.
        id: String,
        /// Why.
        message: String,
    },
    /// The Kubernetes API.
    #[error("kubernetes API: {0}")]
    Kube(String),
}
