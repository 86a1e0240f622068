//! Kubernetes-specific rules added to the declaration's JSON Schema, which the runtime crate
//! defines without knowing about Kubernetes: list keys that make names unique, CEL rules for what
//! a schema alone cannot say, and a structural form of MCP's tagged content blocks. Pure.
//!
//! Runs as a schemars transform on `MCPServerSpec`, before kube's structural rewrite.

use serde_json::{Map, Value, json};

/// Reply sources a tool may declare: the declared reply (`content` and/or `structuredContent`),
/// or one of these fields when the runtime's `Tool` has them (such as `http`).
const OTHER_REPLY_SOURCES: &[&str] = &["http"];

/// Most entries of the declaration's lists. The API server estimates the worst-case cost of every
/// CEL rule from the most items a list can hold, and refuses a CRD whose rules could cost too
/// much; bounded lists keep the rules affordable (and a manifest reasonable).
const LIST_LIMITS: &[(&str, u32)] = &[
    ("tools", 256),
    ("resources", 512),
    ("resourceTemplates", 256),
    ("prompts", 256),
];
/// Most entries of any other list holding items that CEL rules check (content blocks, messages,
/// HTTP response mappings).
const NESTED_LIST_LIMIT: u32 = 64;

/// Adds the Kubernetes rules to the schema of an `MCPServerSpec`.
pub fn declaration_rules(schema: &mut schemars::Schema) {
    item_rules(schema);
    if let Some(spec) = schema.as_object_mut() {
        super::platform_fields::exposure_rules(spec);
    }
}

/// Adds the Kubernetes rules of the item lists (tools, resources, templates, prompts) to the
/// schema of an `MCPServerSpec` or an `MCPToolSetSpec`.
pub fn item_rules(schema: &mut schemars::Schema) {
    kubernetes_formats(schema);
    let Some(spec) = schema.as_object_mut() else {
        return;
    };
    rewrite_tagged_unions(spec);
    let Some(properties) = spec.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };

    for (list, most) in LIST_LIMITS {
        if let Some(array) = properties.get_mut(*list).and_then(Value::as_object_mut) {
            array.insert("maxItems".into(), json!(most));
        }
    }
    if let Some(tools) = properties.get_mut("tools").and_then(Value::as_object_mut) {
        unique_by(tools, "name");
        if let Some(tool) = items(tools) {
            limit_name(tool, r"^[A-Za-z0-9_.-]{1,128}$");
            // MCP's structuredContent is a JSON object; typed so, CEL rules can test for it.
            set_property(tool, "structuredContent", "type", json!("object"));
            let sources = reply_sources(tool);
            add_rule(
                tool,
                json!({
                    "rule": sources.rule,
                    "messageExpression": format!("'tool ' + self.name + ': declare exactly one reply source: {}'", sources.names),
                    "reason": "FieldValueInvalid",
                }),
            );
        }
    }
    if let Some(views) = properties.get_mut("views").and_then(Value::as_object_mut) {
        // Names are unique (the runtime's compiler checks paths, patterns and the rest).
        unique_by(views, "name");
        if let Some(view) = items(views) {
            set_property(
                view,
                "name",
                "pattern",
                json!("^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$"),
            );
            set_property(view, "path", "pattern", json!("^/"));
        }
    }
    if let Some(resources) = properties
        .get_mut("resources")
        .and_then(Value::as_object_mut)
    {
        unique_by(resources, "uri");
        if let Some(resource) = items(resources) {
            set_property(resource, "uri", "maxLength", json!(2048));
            exactly_one(
                resource,
                &["text", "blob", "file", "http"],
                "'resource ' + self.uri",
            );
        }
    }
    if let Some(templates) = properties
        .get_mut("resourceTemplates")
        .and_then(Value::as_object_mut)
    {
        unique_by(templates, "uriTemplate");
        if let Some(template) = items(templates) {
            set_property(template, "uriTemplate", "maxLength", json!(2048));
            exactly_one(
                template,
                &["text", "http"],
                "'resource template ' + self.uriTemplate",
            );
        }
    }
    if let Some(prompts) = properties.get_mut("prompts").and_then(Value::as_object_mut) {
        unique_by(prompts, "name");
        if let Some(prompt) = items(prompts) {
            limit_name(prompt, r"^.{1,128}$");
            if let Some(arguments) = prompt
                .get_mut("properties")
                .and_then(|p| p.get_mut("arguments"))
                .and_then(Value::as_object_mut)
            {
                unique_by(arguments, "name");
            }
        }
    }
    bound_lists_with_rules(spec);
}

