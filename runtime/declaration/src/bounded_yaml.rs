//! YAML to JSON values under a size budget. YAML aliases let a small document stand for a huge
//! one (each alias repeats its anchor's whole subtree); the budget counts the nodes and string
//! bytes the expanded document would hold and stops as soon as it is spent. Pure.

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::cell::Cell;
use std::fmt;

/// Nodes plus string bytes a document may expand to, besides a multiple of its own length.
const BASE_BUDGET: usize = 1 << 20;
/// How many times its own length a document may expand to (aliases repeat some text).
const EXPANSION: usize = 8;

/// Parses `text` into a JSON value, refusing documents whose aliases expand them far past
/// their own size (what every YAML the runtime reads goes through: manifests, `check`,
/// imported specs).
pub fn parse(text: &str) -> Result<Value, serde_yaml_ng::Error> {
    let budget = Cell::new(BASE_BUDGET.saturating_add(text.len().saturating_mul(EXPANSION)));
    let deserializer = serde_yaml_ng::Deserializer::from_str(text);
    Bounded { budget: &budget }.deserialize(deserializer)
}

/// Parses every document of a multi-document stream (`---` between them) under one budget;
/// empty documents are left out.
pub fn parse_all(text: &str) -> Result<Vec<Value>, serde_yaml_ng::Error> {
    let budget = Cell::new(BASE_BUDGET.saturating_add(text.len().saturating_mul(EXPANSION)));
    let mut documents = Vec::new();
    for deserializer in serde_yaml_ng::Deserializer::from_str(text) {
        match (Bounded { budget: &budget }).deserialize(deserializer)? {
            Value::Null => {}
            document => documents.push(document),
        }
    }
    Ok(documents)
}

#[derive(Clone, Copy)]
struct Bounded<'b> {
    budget: &'b Cell<usize>,
}

impl Bounded<'_> {
    fn spend<E: serde::de::Error>(&self, amount: usize) -> Result<(), E> {
        match self.budget.get().checked_sub(amount.saturating_add(1)) {
            Some(left) => {
                self.budget.set(left);
                Ok(())
            }
            None => Err(E::custom(
                "the document expands (through aliases) far beyond its own size",
            )),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Bounded<'_> {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Bounded<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML value")
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Value, E> {
        self.spend(0)?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Value, E> {
        self.spend(0)?;
        Ok(Value::from(v))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
        self.spend(0)?;
        Ok(Value::from(v))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        self.spend(0)?;
        serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("a number that JSON cannot hold (NaN or infinite)"))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        self.spend(v.len())?;
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Value, E> {
        self.spend(v.len())?;
        Ok(Value::String(v))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        self.spend(0)?;
        Ok(Value::Null)
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.spend(0)?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.spend(0)?;
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            self.spend(key.len())?;
            let value = map.next_value_seed(self)?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ordinary_documents_and_modest_aliases() {
        let value = parse("a: &x [1, two, {b: null}]\nc: *x\nd: 1.5\n").unwrap();
        assert_eq!(
            value,
            serde_json::json!({"a": [1, "two", {"b": null}], "c": [1, "two", {"b": null}], "d": 1.5})
        );
    }

    #[test]
    fn refuses_alias_bombs() {
        // One anchor of 2,000 items aliased 2,000 times: 4 million nodes from 12 KB, within
        // serde_yaml_ng's own repetition limit (it counts alias jumps, not what they expand to).
        let items = vec!["x"; 2000].join(", ");
        let aliases = vec!["*a"; 2000].join(", ");
        let doc = format!("a: &a [{items}]\nb: [{aliases}]\n");
        let err = parse(&doc).unwrap_err().to_string();
        assert!(err.contains("far beyond its own size"), "{err}");
    }
}
