//! Protocol errors and the one place they become JSON-RPC error codes and HTTP statuses.

use super::version::{Era, SUPPORTED_VERSIONS};
use serde_json::{Value, json};

/// A failure the client sees as a JSON-RPC error. Tool failures are not errors: they are
/// `isError` results the model can read.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum McpError {
    /// The body is not JSON.
    #[error("parse error: {0}")]
    Parse(String),
    /// The JSON is not a valid JSON-RPC message.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The method does not exist (or not in this era).
    #[error("method not found: {0}")]
    MethodNotFound(String),
    /// The parameters are wrong.
    #[error("{0}")]
    InvalidParams(String),
    /// A required 2026-07-28 `_meta` field is missing or malformed.
    #[error("{0}")]
    InvalidMeta(String),
    /// No resource has this URI.
    #[error("resource not found")]
    ResourceNotFound {
        /// The requested URI.
        uri: String,
    },
    /// An MCP header is missing or disagrees with the body.
    #[error("header mismatch: {0}")]
    HeaderMismatch(String),
    /// The request needs a client capability the client did not declare.
    #[error("missing required client capability")]
    MissingCapability(Value),
    /// The requested protocol version is not served.
    #[error("unsupported protocol version")]
    UnsupportedVersion {
        /// What the client asked for.
        requested: String,
    },
    /// The server is at its limit of sessions (or of open subscription streams).
    #[error("too many sessions: the server holds its maximum of {0}; try again later")]
    TooManySessions(usize),
    /// One client holds its share of a replica's limit (sessions, listen streams, polled
    /// resources): `limit` names it, `flag` the setting that sizes the share.
    #[error(
        "too many {limit} for one client: each may hold at most {max} ({flag}); end one or try again later"
    )]
    ClientShare {
        /// What is limited, such as `sessions`.
        limit: &'static str,
        /// The share.
        max: usize,
        /// The command-line flag that sets it.
        flag: &'static str,
    },
    /// A declared rate limit or quota (`spec.limits`) refuses the request until `retry_after_ms`
    /// has passed.
    #[error("{message}")]
    RateLimited {
        /// The refusal in words.
        message: String,
        /// Which limit: `server`, `principal` or `tool`.
        scope: &'static str,
        /// When a retry can pass, in milliseconds.
        retry_after_ms: u64,
    },
    /// A session has its maximum of requests running.
    #[error("too many requests in flight: this session already runs {0}")]
    TooManyRequests(usize),
    /// A byte budget (the server's, or the session's) cannot hold this message now.
    #[error("server busy: {0}; retry shortly")]
    Overloaded(String),
    /// The server failed.
    #[error("internal error: {0}")]
    Internal(String),
}

impl McpError {
    /// The JSON-RPC error code, which for some errors depends on the era.
    pub fn code(&self, era: Era) -> i64 {
        match self {
            Self::Parse(_) => -32700,
            Self::InvalidRequest(_) => -32600,
            Self::MethodNotFound(_) => -32601,
            Self::InvalidParams(_) | Self::InvalidMeta(_) => -32602,
            Self::ResourceNotFound { .. } => match era {
                Era::Modern => -32602,
                Era::Legacy(_) => -32002,
            },
            Self::HeaderMismatch(_) => -32020,
            Self::MissingCapability(_) => -32021,
            Self::UnsupportedVersion { .. } => -32022,
            Self::TooManySessions(_)
            | Self::ClientShare { .. }
            | Self::RateLimited { .. }
            | Self::TooManyRequests(_)
            | Self::Overloaded(_) => -32000,
            Self::Internal(_) => -32603,
        }
    }

    /// The JSON-RPC `error` object.
    pub fn to_json(&self, era: Era) -> Value {
        let mut error = json!({"code": self.code(era), "message": self.to_string()});
        match self {
            Self::ResourceNotFound { uri } => error["data"] = json!({"uri": uri}),
            Self::MissingCapability(required) => {
                error["data"] = json!({"requiredCapabilities": required})
            }
            Self::UnsupportedVersion { requested } => {
                error["data"] = json!({"supported": SUPPORTED_VERSIONS, "requested": requested})
            }
            Self::ClientShare { limit, max, flag } => {
                error["data"] = json!({"limit": limit, "max": max, "flag": flag})
            }
            Self::RateLimited {
                scope,
                retry_after_ms,
                ..
            } => error["data"] = json!({"scope": scope, "retryAfterMs": retry_after_ms}),
            _ => {}
        }
        error
    }

    /// The HTTP status of a response carrying this error.
    pub fn http_status(&self, era: Era) -> u16 {
        match (self, era) {
            (Self::Parse(_) | Self::InvalidRequest(_), _) => 400,
            (Self::TooManySessions(_) | Self::Overloaded(_), _) => 503,
            // This client's own share is taken; others are still served.
            (Self::ClientShare { .. } | Self::RateLimited { .. }, _) => 429,
            (Self::MethodNotFound(_), Era::Modern) => 404,
            (Self::InvalidMeta(_) | Self::HeaderMismatch(_) | Self::MissingCapability(_), _) => 400,
            (Self::UnsupportedVersion { .. }, _) => 400,
            _ => 200,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LegacyVersion;

    #[test]
    fn resource_not_found_differs_by_era() {
        let err = McpError::ResourceNotFound {
            uri: "a://b".into(),
        };
        assert_eq!(
            err.to_json(Era::Modern),
            json!({"code": -32602, "message": "resource not found", "data": {"uri": "a://b"}})
        );
        assert_eq!(err.code(Era::Legacy(LegacyVersion::V2025_11_25)), -32002);
    }

    #[test]
    fn modern_unknown_methods_are_404() {
        let err = McpError::MethodNotFound("ping".into());
        assert_eq!(err.http_status(Era::Modern), 404);
        assert_eq!(
            err.http_status(Era::Legacy(LegacyVersion::V2025_11_25)),
            200
        );
    }

    #[test]
    fn a_client_share_refusal_names_its_limit() {
        let err = McpError::ClientShare {
            limit: "sessions",
            max: 3,
            flag: "--max-sessions-per-client",
        };
        assert_eq!(err.http_status(Era::Modern), 429);
        let json = err.to_json(Era::Modern);
        assert_eq!(json["code"], -32000);
        assert_eq!(json["data"]["limit"], "sessions");
        assert!(
            json["message"]
                .as_str()
                .unwrap()
                .contains("--max-sessions-per-client")
        );
    }

    #[test]
    fn unsupported_version_lists_what_is_served() {
        let err = McpError::UnsupportedVersion {
            requested: "1900-01-01".into(),
        };
        assert_eq!(
            err.to_json(Era::Modern)["data"]["supported"][0],
            "2026-07-28"
        );
        assert_eq!(err.http_status(Era::Modern), 400);
    }
}
