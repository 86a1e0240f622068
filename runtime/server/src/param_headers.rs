//! The `Mcp-Param-*` headers of a `tools/call` (SEP-2243) checked against its arguments: a
//! header the tool's schema calls for must carry the argument's value, so that a proxy routing
//! on the header and this server acting on the body cannot be told two different things.
//! Transports hand over the headers as plain name/value pairs; the decision is made here. Pure.

use mcp_declaration::ParamHeader;
use mcp_protocol::McpError;
use serde_json::{Number, Value};
use std::borrow::Cow;

use base64::Engine as _;

/// Largest integer a header carries exactly (2^53 - 1: the spec keeps integers in the range
/// JavaScript clients represent exactly).
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// Whether a header the arguments call for must have been sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// 2026-07-28: clients must send it, so a missing one is refused.
    Always,
    /// Earlier eras predate the headers: only headers that were sent are checked.
    IfSent,
}

/// Decodes a header value that may use the Base64 sentinel form (`=?base64?…?=`) for values
/// a plain header cannot carry; `None` when it is malformed (bytes outside visible ASCII,
/// space and tab, or a sentinel that is not Base64 of UTF-8).
pub fn decode_header_value(raw: &[u8]) -> Option<Cow<'_, str>> {
    if !raw
        .iter()
        .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b))
    {
        return None;
    }
    let text = std::str::from_utf8(raw).ok()?;
    match text
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()?;
            String::from_utf8(bytes).ok().map(Cow::Owned)
        }
        None => Some(Cow::Borrowed(text)),
    }
}

/// Checks the headers `sent` (lower-cased names, raw values) against the `arguments` of a call
/// to a tool declaring `declared`. Headers the tool does not declare are not looked at.
pub fn check(
    declared: &[ParamHeader],
    arguments: Option<&Value>,
    sent: &[(&str, &[u8])],
    expect: Expect,
) -> Result<(), McpError> {
    declared
        .iter()
        .try_for_each(|param| check_one(param, arguments, sent, expect))
}

fn check_one(
    param: &ParamHeader,
    arguments: Option<&Value>,
    sent: &[(&str, &[u8])],
    expect: Expect,
) -> Result<(), McpError> {
    let header = || format!("Mcp-Param-{}", param.name);
    let mismatch = |why: String| Err(McpError::HeaderMismatch(why));
    let mut values = sent
        .iter()
        .filter(|(name, _)| *name == param.header)
        .map(|(_, value)| *value);
    let (raw, again) = (values.next(), values.next());
    if again.is_some() {
        return mismatch(format!("{} header sent more than once", header()));
    }
    let argument = arguments
        .and_then(|args| {
            param
                .path
                .iter()
                .try_fold(args, |value, key| value.get(key))
        })
        .filter(|value| !value.is_null());
    let (raw, argument) = match (raw, argument) {
        (None, None) => return Ok(()),
        (None, Some(_)) if expect == Expect::IfSent => return Ok(()),
        (None, Some(_)) => {
            return mismatch(format!(
                "missing {} header for argument `{}`",
                header(),
                param.path.join(".")
            ));
        }
        (Some(_), None) => {
            return mismatch(format!(
                "{} header sent but argument `{}` is absent",
                header(),
                param.path.join(".")
            ));
        }
        (Some(raw), Some(argument)) => (raw, argument),
    };
    let Some(value) = decode_header_value(raw) else {
        return mismatch(format!(
            "{} header is malformed: visible ASCII, or =?base64?…?= of UTF-8",
            header()
        ));
    };
    if same(&value, argument)? {
        Ok(())
    } else {
        mismatch(format!(
            "{} header does not match argument `{}`",
            header(),
            param.path.join(".")
        ))
    }
}

/// Whether a decoded header value says the same as the argument, compared by the argument's
/// JSON type (the schema check that follows refuses an argument of the wrong type).
fn same(header: &str, argument: &Value) -> Result<bool, McpError> {
    Ok(match argument {
        Value::String(text) => header == text,
        Value::Bool(flag) => header == if *flag { "true" } else { "false" },
        Value::Number(number) => same_number(header, number)?,
        // An object or array never travels in a header.
        _ => false,
    })
}

