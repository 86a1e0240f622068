//! Redaction: an upstream may echo a credential back (in a body, an error page, a header), so
//! every string a call returns is scrubbed of the secret values it sent. The runtime sends a
//! secret raw (headers, JSON bodies), percent-encoded (URL templates) and form-encoded (query
//! strings, form bodies); an echo may add JSON escapes (`\/`, `\uXXXX`), HTML entities, other
//! letter case in percent escapes, or base64. A match is found by decoding the text one escape
//! at a time against the secret, so any mix of these forms is caught; base64 is matched at each
//! of its three alignments. Pure.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use mcp_declaration::Secret;
use serde_json::Value;
use std::collections::HashSet;

/// What a secret value is replaced with.
pub(super) const REDACTED: &str = "[redacted]";

/// Values shorter than this are not scrubbed (they would mangle ordinary text).
const MIN_SECRET_LEN: usize = 4;

/// Base64 runs shorter than this are not scrubbed (short runs occur in ordinary text).
const MIN_BASE64_LEN: usize = 6;

/// Replaces every occurrence of a secret in `text`, in any of the forms above.
pub(super) fn text(text: &str, secrets: &[Secret]) -> String {
    let secrets: Vec<&[u8]> = secrets
        .iter()
        .map(|s| s.expose().as_bytes())
        .filter(|s| s.len() >= MIN_SECRET_LEN)
        .collect();
    if secrets.is_empty() {
        return text.to_owned();
    }
    let bytes = text.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
    let mut at = 0;
    let mut changed = false;
    while at < bytes.len() {
        let end = secrets
            .iter()
            .filter_map(|secret| Matcher::new(bytes, secret).at(at))
            .max();
        match end {
            Some(end) => {
                out.extend_from_slice(REDACTED.as_bytes());
                at = end;
                changed = true;
            }
            None => {
                out.push(bytes[at]);
                at += 1;
            }
        }
    }
    let mut out = if changed {
        // Matches start at a literal secret byte or an ASCII escape and end after a whole
        // secret, so they fall on character boundaries; lossy conversion is a safety net.
        String::from_utf8(out).unwrap_or_else(|err| String::from_utf8_lossy(err.as_bytes()).into())
    } else {
        text.to_owned()
    };
    for secret in &secrets {
        for core in base64_cores(secret) {
            if out.contains(&core) {
                out = out.replace(&core, REDACTED);
            }
        }
    }
    out
}

/// The parts of the base64 of `secret` that do not depend on what surrounds it, for each of
/// the three byte alignments and both alphabets.
fn base64_cores(secret: &[u8]) -> Vec<String> {
    let mut cores = Vec::new();
    for shift in 0..3usize {
        let mut padded = vec![0u8; shift];
        padded.extend_from_slice(secret);
        // Character `i` covers bits [6i, 6i + 6); keep those wholly inside the secret's bits.
        let first = (8 * shift).div_ceil(6);
        let last = (8 * (shift + secret.len())) / 6;
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            let encoded = engine.encode(&padded);
            if let Some(core) = encoded.get(first..last)
                && core.len() >= MIN_BASE64_LEN
            {
                cores.push(core.to_owned());
            }
        }
    }
    cores.sort();
    cores.dedup();
    cores.sort_by_key(|core| std::cmp::Reverse(core.len()));
    cores
}

/// Matches one secret against text that may encode any of its characters.
struct Matcher<'a> {
    text: &'a [u8],
    secret: &'a [u8],
    /// `(text position, secret position)` pairs known not to lead to a match.
    dead: HashSet<(usize, usize)>,
}

impl<'a> Matcher<'a> {
    fn new(text: &'a [u8], secret: &'a [u8]) -> Self {
        Self {
            text,
            secret,
            dead: HashSet::new(),
        }
    }

    /// Where a match starting at `at` ends, if one does.
    fn at(&mut self, at: usize) -> Option<usize> {
        let first = *self.text.get(at)?;
        if first != self.secret[0] && !matches!(first, b'%' | b'+' | b'\\' | b'&') {
            return None;
        }
        self.from(at, 0)
    }

    fn from(&mut self, mut i: usize, mut j: usize) -> Option<usize> {
        while j < self.secret.len() {
            let decoded = decode(self.text, i);
            let literal = self.text.get(i) == Some(&self.secret[j]);
            match decoded {
                Some((len, ref bytes)) if self.secret[j..].starts_with(bytes) => {
                    if literal {
                        // Both readings fit (a `%` in the secret, say): try the escape first,
                        // then the literal byte.
                        if !self.dead.contains(&(i, j))
                            && let Some(end) = self.from(i + len, j + bytes.len())
                        {
                            return Some(end);
                        }
                        self.dead.insert((i, j));
                        i += 1;
                        j += 1;
                    } else {
                        i += len;
                        j += bytes.len();
                    }
                }
                _ if literal => {
                    i += 1;
                    j += 1;
                }
                _ => return None,
            }
        }
        Some(i)
    }
}

/// The escape at `text[at..]`, if any: how many bytes it spans and the bytes it stands for.
fn decode(text: &[u8], at: usize) -> Option<(usize, Vec<u8>)> {
    let rest = text.get(at..)?;
    match rest.first()? {
        b'%' => Some((3, vec![hex_byte(rest.get(1..3)?)?])),
        b'+' => Some((1, vec![b' '])),
        b'\\' => json_escape(rest),
        b'&' => html_entity(rest),
        _ => None,
    }
}

/// Two hex digits, either case.
fn hex_byte(digits: &[u8]) -> Option<u8> {
    let text = std::str::from_utf8(digits).ok()?;
    u8::from_str_radix(text, 16).ok()
}

fn utf8(c: char) -> Vec<u8> {
    c.to_string().into_bytes()
}

/// A JSON string escape: `\/`, `\"`, `\n`, ..., `\uXXXX` (with surrogate pairs).
fn json_escape(rest: &[u8]) -> Option<(usize, Vec<u8>)> {
    let simple = match rest.get(1)? {
        b'"' => b'"',
        b'\\' => b'\\',
        b'/' => b'/',
        b'b' => 0x08,
        b'f' => 0x0c,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'u' => {
            let unit = |at: usize| -> Option<u32> {
                let text = std::str::from_utf8(rest.get(at..at + 4)?).ok()?;
                u32::from_str_radix(text, 16).ok()
            };
            let high = unit(2)?;
            if (0xD800..0xDC00).contains(&high) {
                if rest.get(6..8)? != b"\\u" {
                    return None;
                }
                let low = unit(8)?;
                if !(0xDC00..0xE000).contains(&low) {
                    return None;
                }
                let c = char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))?;
                return Some((12, utf8(c)));
            }
            return Some((6, utf8(char::from_u32(high)?)));
        }
        _ => return None,
    };
    Some((2, vec![simple]))
}

/// An HTML character reference: the five named ones, `&#NN;` and `&#xHH;`.
fn html_entity(rest: &[u8]) -> Option<(usize, Vec<u8>)> {
    let end = rest.iter().take(12).position(|&b| b == b';')?;
    let name = std::str::from_utf8(&rest[1..end]).ok()?;
    let c = match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        _ => {
            let number = name.strip_prefix('#')?;
            let code = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse().ok()?,
            };
            char::from_u32(code)?
        }
    };
    Some((end + 1, utf8(c)))
}

/// Replaces every occurrence of a secret in the strings (and keys) of `value`.
pub(super) fn value(value: &mut Value, secrets: &[Secret]) {
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
mod tests;
