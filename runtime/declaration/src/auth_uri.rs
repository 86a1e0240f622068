//! URI rules of `spec.auth` (checked at compile time, applied by `mcp_http::auth`): RFC 8707 canonical resource URIs (so `aud` comparison
//! ignores case and default ports, never meaning), and which URLs the runtime may fetch keys and
//! metadata from (`https:`, or `http:` on a loopback address only). Pure, no I/O.

use url::{Host, Url};

/// The canonical form of an absolute URI used as a resource indicator: lower-case scheme and
/// host, no default port, no fragment, no trailing slash. `None` when `uri` is not an absolute
/// URI with a host (such as a bare client id some providers put in `aud`).
pub fn canonical_resource(uri: &str) -> Option<String> {
    let mut url = Url::parse(uri).ok()?;
    url.host_str()?;
    url.set_fragment(None);
    let path = url.path().trim_end_matches('/').to_owned();
    url.set_path(&path);
    let mut text = url.to_string();
    // `Url` keeps a lone `/` as the path of `https://host`; compare without it.
    if path.is_empty() && url.query().is_none() && text.ends_with('/') {
        text.pop();
    }
    Some(text)
}

/// Whether a token's `aud` value names one of the `accepted` audiences (already canonical, or
/// kept as written when not a URI): URIs compare canonically, anything else exactly.
pub fn audience_matches(accepted: &[String], aud: &str) -> bool {
    match canonical_resource(aud) {
        Some(canonical) => accepted.contains(&canonical),
        None => accepted.iter().any(|a| a == aud),
    }
}

/// `audience` as the form [`audience_matches`] compares with.
pub fn canonical_audience(audience: &str) -> String {
    canonical_resource(audience).unwrap_or_else(|| audience.to_owned())
}

/// Whether the host of `url` is a loopback address or `localhost`.
pub fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Parses a URL the runtime fetches from or trusts as an issuer: `https:`, or `http:` only on
/// a loopback address (local development and tests); no credentials, no fragment.
pub fn trusted_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|err| format!("`{text}` is not an absolute URL: {err}"))?;
    match url.scheme() {
        "https" => {}
        "http" if is_loopback(&url) => {}
        "http" => {
            return Err(format!(
                "`{text}` must use https (http only on a loopback address)"
            ));
        }
        other => return Err(format!("`{text}` has scheme `{other}`; https is required")),
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("`{text}` has no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!("`{text}` must not carry credentials"));
    }
    if url.fragment().is_some() {
        return Err(format!("`{text}` must not have a fragment"));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_forms_compare_equal() {
        for (a, b) in [
            (
                "https://MCP.Example.com/weather/mcp",
                "https://mcp.example.com/weather/mcp",
            ),
            (
                "https://mcp.example.com:443/weather/mcp/",
                "https://mcp.example.com/weather/mcp",
            ),
            ("HTTPS://mcp.example.com/", "https://mcp.example.com"),
            (
                "https://mcp.example.com/mcp#frag",
                "https://mcp.example.com/mcp",
            ),
            ("http://127.0.0.1:80/mcp", "http://127.0.0.1/mcp"),
        ] {
            assert_eq!(canonical_resource(a), canonical_resource(b), "{a} vs {b}");
        }
    }

    #[test]
    fn canonical_forms_keep_meaning() {
        for (a, b) in [
            (
                "https://mcp.example.com/weather/mcp",
                "https://mcp.example.com/Weather/mcp",
            ),
            (
                "https://mcp.example.com/weather/mcp",
                "https://mcp.example.com/weather",
            ),
            ("https://mcp.example.com/mcp", "http://mcp.example.com/mcp"),
            (
                "https://mcp.example.com/mcp",
                "https://mcp.example.com:8443/mcp",
            ),
            (
                "https://mcp.example.com/mcp",
                "https://evil.example.com/mcp",
            ),
        ] {
            assert_ne!(canonical_resource(a), canonical_resource(b), "{a} vs {b}");
        }
    }

    #[test]
    fn audiences_compare_canonically_or_exactly() {
        let accepted = vec![
            canonical_audience("https://mcp.example.com/weather/mcp"),
            canonical_audience("api-client-id"),
        ];
        assert!(audience_matches(
            &accepted,
            "https://MCP.example.com:443/weather/mcp/"
        ));
        assert!(audience_matches(&accepted, "api-client-id"));
        assert!(!audience_matches(&accepted, "API-client-id"));
        assert!(!audience_matches(
            &accepted,
            "https://mcp.example.com/other/mcp"
        ));
    }

    #[test]
    fn plain_http_only_on_loopback() {
        assert!(trusted_url("https://idp.example.com/realms/acme").is_ok());
        assert!(trusted_url("http://127.0.0.1:8443/").is_ok());
        assert!(trusted_url("http://localhost:8443/").is_ok());
        assert!(trusted_url("http://[::1]:8443/").is_ok());
        assert!(trusted_url("http://idp.example.com/").is_err());
        assert!(trusted_url("http://127.0.0.1.nip.io/").is_err());
        assert!(trusted_url("ftp://idp.example.com/").is_err());
        assert!(trusted_url("https://user:pw@idp.example.com/").is_err());
        assert!(trusted_url("idp.example.com").is_err());
    }
}
