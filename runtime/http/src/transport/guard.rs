//! Edge checks on every MCP request: Host and Origin allow-lists (DNS-rebinding protection), and
//! the Content-Type and Accept checks of POST bodies. Pure (`gate` applies them).

use super::reply::error_body;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mcp_protocol::{Era, LATEST_LEGACY, McpError};
use std::borrow::Cow;

/// Which Host and Origin values may reach the server. An entry without a port matches any port;
/// `*` matches anything.
#[derive(Clone, Debug)]
pub struct OriginPolicy {
    /// Allowed Host header values (`host` or `host:port`).
    pub hosts: Vec<String>,
    /// Allowed origins (`scheme://host` or `scheme://host:port`).
    pub origins: Vec<String>,
}

/// Loopback names, allowed by default.
const LOOPBACK: &[&str] = &["localhost", "127.0.0.1", "[::1]"];

impl Default for OriginPolicy {
    fn default() -> Self {
        Self {
            hosts: LOOPBACK.iter().map(|h| (*h).to_owned()).collect(),
            origins: LOOPBACK
                .iter()
                .flat_map(|h| [format!("http://{h}"), format!("https://{h}")])
                .collect(),
        }
    }
}

impl OriginPolicy {
    /// Whether a Host header value is allowed.
    pub fn allows_host(&self, host: &str) -> bool {
        let host = lowercase(host);
        self.hosts
            .iter()
            .any(|allowed| allowed == "*" || matches_authority(allowed, &host))
    }

    /// Whether an Origin header value is allowed (`null` origins never are).
    pub fn allows_origin(&self, origin: &str) -> bool {
        let origin = lowercase(origin);
        let Some((scheme, authority)) = origin.split_once("://") else {
            return false;
        };
        self.origins.iter().any(|allowed| {
            allowed == "*"
                || allowed.split_once("://").is_some_and(|(s, a)| {
                    s.eq_ignore_ascii_case(scheme)
                        && matches_authority(&a.to_ascii_lowercase(), authority)
                })
        })
    }
}

/// `value` in ASCII lower case, copied only when it has upper-case letters.
fn lowercase(value: &str) -> Cow<'_, str> {
    if value.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(value.to_ascii_lowercase())
    } else {
        Cow::Borrowed(value)
    }
}

/// `allowed` without a port matches `actual` with any port.
fn matches_authority(allowed: &str, actual: &str) -> bool {
    if allowed == actual {
        return true;
    }
    let has_port = |a: &str| {
        a.rsplit_once(':')
            .is_some_and(|(_, p)| p.chars().all(|c| c.is_ascii_digit()) && !a.ends_with(']'))
    };
    !has_port(allowed)
        && actual.strip_prefix(allowed).is_some_and(|rest| {
            rest.strip_prefix(':')
                .is_some_and(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        })
}

/// The Host (or the request target's authority) and any Origin must be allowed. Each header
/// must appear once: with two, a proxy and this server could each read a different one.
pub(super) fn edge_check(
    policy: &OriginPolicy,
    headers: &HeaderMap,
    uri: &axum::http::Uri,
) -> Result<(), &'static str> {
    host_check(policy, headers, uri)?;
    let mut origins = headers.get_all(header::ORIGIN).iter();
    let origin = origins.next();
    if origins.next().is_some() {
        return Err("more than one Origin header");
    }
    if let Some(origin) = origin
        && !origin.to_str().is_ok_and(|o| policy.allows_origin(o))
    {
        return Err("origin not allowed");
    }
    Ok(())
}

/// The Host half of [`edge_check`], for public documents any origin may read (the server card).
pub(super) fn host_check(
    policy: &OriginPolicy,
    headers: &HeaderMap,
    uri: &axum::http::Uri,
) -> Result<(), &'static str> {
    let mut hosts = headers.get_all(header::HOST).iter();
    let host = hosts.next();
    if hosts.next().is_some() {
        return Err("more than one Host header");
    }
    let host = match host {
        Some(value) => value.to_str().ok(),
        None => uri.authority().map(|a| a.as_str()),
    };
    if !host.is_some_and(|h| policy.allows_host(h)) {
        return Err("host not allowed");
    }
    if let Some(authority) = uri.authority()
        && !policy.allows_host(authority.as_str())
    {
        return Err("host not allowed");
    }
    Ok(())
}

/// The 403 for a refused Host or Origin.
pub(super) fn forbidden(why: &str) -> Response {
    let err = McpError::InvalidRequest(why.to_owned());
    (
        StatusCode::FORBIDDEN,
        error_body(None, &err, Era::Legacy(LATEST_LEGACY)),
    )
        .into_response()
}

