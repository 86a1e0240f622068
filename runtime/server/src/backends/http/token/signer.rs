//! Client assertions for `private_key_jwt` (RFC 7523 section 2.2, RFC 7521 section 5.2):
//! `iss` = `sub` = the client id, and the assertions of the JWT bearer grant (RFC 7523 section
//! 2.1): `iss` and `sub` as declared. Both have `aud` the declared audience (default the token
//! URL), a 60-second life and a random `jti`, and are signed with the key from the declared
//! Secret. The key is parsed once, when the backend is built, so a bad key refuses the
//! declaration's load. Pure (reads the clock).

use super::TokenError;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_declaration::{ClientAuth, CompiledAuth, JwtAlgorithm, Secret};
use rand::RngCore;
use serde::Serialize;

/// How long an assertion is valid.
const ASSERTION_LIFE_SECONDS: u64 = 60;

/// Signs client assertions, or the grant assertions, for one backend.
pub(crate) struct Signer {
    key: EncodingKey,
    header: Header,
    audience: String,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("alg", &self.header.alg)
            .field("kid", &self.header.kid)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

/// The declared key does not fit its algorithm.
#[derive(Debug, thiserror::Error)]
#[error("the {what} key is not a PEM {family} private key")]
pub(crate) struct SignerError {
    what: &'static str,
    family: &'static str,
}

#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    sub: &'a str,
    aud: &'a str,
    iat: u64,
    exp: u64,
    jti: String,
}

impl Signer {
    /// The signer of `auth`, when its client authenticates with `private_key_jwt`.
    pub(crate) fn of(auth: &CompiledAuth) -> Result<Option<Self>, SignerError> {
        let ClientAuth::PrivateKeyJwt {
            key,
            alg,
            key_id,
            audience,
        } = &auth.client_auth
        else {
            return Ok(None);
        };
        let claims = (auth.client_id.as_str(), auth.client_id.as_str());
        Self::new("privateKeyJwt", key, *alg, key_id, audience, claims).map(Some)
    }

    /// The signer of the assertion of `auth`'s JWT bearer grant, when it has one.
    pub(crate) fn of_assertion(auth: &CompiledAuth) -> Result<Option<Self>, SignerError> {
        let Some(assertion) = &auth.assertion else {
            return Ok(None);
        };
        Self::new(
            "jwtBearer assertion",
            &assertion.key,
            assertion.alg,
            &assertion.key_id,
            &assertion.audience,
            (&assertion.issuer, &assertion.subject),
        )
        .map(Some)
    }

    /// A signer of `key` (the `what` of the declaration) for `alg`, once it signed for
    /// `(issuer, subject)`: a key of the right format can still be of the wrong curve or size.
    fn new(
        what: &'static str,
        key: &Secret,
        alg: JwtAlgorithm,
        key_id: &Option<String>,
        audience: &str,
        (issuer, subject): (&str, &str),
    ) -> Result<Self, SignerError> {
        let pem = key.expose().as_bytes();
        let (algorithm, family, parsed) = match alg {
            JwtAlgorithm::RS256 => (Algorithm::RS256, "RSA", EncodingKey::from_rsa_pem(pem)),
            JwtAlgorithm::RS384 => (Algorithm::RS384, "RSA", EncodingKey::from_rsa_pem(pem)),
            JwtAlgorithm::RS512 => (Algorithm::RS512, "RSA", EncodingKey::from_rsa_pem(pem)),
            JwtAlgorithm::PS256 => (Algorithm::PS256, "RSA", EncodingKey::from_rsa_pem(pem)),
            JwtAlgorithm::PS384 => (Algorithm::PS384, "RSA", EncodingKey::from_rsa_pem(pem)),
            JwtAlgorithm::PS512 => (Algorithm::PS512, "RSA", EncodingKey::from_rsa_pem(pem)),
            JwtAlgorithm::ES256 => (Algorithm::ES256, "EC P-256", EncodingKey::from_ec_pem(pem)),
            JwtAlgorithm::ES384 => (Algorithm::ES384, "EC P-384", EncodingKey::from_ec_pem(pem)),
            JwtAlgorithm::EdDSA => (Algorithm::EdDSA, "Ed25519", EncodingKey::from_ed_pem(pem)),
        };
        let key = parsed.map_err(|_| SignerError { what, family })?;
        let mut header = Header::new(algorithm);
        header.kid = key_id.clone();
        let signer = Self {
            key,
            header,
            audience: audience.to_owned(),
        };
        signer
            .sign(issuer, subject)
            .map_err(|_| SignerError { what, family })?;
        Ok(signer)
    }

    /// A fresh client assertion for `client_id`.
    pub(crate) fn assertion(&self, client_id: &str) -> Result<String, TokenError> {
        self.sign(client_id, client_id)
    }

