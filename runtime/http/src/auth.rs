//! Who is calling: the runtime as an OAuth 2.1 resource server (MCP `basic/authorization`).
//! [`Authenticator`] turns a request's headers into a validated [`Principal`] or a [`Refusal`]
//! with its `WWW-Authenticate` challenge, and holds the Protected Resource Metadata document.
//! Per-item scopes and `allow` conditions are compiled with the declaration
//! ([`mcp_declaration::AccessRules`]). I/O only through the key cache and introspection.

mod challenge;
mod discovery;
mod fetch;
mod introspect;
mod keys;
mod metadata;
mod refusal;
mod rules;
mod state;
mod verify;

pub use challenge::{bearer_token, challenge};
pub use discovery::{ServerMetadata, discover, metadata_urls};
pub use introspect::Introspector;
pub use keys::{KeySettings, Keys, parse_set};
pub use mcp_declaration::{
    audience_matches, canonical_audience, canonical_resource, is_loopback, trusted_url,
};
pub use mcp_server::Principal;
pub use metadata::{WELL_KNOWN, document, metadata_url, served_paths};
pub use refusal::Refusal;
pub use rules::{Rules, audience_ok};
pub use state::{AuthSettings, AuthState};
pub use verify::{MAX_TOKEN_BYTES, Verifier};

use http::{HeaderMap, HeaderValue};
use jsonwebtoken::Algorithm;
use mcp_declaration::{Auth, Compiled, JwtAlgorithm, Secret};
use serde_json::Value;
use std::sync::Arc;
use url::Url;

/// Default tolerated clock skew, seconds.
pub const DEFAULT_LEEWAY_SECONDS: u64 = 30;

/// Why the auth configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AuthConfigError {
    /// `--public-url` is missing or unusable.
    #[error("spec.auth needs --public-url (the canonical URL of the MCP endpoint): {0}")]
    PublicUrl(String),
    /// A field of `spec.auth` is unusable (the declaration compiler reports these first).
    #[error("spec.auth.{field}: {message}")]
    Field {
        /// The field.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
}

/// Authentication of one server's requests.
pub struct Authenticator {
    verifier: Verifier,
    resource: Url,
    metadata_url: String,
    required_scopes: Vec<String>,
    document: Value,
    /// The audiences a token for the whole server names (`spec.auth.audiences`, or the
    /// server's URL).
    audiences: Vec<String>,
    /// Each `spec.views` view as a protected resource of its own.
    views: Vec<ViewResource>,
}

/// A `spec.views` view as a protected resource: its URL (the server's with the view's path
/// before the endpoint), its metadata and the scopes its challenges name.
struct ViewResource {
    name: String,
    resource: Url,
    audience: String,
    metadata_url: String,
    required_scopes: Vec<String>,
    document: Value,
}

/// The URL of the view at `view_path` of the server at `resource`: the view's path inserted
/// before the endpoint (`https://h/weather/mcp` -> `https://h/weather/readers/mcp`), or
/// appended to a URL without one (`https://h/weather` -> `https://h/weather/readers`).
pub fn view_resource(resource: &Url, view_path: &str) -> Url {
    let path = resource.path().trim_end_matches('/');
    let (base, endpoint) = match path.rsplit_once('/') {
        Some((base, last)) if last == "mcp" || last == "sse" => (base, &path[base.len()..]),
        _ => (path, ""),
    };
    let mut url = resource.clone();
    url.set_path(&format!("{base}{view_path}{endpoint}"));
    url
}

