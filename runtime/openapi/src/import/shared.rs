//! The shared schemas (`spec.schemas`) a manifest keeps: those its tools reach, directly or
//! through each other. The converter collects every schema it converted, including some of
//! operations that were then skipped or dropped; they are left out so the manifest carries no
//! schema nothing uses. Pure.

use mcp_declaration::Declaration;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// How a converted schema refers to a shared one.
const PREFIX: &str = "#/schemas/";

/// The entries of `converted` that the tools of `declaration` reach.
pub(super) fn reached(
    declaration: &Declaration,
    converted: &Map<String, Value>,
) -> BTreeMap<String, Value> {
    let mut todo = Vec::new();
    for tool in &declaration.tools {
        for schema in [&tool.input_schema, &tool.output_schema]
            .into_iter()
            .flatten()
        {
            for value in schema.values() {
                references(value, &mut todo);
            }
        }
    }
    let mut kept = BTreeMap::new();
    while let Some(name) = todo.pop() {
        if kept.contains_key(&name) {
            continue;
        }
        if let Some(schema) = converted.get(&name) {
            references(schema, &mut todo);
            kept.insert(name, schema.clone());
        }
    }
    kept
}

/// The indexes of the tools of `declaration` that reach the shared schema `name`.
pub(super) fn users(
    declaration: &Declaration,
    converted: &Map<String, Value>,
    name: &str,
) -> Vec<usize> {
    declaration
        .tools
        .iter()
        .enumerate()
        .filter(|(_, tool)| {
            let one = Declaration {
                tools: vec![(*tool).clone()],
                ..Default::default()
            };
            reached(&one, converted).contains_key(name)
        })
        .map(|(index, _)| index)
        .collect()
}

/// Pushes the name of every shared schema `value` refers to. Every `$ref` string counts, even
/// one inside data (an `enum` value): keeping a schema too many is harmless, one too few is not.
fn references(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(name) = map
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix(PREFIX))
            {
                found.push(name.split('/').next().unwrap_or(name).to_owned());
            }
            map.values().for_each(|v| references(v, found));
        }
        Value::Array(list) => list.iter().for_each(|v| references(v, found)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_declaration::Tool;
    use serde_json::json;

    #[test]
    fn only_what_the_tools_reach_is_kept() {
        let converted = json!({
            "A": {"properties": {"b": {"$ref": "#/schemas/B"}}},
            "B": {"items": {"$ref": "#/schemas/A"}},
            "C": {"type": "string"},
            "D": {"type": "integer"},
        });
        let object = |v: Value| v.as_object().cloned();
        let declaration = Declaration {
            tools: vec![Tool {
                input_schema: object(json!({"properties": {"a": {"$ref": "#/schemas/A"}}})),
                output_schema: object(json!({"properties": {"c": {"$ref": "#/schemas/C/x"}}})),
                ..Default::default()
            }],
            ..Default::default()
        };
        let converted = converted.as_object().unwrap();
        let kept = reached(&declaration, converted);
        assert_eq!(kept.keys().collect::<Vec<_>>(), ["A", "B", "C"]);
        assert_eq!(users(&declaration, converted, "B"), [0]);
        assert!(users(&declaration, converted, "D").is_empty());
    }
}
