//! Walking the subschemas of a JSON Schema (2020-12, and the draft 4-7 spellings): every place
//! where a `$ref` is a reference, as opposed to data that merely looks like one (`enum`,
//! `const`, `default`, `examples`, a property *named* `$ref`). Each subschema is visited with
//! whether the way to it descends into the value (a property, an item) or applies to the same
//! value (`allOf`, `not`, `if`): only a cycle of references that descends ends when validating.
//! Pure.

use serde_json::{Map, Value};

/// Deepest subschema nesting walked. The YAML and JSON parsers the runtime and the operator read
/// manifests with refuse documents nested deeper than 128 levels, so no manifest that loads is
/// refused here; the bound keeps the recursion off the stack's edge if that ever changes.
pub(super) const MAX_NESTING: usize = 128;

/// Keywords holding one subschema applied to the same value.
const SAME_VALUE: &[&str] = &["not", "if", "then", "else"];
/// Keywords holding a list of subschemas applied to the same value.
const SAME_VALUE_LISTS: &[&str] = &["allOf", "anyOf", "oneOf"];
/// Keywords mapping names to subschemas applied to the same value (`dependencies` is draft 7;
/// its string-list entries are not schemas and are skipped as non-objects).
const SAME_VALUE_MAPS: &[&str] = &["dependentSchemas", "dependencies"];
/// Keywords holding one subschema applied to parts of the value (or, for `contentSchema`, not
/// applied by validation at all).
const DESCENDING: &[&str] = &[
    "items",
    "additionalItems",
    "contains",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
    "contentSchema",
];
/// Keywords holding a list of subschemas applied to items (`items` as a list is draft 4-2019).
const DESCENDING_LISTS: &[&str] = &["prefixItems", "items"];
/// Keywords mapping names to subschemas applied to properties, and the definitions, which apply
/// only where something refers to them (and are then reached through that reference).
const DESCENDING_MAPS: &[&str] = &["properties", "patternProperties", "$defs", "definitions"];

/// One subschema (an object) met by [`walk`].
pub(super) struct Visit<'a> {
    /// The subschema itself, to read or rewrite (`$ref`).
    pub schema: &'a mut Map<String, Value>,
    /// Its field path.
    pub path: &'a str,
    /// Whether the way from the root to it descends into the value.
    pub descended: bool,
}

/// Visits `schema` (found at `path`) and every subschema in it, depth first. Fails with the path
/// of a subschema nested deeper than [`MAX_NESTING`].
pub(super) fn walk(
    schema: &mut Value,
    path: &str,
    visit: &mut dyn FnMut(Visit<'_>),
) -> Result<(), String> {
    walk_at(schema, path, false, 0, visit)
}

fn walk_at(
    schema: &mut Value,
    path: &str,
    descended: bool,
    depth: usize,
    visit: &mut dyn FnMut(Visit<'_>),
) -> Result<(), String> {
    let Value::Object(map) = schema else {
        return Ok(());
    };
    if depth > MAX_NESTING {
        return Err(path.to_owned());
    }
    visit(Visit {
        schema: map,
        path,
        descended,
    });
    for (keyword, value) in map.iter_mut() {
        let key = keyword.as_str();
        let at = format!("{path}.{key}");
        let deeper = depth + 1;
        match value {
            Value::Array(list) if SAME_VALUE_LISTS.contains(&key) => {
                for (i, sub) in list.iter_mut().enumerate() {
                    walk_at(sub, &format!("{at}[{i}]"), descended, deeper, visit)?;
                }
            }
            Value::Array(list) if DESCENDING_LISTS.contains(&key) => {
                for (i, sub) in list.iter_mut().enumerate() {
                    walk_at(sub, &format!("{at}[{i}]"), true, deeper, visit)?;
                }
            }
            Value::Object(entries) if SAME_VALUE_MAPS.contains(&key) => {
                for (name, sub) in entries.iter_mut() {
                    walk_at(sub, &format!("{at}.{name}"), descended, deeper, visit)?;
                }
            }
            Value::Object(entries) if DESCENDING_MAPS.contains(&key) => {
                for (name, sub) in entries.iter_mut() {
                    walk_at(sub, &format!("{at}.{name}"), true, deeper, visit)?;
                }
            }
            sub if SAME_VALUE.contains(&key) => walk_at(sub, &at, descended, deeper, visit)?,
            sub if DESCENDING.contains(&key) => walk_at(sub, &at, true, deeper, visit)?,
            // Everything else is data or an annotation: a `$ref` inside it is not a reference.
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refs(mut schema: Value) -> Vec<(String, String, bool)> {
        let mut found = Vec::new();
        walk(&mut schema, "s", &mut |v: Visit<'_>| {
            if let Some(Value::String(r)) = v.schema.get("$ref") {
                found.push((v.path.to_owned(), r.clone(), v.descended));
            }
        })
        .unwrap();
        found
    }

    #[test]
    fn references_are_found_in_schema_places_only() {
        let found = refs(json!({
            "allOf": [{"$ref": "#/a"}],
            "properties": {"$ref": {"$ref": "#/b"}, "x": {"not": {"$ref": "#/c"}}},
            "items": [{"$ref": "#/d"}],
            "enum": [{"$ref": "#/data"}],
            "default": {"$ref": "#/data"},
            "x-note": {"$ref": "#/data"},
        }));
        let mut found: Vec<(&str, &str, bool)> = found
            .iter()
            .map(|(p, r, d)| (p.as_str(), r.as_str(), *d))
            .collect();
        found.sort();
        assert_eq!(
            found,
            [
                ("s.allOf[0]", "#/a", false),
                ("s.items[0]", "#/d", true),
                ("s.properties.$ref", "#/b", true),
                ("s.properties.x.not", "#/c", true),
            ]
        );
    }

    #[test]
    fn nesting_is_bounded() {
        let mut schema = json!(true);
        for _ in 0..=MAX_NESTING + 1 {
            schema = json!({"not": schema});
        }
        let err = walk(&mut schema, "s", &mut |_| {}).unwrap_err();
        assert!(err.starts_with("s.not.not."), "{err}");
    }
}
