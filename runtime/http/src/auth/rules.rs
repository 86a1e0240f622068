//! What a token must satisfy to be accepted for this resource, shared by JWT validation and
//! introspection. Pure, no I/O.

use jsonwebtoken::Algorithm;
use mcp_declaration::audience_matches;
use serde_json::Value;

/// What a token must satisfy.
#[derive(Clone, Debug)]
pub struct Rules {
    /// Exact `iss`.
    pub issuer: String,
    /// Accepted audiences, canonical (see [`mcp_declaration::canonical_audience`]).
    pub audiences: Vec<String>,
    /// Accepted algorithms (never HMAC, never `none`).
    pub algorithms: Vec<Algorithm>,
    /// Tolerated clock skew, seconds.
    pub leeway: u64,
}

/// Whether an `aud` claim (a string or an array of strings) names an accepted audience.
pub fn audience_ok(accepted: &[String], aud: Option<&Value>) -> bool {
    match aud {
        Some(Value::String(one)) => audience_matches(accepted, one),
        Some(Value::Array(many)) => many
            .iter()
            .filter_map(Value::as_str)
            .any(|one| audience_matches(accepted, one)),
        _ => false,
    }
}