/// 415 unless the body is declared as JSON.
pub(super) fn check_content_type(headers: &HeaderMap) -> Result<(), Response> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if json {
        Ok(())
    } else {
        Err((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json",
        )
            .into_response())
    }
}

/// What a client accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Accepts {
    /// `application/json`.
    pub json: bool,
    /// `text/event-stream`.
    pub sse: bool,
}

/// Reads Accept; an absent header accepts everything.
pub(super) fn accepts(headers: &HeaderMap) -> Accepts {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return Accepts {
            json: true,
            sse: true,
        };
    };
    // What MCP clients send (the protocol asks for both): decided without taking it apart.
    if accept == "application/json, text/event-stream" {
        return Accepts {
            json: true,
            sse: true,
        };
    }
    let mut accepts = Accepts {
        json: false,
        sse: false,
    };
    for range in accept
        .split(',')
        .map(|r| r.split(';').next().unwrap_or_default().trim())
    {
        let is = |media: &str| range.eq_ignore_ascii_case(media);
        if is("*/*") {
            accepts = Accepts {
                json: true,
                sse: true,
            };
        } else if is("application/*") || is("application/json") {
            accepts.json = true;
        } else if is("text/*") || is("text/event-stream") {
            accepts.sse = true;
        }
    }
    accepts
}

/// 406 when the client accepts neither JSON nor an event stream.
pub(super) fn check_accept(headers: &HeaderMap) -> Result<Accepts, Response> {
    let accepts = accepts(headers);
    if accepts.json || accepts.sse {
        Ok(accepts)
    } else {
        Err((
            StatusCode::NOT_ACCEPTABLE,
            "Accept must include application/json or text/event-stream",
        )
            .into_response())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_allowed_on_any_port_by_default() {
        let policy = OriginPolicy::default();
        assert!(policy.allows_host("localhost:8080"));
        assert!(policy.allows_host("127.0.0.1"));
        assert!(policy.allows_host("[::1]:9"));
        assert!(!policy.allows_host("evil.example.com"));
        assert!(!policy.allows_host("localhost.evil.com"));
        assert!(!policy.allows_host("localhost:80x"));
        assert!(policy.allows_origin("http://localhost:3000"));
        assert!(!policy.allows_origin("http://evil.example.com"));
        assert!(!policy.allows_origin("null"));
    }

    #[test]
    fn explicit_entries_and_wildcards() {
        let policy = OriginPolicy {
            hosts: vec!["mcp.example.com".into()],
            origins: vec!["https://app.example.com:8443".into()],
        };
        assert!(policy.allows_host("MCP.example.com:443"));
        assert!(policy.allows_origin("https://app.example.com:8443"));
        assert!(!policy.allows_origin("https://app.example.com"));
        assert!(!policy.allows_origin("http://app.example.com:8443"));
        let open = OriginPolicy {
            hosts: vec!["*".into()],
            origins: vec!["*".into()],
        };
        assert!(open.allows_host("anything") && open.allows_origin("https://x"));
    }

    #[test]
    fn every_host_and_origin_header_is_checked() {
        let policy = OriginPolicy::default();
        let uri: axum::http::Uri = "/mcp".parse().unwrap();
        let mut headers = HeaderMap::new();
        headers.append(header::HOST, "localhost".parse().unwrap());
        assert_eq!(edge_check(&policy, &headers, &uri), Ok(()));
        // Only the first was checked before: the second could name any host.
        headers.append(header::HOST, "evil.example.com".parse().unwrap());
        assert!(edge_check(&policy, &headers, &uri).is_err());
        let mut headers = HeaderMap::new();
        headers.append(header::HOST, "localhost".parse().unwrap());
        headers.append(header::ORIGIN, "http://localhost".parse().unwrap());
        headers.append(header::ORIGIN, "http://evil.example.com".parse().unwrap());
        assert!(edge_check(&policy, &headers, &uri).is_err());
        let absolute: axum::http::Uri = "http://evil.example.com/mcp".parse().unwrap();
        let mut headers = HeaderMap::new();
        headers.append(header::HOST, "localhost".parse().unwrap());
        assert!(edge_check(&policy, &headers, &absolute).is_err());
    }

    #[test]
    fn accept_parsing() {
        let mut headers = HeaderMap::new();
        assert_eq!(
            accepts(&headers),
            Accepts {
                json: true,
                sse: true
            }
        );
        headers.insert(header::ACCEPT, "application/json".parse().unwrap());
        assert_eq!(
            accepts(&headers),
            Accepts {
                json: true,
                sse: false
            }
        );
        headers.insert(header::ACCEPT, "text/html".parse().unwrap());
        assert!(check_accept(&headers).is_err());
    }
}
