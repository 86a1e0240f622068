//! The live parts of a declaration's HTTP backends, built when the declaration is loaded and
//! swapped with it: an HTTP client per distinct set of trusted CAs (backends that trust the
//! same ones share a client, and so its pool of kept-alive connections) and a concurrency limit
//! per backend. The declaration itself stays data. No I/O until a client is used.

use super::token::{Signer, TokenCache};
use mcp_declaration::{Compiled, CompiledHttp};
use std::collections::HashMap;
use tokio::sync::Semaphore;

/// One HTTP backend's live parts.
#[derive(Debug)]
pub struct Upstream {
    /// The client (rustls, the declared CA certificates, same-origin redirects only).
    pub client: reqwest::Client,
    /// Calls in flight at once.
    pub permits: Semaphore,
    /// Signs the client assertions of `http.auth` (`privateKeyJwt` only).
    pub(crate) signer: Option<Signer>,
    /// Signs the client assertions of `http.auth`'s actor (`privateKeyJwt` only).
    pub(crate) actor_signer: Option<Signer>,
    /// Signs the assertions of `http.auth`'s JWT bearer grant (`jwtBearer` only).
    pub(crate) assertion_signer: Option<Signer>,
}

/// Every HTTP backend's live parts, by slot.
#[derive(Debug, Default)]
pub struct Upstreams {
    slots: Vec<Upstream>,
    /// Tokens obtained for `http.auth`, shared by every backend (their keys tell them apart).
    pub(crate) tokens: TokenCache,
}

/// A client could not be built (the TLS backend refused the configuration, or a
/// `privateKeyJwt` or `jwtBearer` assertion key does not fit its algorithm).
#[derive(Debug, thiserror::Error)]
#[error("{label}: cannot build the HTTP client: {message}")]
pub struct BuildError {
    label: String,
    message: String,
}

impl Upstreams {
    /// The live parts of every backend of `compiled`.
    pub fn build(compiled: &Compiled) -> Result<Self, BuildError> {
        let mut clients: HashMap<Option<&str>, reqwest::Client> = HashMap::new();
        let mut slots = Vec::with_capacity(compiled.upstreams.len());
        for http in &compiled.upstreams {
            let ca = http.ca_bundle.as_deref();
            let client = match clients.get(&ca) {
                Some(client) => client.clone(),
                None => {
                    let client =
                        client(ca, compiled.allow_link_local_upstreams).map_err(|err| {
                            BuildError {
                                label: http.label.clone(),
                                message: err.to_string(),
                            }
                        })?;
                    clients.insert(ca, client.clone());
                    client
                }
            };
            let built = |signer: Result<Option<Signer>, _>| {
                signer.map_err(|err: super::token::SignerError| BuildError {
                    label: http.label.clone(),
                    message: err.to_string(),
                })
            };
            let signer_of = |auth: Option<&mcp_declaration::CompiledAuth>| match auth {
                Some(auth) => built(Signer::of(auth)),
                None => Ok(None),
            };
            let auth = http.auth.as_ref();
            let signer = signer_of(auth)?;
            let actor_signer = signer_of(auth.and_then(|a| a.actor.as_deref()))?;
            let assertion_signer = match auth {
                Some(auth) => built(Signer::of_assertion(auth))?,
                None => None,
            };
            slots.push(Upstream {
                client,
                permits: Semaphore::new(http.max_concurrency),
                signer,
                actor_signer,
                assertion_signer,
            });
        }
        Ok(Self {
            slots,
            tokens: TokenCache::default(),
        })
    }

    /// The live parts of `http`; `None` only for a backend of another declaration.
    pub fn of(&self, http: &CompiledHttp) -> Option<&Upstream> {
        self.slots.get(http.slot)
    }
}

fn client(ca_bundle: Option<&str>, allow_link_local: bool) -> reqwest::Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        .use_rustls_tls()
        .redirect(same_origin_redirects())
        .user_agent(concat!("kube-mcp/", env!("CARGO_PKG_VERSION")));
    if !allow_link_local {
        builder = builder.dns_resolver(std::sync::Arc::new(super::resolver::WithoutLinkLocal));
    }
    if let Some(pem) = ca_bundle {
        // The compiler checked that the bundle holds certificates.
        for cert in reqwest::Certificate::from_pem_bundle(pem.as_bytes())? {
            builder = builder.add_root_certificate(cert);
        }
    }
    builder.build()
}

/// Follows at most 5 redirects, and only within the same scheme, host and port; a redirect
/// elsewhere stops and is reported as an error by the backend.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same = attempt
            .previous()
            .first()
            .is_some_and(|first| mcp_declaration::same_origin(first, attempt.url()));
        if !same || attempt.previous().len() > 5 {
            attempt.stop()
        } else {
            attempt.follow()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_declaration::{CompileOptions, compile, parse_manifest};

    fn compiled(spec: &str) -> Compiled {
        let yaml = format!(
            "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {{name: t}}\nspec:\n{spec}"
        );
        compile(
            &parse_manifest(&yaml, ".".into()).unwrap(),
            &CompileOptions::default(),
        )
        .unwrap()
    }

    #[test]
    fn every_backend_gets_its_own_limit_at_its_slot() {
        let compiled = compiled(
            "  tools:\n  - name: a\n    http: {url: 'http://127.0.0.1:9/a', maxConcurrency: 3}\n  - name: b\n    content: [{type: text, text: b}]\n  resources:\n  - name: r\n    uri: 'docs://r'\n    http: {url: 'http://127.0.0.1:9/r'}\n",
        );
        let upstreams = Upstreams::build(&compiled).unwrap();
        let tool = compiled.tool("a").unwrap().http.as_ref().unwrap();
        let resource = compiled
            .resource("docs://r")
            .unwrap()
            .http
            .as_ref()
            .unwrap();
        assert_eq!((tool.slot, resource.slot), (0, 1));
        assert_eq!(upstreams.of(tool).unwrap().permits.available_permits(), 3);
        assert_eq!(
            upstreams.of(resource).unwrap().permits.available_permits(),
            resource.max_concurrency
        );
        // A backend of another declaration (a reload raced) finds nothing, not a stranger's.
        assert!(Upstreams::default().of(tool).is_none());
    }
}
