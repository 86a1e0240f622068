//! Redaction: an upstream may echo a credential back (in a body, an error page, a header), so
//! every string a call returns is scrubbed of the secret values it sent. The runtime sends a
//! secret raw (headers, JSON bodies), percent-encoded (URL templates) and form-encoded (query
//! strings, form bodies); an echo may add JSON escapes (`\/`, `\uXXXX`), HTML entities, percent
//! escapes encoded again (`%2541`), other letter case (in escapes or in the secret itself), or
//! base64, or echo only part of it. A match is found by decoding the text one escape at a time
//! against the secret, so any mix of these forms is caught; base64 is matched at each of its
//! three alignments; a literal run of at least half the secret (and [`MIN_PARTIAL_LEN`]) counts
//! as an echo too. Pure.

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

/// The shortest part of a secret scrubbed when echoed alone (a truncated or masked echo).
const MIN_PARTIAL_LEN: usize = 8;

/// How many times a percent escape may have been encoded again (`%25` for `%`).
const MAX_PERCENT_LEVELS: usize = 3;

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
        // Every form of a secret's byte (itself, or an escape) takes at least one byte of text:
        // a secret longer than the text left cannot start here.
        let end = secrets
            .iter()
            .filter(|secret| secret.len() <= bytes.len() - at)
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
        // Text shorter than every base64 core cannot hold one: the usual short string (a
        // status, a name) skips encoding a long secret (an 800-byte token) six times.
        if out.len() >= shortest_base64_core(secret.len()) {
            for core in base64_cores(secret) {
                if out.contains(&core) {
                    out = out.replace(&core, REDACTED);
                }
            }
        }
        if !may_hold_a_partial(&out, secret) {
            continue;
        }
        for (at, part) in partials(secret) {
            while let Some(found) = out.find(part) {
                out = scrub_run(&out, found, part.len(), secret, at);
            }
        }
    }
    out
}

/// Whether `text` may hold a partial echo of `secret`: every window [`partials`] looks for
/// holds one of a few anchors (runs of [`MIN_PARTIAL_LEN`] bytes spaced less than a window
/// apart), so text with none of them holds none; a long secret (an 800-byte token has 400
/// windows) then costs a few scans of the text instead of one per window, and none when the
/// text is shorter than a window.
fn may_hold_a_partial(text: &str, secret: &[u8]) -> bool {
    let window = (secret.len() / 2).max(MIN_PARTIAL_LEN);
    if secret.len() <= window || text.len() < window {
        return false;
    }
    let step = (window - MIN_PARTIAL_LEN + 1).max(1);
    (0..=secret.len() - MIN_PARTIAL_LEN)
        .step_by(step)
        .map(|at| std::str::from_utf8(&secret[at..at + MIN_PARTIAL_LEN]))
        // An anchor that cuts a character in two cannot be searched as text: look at every window.
        .any(|anchor| anchor.is_ok_and(|anchor| text.contains(anchor)) || anchor.is_err())
}

/// `text` with the literal run of `secret` around the window `secret[at..at + len]` found at
/// `found` replaced: the match extended while the text goes on (and back) as the secret does,
/// so that what is left beside the window (up to half the secret) goes too. Extended over ASCII
/// only, so that the cut falls on character boundaries.
fn scrub_run(text: &str, found: usize, len: usize, secret: &[u8], at: usize) -> String {
    let bytes = text.as_bytes();
    let (mut start, mut end) = (found, found + len);
    let mut back = at;
    while start > 0
        && back > 0
        && bytes[start - 1] == secret[back - 1]
        && bytes[start - 1].is_ascii()
    {
        start -= 1;
        back -= 1;
    }
    let mut ahead = at + len;
    while end < bytes.len()
        && ahead < secret.len()
        && bytes[end] == secret[ahead]
        && bytes[end].is_ascii()
    {
        end += 1;
        ahead += 1;
    }
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..start]);
    out.push_str(REDACTED);
    out.push_str(&text[end..]);
    out
}

/// The literal runs of `secret` that count as an echo of it alone, with their offsets: each of
/// length max(half the secret, [`MIN_PARTIAL_LEN`]), when the secret is longer than that.
fn partials(secret: &[u8]) -> Vec<(usize, &str)> {
    let len = (secret.len() / 2).max(MIN_PARTIAL_LEN);
    if secret.len() <= len {
        return Vec::new();
    }
    secret
        .windows(len)
        .enumerate()
        .filter_map(|(at, window)| Some((at, std::str::from_utf8(window).ok()?)))
        .collect()
}

