//! RFC 7662 introspection of opaque tokens: the runtime asks the authorization server whether
//! a token is active, authenticating as its own client (HTTP Basic). An active answer must still
//! name the configured issuer (when it names one) and an accepted audience. Requests are
//! limited per second (random tokens must not turn into a flood of requests to the server), and
//! an answer is trusted for a bounded time (the verifier asks again after it). Does I/O.

use super::discovery::discover;
use super::fetch;
use super::refusal::Refusal;
use super::rules::{Rules, audience_ok};
use base64::Engine;
use mcp_declaration::Secret;
use mcp_declaration::trusted_url;
use mcp_server::Principal;
use serde_json::{Map, Value};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;
use url::Url;

/// How long an active answer without `exp` is trusted, in seconds.
const WITHOUT_EXP_SECONDS: u64 = 60;

/// The introspection client.
pub struct Introspector {
    client: reqwest::Client,
    issuer: String,
    endpoint: tokio::sync::Mutex<Option<Url>>,
    client_id: String,
    client_secret: Secret,
    /// Longest an active answer is trusted.
    ttl: Duration,
    /// Most requests per second.
    rate: u32,
    /// Requests in the current second: (Unix second, count).
    window: Mutex<(u64, u32)>,
}

impl Introspector {
    /// A client of `endpoint` (discovered from `issuer` when `None`).
    pub fn new(
        client: reqwest::Client,
        issuer: String,
        endpoint: Option<Url>,
        client_id: String,
        client_secret: Secret,
    ) -> Self {
        Self {
            client,
            issuer,
            endpoint: tokio::sync::Mutex::new(endpoint),
            client_id,
            client_secret,
            ttl: Duration::from_secs(60),
            rate: 20,
            window: Mutex::new((0, 0)),
        }
    }

    /// The same client, trusting an active answer at most `ttl` and asking at most `rate`
    /// times a second.
    #[must_use]
    pub fn with_limits(mut self, ttl: Duration, rate: u32) -> Self {
        self.ttl = ttl;
        self.rate = rate;
        self
    }

    /// Longest an active answer is trusted.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Takes one of this second's requests; `false` when they are used up.
    fn admit(&self) -> bool {
        let now = jsonwebtoken::get_current_timestamp();
        let mut window = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        if window.0 != now {
            *window = (now, 0);
        }
        if window.1 >= self.rate {
            return false;
        }
        window.1 += 1;
        true
    }

    async fn endpoint(&self) -> Result<Url, Refusal> {
        let mut endpoint = self.endpoint.lock().await;
        if let Some(url) = endpoint.as_ref() {
            return Ok(url.clone());
        }
        let metadata = discover(&self.client, &self.issuer).await.map_err(|err| {
            tracing::warn!(error = %err, "cannot introspect tokens");
            Refusal::Unavailable
        })?;
        let url = metadata.introspection_endpoint.ok_or_else(|| {
            tracing::warn!(issuer = %self.issuer, "the issuer's metadata names no introspection_endpoint");
            Refusal::Unavailable
        })?;
        *endpoint = Some(url.clone());
        Ok(url)
    }

    /// Asks whether `token` is active; an active token becomes a principal.
    pub async fn introspect(&self, token: &str, rules: &Rules) -> Result<Principal, Refusal> {
        if !self.admit() {
            tracing::warn!(
                rate = self.rate,
                "refused an unknown token: introspection requests per second used up"
            );
            return Err(Refusal::Unavailable);
        }
        let url = self.endpoint().await?;
        let body = form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", "access_token")
            .finish();
        let credentials = base64::engine::general_purpose::STANDARD.encode(format!(
            "{}:{}",
            form_urlencoded::byte_serialize(self.client_id.as_bytes()).collect::<String>(),
            form_urlencoded::byte_serialize(self.client_secret.expose().as_bytes())
                .collect::<String>()
        ));
        let request = self
            .client
            .post(url.clone())
            .header(http::header::AUTHORIZATION, format!("Basic {credentials}"))
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(http::header::ACCEPT, "application/json")
            .body(body);
        let answer = fetch::read_json(&url, request).await.map_err(|err| {
            tracing::warn!(error = %err, "token introspection failed");
            Refusal::Unavailable
        })?;
        judge(answer, rules, jsonwebtoken::get_current_timestamp())
    }
}

/// The verdict on an introspection answer.
fn judge(answer: Value, rules: &Rules, now: u64) -> Result<Principal, Refusal> {
    let Value::Object(claims) = answer else {
        return Err(Refusal::Unavailable);
    };
    if claims.get("active") != Some(&Value::Bool(true)) {
        return Err(Refusal::Inactive);
    }
    match claims.get("iss") {
        None => {}
        Some(Value::String(iss)) if *iss == rules.issuer => {}
        Some(_) => return Err(Refusal::WrongIssuer),
    }
    if !audience_ok(&rules.audiences, claims.get("aud")) {
        return Err(Refusal::WrongAudience);
    }
    let exp = claims
        .get("exp")
        .and_then(Value::as_u64)
        .unwrap_or(now + WITHOUT_EXP_SECONDS);
    let mut claims: Map<String, Value> = claims;
    claims
        .entry("iss")
        .or_insert_with(|| Value::String(rules.issuer.clone()));
    Ok(Principal::from_claims(claims, exp))
}

/// Checks a configured introspection endpoint.
pub(super) fn endpoint_url(text: &str) -> Result<Url, String> {
    trusted_url(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules() -> Rules {
        Rules {
            issuer: "https://idp.example.com".into(),
            audiences: vec!["https://mcp.example.com/mcp".into()],
            algorithms: vec![],
            leeway: 0,
        }
    }

    #[test]
    fn active_answers_for_this_resource_only() {
        let ok = json!({"active": true, "aud": "https://mcp.example.com/mcp", "sub": "u", "scope": "a b", "exp": 2000});
        let principal = judge(ok, &rules(), 1000).unwrap();
        assert_eq!(principal.issuer, "https://idp.example.com");
        assert_eq!(principal.scopes, ["a", "b"]);
        assert_eq!(principal.expires_at, 2000);
        for (answer, refusal) in [
            (json!({"active": false}), Refusal::Inactive),
            (
                json!({"active": "true", "aud": "https://mcp.example.com/mcp"}),
                Refusal::Inactive,
            ),
            (
                json!({"active": true, "aud": "https://other/mcp"}),
                Refusal::WrongAudience,
            ),
            (json!({"active": true}), Refusal::WrongAudience),
            (
                json!({"active": true, "aud": "https://mcp.example.com/mcp", "iss": "https://evil"}),
                Refusal::WrongIssuer,
            ),
        ] {
            assert_eq!(
                judge(answer.clone(), &rules(), 1000).unwrap_err(),
                refusal,
                "{answer}"
            );
        }
    }
}
