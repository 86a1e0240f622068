//! How much memory a message would take once parsed, judged before parsing it: a large body
//! made of tiny values (`[0,0,0,...]`, `{"a":{},...}`) costs tens of times its size as JSON
//! values. Large bodies are walked once without building anything and refused when they hold
//! more values than their size allows. Pure.

use super::error::McpError;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::cell::Cell;
use std::fmt;

/// Bodies up to this size are parsed without the check (their values are small anyway).
const CHECKED_FROM: usize = 64 * 1024;
/// Bytes of body each value must account for, on average, in a checked body.
const BYTES_PER_VALUE: usize = 16;

/// Refuses a body that would parse into more values than its size allows.
pub fn check(body: &[u8]) -> Result<(), McpError> {
    if body.len() <= CHECKED_FROM {
        return Ok(());
    }
    let budget = Cell::new(body.len() / BYTES_PER_VALUE);
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    match (Count { budget: &budget }).deserialize(&mut deserializer) {
        Ok(()) => Ok(()),
        // A syntax error is reported by the real parse, with its usual message.
        Err(_) if budget.get() > 0 => Ok(()),
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
