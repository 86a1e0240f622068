//! `spec.discovery`: how clients find the tools of a large server. In `search` mode `tools/list`
//! shows only the pinned tools and two meta tools that search and describe the rest; every
//! declared tool can still be called. Pure data, no I/O.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Most tools `spec.discovery.pinned` may name: pinned tools are listed in full on every
/// `tools/list`, and past a few dozen the listing costs what search mode is meant to save.
pub const MAX_PINNED: usize = 64;

/// How clients discover the server's tools (absent: `mode: full`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Discovery {
    /// `full` (default): `tools/list` returns every tool. `search`: `tools/list` returns the
    /// `pinned` tools plus the meta tools `search_tools` (arguments `query`, optional `limit`)
    /// and `describe_tools` (argument `names`); `tools/call` still accepts every tool.
    #[serde(default)]
    pub mode: DiscoveryMode,
    /// Tools `tools/list` still returns in `search` mode, by name (at most 64; listed in
    /// declaration order).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub pinned: Vec<String>,
}

/// What `tools/list` returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum DiscoveryMode {
    /// Every tool the caller may see.
    #[default]
    Full,
    /// The pinned tools and the meta tools `search_tools` and `describe_tools`.
    Search,
}
