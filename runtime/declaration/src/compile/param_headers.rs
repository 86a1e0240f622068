//! `x-mcp-header` in a tool's `inputSchema` (SEP-2243, 2026-07-28): a property marked with it
//! is mirrored by clients into an `Mcp-Param-{Name}` header. The spec makes a tool with a
//! misplaced or malformed annotation invalid (clients drop it from their list), so the compiler
//! refuses it here, with the annotation's path, rather than serving a tool no client can call.
//! Pure.

use crate::field_error::FieldError;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// The schema keyword that marks a property.
pub const X_MCP_HEADER: &str = "x-mcp-header";

/// The prefix of the header a marked property travels in.
pub const PARAM_HEADER_PREFIX: &str = "Mcp-Param-";

/// Longest name an annotation may give (ours, not the spec's: a header name is bounded like
/// every other input; real names are a word or two).
const MAX_NAME_LEN: usize = 64;

/// Keywords whose value is a map of names to subschemas that are *not* statically reachable.
const SCHEMA_MAPS: &[&str] = &[
    "$defs",
    "definitions",
    "patternProperties",
    "dependentSchemas",
];

/// Keywords whose value is a subschema or a list of them, none statically reachable.
const SCHEMA_SLOTS: &[&str] = &[
    "items",
    "prefixItems",
    "additionalItems",
    "contains",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
];

/// The primitive type a marked property has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// `type: string`.
    String,
    /// `type: integer`.
    Integer,
    /// `type: boolean`.
    Boolean,
}

/// One marked property of a tool's arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamHeader {
    /// The name as declared, for messages (`Region`).
    pub name: String,
    /// The header's name, lower-cased as HTTP libraries hand it over (`mcp-param-region`).
    pub header: String,
    /// The chain of property names from the arguments to the value.
    pub path: Vec<String>,
    /// Its declared type.
    pub kind: ParamKind,
}

/// Every `x-mcp-header` of `schema` (a tool's `inputSchema` at `path`), or why each misplaced
/// or malformed one makes the tool invalid.
pub(super) fn scan(schema: &Map<String, Value>, path: &str) -> (Vec<ParamHeader>, Vec<FieldError>) {
    let mut scan = Scan::default();
    scan.schema(schema, path, Some(Vec::new()));
    (scan.found, scan.errors)
}

#[derive(Default)]
struct Scan {
    found: Vec<ParamHeader>,
    errors: Vec<FieldError>,
    /// Lower-cased names seen, with the path that declared each first.
    seen: HashMap<String, String>,
}

impl Scan {
    /// Walks one subschema; `chain` is its property path when it is statically reachable
    /// (only `properties` steps from the root), `None` below any other keyword.
    fn schema(&mut self, schema: &Map<String, Value>, path: &str, chain: Option<Vec<String>>) {
        if let Some(value) = schema.get(X_MCP_HEADER) {
            self.annotation(
                schema,
                value,
                &format!("{path}.{X_MCP_HEADER}"),
                chain.as_ref(),
            );
        }
        for (keyword, value) in schema {
            let at = format!("{path}.{keyword}");
            match keyword.as_str() {
                "properties" => {
                    for (name, sub) in value.as_object().into_iter().flatten() {
                        let chain = chain.clone().map(|mut c| {
                            c.push(name.clone());
                            c
                        });
                        self.value(sub, &format!("{at}.{name}"), chain);
                    }
                }
                k if SCHEMA_MAPS.contains(&k) => {
                    for (name, sub) in value.as_object().into_iter().flatten() {
                        self.value(sub, &format!("{at}.{name}"), None);
                    }
                }
                k if SCHEMA_SLOTS.contains(&k) => match value {
                    Value::Array(subs) => {
                        for (i, sub) in subs.iter().enumerate() {
                            self.value(sub, &format!("{at}[{i}]"), None);
                        }
                    }
                    sub => self.value(sub, &at, None),
                },
                // `default`, `const`, `enum`, `examples` and the like hold instances, not
                // schemas: an `x-mcp-header` key inside them is data.
                _ => {}
            }
        }
    }

    fn value(&mut self, value: &Value, path: &str, chain: Option<Vec<String>>) {
        if let Value::Object(schema) = value {
            self.schema(schema, path, chain);
        }
    }

