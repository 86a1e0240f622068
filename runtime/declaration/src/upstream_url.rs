//! Upstream URL templates: RFC 6570 (levels 1-4, by `iri-string`) expanded over the arguments,
//! with the scheme, host and port fixed by the template's literal start. A template whose first
//! expression could reach into the authority is refused when compiled, and every expansion is
//! checked again against the fixed origin. Pure.

use iri_string::spec::UriSpec;
use iri_string::template::UriTemplateString;
use iri_string::template::context::{Context, Visitor};
use serde_json::Value;
use url::Url;

/// A compiled upstream URL template.
#[derive(Clone, Debug)]
pub struct UrlTemplate {
    template: UriTemplateString,
    /// The template cut into literal text and single expressions, expanded one by one (see
    /// [`pieces`]).
    pieces: Vec<Piece>,
    origin: Url,
}

/// A literal part or one expression of a template; `reserved` for `{+...}` and `{#...}`.
#[derive(Clone, Debug)]
struct Piece {
    template: UriTemplateString,
    reserved: bool,
}

impl UrlTemplate {
    /// Parses `source` and checks that scheme, host and port are literal.
    pub fn parse(source: &str) -> Result<Self, String> {
        let template = UriTemplateString::try_from(source.to_owned())
            .map_err(|err| format!("invalid RFC 6570 URI template: {}", err.validation_error()))?;
        let (literal, next) = match source.find('{') {
            Some(at) => (&source[..at], source[at + 1..].chars().next()),
            None => (source, None),
        };
        let (scheme, rest) = literal
            .split_once("://")
            .ok_or("must start with a literal `http://` or `https://` and a host")?;
        if scheme != "http" && scheme != "https" {
            return Err(format!("scheme `{scheme}` is not http or https"));
        }
        let authority_end = rest.find(['/', '?', '#']);
        let authority = &rest[..authority_end.unwrap_or(rest.len())];
        if authority_end.is_none() && next.is_some() && !matches!(next, Some('/' | '?')) {
            return Err(
                "the host must be literal: put a `/` (or use `{/x}` or `{?x}`) between the host \
                 and the first expression"
                    .into(),
            );
        }
        if authority.is_empty() || authority.contains(['@', '%', '\\']) {
            return Err(format!(
                "`{authority}` is not a literal host[:port] (no user info or escapes)"
            ));
        }
        let origin = Url::parse(&format!("{scheme}://{authority}/"))
            .map_err(|err| format!("invalid host `{authority}`: {err}"))?;
        let pieces = pieces(source)?;
        Ok(Self {
            template,
            pieces,
            origin,
        })
    }

    /// The fixed origin, such as `https://api.example.com/`.
    pub fn origin(&self) -> &Url {
        &self.origin
    }

    /// The template's variable names (dotted names address nested arguments).
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.template.variables().map(|name| name.as_str())
    }

    /// The template as declared.
    pub fn as_str(&self) -> &str {
        self.template.as_str()
    }

    /// Expands over `args`. Undefined or null values expand to nothing (RFC 6570); arrays and
    /// objects to lists and associative arrays.
    pub fn expand(&self, args: &Value) -> Result<Url, String> {
        let mut expanded = String::new();
        for piece in &self.pieces {
            let context = Args {
                args,
                encode_non_ascii: piece.reserved,
            };
            let part = piece
                .template
                .expand::<UriSpec, _>(&context)
                .map_err(|err| format!("cannot expand the URL template: {err}"))?;
            expanded.push_str(&part.to_string());
        }
        if has_dot_segment(&expanded) {
            // URL parsing would resolve `..` and climb out of the declared path.
            return Err("an argument made a `.` or `..` path segment in the upstream URL".into());
        }
        let url = Url::parse(&expanded).map_err(|err| format!("invalid expanded URL: {err}"))?;
        if !same_origin(&url, &self.origin) {
            return Err("the expanded URL leaves the declared scheme, host and port".into());
        }
        Ok(url)
    }
}