impl Authenticator {
    /// Builds the authenticator of `auth` for the resource at `public_url`. `scopes_supported`
    /// is every scope the declaration names (listed in the metadata); `client_secret` is the
    /// introspection secret, already read.
    pub fn new(
        auth: &Auth,
        public_url: Option<&str>,
        scopes_supported: Vec<String>,
        client_secret: Option<Secret>,
        key_settings: KeySettings,
    ) -> Result<Self, AuthConfigError> {
        let public_url = public_url.ok_or_else(|| AuthConfigError::PublicUrl("not set".into()))?;
        let resource = Url::parse(public_url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
            .ok_or_else(|| {
                AuthConfigError::PublicUrl(format!("`{public_url}` is not an http(s) URL"))
            })?;
        let canonical = canonical_resource(resource.as_str())
            .ok_or_else(|| AuthConfigError::PublicUrl(format!("`{public_url}` has no host")))?;
        let field =
            |field: &'static str| move |message: String| AuthConfigError::Field { field, message };
        trusted_url(&auth.issuer).map_err(field("issuer"))?;
        let jwks_uri = auth
            .jwks_uri
            .as_deref()
            .map(keys::jwks_url)
            .transpose()
            .map_err(field("jwksUri"))?;
        let audiences = if auth.audiences.is_empty() {
            vec![canonical.clone()]
        } else {
            auth.audiences
                .iter()
                .map(|a| canonical_audience(a))
                .collect()
        };
        let algorithms = if auth.algorithms.is_empty() {
            ASYMMETRIC.to_vec()
        } else {
            auth.algorithms.iter().map(|a| algorithm(*a)).collect()
        };
        let client = fetch::client();
        let introspector = match &auth.introspection {
            None => None,
            Some(config) => {
                let endpoint = config
                    .endpoint
                    .as_deref()
                    .map(introspect::endpoint_url)
                    .transpose()
                    .map_err(field("introspection.endpoint"))?;
                let secret = client_secret.ok_or_else(|| AuthConfigError::Field {
                    field: "introspection.clientSecret",
                    message: "the Secret was not read".into(),
                })?;
                Some(
                    Introspector::new(
                        client.clone(),
                        auth.issuer.clone(),
                        endpoint,
                        config.client_id.clone(),
                        secret,
                    )
                    .with_limits(
                        key_settings.introspection_ttl,
                        key_settings.introspection_rate,
                    ),
                )
            }
        };
        let rules = Rules {
            issuer: auth.issuer.clone(),
            audiences,
            algorithms,
            leeway: auth.leeway_seconds.unwrap_or(DEFAULT_LEEWAY_SECONDS),
        };
        let keys = Keys::new(client, auth.issuer.clone(), jwks_uri, key_settings);
        Ok(Self {
            audiences: rules.audiences.clone(),
            verifier: Verifier::new(rules, keys, introspector),
            metadata_url: metadata_url(&resource),
            document: document(&canonical, &auth.issuer, &scopes_supported),
            required_scopes: auth.required_scopes.clone(),
            resource,
            views: Vec::new(),
        })
    }

    /// The same authenticator with the views of `compiled` as protected resources of their
    /// own: a token naming a view's URL is accepted there (and only there), and each view has
    /// its metadata, listing the scopes its items and the view need.
    #[must_use]
    pub fn with_views(mut self, compiled: &Compiled) -> Self {
        for view in compiled.views.all() {
            let resource = view_resource(&self.resource, &view.path);
            let Some(audience) = canonical_resource(resource.as_str()) else {
                continue;
            };
            let mut scopes = self.required_scopes.clone();
            let published = compiled
                .tools
                .iter()
                .enumerate()
                .filter(|(i, _)| view.tools.contains(*i))
                .map(|(_, t)| &t.access)
                .chain(
                    compiled
                        .resources
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| view.resources.contains(*i))
                        .map(|(_, r)| &r.access),
                )
                .chain(
                    compiled
                        .resource_templates
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| view.resource_templates.contains(*i))
                        .map(|(_, t)| &t.access),
                )
                .chain(
                    compiled
                        .prompts
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| view.prompts.contains(*i))
                        .map(|(_, p)| &p.access),
                );
            for scope in view
                .required_scopes
                .iter()
                .chain(published.flat_map(|access| &access.required_scopes))
            {
                if !scopes.contains(scope) {
                    scopes.push(scope.clone());
                }
            }
            let issuer = self.verifier.rules().issuer.clone();
            self.verifier.accept_audience(audience.clone());
            self.views.push(ViewResource {
                name: view.name.clone(),
                metadata_url: metadata_url(&resource),
                document: document(&audience, &issuer, &scopes),
                required_scopes: self
                    .required_scopes
                    .iter()
                    .chain(&view.required_scopes)
                    .cloned()
                    .collect(),
                audience,
                resource,
            });
        }
        self
    }

    fn view(&self, name: Option<&str>) -> Option<&ViewResource> {
        let name = name?;
        self.views.iter().find(|view| view.name == name)
    }

    /// Whether the audience of `principal`'s token fits the view it calls through (`None`: the
    /// whole server): a token for the server fits everywhere, a token for a view's URL only
    /// that view.
    pub fn audience_fits(&self, principal: &Principal, view: Option<&str>) -> bool {
        if self.views.is_empty() {
            return true;
        }
        let aud = principal.claims.get("aud");
        audience_ok(&self.audiences, aud)
            || self
                .view(view)
                .is_some_and(|v| audience_ok(std::slice::from_ref(&v.audience), aud))
    }

    /// The `WWW-Authenticate` value for `refusal` of a request through `view` (`None`: the
    /// whole server): the view's metadata and scopes.
    pub fn challenge_in(&self, refusal: &Refusal, view: Option<&str>) -> HeaderValue {
        match self.view(view) {
            Some(v) => challenge(&v.metadata_url, &v.required_scopes, refusal),
            None => self.challenge(refusal),
        }
    }

    /// The metadata document served at request path `path` for one of the views, if `path` is
    /// one of a view's metadata paths (see [`served_paths`]).
    pub fn view_metadata(&self, path: &str, path_prefix: &str) -> Option<&Value> {
        self.views
            .iter()
            .find(|v| {
                served_paths(&v.resource, path_prefix)
                    .iter()
                    .any(|p| p == path && p != WELL_KNOWN)
            })
            .map(|v| &v.document)
    }

    /// Authenticates a request from its headers and query string: a valid token with every
    /// scope the server requires.
    pub async fn authenticate(
        &self,
        headers: &HeaderMap,
        query: Option<&str>,
    ) -> Result<Arc<Principal>, Refusal> {
        let token = bearer_token(headers, query)?;
        let principal = self.verifier.verify(token).await?;
        self.require(&principal, &[])?;
        Ok(principal)
    }

    /// Refuses `principal` unless it holds the server's required scopes and `item_scopes`; the
    /// refusal lists every scope the operation needs.
    pub fn require(&self, principal: &Principal, item_scopes: &[String]) -> Result<(), Refusal> {
        let mut needed = self.required_scopes.iter().chain(item_scopes);
        if needed.all(|scope| principal.scopes.contains(scope)) {
            return Ok(());
        }
        Err(Refusal::InsufficientScope(
            self.required_scopes
                .iter()
                .chain(item_scopes)
                .cloned()
                .collect(),
        ))
    }

    /// The `WWW-Authenticate` value for `refusal`.
    pub fn challenge(&self, refusal: &Refusal) -> HeaderValue {
        challenge(&self.metadata_url, &self.required_scopes, refusal)
    }

    /// The Protected Resource Metadata document.
    pub fn metadata(&self) -> &Value {
        &self.document
    }

    /// Absolute URL of the metadata (the challenge's `resource_metadata`).
    pub fn metadata_url(&self) -> &str {
        &self.metadata_url
    }

    /// Request paths that serve the metadata.
    pub fn metadata_paths(&self, path_prefix: &str) -> Vec<String> {
        served_paths(&self.resource, path_prefix)
    }

    /// The validation rules applied.
    pub fn rules(&self) -> &Rules {
        self.verifier.rules()
    }
}

