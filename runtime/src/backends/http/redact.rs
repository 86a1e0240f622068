//! Redaction: an upstream may echo a credential back (in a body, an error page, a header), so
//! every string a call returns is scrubbed of the secret values it sent. Pure.

use crate::declaration::Secret;
use serde_json::Value;

/// What a secret value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Values shorter than this are not scrubbed (they would mangle ordinary text).
const MIN_SECRET_LEN: usize = 4;

/// Replaces every occurrence of a secret in `text`: as sent, and in the forms an upstream echoes
/// it in (percent-encoded as in an echoed URL, JSON-escaped as in an echoed body).
pub fn text(text: &str, secrets: &[Secret]) -> String {
    let mut out = text.to_owned();
    for secret in secrets {
        let value = secret.expose();
        if value.len() < MIN_SECRET_LEN {
            continue;
        }
        for form in forms(value) {
            if out.contains(&form) {
                out = out.replace(&form, REDACTED);
            }
        }
    }
    out
}

/// A secret as sent, percent-encoded (upper- and lower-case hex) and JSON-escaped.
fn forms(value: &str) -> Vec<String> {
    let mut upper = String::new();
    let mut lower = String::new();
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            upper.push(char::from(byte));
            lower.push(char::from(byte));
        } else {
            upper.push_str(&format!("%{byte:02X}"));
            lower.push_str(&format!("%{byte:02x}"));
        }
    }
    let escaped = serde_json::to_string(value).unwrap_or_default();
    let escaped = escaped.trim_matches('"').to_owned();
    let mut forms = vec![value.to_owned(), upper, lower, escaped];
    forms.sort();
    forms.dedup();
    // Longest first, so a form that contains another is replaced whole.
    forms.sort_by_key(|form| std::cmp::Reverse(form.len()));
    forms
}

/// Replaces every occurrence of a secret in the strings (and keys) of `value`.
pub fn value(value: &mut Value, secrets: &[Secret]) {
    if secrets.is_empty() {
        return;
    }
    match value {
        Value::String(s) => *s = text(s, secrets),
        Value::Array(items) => items.iter_mut().for_each(|item| self::value(item, secrets)),
        Value::Object(map) => {
            let leaks = map.keys().any(|k| text(k, secrets) != *k);
            if leaks {
                *map = std::mem::take(map)
                    .into_iter()
                    .map(|(k, v)| (text(&k, secrets), v))
                    .collect();
            }
            map.values_mut().for_each(|item| self::value(item, secrets));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scrubs_encoded_echoes() {
        let secrets = [Secret::new("a+b/c=\"d".into())];
        let echoed = r#"{"url": "https://x/?k=a%2Bb%2Fc%3D%22d", "json": "a+b/c=\"d", "low": "a%2bb%2fc%3d%22d"}"#;
        let scrubbed = text(echoed, &secrets);
        assert!(
            !scrubbed.contains("a%2Bb")
                && !scrubbed.contains("a%2bb")
                && !scrubbed.contains("c=\\\"d"),
            "{scrubbed}"
        );
        assert_eq!(scrubbed.matches(REDACTED).count(), 3, "{scrubbed}");
    }

    #[test]
    fn scrubs_nested_strings_and_keys() {
        let secrets = [Secret::new("tok-123".into()), Secret::new("ab".into())];
        let mut v = json!({"headers": {"Authorization": "Bearer tok-123"}, "tok-123": [1, "x tok-123 y"], "ab": "ab"});
        value(&mut v, &secrets);
        assert_eq!(
            v,
            json!({"headers": {"Authorization": "Bearer [redacted]"}, "[redacted]": [1, "x [redacted] y"], "ab": "ab"})
        );
    }
}
