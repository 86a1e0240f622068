//! Why a request was refused, as the metric label, the HTTP status and the `error` of the
//! `WWW-Authenticate` challenge say it. Pure, no I/O.

use http::StatusCode;

/// A refused request.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// No bearer token.
    #[error("no bearer token")]
    Missing,
    /// Not a token this server accepts: not a JWT, an algorithm off the allow-list, too large,
    /// a token in the query string, a second Authorization header.
    #[error("malformed token: {0}")]
    Malformed(&'static str),
    /// The signature does not verify (tampered, or signed with another key).
    #[error("invalid signature")]
    InvalidSignature,
    /// The token names a key the issuer does not publish.
    #[error("unknown signing key")]
    UnknownKey,
    /// `exp` has passed.
    #[error("token expired")]
    Expired,
    /// `nbf` is in the future.
    #[error("token not yet valid")]
    NotYetValid,
    /// `iss` is not the configured issuer.
    #[error("wrong issuer")]
    WrongIssuer,
    /// `aud` names no accepted audience.
    #[error("wrong audience")]
    WrongAudience,
    /// An opaque token the introspection endpoint calls inactive.
    #[error("inactive token")]
    Inactive,
    /// The caller lacks scopes the operation needs (all of them are listed).
    #[error("insufficient scope")]
    InsufficientScope(Vec<String>),
    /// An `allow` condition refused the caller.
    #[error("forbidden")]
    Forbidden,
    /// A session opened by another principal.
    #[error("session belongs to another principal")]
    WrongPrincipal,
    /// The issuer's keys or introspection could not be reached: not the caller's fault.
    #[error("authorization server unavailable")]
    Unavailable,
}

impl Refusal {
    /// The `reason` label of `mcp_auth_failures_total`.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Missing => "missing",
            Self::Malformed(_) => "malformed",
            Self::InvalidSignature | Self::UnknownKey => "invalid_signature",
            Self::Expired | Self::NotYetValid => "expired",
            Self::WrongIssuer => "wrong_issuer",
            Self::WrongAudience => "wrong_audience",
            Self::Inactive => "inactive",
            Self::InsufficientScope(_) => "insufficient_scope",
            Self::Forbidden => "forbidden",
            Self::WrongPrincipal => "wrong_principal",
            Self::Unavailable => "unavailable",
        }
    }

    /// The HTTP status of the refusal.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::InsufficientScope(_) | Self::Forbidden | Self::WrongPrincipal => {
                StatusCode::FORBIDDEN
            }
            Self::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::UNAUTHORIZED,
        }
    }

    /// The challenge's `error` code (RFC 6750 section 3.1); none when no token was sent.
    pub fn error_code(&self) -> Option<&'static str> {
        match self {
            Self::Missing => None,
            Self::Malformed("a second Authorization header" | "token in the query string") => {
                Some("invalid_request")
            }
            Self::InsufficientScope(_) => Some("insufficient_scope"),
            Self::Forbidden | Self::WrongPrincipal => Some("insufficient_scope"),
            _ => Some("invalid_token"),
        }
    }
}
