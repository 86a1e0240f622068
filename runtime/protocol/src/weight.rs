//! How much memory a message would take once parsed, judged before parsing it: a body made of
//! tiny values (`[0,0,0,...]`, `{"a":{},...}`) costs tens of times its size as JSON values.
//! [`weigh`] bounds the parsed size of any body (transports charge it to a shared budget before
//! parsing); large bodies are walked once without building anything and refused when they
//! hold more values than their size allows. Pure.

use super::error::McpError;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::cell::Cell;
use std::fmt;

/// Bodies up to this size are parsed without the check (their values are small anyway).
const CHECKED_FROM: usize = 64 * 1024;
/// Bytes of body each value must account for, on average, in a checked body.
const BYTES_PER_VALUE: usize = 16;

/// Most bytes one parsed value may take: a `serde_json::Value` is 72 bytes, and arrays and maps
/// grow by doubling, so a slot may cost twice that; a map entry adds its key's `String`, hash
/// and index. Checked against a counting allocator in `tests/weight.rs`.
pub const BYTES_PER_PARSED_VALUE: usize = 160;

/// A body found fit to parse, with a bound of the bytes its parsed form takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Weighed {
    /// At most this many bytes once parsed (the body's own bytes included: strings are copied).
    pub bytes: usize,
}

/// The weight of `body` once parsed, without parsing it. Small bodies are bounded by a scan:
/// every value but the first follows a `,`, `:`, `[` or `{` (strings holding those only make
/// the bound looser). Large bodies are walked (their values counted exactly) and refused when
/// they hold more values than their size allows.
pub fn weigh(body: &[u8]) -> Result<Weighed, McpError> {
    let values = if body.len() <= CHECKED_FROM {
        1 + separators(body)
    } else {
        count(body)?
    };
    Ok(Weighed {
        bytes: body
            .len()
            .saturating_add(values.saturating_mul(BYTES_PER_PARSED_VALUE)),
    })
}

/// The `,`, `:`, `[` and `{` in `body`. Counted per chunk of 255 bytes into a `u8`, which cannot
/// overflow there, so the compiler turns the comparisons into vector instructions (a byte at a
/// time, this scan cost a stateless call 3.2k instructions).
fn separators(body: &[u8]) -> usize {
    body.chunks(255)
        .map(|chunk| {
            let in_chunk = chunk.iter().fold(0u8, |sum, b| {
                sum + u8::from(matches!(b, b',' | b':' | b'[' | b'{'))
            });
            usize::from(in_chunk)
        })
        .sum()
}

/// Refuses a body that would parse into more values than its size allows.
pub(crate) fn check(body: &[u8]) -> Result<(), McpError> {
    if body.len() <= CHECKED_FROM {
        return Ok(());
    }
    count(body).map(|_| ())
}

/// The values of a large body (an upper bound when it is not JSON: the parser reports that).
fn count(body: &[u8]) -> Result<usize, McpError> {
    let allowed = body.len() / BYTES_PER_VALUE;
    let budget = Cell::new(allowed);
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    match (Count { budget: &budget }).deserialize(&mut deserializer) {
        Ok(()) => Ok(allowed - budget.get()),
        // A syntax error is reported by the real parse, with its usual message.
        Err(_) if budget.get() > 0 => Ok(allowed),
        Err(_) => Err(McpError::InvalidRequest(format!(
            "the message holds too many JSON values for its size (at most one per {BYTES_PER_VALUE} bytes above {} KiB)",
            CHECKED_FROM / 1024
        ))),
    }
}

#[derive(Clone, Copy)]
struct Count<'b> {
    budget: &'b Cell<usize>,
}

impl Count<'_> {
    fn spend<E: serde::de::Error>(&self) -> Result<(), E> {
        match self.budget.get().checked_sub(1) {
            Some(left) if left > 0 => {
                self.budget.set(left);
                Ok(())
            }
            _ => {
                self.budget.set(0);
                Err(E::custom("too many values"))
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for Count<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Count<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        self.spend()
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        self.spend()
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        self.spend()
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        self.spend()
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
        self.spend()
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.spend()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.spend()?;
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.spend()?;
        while map.next_key_seed(Key { count: self })?.is_some() {
            map.next_value_seed(self)?;
        }
        Ok(())
    }
}

/// A member name: counted as a value (it becomes a `String` in the map).
struct Key<'b> {
    count: Count<'b>,
}

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators_are_counted_across_chunks() {
        let body: Vec<u8> = (0..2000u32)
            .map(|i| b"{,a:[\"x]}"[(i as usize * 7) % 9])
            .collect();
        let one_by_one = body
            .iter()
            .filter(|b| matches!(b, b',' | b':' | b'[' | b'{'))
            .count();
        assert!(one_by_one > 255, "{one_by_one}");
        assert_eq!(separators(&body), one_by_one);
        assert_eq!(separators(&[b','; 255]), 255);
        assert_eq!(separators(&[b','; 256]), 256);
        assert_eq!(separators(b""), 0);
    }

    #[test]
    fn refuses_large_bodies_of_tiny_values() {
        let dense = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{{"x":[{}0]}}}}}}"#,
            "0,".repeat(500_000)
        );
        assert!(matches!(
            check(dense.as_bytes()),
            Err(McpError::InvalidRequest(_))
        ));
        let objects = format!(r#"{{"a":[{}{{}}]}}"#, "{},".repeat(100_000));
        assert!(check(objects.as_bytes()).is_err());
    }

    #[test]
    fn weights_bound_small_bodies_by_their_punctuation_and_count_large_ones() {
        let small = weigh(br#"{"a":[1,2]}"#).unwrap();
        // Values: the object, the key's value, the array, two items (and a key): 1 + 4 marks.
        assert_eq!(small.bytes, 11 + 5 * BYTES_PER_PARSED_VALUE);
        let text = format!(r#"{{"doc":"{}"}}"#, "lorem, ipsum ".repeat(10_000));
        let large = weigh(text.as_bytes()).unwrap();
        // Walked: three values (the object, its key, the string), whatever the commas.
        assert_eq!(large.bytes, text.len() + 3 * BYTES_PER_PARSED_VALUE);
        let dense = format!("[{}0]", "0,".repeat(100_000));
        assert!(weigh(dense.as_bytes()).is_err());
    }

    #[test]
    fn accepts_large_bodies_of_real_content() {
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{{"doc":"{}","rows":[{}1]}}}}}}"#,
            "lorem ipsum ".repeat(300_000),
            "123456789012345,".repeat(10_000)
        );
        assert_eq!(check(text.as_bytes()), Ok(()));
        assert_eq!(check(b"[0,0,0]"), Ok(()));
        // Malformed JSON is left to the parser and its usual message.
        let unterminated = format!(r#"{{"a": "{}"#, "x".repeat(100_000));
        assert_eq!(check(unterminated.as_bytes()), Ok(()));
    }
}
