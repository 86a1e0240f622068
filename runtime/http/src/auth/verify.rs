//! Token validation: a bearer token in, a [`Principal`] or a [`Refusal`] out. JWTs are checked
//! against the issuer's cached keys (algorithm allow-list, signature, exact issuer, RFC 8707
//! audience, `exp`/`nbf` with leeway, an access token's `typ`, no ID tokens); opaque tokens go to RFC 7662 introspection when it is
//! configured. Validated tokens are remembered until they expire (introspected ones at most the
//! introspection cache life, inactive ones refused unasked for a few seconds), so a client's
//! repeated calls cost a hash-map lookup, not a signature check or a request. I/O only through the key cache and
//! introspection.

use super::introspect::Introspector;
use super::keys::Keys;
use super::refusal::Refusal;
use super::rules::{Rules, audience_ok};
use dashmap::DashMap;
use jsonwebtoken::Validation;
use jsonwebtoken::errors::ErrorKind;
use mcp_server::Principal;
use serde_json::{Map, Value};
use std::sync::Arc;

/// Largest accepted token, in bytes (real access tokens are a few KiB at most).
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;
/// Most validated tokens remembered (at most [`MAX_TOKEN_BYTES`] each); the cache is emptied
/// when it fills.
const MAX_CACHED: usize = 4_096;
/// How long a token introspection called inactive is refused without asking again, seconds.
const INACTIVE_FOR: u64 = 10;

/// Validates tokens for one resource.
pub struct Verifier {
    rules: Rules,
    keys: Arc<Keys>,
    introspector: Option<Introspector>,
    /// Keyed by the token itself: a lookup compares it whole, so no other token can ever match
    /// an entry. Hashed with foldhash (seeded per process), a fifth of SipHash's cost over a
    /// JWT: only validated tokens are inserted, so no caller chooses keys to collide.
    validated: DashMap<Box<str>, Remembered, foldhash::fast::RandomState>,
    /// Opaque tokens introspection called inactive, until when they are refused unasked.
    inactive: DashMap<Box<str>, u64>,
}

struct Remembered {
    principal: Arc<Principal>,
    not_before: Option<u64>,
    /// Key-set generation the signature was checked against (0: introspected).
    generation: u64,
    /// Trusted until (Unix seconds): an introspected token is asked about again after it.
    until: u64,
}

/// Whether `claims` are an OpenID Connect ID token's: a `nonce` (which only a login's ID token
/// echoes) with an audience that names a client (its `azp`, or anything that is not a URL)
/// rather than a resource. An ID token says who logged in to a client; it grants nothing here.
fn is_id_token(claims: &Map<String, Value>) -> bool {
    if !claims.contains_key("nonce") {
        return false;
    }
    let azp = claims.get("azp").and_then(Value::as_str);
    let names_client = |aud: &str| {
        Some(aud) == azp || !(aud.starts_with("https://") || aud.starts_with("http://"))
    };
    match claims.get("aud") {
        Some(Value::String(aud)) => names_client(aud),
        Some(Value::Array(auds)) => auds.iter().filter_map(Value::as_str).any(names_client),
        _ => false,
    }
}

impl Verifier {
    /// A verifier applying `rules` with keys from `keys`.
    pub fn new(rules: Rules, keys: Arc<Keys>, introspector: Option<Introspector>) -> Self {
        Self {
            rules,
            keys,
            introspector,
            validated: DashMap::default(),
            inactive: DashMap::new(),
        }
    }

    /// The rules applied.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// Accepts tokens for `audience` too (canonical; a `spec.views` view's URL).
    pub(crate) fn accept_audience(&mut self, audience: String) {
        if !self.rules.audiences.contains(&audience) {
            self.rules.audiences.push(audience);
        }
    }