/// The default allow-list: every asymmetric algorithm the crate verifies.
const ASYMMETRIC: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

fn algorithm(alg: JwtAlgorithm) -> Algorithm {
    match alg {
        JwtAlgorithm::RS256 => Algorithm::RS256,
        JwtAlgorithm::RS384 => Algorithm::RS384,
        JwtAlgorithm::RS512 => Algorithm::RS512,
        JwtAlgorithm::PS256 => Algorithm::PS256,
        JwtAlgorithm::PS384 => Algorithm::PS384,
        JwtAlgorithm::PS512 => Algorithm::PS512,
        JwtAlgorithm::ES256 => Algorithm::ES256,
        JwtAlgorithm::ES384 => Algorithm::ES384,
        JwtAlgorithm::EdDSA => Algorithm::EdDSA,
    }
}

#[cfg(test)]
mod tests {
    use super::view_resource;
    use url::Url;

    #[test]
    fn a_views_url_puts_its_path_before_the_endpoint() {
        let at =
            |resource: &str| view_resource(&Url::parse(resource).unwrap(), "/readers").to_string();
        assert_eq!(at("https://h/weather/mcp"), "https://h/weather/readers/mcp");
        assert_eq!(at("https://h/weather"), "https://h/weather/readers");
        assert_eq!(at("https://h/weather/"), "https://h/weather/readers");
        assert_eq!(at("https://h/mcp"), "https://h/readers/mcp");
        assert_eq!(at("https://h"), "https://h/readers");
    }
}
