//! Which approval store a runtime uses, as its flags say, and opening it. Creates the
//! directory, or reads the Kubernetes CA bundle.

use super::directory::DirectoryStore;
use super::kube::{KubeConfig, KubeStore, Owner};
use super::store::{ApprovalStore, StoreError};
use std::path::PathBuf;
use std::sync::Arc;

/// Where approvals are kept.
#[derive(Clone, Debug, Default)]
pub enum StoreConfig {
    /// Nowhere: a declaration with approvals is refused.
    #[default]
    None,
    /// A local directory (`serve --approvals-dir`).
    Directory(PathBuf),
    /// `MCPApproval` objects, owned by `owner` when known.
    Kube(KubeConfig, Option<Owner>),
}

impl StoreConfig {
    /// The store; `None` when none is configured.
    pub fn open(&self) -> Result<Option<Arc<dyn ApprovalStore>>, StoreError> {
        Ok(match self {
            Self::None => None,
            Self::Directory(dir) => Some(Arc::new(DirectoryStore::create(dir)?)),
            Self::Kube(config, owner) => {
                Some(Arc::new(KubeStore::new(config.clone(), owner.clone())?))
            }
        })
    }
}