/// Replaces integer formats the API server does not know (`uint32`, `uint64`, ...) with the
/// ones it does; the unsigned types already carry `minimum: 0`.
pub fn kubernetes_formats(schema: &mut schemars::Schema) {
    if let Some(object) = schema.as_object_mut() {
        rewrite_formats(object);
    }
}

fn rewrite_formats(schema: &mut Map<String, Value>) {
    if let Some(format) = schema.get_mut("format") {
        let known = match format.as_str() {
            Some("uint8" | "uint16" | "uint32" | "int8" | "int16") => Some("int32"),
            Some("uint64" | "uint") => Some("int64"),
            _ => None,
        };
        if let Some(known) = known {
            *format = json!(known);
        }
    }
    for value in schema.values_mut() {
        match value {
            Value::Object(child) => rewrite_formats(child),
            Value::Array(list) => list
                .iter_mut()
                .filter_map(Value::as_object_mut)
                .for_each(rewrite_formats),
            _ => {}
        }
    }
}

/// The CEL rule "exactly one reply source" over the sources the tool schema has.
struct ReplySources {
    rule: String,
    names: String,
}

fn reply_sources(tool: &Map<String, Value>) -> ReplySources {
    let declared = "(has(self.content) || has(self.structuredContent))".to_owned();
    let mut checks = vec![declared];
    let mut names = vec!["content and/or structuredContent".to_owned()];
    let props = tool.get("properties").and_then(Value::as_object);
    for other in OTHER_REPLY_SOURCES {
        if props.is_some_and(|p| p.contains_key(*other)) {
            checks.push(format!("has(self.{other})"));
            names.push((*other).to_owned());
        }
    }
    let rule = if checks.len() == 1 {
        checks.remove(0)
    } else {
        format!("[{}].filter(x, x).size() == 1", checks.join(", "))
    };
    ReplySources {
        rule,
        names: names.join(", or "),
    }
}

/// Adds the rule "exactly one of these fields" over those of `fields` the item's schema has (a
/// field the runtime does not know yet is left out).
fn exactly_one(item: &mut Map<String, Value>, fields: &[&str], who: &str) {
    let properties = item.get("properties").and_then(Value::as_object);
    let present: Vec<&str> = fields
        .iter()
        .copied()
        .filter(|f| properties.is_some_and(|p| p.contains_key(*f)))
        .collect();
    if present.len() < 2 {
        return;
    }
    let checks: Vec<String> = present.iter().map(|f| format!("has(self.{f})")).collect();
    add_rule(
        item,
        json!({
            "rule": format!("[{}].filter(x, x).size() == 1", checks.join(", ")),
            "messageExpression": format!("{who} + ': declare exactly one of {}'", present.join(", ")),
            "reason": "FieldValueInvalid",
        }),
    );
}

/// Gives every unbounded list on the way to a CEL rule a `maxItems`, so the rule's estimated
/// cost is finite. Returns whether `schema` holds a rule.
fn bound_lists_with_rules(schema: &mut Map<String, Value>) -> bool {
    let mut has_rules = schema.contains_key("x-kubernetes-validations");
    for (key, value) in schema.iter_mut() {
        if key == "x-kubernetes-validations" {
            continue;
        }
        match value {
            Value::Object(child) => has_rules |= bound_lists_with_rules(child),
            Value::Array(list) => {
                for child in list.iter_mut().filter_map(Value::as_object_mut) {
                    has_rules |= bound_lists_with_rules(child);
                }
            }
            _ => {}
        }
    }
    let is_array = schema.get("type").and_then(Value::as_str) == Some("array");
    if has_rules && is_array && !schema.contains_key("maxItems") {
        schema.insert("maxItems".into(), json!(NESTED_LIST_LIMIT));
    }
    has_rules
}

