//! `spec.limits`: how often and how much callers may call, per server, per principal and per
//! tool. Rates and quotas are text (`10/s`, `5000/day`) that the compiler reads
//! (`compile/limits.rs`). Pure data, no I/O.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `N/s`, `N/min` or `N/h`.
pub const RATE_PATTERN: &str = r"^[1-9][0-9]{0,8}/(s|min|h)$";
/// `N/h` or `N/day`.
pub const QUOTA_PATTERN: &str = r"^[1-9][0-9]{0,9}/(h|day)$";

/// Rate limits and quotas of the requests a server answers (absent: none). Each replica enforces
/// its share: the operator divides every limit by the server's replicas (`status.limits`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Every request the server answers, from anyone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<Limit>,
    /// Every request of each principal (the token's issuer and subject under `spec.auth`;
    /// without it, each client address).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_principal: Option<Limit>,
    /// `tools/call` of one tool, by the tool's name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, ToolLimit>,
}

/// A rate (with a burst) and/or a quota.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Limit {
    /// Sustained requests per time: `N/s`, `N/min` or `N/h`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = RATE_PATTERN))]
    pub rate: Option<String>,
    /// Requests allowed at once before the rate applies (default: the rate's N, at least 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1_000_000_000))]
    pub burst: Option<u32>,
    /// Requests per hour or day in all: `N/h` or `N/day` (spent evenly: the count comes back
    /// one request at a time over the period, so no boundary doubles it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = QUOTA_PATTERN))]
    pub quota: Option<String>,
}

/// A tool's limit.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolLimit {
    /// The rate and/or quota.
    #[serde(flatten)]
    pub limit: Limit,
    /// Count each principal apart (default: every caller of the tool together).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub per_principal: bool,
}
