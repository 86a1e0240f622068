//! The top level of an incoming JSON-RPC message, read field by field instead of into a JSON
//! map: the map would hash and allocate every member name only for the parser to take the
//! members out again (a fifth of a stateless request's cost, by callgrind). Pure.

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::fmt;

/// The members the parser looks at; `None` when absent. A repeated member counts as written
/// last, as a JSON map would keep it.
#[derive(Debug, Default)]
pub(crate) struct Envelope {
    /// Whether the message is an object at all (batches and scalars are refused).
    pub is_object: bool,
    /// `jsonrpc`.
    pub jsonrpc: Option<Value>,
    /// `id` (`Some(Value::Null)` for an explicit null).
    pub id: Option<Value>,
    /// `method`.
    pub method: Option<Value>,
    /// `params`.
    pub params: Option<Value>,
    /// Whether `result` is present.
    pub has_result: bool,
    /// Whether `error` is present.
    pub has_error: bool,
    /// `result` or `error`, kept for a response (the answer to a server-to-client request).
    pub outcome: Option<Value>,
}

enum Field {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl<'de> de::Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldVisitor;
        impl Visitor<'_> for FieldVisitor {
            type Value = Field;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<Field, E> {
                Ok(match name {
                    "jsonrpc" => Field::Jsonrpc,
                    "id" => Field::Id,
                    "method" => Field::Method,
                    "params" => Field::Params,
                    "result" => Field::Result,
                    "error" => Field::Error,
                    _ => Field::Other,
                })
            }
        }
        deserializer.deserialize_identifier(FieldVisitor)
    }
}

impl<'de> de::Deserialize<'de> for Envelope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(EnvelopeVisitor)
    }
}

struct EnvelopeVisitor;

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = Envelope;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
        let mut envelope = Envelope {
            is_object: true,
            ..Envelope::default()
        };
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Jsonrpc => envelope.jsonrpc = Some(map.next_value()?),
                Field::Id => envelope.id = Some(map.next_value()?),
                Field::Method => envelope.method = Some(map.next_value()?),
                Field::Params => envelope.params = Some(map.next_value()?),
                Field::Result => {
                    envelope.outcome = Some(map.next_value()?);
                    envelope.has_result = true;
                }
                Field::Error => {
                    envelope.outcome = Some(map.next_value()?);
                    envelope.has_error = true;
                }
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(envelope)
    }

    // Anything but an object is read to its end and then refused by the caller.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Envelope, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Envelope::default())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Envelope, E> {
        Ok(Envelope::default())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Envelope, E> {
        Ok(Envelope::default())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Envelope, E> {
        Ok(Envelope::default())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Envelope, E> {
        Ok(Envelope::default())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Envelope, E> {
        Ok(Envelope::default())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Envelope, E> {
        Ok(Envelope::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Envelope {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn reads_members_and_keeps_the_last_of_a_repeated_one() {
        let envelope = read(r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m","x":[1],"result":{}}"#);
        assert!(envelope.is_object && envelope.has_result && !envelope.has_error);
        assert_eq!(envelope.id, Some(Value::from(2)));
        assert_eq!(envelope.method, Some(Value::from("m")));
        assert_eq!(envelope.params, None);
        assert_eq!(read(r#"{"id":null}"#).id, Some(Value::Null));
    }

    #[test]
    fn reads_non_objects_to_their_end() {
        for text in [
            "[1, {\"a\": [2]}]",
            "3",
            "-3",
            "1.5",
            "\"s\"",
            "null",
            "true",
        ] {
            assert!(!read(text).is_object, "{text}");
        }
        assert!(serde_json::from_str::<Envelope>("[1] x").is_err());
    }
}
