//! The catalog page (placeholder until the page lands).

use super::routes::RegistryState;
use axum::extract::State;
use axum::response::{IntoResponse, Response};

pub(super) async fn catalog_page(State(_state): State<RegistryState>) -> Response {
    "catalog".into_response()
}
pub(super) async fn stylesheet() -> Response {
    "".into_response()
}
pub(super) async fn script() -> Response {
    "".into_response()
}
