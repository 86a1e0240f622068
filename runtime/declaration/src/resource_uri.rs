//! Resource URIs: the one canonical spelling of a URI ([`canonical`]) that matching, caching,
//! subscribing and access checks all use, and RFC 6570 level-1 URI templates
//! (`scheme://path/{var}`), matched against requested URIs to find which resource template
//! serves a read. Pure.

use std::borrow::Cow;

/// The canonical spelling of `uri` (RFC 3986 section 6.2.2.2, percent-encoding normalization):
/// escapes of unreserved characters are decoded and the hex digits of the others upper-cased,
/// so `docs://%73ecret` and `docs://secret` name one resource everywhere: when it is looked up,
/// authorized, cached and subscribed to. Nothing else is changed (no case folding of the scheme
/// or host: declared URIs are opaque strings to MCP).
pub fn canonical(uri: &str) -> Cow<'_, str> {
    if !uri.contains('%') {
        return Cow::Borrowed(uri);
    }
    let bytes = uri.as_bytes();
    let mut out = String::with_capacity(uri.len());
    let mut at = 0;
    while at < bytes.len() {
        let escaped = (bytes[at] == b'%')
            .then(|| uri.get(at + 1..at + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) => {
                out.push(char::from(byte));
                at += 3;
            }
            Some(byte) => {
                out.push_str(&format!("%{byte:02X}"));
                at += 3;
            }
            None => {
                let c = uri[at..].chars().next().unwrap_or_default();
                out.push(c);
                at += c.len_utf8().max(1);
            }
        }
    }
    Cow::Owned(out)
}

/// A parsed template: literal runs and `{variable}` slots, alternating.
#[derive(Clone, Debug, PartialEq)]
pub struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq)]
enum Part {
    Literal(String),
    Variable(String),
}

impl UriTemplate {
    /// Parses `source`; only simple `{name}` expressions are accepted.
    pub fn parse(source: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = source;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let close = rest[open..]
                .find('}')
                .ok_or("unclosed `{` in URI template")?
                + open;
            let name = &rest[open + 1..close];
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!(
                    "`{{{name}}}` is not a simple variable (only `{{name}}` expressions are supported)"
                ));
            }
            if matches!(parts.last(), Some(Part::Variable(_))) {
                return Err("two variables must be separated by literal text".into());
            }
            parts.push(Part::Variable(name.to_owned()));
            rest = &rest[close + 1..];
        }
        if rest.contains('}') {
            return Err("unmatched `}` in URI template".into());
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(Self { parts })
    }

    /// The variable names, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|part| match part {
            Part::Variable(name) => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// Matches `uri`, returning each variable's percent-decoded value. A value never spans a `/`
    /// (level-1 expansion encodes it), so `a/{x}` does not match `a/b/c`.
    pub fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        let mut values = Vec::new();
        let mut rest = uri;
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                Part::Literal(literal) => rest = rest.strip_prefix(literal.as_str())?,
                Part::Variable(name) => {
                    let end = match parts.peek() {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let raw = &rest[..end];
                    if raw.is_empty() || raw.contains('/') {
                        return None;
                    }
                    values.push((name.clone(), percent_decode(raw)?));
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(values)
    }
}

/// Decodes `%XX` escapes; `None` for a malformed escape or invalid UTF-8.
fn percent_decode(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = raw.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_decodes_unreserved_escapes_and_upper_cases_the_rest() {
        assert_eq!(canonical("docs://%73ecret"), "docs://secret");
        assert_eq!(canonical("a://x%2fy%7e"), "a://x%2Fy~");
        assert_eq!(canonical("a://50%"), "a://50%");
        assert!(matches!(canonical("a://plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn matches_and_decodes_variables() {
        let template = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert_eq!(
            template.matches("test://template/a%20b/data"),
            Some(vec![("id".into(), "a b".into())])
        );
        assert_eq!(template.matches("test://template/a/b/data"), None);
        assert_eq!(template.matches("test://template//data"), None);
        assert_eq!(template.matches("test://other/1/data"), None);
    }

    #[test]
    fn trailing_variable_takes_the_rest() {
        let template = UriTemplate::parse("weather://city/{city}").unwrap();
        assert_eq!(
            template.matches("weather://city/Paris"),
            Some(vec![("city".into(), "Paris".into())])
        );
        assert_eq!(template.variables().collect::<Vec<_>>(), ["city"]);
    }

    #[test]
    fn refuses_operators_and_adjacent_variables() {
        assert!(UriTemplate::parse("a://{+path}").is_err());
        assert!(UriTemplate::parse("a://{x}{y}").is_err());
        assert!(UriTemplate::parse("a://{x").is_err());
    }
}
