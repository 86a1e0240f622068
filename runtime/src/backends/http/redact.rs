//! Redaction: an upstream may echo a credential back (in a body, an error page, a header), so
//! every string a call returns is scrubbed of the secret values it sent. Pure.

use crate::declaration::Secret;
use serde_json::Value;

/// What a secret value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Values shorter than this are not scrubbed (they would mangle ordinary text).
const MIN_SECRET_LEN: usize = 4;

/// Replaces every occurrence of a secret in `text`.
pub fn text(text: &str, secrets: &[Secret]) -> String {
    let mut out = text.to_owned();
    for secret in secrets {
        let value = secret.expose();
        if value.len() >= MIN_SECRET_LEN && out.contains(value) {
            out = out.replace(value, REDACTED);
        }
    }
    out
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
