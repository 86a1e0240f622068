//! The edges of bearer authentication over HTTP: reading the token from a request (RFC 6750
//! section 2.1, the Authorization header only) and the `WWW-Authenticate` challenge a refusal
//! carries (RFC 6750 section 3, RFC 9728 section 5.1). Pure, no I/O.

use super::refusal::Refusal;
use super::verify::MAX_TOKEN_BYTES;
use http::{HeaderMap, HeaderValue, header};

/// The bearer token of a request. A token in the query string refuses the request even when the
/// header carries a valid one (query strings end up in logs and browser history).
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
    let text = value
        .to_str()
        .map_err(|_| Refusal::Malformed("not a bearer token"))?;
    let Some((scheme, rest)) = text.split_once(' ') else {
        return Err(Refusal::Missing);
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        // Another scheme (Basic, DPoP): this server asks for a bearer token, as if none came.
        return Err(Refusal::Missing);
    }
    let token = rest.trim_start_matches(' ');
    if !is_b64token(token) {
        return Err(Refusal::Malformed("not a bearer token"));
    }
    Ok(token)
}

/// RFC 6750 `b64token`: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
fn is_b64token(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    // A table lookup per byte: this runs over every token of every request.
    !body.is_empty() && body.bytes().all(|b| B64TOKEN[usize::from(b)])
}

/// Which bytes a `b64token` may hold before its `=` padding.
static B64TOKEN: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] =
            c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~' | b'+' | b'/');
        b += 1;
    }
    table
};

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

    #[test]
    fn reads_the_header_only() {
        assert_eq!(
            bearer_token(&headers(&["Bearer abc.def-_~+/=="]), None),
            Ok("abc.def-_~+/==")
        );
        assert_eq!(bearer_token(&headers(&["bearer  abc"]), None), Ok("abc"));
        assert_eq!(bearer_token(&headers(&[]), None), Err(Refusal::Missing));
        assert_eq!(
            bearer_token(&headers(&["Basic dXNlcjpwdw=="]), None),
            Err(Refusal::Missing)
        );
        assert!(matches!(
            bearer_token(&headers(&["Bearer a b"]), None),
            Err(Refusal::Malformed(_))
        ));
        assert!(matches!(
            bearer_token(&headers(&["Bearer "]), None),
            Err(Refusal::Malformed(_))
        ));
        assert!(matches!(
            bearer_token(&headers(&["Bearer a\"b"]), None),
            Err(Refusal::Malformed(_))
        ));
        assert!(matches!(
            bearer_token(&headers(&["Bearer a", "Bearer b"]), None),
            Err(Refusal::Malformed(_))
        ));
        let huge = format!("Bearer {}", "a".repeat(MAX_TOKEN_BYTES + 100));
        assert!(matches!(
            bearer_token(&headers(&[&huge]), None),
            Err(Refusal::Malformed(_))
        ));
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
