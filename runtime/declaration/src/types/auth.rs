//! `spec.auth`: who may call the server (an OAuth 2.1 resource server configuration), and the
//! per-item access fields (`requiredScopes`, `allow`) shared by tools, prompts and resources.
//! Pure data, no I/O.

use super::SecretKeyRef;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Bearer-token authentication of every MCP request (absent: no authentication).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Auth {
    /// The authorization server's issuer identifier: tokens must carry exactly this `iss`, and
    /// its metadata is discovered from it (RFC 8414, then OpenID Connect discovery). `https:`,
    /// or `http:` on a loopback address only.
    pub issuer: String,
    /// Accepted `aud` values, compared as canonical URIs (RFC 8707). Default: the server's
    /// public URL (`--public-url`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audiences: Vec<String>,
    /// Where the signing keys (JWKS) are fetched. Default: `jwks_uri` of the issuer's metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
    /// Scopes every request needs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_scopes: Vec<String>,
    /// Accepted signature algorithms. Default: every asymmetric algorithm (RS*, PS*, ES256,
    /// ES384, EdDSA); symmetric (HS*) and `none` are never accepted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub algorithms: Vec<JwtAlgorithm>,
    /// Clock skew tolerated on `exp` and `nbf`, in seconds (default 30, at most 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leeway_seconds: Option<u64>,
    /// Validate opaque (non-JWT) tokens with the authorization server's RFC 7662 introspection
    /// endpoint; active results are cached until they expire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub introspection: Option<Introspection>,
}

/// An asymmetric JWS algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum JwtAlgorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    RS256,
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    RS384,
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    RS512,
    /// RSASSA-PSS with SHA-256.
    PS256,
    /// RSASSA-PSS with SHA-384.
    PS384,
    /// RSASSA-PSS with SHA-512.
    PS512,
    /// ECDSA on P-256 with SHA-256.
    ES256,
    /// ECDSA on P-384 with SHA-384.
    ES384,
    /// Ed25519.
    EdDSA,
}

/// RFC 7662 token introspection for opaque tokens.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Introspection {
    /// Introspection endpoint. Default: `introspection_endpoint` of the issuer's metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Client id the runtime authenticates with (HTTP Basic).
    pub client_id: String,
    /// The client secret, from a Secret.
    pub client_secret: SecretKeyRef,
}
