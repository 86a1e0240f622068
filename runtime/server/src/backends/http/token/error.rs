//! Why no token was obtained, as text the model can read: the authorization server's error
//! code (RFC 6749 section 5.2, RFC 8693 section 2.2.2) explained, and its description, scrubbed
//! of the tokens and secrets the request carried and bounded. Never a token. Pure.

use super::super::redact;
use crate::principal::SubjectToken;
use mcp_declaration::{ClientAuth, CompiledAuth, Grant, Secret};
use serde::Deserialize;

/// Longest server description quoted.
const MAX_DESCRIPTION_CHARS: usize = 300;

/// Why no token was obtained.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TokenError {
    /// Token exchange without a caller's token (a request another replica forwarded).
    #[error(
        "this tool calls its upstream as the caller, but the request carries no token to exchange (a request relayed by another replica carries none): call again, without a legacy session, or sign in again"
    )]
    NoSubject,
    /// The server answered with an error.
    #[error("{}", refused_text(*.grant, *.status, .code.as_deref(), .description.as_deref()))]
    Refused {
        /// Which grant was asked for.
        grant: Grant,
        /// HTTP status.
        status: u16,
        /// The `error` code.
        code: Option<String>,
        /// The `error_description`, scrubbed and bounded.
        description: Option<String>,
    },
    /// The server did not answer in time.
    #[error("the authorization server did not answer the token request in time")]
    Timeout,
    /// Connection or protocol failure.
    #[error("cannot reach the authorization server: {0}")]
    Transport(String),
    /// The answer was not a usable token response.
    #[error("the authorization server's token response is unusable: {0}")]
    Malformed(&'static str),
    /// The client assertion or the grant's assertion could not be signed.
    #[error("cannot sign the assertion for the token request")]
    Signing,
    /// The projected ServiceAccount token (the client assertion) could not be read.
    #[error("the ServiceAccount token file {path} {problem}")]
    ServiceAccountToken {
        /// The file.
        path: String,
        /// What is wrong with it (never its contents).
        problem: &'static str,
    },
}

/// The error body of RFC 6749 section 5.2.
#[derive(Deserialize)]
struct ErrorBody {
    error: Option<String>,
    error_description: Option<String>,
}

impl TokenError {
    /// The refusal in `body` (status `status`) of a request for `auth` that carried `subject`
    /// (and `projected`, a ServiceAccount token as the client assertion).
    pub(crate) fn refused(
        status: u16,
        body: &[u8],
        auth: &CompiledAuth,
        subject: Option<&SubjectToken>,
        projected: Option<&Secret>,
    ) -> Self {
        let parsed = serde_json::from_slice::<ErrorBody>(body).ok();
        let (code, description) = match parsed {
            Some(ErrorBody {
                error,
                error_description,
            }) => (error, error_description),
            None => (None, Some(String::from_utf8_lossy(body).into_owned())),
        };
        let mut sent: Vec<Secret> = Vec::new();
        if let Some(subject) = subject {
            sent.push(Secret::new(subject.expose().to_owned()));
        }
        if let ClientAuth::Secret(secret) = &auth.client_auth {
            sent.push(secret.clone());
        }
        sent.extend(projected.cloned());
        let clean = |text: String| -> Option<String> {
            let text: String = text
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            let text = redact::text(text.trim(), &sent);
            let mut chars = text.chars();
            let mut short: String = chars.by_ref().take(MAX_DESCRIPTION_CHARS).collect();
            if chars.next().is_some() {
                short.push('…');
            }
            (!short.is_empty()).then_some(short)
        };
        Self::Refused {
            grant: auth.grant,
            status,
            // A code is a short ASCII word; anything else is not one.
            code: code
                .filter(|c| c.len() <= 64 && c.bytes().all(|b| b.is_ascii_graphic()))
                .and_then(clean),
            description: description.and_then(clean),
        }
    }

    /// The `outcome` label of `mcp_token_exchanges_total`.
    pub(crate) fn outcome(&self) -> &'static str {
        match self {
            Self::Refused { .. } => "refused",
            _ => "error",
        }
    }
}

fn refused_text(
    grant: Grant,
    status: u16,
    code: Option<&str>,
    description: Option<&str>,
) -> String {
    let what = match grant {
        Grant::TokenExchange => "the token exchange for the caller",
        Grant::ClientCredentials => "the token request (client credentials)",
        Grant::JwtBearer => "the token request (JWT bearer assertion)",
    };
    let mut text = format!(
        "the authorization server refused {what} ({status} {})",
        code.unwrap_or("without an error code")
    );
    if let Some(meaning) = code.and_then(|code| meaning(grant, code)) {
        text.push_str(": ");
        text.push_str(meaning);
    }
    if let Some(description) = description {
        text.push_str(&format!("; it said: \"{description}\""));
    }
    text
}

