//! Reading POST bodies under a budget shared by every client. A body over [`SMALL_BODY`] first
//! takes its share of the budget (its `Content-Length`, or the largest allowed body when no
//! length is declared) and keeps it until it is parsed, so however many clients send large
//! bodies at once, the memory their buffering and parsing takes stays bounded. A body must
//! arrive within a deadline, so a slow sender cannot sit on its share. Does network I/O.

use super::HttpSettings;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bodies up to this size are read without taking a share (their parse is cheap).
pub(super) const SMALL_BODY: usize = 64 * 1024;

/// The budget is counted in units of this many bytes.
const UNIT: usize = 1024;

/// The share of the budget a body holds until it is parsed; nothing for small bodies.
pub struct Share(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

/// Bytes of large bodies that may be read and parsed at once, across all clients.
pub struct BodyBudget {
    units: Arc<Semaphore>,
    total_units: u32,
    max_body: usize,
    wait: Duration,
    read_timeout: Duration,
}

impl BodyBudget {
    /// The budget of `settings` (never less than one largest body).
    pub fn new(settings: &HttpSettings) -> Self {
        let bytes = settings.large_body_budget.max(settings.max_body_bytes);
        let total_units = u32::try_from(bytes.div_ceil(UNIT))
            .unwrap_or(u32::MAX)
            .min(u32::try_from(Semaphore::MAX_PERMITS).unwrap_or(u32::MAX));
        Self {
            units: Arc::new(Semaphore::new(total_units as usize)),
            total_units,
            max_body: settings.max_body_bytes,
            wait: settings.large_body_wait,
            read_timeout: settings.body_timeout,
        }
    }

    /// Reads `body`, after taking its share of the budget when it is large; the share is to be
    /// dropped once the body is parsed. Refusals: 413 (too large), 503 (the budget stayed
    /// taken), 408 (the body came too slowly), 400 (the body broke off).
    pub async fn read(&self, headers: &HeaderMap, body: Body) -> Result<(Bytes, Share), Response> {
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<usize>().ok());
        if declared.is_some_and(|len| len > self.max_body) {
            return Err(too_large());
        }
        let share = match declared {
            Some(len) if len <= SMALL_BODY => Share(None),
            other => self.take_share(other.unwrap_or(self.max_body)).await?,
        };
        let limited = http_body_util::Limited::new(body, self.max_body);
        let bytes = match tokio::time::timeout(self.read_timeout, limited.collect()).await {
            Err(_) => {
                return Err((
                    StatusCode::REQUEST_TIMEOUT,
                    "the request body came too slowly",
                )
                    .into_response());
            }
            Ok(Err(err)) if err.is::<http_body_util::LengthLimitError>() => return Err(too_large()),
            Ok(Err(_)) => {
                return Err((StatusCode::BAD_REQUEST, "the request body broke off").into_response());
            }
            Ok(Ok(collected)) => collected.to_bytes(),
        };
        Ok((bytes, share))
    }

    async fn take_share(&self, len: usize) -> Result<Share, Response> {
        let units = u32::try_from(len.div_ceil(UNIT))
            .unwrap_or(u32::MAX)
            .min(self.total_units);
        match tokio::time::timeout(self.wait, self.units.clone().acquire_many_owned(units)).await {
            Ok(Ok(permit)) => Ok(Share(Some(permit))),
            // Waited too long (or the semaphore closed, which it never is).
            _ => {
                tracing::debug!(
                    len,
                    "refused a large body: the large-body budget stayed taken"
                );
                let mut response = (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "too many large requests at once; retry shortly",
                )
                    .into_response();
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                Err(response)
            }
        }
    }
}

fn too_large() -> Response {
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        "the request body is too large",
    )
        .into_response()
}
