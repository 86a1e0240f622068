//! What the registry's handlers share: the catalog behind a lock and the permits bounding
//! requests in flight. Pure data; no I/O.

use super::catalog::Catalog;
use std::sync::{Arc, PoisonError, RwLock};
use tokio::sync::Semaphore;

/// Requests served at once; more are answered 503 at once instead of queueing.
pub const MAX_IN_FLIGHT: usize = 64;

/// What the routes read.
#[derive(Clone)]
pub struct RegistryState {
    /// The catalog the watch keeps.
    pub catalog: Arc<RwLock<Catalog>>,
    /// Permits for requests in flight.
    pub in_flight: Arc<Semaphore>,
}

impl RegistryState {
    /// State over `catalog`.
    pub fn new(catalog: Catalog) -> Self {
        Self {
            catalog: Arc::new(RwLock::new(catalog)),
            in_flight: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
        }
    }

    pub(super) fn read<T>(&self, f: impl FnOnce(&Catalog) -> T) -> T {
        // A panic while writing leaves a catalog that is still a valid map of entries.
        f(&self.catalog.read().unwrap_or_else(PoisonError::into_inner))
    }
}