/// Cuts a (valid) template into literal runs and single expressions. iri-string panics on a
/// reserved (`+`, `#`) expansion of a value that starts with a non-ASCII character; expanding
/// each expression on its own lets those values be percent-encoded first, which is what the
/// reserved expansion would write for them anyway, without touching other expressions.
fn pieces(source: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut rest = source;
    while !rest.is_empty() {
        let end = match rest.strip_prefix('{') {
            Some(inner) => inner.find('}').map_or(rest.len(), |at| at + 2),
            None => rest.find('{').unwrap_or(rest.len()),
        };
        let (text, tail) = rest.split_at(end);
        let template = UriTemplateString::try_from(text.to_owned())
            .map_err(|err| format!("invalid RFC 6570 URI template: {}", err.validation_error()))?;
        let reserved = text.starts_with("{+") || text.starts_with("{#");
        pieces.push(Piece { template, reserved });
        rest = tail;
    }
    Ok(pieces)
}

/// Percent-encodes the non-ASCII characters of `text` (as UTF-8).
fn encode_non_ascii(text: String) -> String {
    if text.is_ascii() {
        return text;
    }
    let mut out = String::with_capacity(text.len() * 3);
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            for byte in c.to_string().bytes() {
                out.push_str(&format!("%{byte:02X}"));
            }
        }
    }
    out
}

/// Whether the path of an expanded URL has a `.` or `..` segment, also percent-encoded (URL
/// parsers treat `%2e%2e` as `..`), split by an encoded or back slash (upstreams that decode
/// `%2f` or treat `\` as `/` see `..%2f` as `../`), or followed by path parameters (servlet
/// containers read `..;x` as `..`).
fn has_dot_segment(url: &str) -> bool {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path_and_more = after_scheme.find('/').map_or("", |at| &after_scheme[at..]);
    let path = path_and_more.split(['?', '#']).next().unwrap_or_default();
    let path = path
        .to_ascii_lowercase()
        .replace("%2e", ".")
        .replace('\\', "/")
        .replace("%2f", "/")
        .replace("%5c", "/")
        .replace("%3b", ";");
    path.split('/')
        .map(|segment| segment.split(';').next().unwrap_or_default())
        .any(|segment| segment == "." || segment == "..")
}

/// Whether two URLs share scheme, host and port.
pub fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

/// An argument by dotted path (`filter.state`).
pub fn lookup<'a>(args: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(args, |value, key| value.get(key))
}

/// The text of a scalar argument as it goes into a URL, header or form field.
pub fn scalar_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

struct Args<'a> {
    args: &'a Value,
    encode_non_ascii: bool,
}

impl Args<'_> {
    fn text(&self, value: &Value) -> String {
        let text = scalar_text(value);
        if self.encode_non_ascii {
            encode_non_ascii(text)
        } else {
            text
        }
    }
}

