//! Legacy eras (2024-11-05 … 2025-11-25): the interactive rounds as server-to-client requests
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`) over the session.

use super::{Outcome, Templates};
use crate::declaration::CompiledInteraction;
use crate::protocol::McpError;
use crate::server::RequestContext;
use serde_json::Value;

/// Asks over the session until the call is ready, declined, or the client cannot answer.
pub async fn resolve(
    _ctx: &RequestContext,
    _interaction: &CompiledInteraction,
    _templates: &Templates,
    _args: &Value,
) -> Result<Outcome, McpError> {
    // Server-to-client requests over legacy sessions come in the next step.
    Ok(Outcome::Stop(
        "this item asks the client for input, which this server does only in 2026-07-28 so far"
            .into(),
    ))
}
