//! What the registry's handlers share: the catalog behind a lock, the permits bounding
//! requests in flight, and the shape of an error answer. Pure data; no I/O.

use super::catalog::Catalog;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
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

/// A JSON error body as the API documents it: `{"error": "..."}`.
pub fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, axum::Json(json!({"error": message.into()}))).into_response()
}
