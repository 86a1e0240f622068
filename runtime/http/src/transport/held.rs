//! Charging what the server holds for clients to the budget they all share: a message's parsed
//! weight, bounded before it is parsed ([`mcp_protocol::weight::weigh`]), is charged until its
//! request ends, and a message that does not fit is refused with 503 and `Retry-After` without
//! being parsed. However many connections post at once, the parsed messages alive stay within
//! `--max-held-bytes`. No I/O.

use super::AppState;
use super::reply::error;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use mcp_protocol::weight::{Weighed, weigh};
use mcp_protocol::{Era, McpError};
use mcp_server::budget::Held;

/// Seconds a refused client is told to wait: requests finish and free their share quickly.
const RETRY_AFTER: &str = "1";

/// Weighs `body` and charges its weight to the shared budget. Refusals: the density check's
/// error (as the parse would give it), or 503 with `Retry-After` when the budget is full.
pub(super) fn charge(state: &AppState, body: &[u8], era: Era) -> Result<(Weighed, Held), Response> {
    let weighed = weigh(body).map_err(|err| error(None, &err, era))?;
    match state.held.charge(weighed.bytes) {
        Some(charge) => Ok((weighed, Held::none().with(charge))),
        None => {
            state.server.metrics().budget_refused("global");
            tracing::debug!(
                bytes = weighed.bytes,
                "refused a message: the server holds its most for clients"
            );
            Err(busy(None, era, "the server holds its most for clients now"))
        }
    }
}

/// 503 with a JSON-RPC error and `Retry-After`.
pub(super) fn busy(id: Option<&mcp_protocol::RequestId>, era: Era, why: &str) -> Response {
    let mut response = error(id, &McpError::Overloaded(why.to_owned()), era);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER));
    response
}
