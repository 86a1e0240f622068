//! Spec types of `http.auth`: the credential an HTTP backend obtains from an OAuth
//! authorization server before calling its upstream (issue 26), instead of a shared secret.
//! Shared with the operator's CRD, so every field is documented. Pure data.

use super::{JwtAlgorithm, SecretKeyRef};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A token obtained from an OAuth authorization server for each upstream call: exactly one of
/// `tokenExchange`, `clientCredentials` or `jwtBearer`. The token is cached until shortly before
/// it expires, sent only in `header`, and redacted from everything the call returns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpAuth {
    /// OAuth 2.0 Token Exchange (RFC 8693): the caller's validated token (`spec.auth`) is
    /// exchanged for a token made for this upstream, so the upstream sees the user. The
    /// caller's own token is never sent upstream. Needs `spec.auth`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_exchange: Option<OAuthGrant>,
    /// The client credentials grant (RFC 6749 section 4.4): a token for the runtime itself,
    /// shared by every caller, for upstreams that trust the service. The fields are
    /// `tokenExchange`'s, without `actor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_credentials: Option<OAuthGrant>,
    /// The JWT bearer grant (RFC 7523 section 2.1), where the authorization server supports it:
    /// the runtime signs an assertion naming `assertion.subject` with a key the server holds the
    /// public half of, and gets a token for that subject, shared by every caller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwt_bearer: Option<JwtBearerGrant>,
    /// Request header that carries the token (default `Authorization`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// Text put before the token in `header` (default `Bearer `).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
}

impl HttpAuth {
    /// Every client this auth authenticates as: its grant's, the actor's, the JWT bearer
    /// grant's optional one.
    pub fn clients(&self) -> impl Iterator<Item = &OAuthClient> {
        [&self.token_exchange, &self.client_credentials]
            .into_iter()
            .flatten()
            .flat_map(|grant| {
                std::iter::once(&grant.client).chain(grant.actor.iter().map(|a| &a.client))
            })
            .chain(
                self.jwt_bearer
                    .iter()
                    .filter_map(|grant| grant.client.as_ref()),
            )
    }
}

/// Where and how a token is requested.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OAuthGrant {
    /// The authorization server's token endpoint; `https`, or `http` on a loopback address.
    pub token_url: String,
    /// How the runtime authenticates to the token endpoint.
    pub client: OAuthClient,
    /// `audience` parameter: the logical name of the upstream the token is for (usually
    /// becomes the token's `aud`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    /// `resource` parameter (RFC 8707): the upstream's absolute URI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// `scope` parameter: space-separated scopes asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Token exchange only: the runtime's own token, obtained with client credentials at the
    /// same `tokenUrl`, sent as the `actor_token`, so that the issued token names the runtime as
    /// the actor (`act`) beside the caller as the subject (delegation, RFC 8693 section 4.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<OAuthActor>,
}

/// A token requested with a signed assertion (RFC 7523 section 2.1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JwtBearerGrant {
    /// The authorization server's token endpoint; `https`, or `http` on a loopback address.
    pub token_url: String,
    /// The assertion the runtime signs for each token request.
    pub assertion: JwtAssertion,
    /// Client authentication, when the server wants it beside the assertion (it need not); the
    /// fields are `tokenExchange.client`'s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<OAuthClient>,
    /// `audience` parameter, as in `tokenExchange`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    /// `resource` parameter (RFC 8707), as in `tokenExchange`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// `scope` parameter: space-separated scopes asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// The JWT a `jwtBearer` grant presents: `iss`, `sub`, `aud`, a 60-second life and a random
/// `jti`, signed with the private key from a Secret.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JwtAssertion {
    /// The PEM private key (PKCS#8, or PKCS#1 for RSA; SEC1 for EC).
    pub secret_key_ref: SecretKeyRef,
    /// Signing algorithm (default `RS256`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alg: Option<JwtAlgorithm>,
    /// `kid` header, naming the key the server registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// `iss` claim: who signs, as the server knows the key's holder.
    pub issuer: String,
    /// `sub` claim: whom the token is for (default: `issuer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// `aud` claim (default: `tokenUrl`). Servers that follow RFC 7523bis (zitadel, for one)
    /// want their issuer identifier here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
}

/// The client whose client-credentials token is the actor token.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OAuthActor {
    /// How the runtime authenticates for its own token; the fields are `tokenExchange.client`'s.
    pub client: OAuthClient,
    /// `scope` of the actor token request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// The runtime's client at the authorization server: `id` and exactly one of `secretKeyRef`,
/// `privateKeyJwt` or `serviceAccountToken`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OAuthClient {
    /// The client id.
    pub id: String,
    /// The client secret, sent as HTTP Basic authentication (`client_secret_basic`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_key_ref: Option<SecretKeyRef>,
    /// A JWT signed with a private key (`private_key_jwt`, RFC 7523 section 2.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key_jwt: Option<PrivateKeyJwt>,
    /// The pod's projected ServiceAccount token as the client assertion (RFC 7523): the
    /// operator mounts one per audience, and the runtime reads it for each token request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_token: Option<ServiceAccountTokenClient>,
}

/// A client assertion signed with a private key from a Secret.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrivateKeyJwt {
    /// The PEM private key (PKCS#8, or PKCS#1 for RSA; SEC1 for EC).
    pub secret_key_ref: SecretKeyRef,
    /// Signing algorithm (default `RS256`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alg: Option<JwtAlgorithm>,
    /// `kid` header of the assertion, naming the key the server registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// `aud` of the assertion (default: `tokenUrl`). Servers that follow RFC 7523bis want
    /// their issuer identifier here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
}

/// The pod's projected ServiceAccount token as a client assertion.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceAccountTokenClient {
    /// The token's audience (the authorization server's expected value).
    pub audience: String,
}
