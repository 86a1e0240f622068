//! Obtaining the token an `http.auth` backend sends: token exchange (RFC 8693, the caller's
//! validated token as the subject token), client credentials (RFC 6749 section 4.4) or a JWT
//! bearer grant (RFC 7523 section 2.1, an assertion the runtime signs), the client (if any)
//! authenticated by secret (`client_secret_basic`), by a signed assertion (`private_key_jwt`,
//! RFC 7523 section 2.2) or by the pod's projected ServiceAccount token as the assertion (read
//! for each request: `token/projected.rs`), optionally with the runtime's own token as the
//! actor token (delegation: the issued token's `act`). Tokens are cached (`token/cache.rs`). The token
//! request is bounded by the call's deadline and a response size cap. A refusal becomes a
//! [`TokenError`] whose text the model can read: the server's error code explained and its
//! description, never a token or secret. Network I/O to the token endpoint.

mod act;
mod cache;
mod error;
mod projected;
mod signer;

pub(crate) use cache::TokenCache;
pub(crate) use error::TokenError;
pub(crate) use signer::{Signer, SignerError};

use crate::metrics::Metrics;
use crate::principal::SubjectToken;
use cache::{Issued, Source};
use mcp_declaration::{ClientAuth, CompiledAuth, Grant, Secret};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde::Deserialize;
use std::time::Duration;
use tokio::time::Instant;

/// Largest token response read.
const MAX_TOKEN_RESPONSE_BYTES: usize = 64 << 10;

/// Longest a token request may take, within the call's own deadline.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(10);

const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
const JWT_BEARER_ASSERTION: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// The token for one call of a backend with `auth`, from the cache or the server; counted in
/// `mcp_token_exchanges_total` by outcome.
pub(super) async fn token_for(
    auth: &CompiledAuth,
    live: Live<'_>,
    tokens: &TokenCache,
    metrics: &Metrics,
    subject: Option<&SubjectToken>,
    deadline: Instant,
) -> Result<Secret, TokenError> {
    let subject = match auth.grant {
        Grant::TokenExchange => match subject {
            Some(subject) => Some(subject),
            None => {
                metrics.token_exchange("error");
                crate::telemetry::record_token("error", auth.audience.as_deref(), &[]);
                return Err(TokenError::NoSubject);
            }
        },
        Grant::ClientCredentials | Grant::JwtBearer => None,
    };
    let key = TokenCache::key(auth.cache_key.clone(), subject);
    let deadline = deadline.min(Instant::now() + TOKEN_TIMEOUT);
    let obtained = tokens
        .get_or_obtain(key, || async {
            let exchange = async {
                // The actor's own token (client credentials), cached like the others; asked
                // for only when the exchange itself is.
                let actor = match &auth.actor {
                    Some(actor) => {
                        let key = TokenCache::key(actor.cache_key.clone(), None);
                        let obtained = tokens
                            .get_or_obtain(key, || {
                                let signers = (live.actor_signer, None);
                                request(actor, live.client, signers, None, None)
                            })
                            .await?;
                        Some(obtained.0.token)
                    }
                    None => None,
                };
                let signers = (live.signer, live.assertion_signer);
                request(auth, live.client, signers, subject, actor.as_ref()).await
            };
            match tokio::time::timeout_at(deadline, exchange).await {
                Ok(result) => result,
                Err(_) => Err(TokenError::Timeout),
            }
        })
        .await;
    let audience = auth.audience.as_deref().or(auth.resource.as_deref());
    match obtained {
        Ok((issued, source)) => {
            let outcome = match source {
                Source::Cached => "cached",
                Source::Obtained => "ok",
            };
            metrics.token_exchange(outcome);
            crate::telemetry::record_token(outcome, audience, &issued.act);
            Ok(issued.token)
        }
        Err(err) => {
            metrics.token_exchange(err.outcome());
            crate::telemetry::record_token(err.outcome(), audience, &[]);
            tracing::debug!(
                token_url = %auth.token_url,
                error = %err,
                "token request failed"
            );
            Err(err)
        }
    }
}