/// What a standard error code means here, and what may help.
fn meaning(grant: Grant, code: &str) -> Option<&'static str> {
    Some(match (code, grant) {
        ("invalid_grant", Grant::TokenExchange) => {
            "the caller's token was not accepted for exchange (expired, revoked, or this user may not use this upstream); signing in again may help, retrying as is will not"
        }
        ("invalid_grant", Grant::ClientCredentials) => "the grant was refused",
        ("invalid_grant" | "invalid_request", Grant::JwtBearer) => {
            "the server did not accept the signed assertion (its issuer, subject, audience, key id or signature, or the key is not registered there); the server's operator must fix http.auth.jwtBearer.assertion or register its key, retrying as is will not help"
        }
        ("invalid_request", Grant::TokenExchange) => {
            "the request was refused as invalid, often because the caller's token is not one this server can exchange"
        }
        ("invalid_request", Grant::ClientCredentials) => "the request was refused as invalid",
        ("invalid_client", _) => {
            "the server did not accept this tool's client credentials; the server's operator must fix the client in http.auth"
        }
        ("unauthorized_client", _) => "this tool's client may not use this grant",
        ("unsupported_grant_type", _) => "the server does not support this grant",
        ("invalid_scope", _) => "the scope asked for is not allowed",
        ("invalid_target", _) => {
            "the server will not issue a token for this upstream (audience or resource)"
        }
        ("server_error" | "temporarily_unavailable", _) => {
            "the authorization server failed or refused by its own policy; retrying later may help"
        }
        ("access_denied", _) => "access was denied",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(grant: Grant) -> CompiledAuth {
        CompiledAuth {
            grant,
            token_url: "https://idp.example.com/token".parse().unwrap(),
            client_id: "kube-mcp".into(),
            client_auth: ClientAuth::Secret(Secret::new("client-secret-value".into())),
            audience: None,
            resource: None,
            scope: None,
            header: http::header::AUTHORIZATION,
            prefix: "Bearer ".into(),
            cache_key: "".into(),
            actor: None,
            assertion: None,
        }
    }

    #[test]
    fn a_refusal_is_explained_and_quotes_the_server_without_secrets() {
        let subject = SubjectToken::new("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl");
        let body = br#"{"error":"invalid_grant","error_description":"subject_token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl expired; client-secret-value"}"#;
        let err = TokenError::refused(400, body, &auth(Grant::TokenExchange), Some(&subject), None);
        let text = err.to_string();
        assert!(
            text.starts_with("the authorization server refused the token exchange for the caller (400 invalid_grant): the caller's token was not accepted"),
            "{text}"
        );
        assert!(
            text.contains("it said: \"subject_token [redacted] expired; [redacted]\""),
            "{text}"
        );
        assert!(
            !text.contains("c2lnbmF0dXJl") && !text.contains("client-secret"),
            "{text}"
        );
        assert_eq!(err.outcome(), "refused");
    }

    #[test]
    fn a_refused_assertion_points_at_the_declaration() {
        let err = TokenError::refused(
            400,
            br#"{"error":"invalid_request","error_description":"assertion invalid"}"#,
            &auth(Grant::JwtBearer),
            None,
            None,
        );
        assert_eq!(
            err.to_string(),
            "the authorization server refused the token request (JWT bearer assertion) (400 invalid_request): the server did not accept the signed assertion (its issuer, subject, audience, key id or signature, or the key is not registered there); the server's operator must fix http.auth.jwtBearer.assertion or register its key, retrying as is will not help; it said: \"assertion invalid\""
        );
    }

    #[test]
    fn odd_answers_stay_bounded_and_readable() {
        let long = format!("<html>{}</html>", "x".repeat(5_000));
        let err = TokenError::refused(
            502,
            long.as_bytes(),
            &auth(Grant::ClientCredentials),
            None,
            None,
        );
        let text = err.to_string();
        assert!(text.starts_with("the authorization server refused the token request (client credentials) (502 without an error code); it said: \"<html>xxx"), "{text}");
        assert!(text.len() < 600, "{}", text.len());
        let err = TokenError::refused(
            500,
            br#"{"error":"server_error","error_description":"line\nbreak"}"#,
            &auth(Grant::TokenExchange),
            None,
            None,
        );
        assert!(
            err.to_string()
                .contains("retrying later may help; it said: \"line break\""),
            "{err}"
        );
        let err = TokenError::refused(
            400,
            br#"{"error":"weird\u0000code"}"#,
            &auth(Grant::TokenExchange),
            None,
            None,
        );
        assert!(
            err.to_string().contains("(400 without an error code)"),
            "{err}"
        );
        assert_eq!(TokenError::Timeout.outcome(), "error");
    }

    #[test]
    fn a_projected_token_sent_as_the_assertion_is_never_quoted() {
        let projected = Secret::new("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2E".into());
        let body = br#"{"error":"invalid_client","error_description":"assertion eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2E: bad issuer"}"#;
        let err = TokenError::refused(
            401,
            body,
            &auth(Grant::ClientCredentials),
            None,
            Some(&projected),
        );
        let text = err.to_string();
        assert!(text.contains("assertion [redacted]: bad issuer"), "{text}");
        assert!(!text.contains("eyJzdWIiOiJzeXN0ZW0ifQ"), "{text}");
    }
}
