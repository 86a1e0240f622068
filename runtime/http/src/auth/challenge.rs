//! The edges of bearer authentication over HTTP: reading the token from a request (RFC 6750
//! section 2.1, the Authorization header only) and the `WWW-Authenticate` challenge a refusal
//! carries (RFC 6750 section 3, RFC 9728 section 5.1). Pure, no I/O.

use super::refusal::Refusal;
use super::verify::MAX_TOKEN_BYTES;
use http::{HeaderMap, HeaderValue, header};

/// The bearer token of a request, as sent: its syntax is [`well_formed`]'s to check, which the
/// verifier does only for a token it has not validated before (a validated token is known
/// well-formed, and a JWT is most of a request's bytes). A token in the query string refuses
/// the request even when the header carries a valid one (query strings end up in logs and
/// browser history).
pub fn bearer_token<'a>(headers: &'a HeaderMap, query: Option<&str>) -> Result<&'a str, Refusal> {
    if let Some(query) = query
        && form_urlencoded::parse(query.as_bytes()).any(|(name, _)| name == "access_token")
    {
        return Err(Refusal::Malformed("token in the query string"));
    }
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Err(Refusal::Missing);
    };
    if values.next().is_some() {
        return Err(Refusal::Malformed("a second Authorization header"));
    }
    if value.len() > MAX_TOKEN_BYTES + 16 {
        return Err(Refusal::Malformed("token too large"));
    }
    let bytes = value.as_bytes();
    let bearer = bytes
        .iter()
        .position(|b| *b == b' ')
        .filter(|space| bytes[..*space].eq_ignore_ascii_case(b"bearer"));
    let Some(space) = bearer else {
        // Another scheme (Basic, DPoP) or none: this server asks for a bearer token, as if none
        // came; a value that is not even text is refused as malformed.
        return Err(if value.to_str().is_err() {
            Refusal::Malformed("not a bearer token")
        } else {
            Refusal::Missing
        });
    };
    let rest = &bytes[space + 1..];
    let token = &rest[rest.iter().take_while(|b| **b == b' ').count()..];
    std::str::from_utf8(token).map_err(|_| Refusal::Malformed("not a bearer token"))
}

/// Refuses a token that is not an RFC 6750 `b64token`:
/// `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
pub(super) fn well_formed(token: &str) -> Result<(), Refusal> {
    let body = token.trim_end_matches('=');
    let allowed = |b: u8| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b);
    if !body.is_empty() && body.bytes().all(allowed) {
        Ok(())
    } else {
        Err(Refusal::Malformed("not a bearer token"))
    }
}

/// The `WWW-Authenticate` value for `refusal`: where the resource metadata is, the scopes to ask
/// for, and, when a token was sent, why it was refused. `scopes` and `metadata_url` hold no
/// quote or backslash (scopes are checked at load; URLs are percent-encoded).
pub fn challenge(metadata_url: &str, scopes: &[String], refusal: &Refusal) -> HeaderValue {
    let mut value = format!("Bearer resource_metadata=\"{metadata_url}\"");
    let scopes: Vec<&str> = match refusal {
        Refusal::InsufficientScope(needed) => needed.iter().map(String::as_str).collect(),
        _ => scopes.iter().map(String::as_str).collect(),
    };
    if !scopes.is_empty() {
        value.push_str(&format!(", scope=\"{}\"", scopes.join(" ")));
    }
    if let Some(code) = refusal.error_code() {
        value.push_str(&format!(
            ", error=\"{code}\", error_description=\"{refusal}\""
        ));
    }
    // Every part is printable ASCII (see above), so this cannot fail; a refusal still gets a
    // challenge naming the metadata if it somehow did.
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for v in values {
            map.append(header::AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        }
        map
    }

    /// The token as `Authenticator::authenticate` takes it: read, then checked.
    fn read(headers: &HeaderMap) -> Result<&str, Refusal> {
        bearer_token(headers, None).and_then(|token| well_formed(token).map(|()| token))
    }

    #[test]
    fn reads_the_header_only() {
        assert_eq!(
            read(&headers(&["Bearer abc.def-_~+/=="])),
            Ok("abc.def-_~+/==")
        );
        assert_eq!(read(&headers(&["bearer  abc"])), Ok("abc"));
        assert_eq!(read(&headers(&[])), Err(Refusal::Missing));
        assert_eq!(
            read(&headers(&["Basic dXNlcjpwdw=="])),
            Err(Refusal::Missing)
        );
        assert!(matches!(
            read(&headers(&["Bearer a b"])),
            Err(Refusal::Malformed(_))
        ));
        assert!(matches!(
            read(&headers(&["Bearer "])),
            Err(Refusal::Malformed(_))
        ));
        assert!(matches!(
            read(&headers(&["Bearer a\"b"])),
            Err(Refusal::Malformed(_))
        ));
        assert!(matches!(
            read(&headers(&["Bearer a", "Bearer b"])),
            Err(Refusal::Malformed(_))
        ));
        let huge = format!("Bearer {}", "a".repeat(MAX_TOKEN_BYTES + 100));
        assert!(matches!(
            read(&headers(&[&huge])),
            Err(Refusal::Malformed(_))
        ));
    }

    #[test]
    fn b64tokens_and_other_schemes() {
        assert_eq!(well_formed("aZ09-._~+/=="), Ok(()));
        for token in ["==", "a=b", "a b", "a\"b", "é", ""] {
            assert!(
                matches!(well_formed(token), Err(Refusal::Malformed(_))),
                "{token}"
            );
        }
        assert_eq!(read(&headers(&["BeArEr abc"])), Ok("abc"));
        // Text after another scheme is not this server's to judge; bytes that are not text are.
        assert_eq!(read(&headers(&["Digest a\"b"])), Err(Refusal::Missing));
        let mut binary = HeaderMap::new();
        binary.insert(
            header::AUTHORIZATION,
            HeaderValue::from_bytes(b"Basic \xff").unwrap(),
        );
        assert!(matches!(read(&binary), Err(Refusal::Malformed(_))));
    }

    #[test]
    fn a_query_string_token_refuses_even_a_good_header() {
        let good = headers(&["Bearer abc"]);
        let refused = bearer_token(&good, Some("sessionId=x&access_token=abc"));
        assert_eq!(
            refused,
            Err(Refusal::Malformed("token in the query string"))
        );
        assert_eq!(
            bearer_token(&headers(&["Bearer abc"]), Some("sessionId=x")),
            Ok("abc")
        );
    }

    #[test]
    fn challenges_name_metadata_scopes_and_error() {
        let url = "https://mcp.example.com/.well-known/oauth-protected-resource/weather/mcp";
        let scopes = vec!["mcp:tools".to_owned()];
        assert_eq!(
            challenge(url, &scopes, &Refusal::Missing),
            format!("Bearer resource_metadata=\"{url}\", scope=\"mcp:tools\"")
        );
        assert_eq!(
            challenge(url, &scopes, &Refusal::Expired),
            format!(
                "Bearer resource_metadata=\"{url}\", scope=\"mcp:tools\", error=\"invalid_token\", error_description=\"token expired\""
            )
        );
        let needed = Refusal::InsufficientScope(vec!["mcp:tools".into(), "issues:write".into()]);
        assert_eq!(
            challenge(url, &scopes, &needed),
            format!(
                "Bearer resource_metadata=\"{url}\", scope=\"mcp:tools issues:write\", error=\"insufficient_scope\", error_description=\"insufficient scope\""
            )
        );
    }
}