/// What a backend's token requests use: its HTTP client and its signers of client assertions
/// (its own client's, and the actor's).
#[derive(Clone, Copy)]
pub(super) struct Live<'a> {
    /// The backend's HTTP client (its CAs, redirect policy and resolver).
    pub(super) client: &'a reqwest::Client,
    /// Signs the client's assertions (`privateKeyJwt`).
    pub(super) signer: Option<&'a Signer>,
    /// Signs the actor client's assertions.
    pub(super) actor_signer: Option<&'a Signer>,
    /// Signs the JWT bearer grant's assertions.
    pub(super) assertion_signer: Option<&'a Signer>,
}

/// The fields of a token response this runtime reads (RFC 6749 section 5.1).
#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    expires_in: Option<serde_json::Value>,
}

/// The signers of one token request: the client's assertion, the grant's assertion.
type Signers<'a> = (Option<&'a Signer>, Option<&'a Signer>);

/// One token request.
async fn request(
    auth: &CompiledAuth,
    client: &reqwest::Client,
    signers: Signers<'_>,
    subject: Option<&SubjectToken>,
    actor: Option<&Secret>,
) -> Result<Issued, TokenError> {
    // The projected token is read again for each request: the kubelet rotates it.
    let projected = match &auth.client_auth {
        ClientAuth::ServiceAccountToken { path, .. } => Some(projected::read(path).await?),
        _ => None,
    };
    // The form is built in a function of its own: its serializer may not live across an await.
    let (body, authorization) = form(auth, signers, projected.as_ref(), subject, actor)?;
    let mut request = client
        .post(auth.token_url.clone())
        .header(ACCEPT, "application/json")
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded");
    if let Some(authorization) = authorization {
        request = request.header(AUTHORIZATION, authorization);
    }
    let response = request
        .body(body)
        .send()
        .await
        .map_err(|err| TokenError::Transport(err.without_url().to_string()))?;
    let status = response.status();
    let body = read_capped(response).await?;
    if !status.is_success() {
        return Err(TokenError::refused(
            status.as_u16(),
            &body,
            auth,
            subject,
            projected.as_ref(),
        ));
    }
    let parsed: TokenResponse =
        serde_json::from_slice(&body).map_err(|_| TokenError::Malformed("no access_token"))?;
    if parsed.access_token.is_empty() || HeaderValue::from_str(&parsed.access_token).is_err() {
        return Err(TokenError::Malformed(
            "the access_token is not a valid header value",
        ));
    }
    // A number, or (some servers) a numeric string.
    let expires_in = parsed.expires_in.and_then(|v| match v {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(s) => s.parse().ok(),
        _ => None,
    });
    Ok(Issued::new(
        parsed.access_token,
        expires_in.filter(|s| *s > 0).map(Duration::from_secs),
    ))
}

