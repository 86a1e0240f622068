//! Who is calling: the identity and grants of a validated token. Pure, no I/O.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// A caller whose token was validated (serializable: a replica forwarding a request seals it
/// into the hop token, and the owner trusts it instead of a token).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Principal {
    /// `iss` of the token.
    pub issuer: String,
    /// `sub` of the token (client-credentials tokens of some servers carry none).
    pub subject: Option<String>,
    /// Granted scopes, from `scope` (space-separated) or `scp` (an array or a string).
    pub scopes: Vec<String>,
    /// Every claim, as `token.claims` in `allow` templates.
    pub claims: Map<String, Value>,
    /// `exp` (seconds since the epoch): the token, and any stream it opened, ends then.
    pub expires_at: u64,
    /// The validated token itself, for the one use that needs it: token exchange
    /// (`http.auth.tokenExchange`) as the subject token. Never printed, and not serialized
    /// with the principal (a hop token to another replica carries it encrypted beside it).
    #[serde(skip)]
    pub token: Option<SubjectToken>,
}

/// A caller's validated bearer token. `Debug` prints `[redacted]`; only [`SubjectToken::expose`]
/// reveals it.
#[derive(Clone, PartialEq, Eq)]
pub struct SubjectToken(std::sync::Arc<str>);

impl SubjectToken {
    /// Wraps a validated token.
    pub fn new(token: &str) -> Self {
        Self(token.into())
    }

    /// The token, for the token request that exchanges it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SubjectToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

impl Principal {
    /// Builds a principal from validated claims.
    pub fn from_claims(claims: Map<String, Value>, expires_at: u64) -> Self {
        let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
        Self {
            issuer: text("iss").unwrap_or_default(),
            subject: text("sub"),
            scopes: scopes_of(&claims),
            expires_at,
            claims,
            token: None,
        }
    }

    /// The same principal, holding the token it was validated from.
    #[must_use]
    pub fn with_token(mut self, token: &str) -> Self {
        self.token = Some(SubjectToken::new(token));
        self
    }

    /// The client the token was issued to: `azp` (OpenID Connect, RFC 9068) or `client_id`
    /// (RFC 9068, introspection).
    pub fn client(&self) -> Option<&str> {
        ["azp", "client_id"]
            .iter()
            .find_map(|name| self.claims.get(*name).and_then(Value::as_str))
    }

    /// [`Principal::digest`] as lower-case hex: how sealed request states and task ids name
    /// the principal.
    pub(crate) fn hex_digest(&self) -> String {
        self.digest()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }

    /// A digest of (issuer, subject, client) that binds a session to this caller without
    /// carrying who it is in the clear. The client counts: client-credentials tokens carry no
    /// `sub`, and two clients of one issuer must not share a principal.
    pub fn digest(&self) -> [u8; 16] {
        let mut hash = Sha256::new();
        hash.update(b"kube-mcp principal v2\0");
        hash.update(self.issuer.as_bytes());
        hash.update([0]);
        hash.update(self.subject.as_deref().unwrap_or_default().as_bytes());
        hash.update([0]);
        hash.update(self.client().unwrap_or_default().as_bytes());
        let full = hash.finalize();
        let mut out = [0u8; 16];
        out.copy_from_slice(&full[..16]);
        out
    }

    /// The scopes of `needed` this principal lacks.
    pub fn missing<'a>(&self, needed: &'a [String]) -> Vec<&'a str> {
        needed
            .iter()
            .filter(|s| !self.scopes.iter().any(|granted| granted == *s))
            .map(String::as_str)
            .collect()
    }
}

/// Scopes from `scope` (RFC 8693/9068: a space-separated string) or, as some providers issue
/// them, `scp` (an array of strings, or a space-separated string).
fn scopes_of(claims: &Map<String, Value>) -> Vec<String> {
    let mut scopes = Vec::new();
    for name in ["scope", "scp"] {
        match claims.get(name) {
            Some(Value::String(text)) => {
                scopes.extend(text.split(' ').filter(|s| !s.is_empty()).map(str::to_owned));
            }
            Some(Value::Array(items)) => {
                scopes.extend(items.iter().filter_map(Value::as_str).map(str::to_owned));
            }
            _ => {}
        }
    }
    scopes.sort();
    scopes.dedup();
    scopes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn principal(claims: Value) -> Principal {
        let Value::Object(map) = claims else {
            panic!("object")
        };
        Principal::from_claims(map, 0)
    }

    #[test]
    fn scopes_from_scope_or_scp() {
        assert_eq!(principal(json!({"scope": "a  b"})).scopes, ["a", "b"]);
        assert_eq!(principal(json!({"scp": ["b", "c"]})).scopes, ["b", "c"]);
        assert_eq!(principal(json!({"scp": "x y"})).scopes, ["x", "y"]);
        assert_eq!(principal(json!({"scope": 3})).scopes, Vec::<String>::new());
        let p = principal(json!({"scope": "a b"}));
        assert_eq!(p.missing(&["a".into(), "c".into(), "d".into()]), ["c", "d"]);
    }

    #[test]
    fn digest_separates_principals() {
        let a = principal(json!({"iss": "https://i", "sub": "ab"}));
        let b = principal(json!({"iss": "https://ia", "sub": "b"}));
        let c = principal(json!({"iss": "https://i", "sub": "ab", "scope": "x"}));
        assert_ne!(a.digest(), b.digest());
        assert_eq!(a.digest(), c.digest());
    }

    #[test]
    fn tokens_without_a_subject_differ_by_client() {
        // Client-credentials tokens: no `sub`, the client in `azp` or `client_id`.
        let one = principal(json!({"iss": "https://i", "azp": "billing"}));
        let two = principal(json!({"iss": "https://i", "client_id": "reports"}));
        let none = principal(json!({"iss": "https://i"}));
        assert_ne!(one.digest(), two.digest());
        assert_ne!(one.digest(), none.digest());
        assert_eq!(one.client(), Some("billing"));
        // One user through two clients: two principals.
        let via_a = principal(json!({"iss": "https://i", "sub": "u", "azp": "a"}));
        let via_b = principal(json!({"iss": "https://i", "sub": "u", "azp": "b"}));
        assert_ne!(via_a.digest(), via_b.digest());
    }
}