/// A length no core of [`base64_cores`] of a `len`-byte secret is shorter than: the secret's
/// bits fill `4 * len / 3` characters, and a core, cut to the characters wholly inside them,
/// is at most one shorter (at most two is assumed).
fn shortest_base64_core(len: usize) -> usize {
    (4 * len / 3).saturating_sub(2).max(MIN_BASE64_LEN)
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
        if !first.eq_ignore_ascii_case(&self.secret[0])
            && !matches!(first, b'%' | b'+' | b'\\' | b'&')
        {
            return None;
        }
        self.from(at, 0)
    }

    /// Where a match of `secret[j..]` starting at `text[i..]` ends. Plain bytes are followed
    /// in a loop; where an escape starts, each of its readings (and the literal byte) is tried.
    fn from(&mut self, mut i: usize, mut j: usize) -> Option<usize> {
        loop {
            if j == self.secret.len() {
                return Some(i);
            }
            // Letter case may differ: an upstream may upper- or lower-case what it echoes.
            let literal = self
                .text
                .get(i)
                .is_some_and(|b| b.eq_ignore_ascii_case(&self.secret[j]));
            let readings = decode(self.text, i);
            if readings.is_empty() {
                if !literal {
                    return None;
                }
                i += 1;
                j += 1;
                continue;
            }
            if self.dead.contains(&(i, j)) {
                return None;
            }
            for (len, bytes) in readings {
                let fits = self
                    .secret
                    .get(j..j + bytes.len())
                    .is_some_and(|want| want.eq_ignore_ascii_case(&bytes));
                if fits && let Some(end) = self.from(i + len, j + bytes.len()) {
                    return Some(end);
                }
            }
            if literal && let Some(end) = self.from(i + 1, j + 1) {
                return Some(end);
            }
            self.dead.insert((i, j));
            return None;
        }
    }
}

/// The readings of the escape at `text[at..]`, if one starts there: how many bytes each spans
/// and the bytes it stands for (a percent escape encoded again has one per level).
fn decode(text: &[u8], at: usize) -> Vec<(usize, Vec<u8>)> {
    let Some(rest) = text.get(at..) else {
        return Vec::new();
    };
    let one = match rest.first() {
        Some(b'%') => {
            return percent(rest, 0)
                .into_iter()
                .map(|(len, byte)| (len, vec![byte]))
                .collect();
        }
        Some(b'+') => Some((1, vec![b' '])),
        Some(b'\\') => json_escape(rest),
        Some(b'&') => html_entity(rest),
        _ => None,
    };
    one.into_iter().collect()
}

/// The readings of a percent escape at the start of `rest` (which starts with `%`): its
/// length and byte, and when that byte is `%` itself followed by two more digits (an escape
/// encoded again: `%2541`, or `%25%34%31` with each digit escaped too), the inner reading.
fn percent(rest: &[u8], level: usize) -> Vec<(usize, u8)> {
    let Some((high_len, high)) = hex_digit(rest, 1, level) else {
        return Vec::new();
    };
    let Some((low_len, low)) = hex_digit(rest, 1 + high_len, level) else {
        return Vec::new();
    };
    let len = 1 + high_len + low_len;
    let byte = (high << 4) | low;
    let mut readings = vec![(len, byte)];
    if byte == b'%'
        && level < MAX_PERCENT_LEVELS
        && let Some(after) = rest.get(len..)
    {
        let inner = [b"%".as_slice(), after].concat();
        readings.extend(
            percent(&inner, level + 1)
                .into_iter()
                .map(|(inner_len, inner_byte)| (len + inner_len - 1, inner_byte)),
        );
    }
    readings
}

/// A hex digit at `rest[at..]`: literal, or (in an escape encoded again) itself an escape.
fn hex_digit(rest: &[u8], at: usize, level: usize) -> Option<(usize, u8)> {
    let first = *rest.get(at)?;
    if let Some(digit) = (first as char).to_digit(16) {
        return Some((1, u8::try_from(digit).ok()?));
    }
    if first == b'%' && level < MAX_PERCENT_LEVELS {
        let (len, byte) = *percent(rest.get(at..)?, level + 1).first()?;
        let digit = (byte as char).to_digit(16)?;
        return Some((len, u8::try_from(digit).ok()?));
    }
    None
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