/// The item schema of an array schema.
fn items(array: &mut Map<String, Value>) -> Option<&mut Map<String, Value>> {
    array.get_mut("items").and_then(Value::as_object_mut)
}

/// Makes a list a map keyed by `key`: the API server then refuses duplicate keys, naming the
/// duplicate, and server-side apply merges entries by key.
fn unique_by(array: &mut Map<String, Value>, key: &str) {
    array.insert("x-kubernetes-list-type".into(), json!("map"));
    array.insert("x-kubernetes-list-map-keys".into(), json!([key]));
}

/// Bounds `name` (CEL messages quote it, and their cost is estimated from its length).
fn limit_name(item: &mut Map<String, Value>, pattern: &str) {
    set_property(item, "name", "maxLength", json!(128));
    set_property(item, "name", "pattern", json!(pattern));
}

fn set_property(item: &mut Map<String, Value>, property: &str, key: &str, value: Value) {
    if let Some(schema) = item
        .get_mut("properties")
        .and_then(|p| p.get_mut(property))
        .and_then(Value::as_object_mut)
    {
        schema.insert(key.into(), value);
    }
}

fn add_rule(schema: &mut Map<String, Value>, rule: Value) {
    let rules = schema
        .entry("x-kubernetes-validations")
        .or_insert_with(|| json!([]));
    if let Some(rules) = rules.as_array_mut() {
        rules.push(rule);
    }
}

/// Rewrites every internally tagged union (a `oneOf` whose variants are objects told apart by a
/// constant `type` property, as MCP content blocks are) into one object schema: the union of the
/// variants' properties, `type` as an enum, and CEL rules requiring each variant's fields. The
/// API server accepts no `oneOf` with properties in a structural schema.
fn rewrite_tagged_unions(schema: &mut Map<String, Value>) {
    for value in schema.values_mut() {
        match value {
            Value::Object(child) => rewrite_tagged_unions(child),
            Value::Array(list) => {
                for item in list.iter_mut().filter_map(Value::as_object_mut) {
                    rewrite_tagged_unions(item);
                }
            }
            _ => {}
        }
    }
    let Some(variants) = schema.get("oneOf").and_then(Value::as_array) else {
        return;
    };
    let Some(tagged) = variants
        .iter()
        .map(tagged_variant)
        .collect::<Option<Vec<_>>>()
    else {
        return;
    };
    let tags: Vec<&str> = tagged.iter().map(|v| v.tag).collect();
    let mut properties = union_of_properties(&tagged);
    let mut rules = Vec::new();
    for variant in &tagged {
        let required: Vec<String> = variant
            .required
            .iter()
            .map(|f| format!("has(self.{f})"))
            .collect();
        let foreign: Vec<String> = tagged
            .iter()
            .flat_map(|other| other.properties.keys())
            .filter(|name| *name != "type" && !variant.properties.contains_key(*name))
            .map(|name| format!("!has(self.{name})"))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let checks: Vec<String> = required.into_iter().chain(foreign).collect();
        if checks.is_empty() {
            continue;
        }
        let needs: Vec<&str> = variant.required.to_vec();
        rules.push(json!({
            "rule": format!("self.type != '{}' || ({})", variant.tag, checks.join(" && ")),
            "message": format!(
                "a block of type `{}` needs {} and no field of another type",
                variant.tag,
                if needs.is_empty() { "no other field".to_owned() } else { needs.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ") }
            ),
            "reason": "FieldValueInvalid",
        }));
    }
    properties.insert(
        "type".into(),
        json!({
            "description": format!("Kind of block: {}.", tags.join(", ")),
            "type": "string",
            "enum": tags,
        }),
    );
    schema.remove("oneOf");
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(properties));
    schema.insert("required".into(), json!(["type"]));
    schema.insert("x-kubernetes-validations".into(), Value::Array(rules));
}

struct TaggedVariant<'a> {
    tag: &'a str,
    properties: &'a Map<String, Value>,
    required: Vec<&'a str>,
}