    fn annotation(
        &mut self,
        schema: &Map<String, Value>,
        value: &Value,
        path: &str,
        chain: Option<&Vec<String>>,
    ) {
        let Some(chain) = chain.filter(|c| !c.is_empty()) else {
            self.error(
                path,
                "allowed only on a property reached from the schema's root through `properties` \
                 alone (not under items, allOf/anyOf/oneOf/not, if/then/else, $defs or $ref)",
            );
            return;
        };
        let Some(name) = value.as_str() else {
            self.error(path, "must be a string");
            return;
        };
        if !valid_param_header_name(name) {
            self.error(
                path,
                format!(
                    "must be 1-{MAX_NAME_LEN} characters of an HTTP header name \
                     (letters, digits and !#$%&'*+-.^_`|~)"
                ),
            );
            return;
        }
        let kind = match schema.get("type").and_then(Value::as_str) {
            Some("string") => ParamKind::String,
            Some("integer") => ParamKind::Integer,
            Some("boolean") => ParamKind::Boolean,
            Some("number") => {
                self.error(
                    path,
                    "not allowed on a `number` property: only string, integer and boolean \
                     properties may be mirrored into a header",
                );
                return;
            }
            _ => {
                self.error(
                    path,
                    "the property must declare `type` string, integer or boolean",
                );
                return;
            }
        };
        let lower = name.to_ascii_lowercase();
        if let Some(first) = self.seen.get(&lower) {
            let message = format!("`{name}` is already declared at {first} (names ignore case)");
            self.error(path, message);
            return;
        }
        self.seen.insert(lower.clone(), path.to_owned());
        self.found.push(ParamHeader {
            name: name.to_owned(),
            header: format!("{}{lower}", PARAM_HEADER_PREFIX.to_ascii_lowercase()),
            path: chain.clone(),
            kind,
        });
    }

    fn error(&mut self, path: &str, message: impl Into<String>) {
        self.errors.push(FieldError {
            path: path.to_owned(),
            message: message.into(),
        });
    }
}

/// Whether `name` may be an `x-mcp-header` value: 1-64 characters of an RFC 9110 token.
pub fn valid_param_header_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_NAME_LEN && name.bytes().all(is_tchar)
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(schema: Value) -> (Vec<ParamHeader>, Vec<String>) {
        let Value::Object(schema) = schema else {
            panic!("an object schema")
        };
        let (found, errors) = scan(&schema, "s");
        (found, errors.into_iter().map(|e| e.to_string()).collect())
    }

    #[test]
    fn finds_marked_properties_at_any_properties_depth() {
        let (found, errors) = run(json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "query": {"type": "string"},
                "opts": {"type": "object", "properties": {
                    "limit": {"type": "integer", "x-mcp-header": "Limit"},
                    "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"}
                }}
            }
        }));
        assert_eq!(errors, Vec::<String>::new());
        let got: Vec<_> = found
            .iter()
            .map(|p| (p.header.as_str(), p.path.join("/"), p.kind))
            .collect();
        assert_eq!(
            got,
            [
                ("mcp-param-region", "region".to_owned(), ParamKind::String),
                (
                    "mcp-param-limit",
                    "opts/limit".to_owned(),
                    ParamKind::Integer
                ),
                (
                    "mcp-param-dry-run",
                    "opts/dry".to_owned(),
                    ParamKind::Boolean
                ),
            ]
        );
    }

    #[test]
    fn refuses_each_misplaced_or_malformed_annotation_with_its_path() {
        let (found, errors) = run(json!({
            "type": "object",
            "x-mcp-header": "Root",
            "properties": {
                "a": {"type": "string", "x-mcp-header": "Same"},
                "b": {"type": "string", "x-mcp-header": "same"},
                "c": {"type": "number", "x-mcp-header": "C"},
                "d": {"type": "object", "x-mcp-header": "D"},
                "e": {"type": "string", "x-mcp-header": "has space"},
                "f": {"type": "string", "x-mcp-header": ""},
                "g": {"type": "string", "x-mcp-header": 7},
                "h": {"type": "array", "items": {"type": "string", "x-mcp-header": "H"}},
                "i": {"anyOf": [{"type": "string", "x-mcp-header": "I"}]},
                "j": {"type": "string", "default": {"x-mcp-header": "data, not a mark"}}
            },
            "$defs": {"k": {"type": "string", "x-mcp-header": "K"}}
        }));
        assert_eq!(found.len(), 1, "only `a` is valid: {found:?}");
        let paths: Vec<&str> = errors
            .iter()
            .map(|e| e.split_once(": ").map_or("", |(p, _)| p))
            .collect();
        assert_eq!(
            paths,
            [
                "s.x-mcp-header",
                "s.properties.b.x-mcp-header",
                "s.properties.c.x-mcp-header",
                "s.properties.d.x-mcp-header",
                "s.properties.e.x-mcp-header",
                "s.properties.f.x-mcp-header",
                "s.properties.g.x-mcp-header",
                "s.properties.h.items.x-mcp-header",
                "s.properties.i.anyOf[0].x-mcp-header",
                "s.$defs.k.x-mcp-header",
            ]
        );
        assert!(errors[1].contains("already declared at s.properties.a.x-mcp-header"));
        assert!(errors[2].contains("`number`"));
    }
}