    /// Validates `token`.
    pub async fn verify(&self, token: &str) -> Result<Arc<Principal>, Refusal> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(Refusal::Malformed("token too large"));
        }
        let now = jsonwebtoken::get_current_timestamp();
        if let Some(hit) = self.validated.get(token) {
            let current = self.keys.current().generation;
            let trusted = if hit.generation == 0 {
                now < hit.until
            } else {
                hit.generation == current
            };
            if trusted {
                self.check_times(hit.principal.expires_at, hit.not_before, now)?;
                return Ok(hit.principal.clone());
            }
        }
        // Only now: a token validated before is known well-formed.
        super::challenge::well_formed(token)?;
        let mut until = u64::MAX;
        let (principal, not_before, generation) =
            if token.bytes().filter(|b| *b == b'.').count() == 2 {
                self.verify_jwt(token).await?
            } else if let Some(introspector) = &self.introspector {
                if self.inactive.get(token).is_some_and(|until| now < *until) {
                    return Err(Refusal::Inactive);
                }
                let principal = match introspector.introspect(token, &self.rules).await {
                    Ok(principal) => principal,
                    Err(Refusal::Inactive) => {
                        if self.inactive.len() >= MAX_CACHED {
                            self.inactive.clear();
                        }
                        self.inactive.insert(token.into(), now + INACTIVE_FOR);
                        return Err(Refusal::Inactive);
                    }
                    Err(refusal) => return Err(refusal),
                };
                until = now.saturating_add(introspector.ttl().as_secs());
                (principal, None, 0)
            } else {
                return Err(Refusal::Malformed("not a JWT"));
            };
        self.check_times(principal.expires_at, not_before, now)?;
        let principal = Arc::new(principal.with_token(token));
        if self.validated.len() >= MAX_CACHED {
            self.validated.clear();
        }
        self.validated.insert(
            token.into(),
            Remembered {
                principal: principal.clone(),
                not_before,
                generation,
                until,
            },
        );
        Ok(principal)
    }

    fn check_times(&self, exp: u64, nbf: Option<u64>, now: u64) -> Result<(), Refusal> {
        if exp.saturating_add(self.rules.leeway) <= now {
            return Err(Refusal::Expired);
        }
        if nbf.is_some_and(|nbf| nbf > now.saturating_add(self.rules.leeway)) {
            return Err(Refusal::NotYetValid);
        }
        Ok(())
    }

    async fn verify_jwt(&self, token: &str) -> Result<(Principal, Option<u64>, u64), Refusal> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| Refusal::Malformed("not a JWT with a supported algorithm"))?;
        if !self.rules.algorithms.contains(&header.alg) {
            return Err(Refusal::Malformed("algorithm not accepted"));
        }
        // RFC 9068 access tokens say `at+jwt`; many issuers say `JWT`. Any other type (an ID
        // token, a logout or DPoP proof, a security event) is not a credential for this API.
        if let Some(typ) = header.typ.as_deref()
            && !["at+jwt", "application/at+jwt", "jwt"]
                .iter()
                .any(|access| typ.eq_ignore_ascii_case(access))
        {
            return Err(Refusal::Malformed("not an access token"));
        }
        let key = self
            .keys
            .find(header.kid.as_deref(), header.alg)
            .await
            .map_err(|err| {
                tracing::warn!(error = %err, "cannot validate tokens");
                Refusal::Unavailable
            })?
            .ok_or(Refusal::UnknownKey)?;
        let generation = self.keys.current().generation;
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.set_issuer(&[&self.rules.issuer]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        // Audiences are compared canonically below; the crate compares exact strings.
        validation.validate_aud = false;
        validation.validate_nbf = true;
        validation.leeway = self.rules.leeway;
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation)
            .map_err(|err| match err.kind() {
                ErrorKind::InvalidSignature => Refusal::InvalidSignature,
                ErrorKind::ExpiredSignature => Refusal::Expired,
                ErrorKind::ImmatureSignature => Refusal::NotYetValid,
                ErrorKind::InvalidIssuer => Refusal::WrongIssuer,
                ErrorKind::MissingRequiredClaim(claim) if claim == "iss" => Refusal::WrongIssuer,
                ErrorKind::MissingRequiredClaim(claim) if claim == "aud" => Refusal::WrongAudience,
                ErrorKind::MissingRequiredClaim(_) => {
                    Refusal::Malformed("a required claim is missing")
                }
                _ => Refusal::Malformed("claims are not valid"),
            })?;
        let claims = data.claims;
        if !audience_ok(&self.rules.audiences, claims.get("aud")) {
            return Err(Refusal::WrongAudience);
        }
        if is_id_token(&claims) {
            return Err(Refusal::Malformed("an ID token, not an access token"));
        }
        let exp = claims
            .get("exp")
            .and_then(Value::as_u64)
            .ok_or(Refusal::Malformed("exp is not a number"))?;
        let nbf = claims.get("nbf").and_then(Value::as_u64);
        Ok((Principal::from_claims(claims, exp), nbf, generation))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::KeySettings;
    use axum::Router;
    use axum::routing::post;
    use mcp_declaration::Secret;
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    const RESOURCE: &str = "http://127.0.0.1:8080/mcp";

    /// An introspection endpoint on 127.0.0.1 that calls `good` active (for a long while) and
    /// every other token inactive, counting the requests it gets.
    async fn endpoint(calls: Arc<AtomicUsize>) -> url::Url {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let app = Router::new().route(
            "/introspect",
            post(move |body: String| {
                let calls = calls.clone();
                async move {
                    calls.fetch_add(1, Ordering::SeqCst);
                    let active = body.contains("token=good&");
                    axum::Json(json!({"active": active, "aud": RESOURCE, "sub": "u",
                        "exp": jsonwebtoken::get_current_timestamp() + 3600}))
                }
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        format!("http://{address}/introspect").parse().unwrap()
    }

    async fn verifier(ttl: Duration, rate: u32, calls: Arc<AtomicUsize>) -> Verifier {
        let issuer = "http://127.0.0.1:1".to_owned();
        let client = crate::auth::fetch::client();
        let introspector = Introspector::new(
            client.clone(),
            issuer.clone(),
            Some(endpoint(calls).await),
            "mcp".into(),
            Secret::new("s3cret".into()),
        )
        .with_limits(ttl, rate);
        let rules = Rules {
            issuer: issuer.clone(),
            audiences: vec![RESOURCE.into()],
            algorithms: vec![],
            leeway: 0,
        };
        let keys = Keys::new(client, issuer, None, KeySettings::default());
        Verifier::new(rules, keys, Some(introspector))
    }

    #[tokio::test]
    async fn an_active_answer_is_trusted_only_for_the_cache_life() {
        let calls = Arc::new(AtomicUsize::new(0));
        let verifier = verifier(Duration::from_secs(1), 100, calls.clone()).await;
        assert!(verifier.verify("good").await.is_ok());
        assert!(verifier.verify("good").await.is_ok());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        // Before, it was trusted until its `exp`, an hour on: revocation went unnoticed.
        tokio::time::sleep(Duration::from_millis(2100)).await;
        assert!(verifier.verify("good").await.is_ok());
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_token_that_is_not_a_b64token_is_refused_unasked() {
        let calls = Arc::new(AtomicUsize::new(0));
        let verifier = verifier(Duration::from_secs(60), 100, calls.clone()).await;
        for token in ["a b", "a\"b", "", "é"] {
            assert_eq!(
                verifier.verify(token).await,
                Err(Refusal::Malformed("not a bearer token")),
                "{token}"
            );
        }
        assert_eq!(calls.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn inactive_answers_are_remembered_and_requests_are_rate_limited() {
        let calls = Arc::new(AtomicUsize::new(0));
        let verifier = verifier(Duration::from_secs(60), 3, calls.clone()).await;
        assert_eq!(verifier.verify("nope").await, Err(Refusal::Inactive));
        assert_eq!(verifier.verify("nope").await, Err(Refusal::Inactive));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        // Random tokens: at most three requests a second reach the server.
        let mut refused = 0;
        for n in 0..6 {
            if verifier.verify(&format!("random-{n}")).await == Err(Refusal::Unavailable) {
                refused += 1;
            }
        }
        assert!(calls.load(Ordering::SeqCst) <= 3, "{calls:?}");
        assert!(refused >= 3, "{refused}");
    }
}
