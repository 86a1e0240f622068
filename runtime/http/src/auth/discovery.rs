//! Authorization server metadata discovered from the issuer: RFC 8414
//! (`/.well-known/oauth-authorization-server`, inserted before the issuer's path), then OpenID
//! Connect discovery (`/.well-known/openid-configuration`, appended). The answer must name
//! exactly the configured issuer, or it is not the issuer's metadata. I/O.

use super::fetch::{self, FetchError};
use mcp_declaration::trusted_url;
use serde_json::Value;
use url::Url;

/// The parts of the metadata the resource server uses.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerMetadata {
    /// Where the signing keys are.
    pub jwks_uri: Option<Url>,
    /// The RFC 7662 introspection endpoint, when the server has one.
    pub introspection_endpoint: Option<Url>,
}

/// Why discovery failed.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    /// No metadata document could be read.
    #[error("no authorization server metadata for issuer {issuer}: {source}")]
    Unreachable {
        /// The configured issuer.
        issuer: String,
        /// The last fetch error.
        #[source]
        source: FetchError,
    },
    /// A document was read but cannot be trusted.
    #[error("authorization server metadata at {url} is unusable: {message}")]
    Unusable {
        /// Where it was read.
        url: String,
        /// Why.
        message: String,
    },
}

/// The metadata URLs tried for `issuer`, in order.
pub fn metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let mut rfc8414 = issuer.clone();
    rfc8414.set_path(&format!("/.well-known/oauth-authorization-server{path}"));
    let mut oidc = issuer.clone();
    oidc.set_path(&format!("{path}/.well-known/openid-configuration"));
    vec![rfc8414, oidc]
}

/// Reads the issuer's metadata.
pub async fn discover(
    client: &reqwest::Client,
    issuer: &str,
) -> Result<ServerMetadata, DiscoveryError> {
    let issuer_url = trusted_url(issuer).map_err(|message| DiscoveryError::Unusable {
        url: issuer.to_owned(),
        message,
    })?;
    let mut last = None;
    for url in metadata_urls(&issuer_url) {
        match fetch::get_json(client, &url).await {
            Ok(document) => return parse(&url, issuer, &document),
            Err(err) => last = Some(err),
        }
    }
    Err(DiscoveryError::Unreachable {
        issuer: issuer.to_owned(),
        source: last.unwrap_or_else(|| FetchError {
            url: issuer.to_owned(),
            message: "no metadata URL".into(),
        }),
    })
}

fn parse(url: &Url, issuer: &str, document: &Value) -> Result<ServerMetadata, DiscoveryError> {
    let unusable = |message: String| DiscoveryError::Unusable {
        url: url.to_string(),
        message,
    };
    // RFC 8414 section 3.3: the document must name the issuer it was fetched for, exactly.
    if document.get("issuer").and_then(Value::as_str) != Some(issuer) {
        return Err(unusable(format!("its `issuer` is not exactly `{issuer}`")));
    }
    let endpoint = |name: &str| -> Result<Option<Url>, DiscoveryError> {
        match document.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => trusted_url(text)
                .map(Some)
                .map_err(|message| unusable(format!("`{name}`: {message}"))),
            Some(_) => Err(unusable(format!("`{name}` is not a string"))),
        }
    };
    Ok(ServerMetadata {
        jwks_uri: endpoint("jwks_uri")?,
        introspection_endpoint: endpoint("introspection_endpoint")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn metadata_urls_insert_and_append_the_path() {
        let issuer = Url::parse("https://idp.example.com/realms/acme").unwrap();
        let urls: Vec<String> = metadata_urls(&issuer).iter().map(Url::to_string).collect();
        assert_eq!(
            urls,
            [
                "https://idp.example.com/.well-known/oauth-authorization-server/realms/acme",
                "https://idp.example.com/realms/acme/.well-known/openid-configuration",
            ]
        );
        let root = Url::parse("https://idp.example.com/").unwrap();
        assert_eq!(
            metadata_urls(&root)[0].as_str(),
            "https://idp.example.com/.well-known/oauth-authorization-server"
        );
    }

    #[test]
    fn metadata_must_name_the_exact_issuer() {
        let url = Url::parse("https://idp.example.com/.well-known/openid-configuration").unwrap();
        let doc = json!({"issuer": "https://idp.example.com/", "jwks_uri": "https://idp.example.com/jwks"});
        assert!(parse(&url, "https://idp.example.com", &doc).is_err());
        let meta = parse(&url, "https://idp.example.com/", &doc).unwrap();
        assert_eq!(
            meta.jwks_uri.unwrap().as_str(),
            "https://idp.example.com/jwks"
        );
        let plain = json!({"issuer": "https://idp.example.com/", "jwks_uri": "http://idp.example.com/jwks"});
        assert!(parse(&url, "https://idp.example.com/", &plain).is_err());
    }
}