impl Context for Args<'_> {
    fn visit<V: Visitor>(&self, visitor: V) -> V::Result {
        let value = lookup(self.args, visitor.var_name().as_str()).cloned();
        match value {
            None | Some(Value::Null) => visitor.visit_undefined(),
            Some(Value::Array(items)) => visitor
                .visit_list_direct(items.iter().map(|item| self.text(item)).collect::<Vec<_>>()),
            Some(Value::Object(map)) => visitor.visit_assoc_direct(
                map.iter()
                    .map(|(k, v)| {
                        let key = if self.encode_non_ascii {
                            encode_non_ascii(k.clone())
                        } else {
                            k.clone()
                        };
                        (key, self.text(v))
                    })
                    .collect::<Vec<_>>(),
            ),
            Some(scalar) => visitor.visit_string(self.text(&scalar)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refuses_arguments_that_climb_out_of_the_path() {
        let t = UrlTemplate::parse("https://api.example.com/v1/users/{id}/profile").unwrap();
        for id in ["..", ".", "..;x"] {
            let err = t.expand(&json!({"id": id})).unwrap_err();
            assert!(err.contains("path segment"), "{id}: {err}");
        }
        let t = UrlTemplate::parse("https://api.example.com/v1/{+path}").unwrap();
        assert!(t.expand(&json!({"path": "../../admin/delete"})).is_err());
        assert!(t.expand(&json!({"path": "a/%2e%2E/admin"})).is_err());
        assert!(t.expand(&json!({"path": "docs/..x/a.b"})).is_ok());
        for path in [
            "..%2fadmin",
            "..;/admin",
            "..;jsessionid=x/admin",
            "%2e%2e%3b/admin",
            "a/..%2Fadmin",
            "..%5cadmin",
            "..\\admin",
            "%2e%2e%2fadmin",
        ] {
            assert!(t.expand(&json!({"path": path})).is_err(), "{path}");
        }
        let t = UrlTemplate::parse("https://api.example.com/v1/search{?q}").unwrap();
        assert!(
            t.expand(&json!({"q": ".."})).is_ok(),
            "query values are not path segments"
        );
    }

    #[test]
    fn encodes_hostile_values() {
        let t = UrlTemplate::parse("https://api.example.com/items/{id}{?q,limit}").unwrap();
        let url = t
            .expand(&json!({"id": "a/b c?&#", "q": "a/b c?&#"}))
            .unwrap();
        assert_eq!(
            url.as_str(),
            "https://api.example.com/items/a%2Fb%20c%3F%26%23?q=a%2Fb%20c%3F%26%23"
        );
    }

    #[test]
    fn expands_nested_lists_and_absent_values() {
        let t = UrlTemplate::parse("http://127.0.0.1:8080/s{/path*}{?tags*,filter.state}").unwrap();
        let url = t
            .expand(&json!({"path": ["x", "y z"], "tags": ["a", "b"], "filter": {"state": "open"}}))
            .unwrap();
        assert_eq!(
            url.as_str(),
            "http://127.0.0.1:8080/s/x/y%20z?tags=a&tags=b&filter.state=open"
        );
        assert_eq!(
            t.expand(&json!({})).unwrap().as_str(),
            "http://127.0.0.1:8080/s"
        );
    }

    #[test]
    fn refuses_templates_that_could_change_the_host() {
        for bad in [
            "https://{host}/x",
            "https://api.example.com{+path}",
            "https://api.example.com.{domain}/x",
            "https://api.example.com:{port}/x",
            "https://{+x}@api.example.com/",
            "https://user@api.example.com/x",
            "ftp://api.example.com/x",
            "{+base}/x",
            "api.example.com/{x}",
        ] {
            assert!(UrlTemplate::parse(bad).is_err(), "{bad} was accepted");
        }
        for good in [
            "https://api.example.com/{+path}",
            "https://api.example.com{/path}",
            "https://api.example.com{?q}",
            "http://127.0.0.1:9/x#{frag}",
        ] {
            assert!(UrlTemplate::parse(good).is_ok(), "{good} was refused");
        }
    }

    #[test]
    fn reserved_expansion_of_non_ascii_values_does_not_panic() {
        // iri-string panicked on these (a remote panic that dropped the connection).
        let t = UrlTemplate::parse("https://api.example.com/{+path}{?q}{#frag}").unwrap();
        let url = t
            .expand(&json!({"path": "é/ü x", "q": "é", "frag": "日本"}))
            .unwrap();
        assert_eq!(
            url.as_str(),
            "https://api.example.com/%C3%A9/%C3%BC%20x?q=%C3%A9#%E6%97%A5%E6%9C%AC"
        );
        let t = UrlTemplate::parse("https://api.example.com/{+list}/{#map}").unwrap();
        assert!(
            t.expand(&json!({"list": ["é", "ü"], "map": {"ö": "ä"}}))
                .is_ok()
        );
    }

    #[test]
    fn reserved_expansion_cannot_escape_the_host() {
        let t = UrlTemplate::parse("https://api.example.com/{+path}").unwrap();
        let url = t.expand(&json!({"path": "/@evil.com/x"})).unwrap();
        assert_eq!(url.host_str(), Some("api.example.com"));
    }

    fn arg_strategy() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let text = prop_oneof![any::<String>(), "[./%a-f0-9@:?#\\\\é]{0,12}"];
        prop_oneof![
            text.clone().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            proptest::collection::vec(text.clone(), 0..3).prop_map(Value::from),
            proptest::collection::btree_map(text.clone(), text, 0..3).prop_map(|m| Value::Object(
                m.into_iter().map(|(k, v)| (k, Value::from(v))).collect()
            )),
        ]
    }

    proptest::proptest! {
        #[test]
        fn expansion_never_panics_nor_leaves_the_origin(
            op in proptest::sample::select(vec!["", "+", "#", "/", ";", "?", "&", "."]),
            x in arg_strategy(),
            y in arg_strategy(),
        ) {
            let source = format!("https://api.example.com:8443/v1/{{{op}x,y}}/z{{?y}}");
            let t = UrlTemplate::parse(&source).unwrap();
            if let Ok(url) = t.expand(&json!({"x": x, "y": y})) {
                proptest::prop_assert!(same_origin(&url, t.origin()), "{}", url);
                proptest::prop_assert!(url.path().starts_with("/v1/"), "{}", url);
                proptest::prop_assert!(!url.path().split('/').any(|s| s == ".."), "{}", url);
            }
        }
    }
}