    /// A fresh assertion from `issuer` about `subject`.
    pub(crate) fn sign(&self, issuer: &str, subject: &str) -> Result<String, TokenError> {
        let now = jsonwebtoken::get_current_timestamp();
        let mut jti = [0u8; 16];
        rand::rng().fill_bytes(&mut jti);
        let claims = Claims {
            iss: issuer,
            sub: subject,
            aud: &self.audience,
            iat: now,
            exp: now + ASSERTION_LIFE_SECONDS,
            jti: jti.iter().map(|b| format!("{b:02x}")).collect(),
        };
        jsonwebtoken::encode(&self.header, &claims, &self.key).map_err(|_| TokenError::Signing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{DecodingKey, Validation, decode};
    use mcp_declaration::{CompiledAssertion, Grant};

    // A throwaway P-256 key made for this test (openssl ecparam -genkey -name prime256v1).
    const EC_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgMZBvtB8L5hTAcoXk\nOmMu60LuvS1LRspNUHV0o9uk1hKhRANCAARY4UgJUruSbGhEh905LIdGtQVma05T\nOmD5DK8ByovtbcZB/3AbkF9RTLC3l3Wr3uZaznctrOwkGPxX9m1disTh\n-----END PRIVATE KEY-----\n";

    // Its public half.
    const EC_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEWOFICVK7kmxoRIfdOSyHRrUFZmtO\nUzpg+QyvAcqL7W3GQf9wG5BfUUywt5d1q97mWs53LazsJBj8V/ZtXYrE4Q==\n-----END PUBLIC KEY-----\n";

    fn auth(key: &str, alg: JwtAlgorithm) -> CompiledAuth {
        CompiledAuth {
            grant: Grant::ClientCredentials,
            token_url: "https://idp.example.com/token".parse().unwrap(),
            client_id: "kube-mcp".into(),
            client_auth: ClientAuth::PrivateKeyJwt {
                key: Secret::new(key.into()),
                alg,
                key_id: Some("k1".into()),
                audience: "https://idp.example.com".into(),
            },
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

    /// The claims of an ES256 `token` from `issuer` for the test audience, checked with the
    /// public half as a server would.
    fn verified(token: &str, issuer: &str) -> serde_json::Value {
        let mut validation = Validation::new(Algorithm::ES256);
        validation.set_audience(&["https://idp.example.com"]);
        validation.set_issuer(&[issuer]);
        let key = DecodingKey::from_ec_pem(EC_PUBLIC.as_bytes()).unwrap();
        decode::<serde_json::Value>(token, &key, &validation)
            .unwrap()
            .claims
    }

    #[test]
    fn an_assertion_names_the_client_and_the_audience() {
        let signer = Signer::of(&auth(EC_KEY, JwtAlgorithm::ES256))
            .unwrap()
            .unwrap();
        let token = signer.assertion("kube-mcp").unwrap();
        let header = jsonwebtoken::decode_header(&token).unwrap();
        assert_eq!(
            (header.alg, header.kid.as_deref()),
            (Algorithm::ES256, Some("k1"))
        );
        let claims = verified(&token, "kube-mcp");
        assert_eq!(claims["sub"], "kube-mcp");
        assert_eq!(
            claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
            60
        );
        assert_ne!(
            signer.assertion("kube-mcp").unwrap(),
            token,
            "a fresh jti each time"
        );
    }

    #[test]
    fn a_grant_assertion_names_its_issuer_and_subject() {
        let mut auth = auth(EC_KEY, JwtAlgorithm::ES256);
        auth.grant = Grant::JwtBearer;
        auth.client_auth = ClientAuth::None;
        assert!(Signer::of(&auth).unwrap().is_none(), "no client assertion");
        auth.assertion = Some(CompiledAssertion {
            key: Secret::new(EC_KEY.into()),
            alg: JwtAlgorithm::ES256,
            key_id: Some("svc-1".into()),
            issuer: "svc".into(),
            subject: "alice".into(),
            audience: "https://idp.example.com".into(),
        });
        let signer = Signer::of_assertion(&auth).unwrap().unwrap();
        let token = signer.sign("svc", "alice").unwrap();
        let header = jsonwebtoken::decode_header(&token).unwrap();
        assert_eq!(header.kid.as_deref(), Some("svc-1"));
        let claims = verified(&token, "svc");
        assert_eq!(claims["sub"], "alice");
        // A key that does not fit says which one.
        auth.assertion.as_mut().unwrap().alg = JwtAlgorithm::RS256;
        assert_eq!(
            Signer::of_assertion(&auth).unwrap_err().to_string(),
            "the jwtBearer assertion key is not a PEM RSA private key"
        );
    }

    #[test]
    fn a_key_that_does_not_fit_its_algorithm_is_refused() {
        let err = Signer::of(&auth(EC_KEY, JwtAlgorithm::RS256)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the privateKeyJwt key is not a PEM RSA private key"
        );
        assert!(
            Signer::of(&auth(
                "-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----\n",
                JwtAlgorithm::ES256
            ))
            .is_err()
        );
    }
}