/// The token request's form, and its `Authorization` header for a client secret; `projected`
/// is the ServiceAccount token of a `serviceAccountToken` client.
fn form(
    auth: &CompiledAuth,
    (signer, assertion_signer): Signers<'_>,
    projected: Option<&Secret>,
    subject: Option<&SubjectToken>,
    actor: Option<&Secret>,
) -> Result<(String, Option<HeaderValue>), TokenError> {
    let mut form = form_urlencoded::Serializer::new(String::new());
    match auth.grant {
        Grant::TokenExchange => {
            form.append_pair("grant_type", TOKEN_EXCHANGE);
            if let Some(subject) = subject {
                form.append_pair("subject_token", subject.expose());
            }
            form.append_pair("subject_token_type", ACCESS_TOKEN_TYPE);
            form.append_pair("requested_token_type", ACCESS_TOKEN_TYPE);
            if let Some(actor) = actor {
                form.append_pair("actor_token", actor.expose());
                form.append_pair("actor_token_type", ACCESS_TOKEN_TYPE);
            }
        }
        Grant::ClientCredentials => {
            form.append_pair("grant_type", "client_credentials");
        }
        Grant::JwtBearer => {
            let claims = auth.assertion.as_ref().ok_or(TokenError::Signing)?;
            let signer = assertion_signer.ok_or(TokenError::Signing)?;
            form.append_pair("grant_type", JWT_BEARER_GRANT);
            form.append_pair("assertion", &signer.sign(&claims.issuer, &claims.subject)?);
        }
    }
    for (name, value) in [
        ("audience", &auth.audience),
        ("resource", &auth.resource),
        ("scope", &auth.scope),
    ] {
        if let Some(value) = value {
            form.append_pair(name, value);
        }
    }
    let authorization = match &auth.client_auth {
        ClientAuth::Secret(secret) => Some(basic(&auth.client_id, secret)?),
        ClientAuth::PrivateKeyJwt { .. } => {
            let signer = signer.ok_or(TokenError::Signing)?;
            let assertion = signer.assertion(&auth.client_id)?;
            form.append_pair("client_id", &auth.client_id);
            form.append_pair("client_assertion_type", JWT_BEARER_ASSERTION);
            form.append_pair("client_assertion", &assertion);
            None
        }
        ClientAuth::None => None,
        ClientAuth::ServiceAccountToken { .. } => {
            let token = projected.ok_or(TokenError::Signing)?;
            form.append_pair("client_id", &auth.client_id);
            form.append_pair("client_assertion_type", JWT_BEARER_ASSERTION);
            form.append_pair("client_assertion", token.expose());
            None
        }
    };
    Ok((form.finish(), authorization))
}

/// `client_secret_basic`: id and secret form-encoded, then Basic (RFC 6749 section 2.3.1).
fn basic(id: &str, secret: &Secret) -> Result<HeaderValue, TokenError> {
    use base64::Engine as _;
    let encode = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let pair = format!("{}:{}", encode(id), encode(secret.expose()));
    let mut value = HeaderValue::from_str(&format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    ))
    .map_err(|_| TokenError::Malformed("the client id makes no valid header"))?;
    value.set_sensitive(true);
    Ok(value)
}

/// The response body, at most [`MAX_TOKEN_RESPONSE_BYTES`].
async fn read_capped(mut response: reqwest::Response) -> Result<Vec<u8>, TokenError> {
    if response
        .content_length()
        .is_some_and(|len| len > MAX_TOKEN_RESPONSE_BYTES as u64)
    {
        return Err(TokenError::Malformed("the response is too large"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|err| TokenError::Transport(err.without_url().to_string()))?
    {
        if body.len() + chunk.len() > MAX_TOKEN_RESPONSE_BYTES {
            return Err(TokenError::Malformed("the response is too large"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_account_token_is_the_client_assertion() {
        let auth = CompiledAuth {
            grant: Grant::ClientCredentials,
            token_url: "https://idp.example.com/token".parse().unwrap(),
            client_id: "kube-mcp".into(),
            client_auth: ClientAuth::ServiceAccountToken {
                audience: "https://idp.example.com".into(),
                path: "/var/run/kube-mcp/tokens/aud-x/token".into(),
            },
            audience: None,
            resource: None,
            scope: Some("read".into()),
            header: http::header::AUTHORIZATION,
            prefix: "Bearer ".into(),
            cache_key: "".into(),
            actor: None,
            assertion: None,
        };
        let projected = Secret::new("eyJhbGciOiJSUzI1NiJ9.e30.c2ln".into());
        let (body, authorization) =
            form(&auth, (None, None), Some(&projected), None, None).unwrap();
        assert!(authorization.is_none());
        let pairs: Vec<(String, String)> = form_urlencoded::parse(body.as_bytes())
            .into_owned()
            .collect();
        let get = |name: &str| {
            pairs
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("grant_type"), Some("client_credentials"));
        assert_eq!(get("client_id"), Some("kube-mcp"));
        assert_eq!(get("client_assertion_type"), Some(JWT_BEARER_ASSERTION));
        assert_eq!(
            get("client_assertion"),
            Some("eyJhbGciOiJSUzI1NiJ9.e30.c2ln")
        );
        assert_eq!(get("scope"), Some("read"));
        // Without the token read, no request is made.
        assert!(form(&auth, (None, None), None, None, None).is_err());
    }
}
