//! The Protected Resource Metadata document (RFC 9728) and where it is served: at
//! `/.well-known/oauth-protected-resource` and at that path followed by the MCP endpoint's path
//! (with and without the ingress path prefix, since an ingress may or may not strip it). Pure.

use serde_json::{Value, json};
use url::Url;

/// The well-known path of the metadata.
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The document for `resource`, protected by tokens of `issuer`.
pub fn document(resource: &str, issuer: &str, scopes_supported: &[String]) -> Value {
    let mut doc = json!({
        "resource": resource,
        "authorization_servers": [issuer],
        "bearer_methods_supported": ["header"],
    });
    if !scopes_supported.is_empty() {
        doc["scopes_supported"] = json!(scopes_supported);
    }
    doc
}

/// The absolute URL clients are sent to (RFC 9728 section 3.1: the well-known path inserted
/// between the host and the resource's path).
pub fn metadata_url(resource: &Url) -> String {
    let mut url = resource.clone();
    let path = resource.path().trim_end_matches('/');
    url.set_path(&format!("{WELL_KNOWN}{path}"));
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}

/// Request paths (as the runtime sees them) that serve the document: the bare well-known path
/// and the path-suffixed forms of the resource and of its endpoints (`/mcp`, `/sse`), each also
/// without `path_prefix` (an ingress that strips the prefix from every path) and under it.
pub fn served_paths(resource: &Url, path_prefix: &str) -> Vec<String> {
    let path = resource.path().trim_end_matches('/');
    let mut suffixes = vec![path.to_owned()];
    if !path.ends_with("/mcp") && !path.ends_with("/sse") {
        suffixes.push(format!("{path}/mcp"));
        suffixes.push(format!("{path}/sse"));
    }
    let mut paths = vec![WELL_KNOWN.to_owned()];
    for suffix in suffixes {
        paths.push(format!("{WELL_KNOWN}{suffix}"));
        if !path_prefix.is_empty()
            && let Some(rest) = suffix.strip_prefix(path_prefix)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            paths.push(format!("{WELL_KNOWN}{rest}"));
            paths.push(format!("{path_prefix}{WELL_KNOWN}{rest}"));
        }
    }
    paths.sort();
    paths.dedup();
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_url_inserts_the_well_known_path() {
        let resource = Url::parse("https://mcp.example.com/weather/mcp").unwrap();
        assert_eq!(
            metadata_url(&resource),
            "https://mcp.example.com/.well-known/oauth-protected-resource/weather/mcp"
        );
        assert_eq!(
            served_paths(&resource, "/weather"),
            [
                "/.well-known/oauth-protected-resource",
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource/weather/mcp",
                "/weather/.well-known/oauth-protected-resource/mcp",
            ]
        );
        let plain = Url::parse("http://127.0.0.1:8080/mcp").unwrap();
        assert_eq!(
            served_paths(&plain, ""),
            [
                "/.well-known/oauth-protected-resource",
                "/.well-known/oauth-protected-resource/mcp"
            ]
        );
    }

    #[test]
    fn document_lists_what_clients_need() {
        let doc = document(
            "https://mcp.example.com/weather/mcp",
            "https://idp",
            &["a".into()],
        );
        assert_eq!(doc["resource"], "https://mcp.example.com/weather/mcp");
        assert_eq!(doc["authorization_servers"], json!(["https://idp"]));
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
        assert_eq!(doc["scopes_supported"], json!(["a"]));
    }
}
