//! Which MCP transports a server answers on (`spec.transports`), so a platform team can turn the
//! deprecated ones off ahead of their removal (HTTP+SSE: SEP-2596). Pure data, no I/O.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One way clients reach the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Transport {
    /// 2026-07-28 stateless requests on `POST /mcp`.
    Modern,
    /// Streamable HTTP sessions of 2025-03-26 … 2025-11-25 on `/mcp` (`initialize`,
    /// `Mcp-Session-Id`, `GET` and `DELETE /mcp`).
    Streamable,
    /// The deprecated HTTP+SSE transport of 2024-11-05 (`GET /sse`, `POST /messages`).
    Sse,
}

impl Transport {
    /// Every transport, in the order names are listed.
    pub const ALL: [Transport; 3] = [Transport::Modern, Transport::Streamable, Transport::Sse];

    /// Its name in `spec.transports` and `--transports`.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Modern => "modern",
            Transport::Streamable => "streamable",
            Transport::Sse => "sse",
        }
    }
}