/// Numbers compare as numbers (`42.0` and `42` are equal); the header must be a JSON number.
fn same_number(header: &str, body: &Number) -> Result<bool, McpError> {
    let Ok(sent) = serde_json::from_str::<Number>(header) else {
        return Ok(false);
    };
    // A u64 past i64's range is past the safe range as well: it stands in as i64::MAX.
    if let Some(body) = body.as_i64().or_else(|| body.as_u64().map(|_| i64::MAX)) {
        if !(-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&body) {
            return Err(McpError::HeaderMismatch(
                "an argument mirrored into a header must be an integer within ±(2^53-1)".into(),
            ));
        }
        // In the safe range the conversion to f64 is exact.
        return Ok(match sent.as_i64() {
            Some(sent) => sent == body,
            None => sent.as_f64() == Some(body as f64),
        });
    }
    Ok(sent.as_f64().is_some() && sent.as_f64() == body.as_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_declaration::ParamKind;
    use serde_json::json;

    fn param(name: &str, path: &[&str], kind: ParamKind) -> ParamHeader {
        ParamHeader {
            name: name.to_owned(),
            header: format!("mcp-param-{}", name.to_ascii_lowercase()),
            path: path.iter().map(|p| (*p).to_owned()).collect(),
            kind,
        }
    }

    /// One row: what it shows, the marked property, the arguments, the headers sent, the era's
    /// rule, and whether the call passes.
    type Row = (
        &'static str,
        ParamHeader,
        Value,
        Vec<(&'static str, &'static [u8])>,
        Expect,
        bool,
    );

    /// The spec's examples (Value Encoding, Server Behavior), and the number forms.
    #[test]
    fn the_spec_examples() {
        use Expect::{Always, IfSent};
        let region = || param("Region", &["region"], ParamKind::String);
        let count = || param("Count", &["count"], ParamKind::Integer);
        let dry = || param("Dry", &["dry"], ParamKind::Boolean);
        let nested = || param("Limit", &["opts", "limit"], ParamKind::Integer);
        #[rustfmt::skip]
        let rows: Vec<Row> = vec![
            ("match", region(), json!({"region": "us-west1"}), vec![("mcp-param-region", b"us-west1")], Always, true),
            ("mismatch", region(), json!({"region": "us-west1"}), vec![("mcp-param-region", b"us-east1")], Always, false),
            ("values are case-sensitive", region(), json!({"region": "us-west1"}), vec![("mcp-param-region", b"US-WEST1")], Always, false),
            ("missing", region(), json!({"region": "us-west1"}), vec![], Always, false),
            ("missing before 2026-07-28", region(), json!({"region": "us-west1"}), vec![], IfSent, true),
            ("mismatch before 2026-07-28", region(), json!({"region": "us-west1"}), vec![("mcp-param-region", b"eu")], IfSent, false),
            ("absent argument, no header", region(), json!({}), vec![], Always, true),
            ("null argument, no header", region(), json!({"region": null}), vec![], Always, true),
            ("no arguments at all", region(), Value::Null, vec![], Always, true),
            ("header without its argument", region(), json!({}), vec![("mcp-param-region", b"us-west1")], Always, false),
            ("sent twice", region(), json!({"region": "a"}), vec![("mcp-param-region", b"a"), ("mcp-param-region", b"a")], Always, false),
            ("other headers are not ours", region(), json!({"region": "a"}), vec![("mcp-param-region", b"a"), ("mcp-param-zone", b"z")], Always, true),
            ("non-ASCII in Base64", param("Greeting", &["greeting"], ParamKind::String), json!({"greeting": "Hello, 世界"}), vec![("mcp-param-greeting", b"=?base64?SGVsbG8sIOS4lueVjA==?=")], Always, true),
            ("padded in Base64", param("Text", &["text"], ParamKind::String), json!({"text": " padded "}), vec![("mcp-param-text", b"=?base64?IHBhZGRlZCA=?=")], Always, true),
            ("newline in Base64", param("Text", &["text"], ParamKind::String), json!({"text": "line1\nline2"}), vec![("mcp-param-text", b"=?base64?bGluZTEKbGluZTI=?=")], Always, true),
            ("sentinel-like value in Base64", param("Val", &["val"], ParamKind::String), json!({"val": "=?base64?literal?="}), vec![("mcp-param-val", b"=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=")], Always, true),
            ("sentinel-like value sent plain", param("Val", &["val"], ParamKind::String), json!({"val": "=?base64?literal?="}), vec![("mcp-param-val", b"=?base64?literal?=")], Always, false),
            ("Base64 of another value", param("Greeting", &["greeting"], ParamKind::String), json!({"greeting": "Hello, 世界"}), vec![("mcp-param-greeting", b"=?base64?SGVsbG8=?=")], Always, false),
            ("malformed: raw non-ASCII", param("Greeting", &["greeting"], ParamKind::String), json!({"greeting": "Hello, 世界"}), vec![("mcp-param-greeting", "Hello, 世界".as_bytes())], Always, false),
            ("malformed: not Base64", region(), json!({"region": "a"}), vec![("mcp-param-region", b"=?base64?***?=")], Always, false),
            ("malformed: Base64 of non-UTF-8", region(), json!({"region": "a"}), vec![("mcp-param-region", b"=?base64?/w==?=")], Always, false),
            ("malformed: control character", region(), json!({"region": "a"}), vec![("mcp-param-region", b"a\x01")], Always, false),
            ("integer", count(), json!({"count": 42}), vec![("mcp-param-count", b"42")], Always, true),
            ("negative integer", count(), json!({"count": -7}), vec![("mcp-param-count", b"-7")], Always, true),
            ("42.0 equals 42", count(), json!({"count": 42}), vec![("mcp-param-count", b"42.0")], Always, true),
            ("4.2e1 equals 42", count(), json!({"count": 42}), vec![("mcp-param-count", b"4.2e1")], Always, true),
            ("a different number", count(), json!({"count": 42}), vec![("mcp-param-count", b"43")], Always, false),
            ("not a number", count(), json!({"count": 42}), vec![("mcp-param-count", b"forty-two")], Always, false),
            ("a number with a sign JSON lacks", count(), json!({"count": 42}), vec![("mcp-param-count", b"+42")], Always, false),
            ("largest safe integer", count(), json!({"count": 9_007_199_254_740_991_i64}), vec![("mcp-param-count", b"9007199254740991")], Always, true),
            ("past the safe range", count(), json!({"count": 9_007_199_254_740_992_i64}), vec![("mcp-param-count", b"9007199254740992")], Always, false),
            ("boolean", dry(), json!({"dry": true}), vec![("mcp-param-dry", b"true")], Always, true),
            ("boolean false", dry(), json!({"dry": false}), vec![("mcp-param-dry", b"false")], Always, true),
            ("boolean in another case", dry(), json!({"dry": true}), vec![("mcp-param-dry", b"True")], Always, false),
            ("boolean as a digit", dry(), json!({"dry": true}), vec![("mcp-param-dry", b"1")], Always, false),
            ("nested property", nested(), json!({"opts": {"limit": 5}}), vec![("mcp-param-limit", b"5")], Always, true),
            ("nested property missing", nested(), json!({"opts": {"limit": 5}}), vec![], Always, false),
            ("nested parent not an object", nested(), json!({"opts": 5}), vec![], Always, true),
        ];
        let mut wrong = Vec::new();
        for (what, param, arguments, sent, expect, passes) in &rows {
            let outcome = check(std::slice::from_ref(param), Some(arguments), sent, *expect);
            if let Err(err) = &outcome {
                assert_eq!(err.code(mcp_protocol::Era::Modern), -32020, "{what}");
            }
            if outcome.is_ok() != *passes {
                wrong.push(format!("{what}: {outcome:?}"));
            }
        }
        assert!(
            wrong.is_empty(),
            "rows decided wrongly:\n{}",
            wrong.join("\n")
        );
    }

    #[test]
    fn a_tool_without_marked_properties_ignores_every_header() {
        let sent: &[(&str, &[u8])] = &[("mcp-param-region", b"x")];
        assert_eq!(check(&[], Some(&json!({})), sent, Expect::Always), Ok(()));
    }
}