fn tagged_variant(variant: &Value) -> Option<TaggedVariant<'_>> {
    let properties = variant.get("properties")?.as_object()?;
    let tag_schema = properties.get("type")?;
    let tag = tag_schema
        .get("const")
        .and_then(Value::as_str)
        .or_else(|| {
            tag_schema
                .get("enum")?
                .as_array()
                .filter(|e| e.len() == 1)?
                .first()?
                .as_str()
        })?;
    let required = variant
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .filter(|f| *f != "type")
                .collect()
        })
        .unwrap_or_default();
    Some(TaggedVariant {
        tag,
        properties,
        required,
    })
}

/// The union of the variants' properties (`type` aside). A field in several variants keeps the
/// first variant's schema; when the variants describe it differently, each description is kept,
/// prefixed with its variant.
fn union_of_properties(variants: &[TaggedVariant<'_>]) -> Map<String, Value> {
    let mut union = Map::new();
    let mut descriptions: Map<String, Value> = Map::new();
    for variant in variants {
        for (name, property) in variant
            .properties
            .iter()
            .filter(|(name, _)| *name != "type")
        {
            union
                .entry(name.clone())
                .or_insert_with(|| property.clone());
            let text = property
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let list = descriptions
                .entry(name.clone())
                .or_insert_with(|| json!([]));
            if let Some(list) = list.as_array_mut() {
                list.push(json!([variant.tag, text]));
            }
        }
    }
    for (name, list) in descriptions {
        let list: Vec<(&str, &str)> = list
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|pair| Some((pair.get(0)?.as_str()?, pair.get(1)?.as_str()?)))
            .collect();
        let distinct: std::collections::BTreeSet<&str> =
            list.iter().map(|(_, text)| *text).collect();
        if distinct.len() > 1 {
            let joined: Vec<String> = list
                .iter()
                .map(|(tag, text)| format!("`{tag}`: {text}"))
                .collect();
            if let Some(property) = union.get_mut(&name) {
                property["description"] = json!(joined.join(" "));
            }
        }
    }
    union
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_with_an_http_source_gets_an_exactly_one_rule() {
        let tool: Map<String, Value> = serde_json::from_value(json!({
            "properties": {"name": {}, "content": {}, "structuredContent": {}, "http": {}}
        }))
        .unwrap();
        let sources = reply_sources(&tool);
        assert_eq!(
            sources.rule,
            "[(has(self.content) || has(self.structuredContent)), has(self.http)].filter(x, x).size() == 1"
        );
        assert_eq!(sources.names, "content and/or structuredContent, or http");
    }

    #[test]
    fn a_tagged_union_becomes_one_object_with_rules() {
        let mut schema: Map<String, Value> = serde_json::from_value(json!({
            "oneOf": [
                {"type": "object", "properties": {"type": {"const": "a"}, "x": {"type": "string", "description": "X of a."}}, "required": ["type", "x"]},
                {"type": "object", "properties": {"type": {"const": "b"}, "x": {"type": "string", "description": "X of b."}, "y": {"type": "string"}}, "required": ["type"]},
            ]
        }))
        .unwrap();
        rewrite_tagged_unions(&mut schema);
        assert_eq!(schema["properties"]["type"]["enum"], json!(["a", "b"]));
        assert_eq!(
            schema["properties"]["x"]["description"],
            "`a`: X of a. `b`: X of b."
        );
        let rules: Vec<&str> = schema["x-kubernetes-validations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["rule"].as_str().unwrap())
            .collect();
        assert_eq!(rules, ["self.type != 'a' || (has(self.x) && !has(self.y))"]);
    }

    #[test]
    fn unsigned_formats_become_known_ones() {
        let mut schema = schemars::Schema::try_from(
            json!({"properties": {"n": {"format": "uint64"}, "m": {"format": "uint32"}}}),
        )
        .unwrap();
        kubernetes_formats(&mut schema);
        assert_eq!(schema.as_value()["properties"]["n"]["format"], "int64");
        assert_eq!(schema.as_value()["properties"]["m"]["format"], "int32");
    }
}
