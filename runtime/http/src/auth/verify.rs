//! Token validation: a bearer token in, a [`Principal`] or a [`Refusal`] out. JWTs are checked
//! against the issuer's cached keys (algorithm allow-list, signature, exact issuer, RFC 8707
//! audience, `exp`/`nbf` with leeway, an access token's `typ`, no ID tokens); opaque tokens go to RFC 7662 introspection when it is
//! configured. Validated tokens are remembered until they expire, so a client's repeated calls
//! cost a hash-map lookup, not a signature check. I/O only through the key cache and
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

/// Validates tokens for one resource.
pub struct Verifier {
    rules: Rules,
    keys: Arc<Keys>,
    introspector: Option<Introspector>,
    /// Keyed by the token itself: a lookup hashes it with the map's keyed SipHash and compares
    /// it whole, so no other token can ever match an entry.
    validated: DashMap<Box<str>, Remembered>,
}

struct Remembered {
    principal: Arc<Principal>,
    not_before: Option<u64>,
    /// Key-set generation the signature was checked against (0: introspected).
    generation: u64,
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
            validated: DashMap::new(),
        }
    }

    /// The rules applied.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// Validates `token`.
    pub async fn verify(&self, token: &str) -> Result<Arc<Principal>, Refusal> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(Refusal::Malformed("token too large"));
        }
        let now = jsonwebtoken::get_current_timestamp();
        if let Some(hit) = self.validated.get(token) {
            let current = self.keys.current().generation;
            if hit.generation == 0 || hit.generation == current {
                self.check_times(hit.principal.expires_at, hit.not_before, now)?;
                return Ok(hit.principal.clone());
            }
        }
        let (principal, not_before, generation) =
            if token.bytes().filter(|b| *b == b'.').count() == 2 {
                self.verify_jwt(token).await?
            } else if let Some(introspector) = &self.introspector {
                let principal = introspector.introspect(token, &self.rules).await?;
                (principal, None, 0)
            } else {
                return Err(Refusal::Malformed("not a JWT"));
            };
        self.check_times(principal.expires_at, not_before, now)?;
        let principal = Arc::new(principal);
        if self.validated.len() >= MAX_CACHED {
            self.validated.clear();
        }
        self.validated.insert(
            token.into(),
            Remembered {
                principal: principal.clone(),
                not_before,
                generation,
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
