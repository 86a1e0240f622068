//! Redaction and digests of tool arguments. A field whose schema says `writeOnly: true` or
//! `x-sensitive: true` is replaced before the arguments are digested, so the audit record
//! reveals nothing of it (not even through a guess checked against the digest). Pure.

use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};
use std::fmt::Write as _;

/// What replaces a sensitive value.
pub(super) const REDACTED: &str = "[redacted]";
/// How deep schemas and arguments are followed (bounds `$ref` cycles and hostile nesting).
const MAX_DEPTH: usize = 32;

/// `args` with the fields `schema` marks sensitive replaced, and the JSON pointers of those
/// fields. Subschemas are found through `properties`, `patternProperties` (a pattern the regex
/// engine cannot read applies to every member: the safe side),
/// `additionalProperties`, `items`, `prefixItems`, `allOf`/`anyOf`/`oneOf`, `if`/`then`/`else`
/// (either branch), `dependentSchemas` and local `$ref`s.
pub fn redact(schema: &Value, args: &Value) -> (Value, Vec<String>) {
    let mut paths = Vec::new();
    let value = walk(schema, &[schema], args, "", 0, &mut paths);
    (value, paths)
}

fn walk(
    root: &Value,
    schemas: &[&Value],
    value: &Value,
    path: &str,
    depth: usize,
    paths: &mut Vec<String>,
) -> Value {
    if depth > MAX_DEPTH {
        return value.clone();
    }
    let schemas = expand(root, schemas, depth);
    match value {
        Value::Object(fields) => {
            let mut out = Map::new();
            for (key, field) in fields {
                let pointer = format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"));
                let children: Vec<&Value> = schemas.iter().flat_map(|s| property(s, key)).collect();
                out.insert(
                    key.clone(),
                    visit(root, &children, field, pointer, depth, paths),
                );
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let children: Vec<&Value> =
                        schemas.iter().filter_map(|s| item_schema(s, i)).collect();
                    visit(root, &children, item, format!("{path}/{i}"), depth, paths)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn visit(
    root: &Value,
    children: &[&Value],
    value: &Value,
    pointer: String,
    depth: usize,
    paths: &mut Vec<String>,
) -> Value {
    if expand(root, children, depth + 1)
        .iter()
        .any(|s| sensitive(s))
    {
        paths.push(pointer);
        Value::String(REDACTED.to_owned())
    } else {
        walk(root, children, value, &pointer, depth + 1, paths)
    }
}

/// The schemas in force: each one, its local `$ref` target and its `allOf`/`anyOf`/`oneOf`
/// branches, transitively (bounded).
fn expand<'a>(root: &'a Value, schemas: &[&'a Value], depth: usize) -> Vec<&'a Value> {
    let mut out = Vec::new();
    let mut todo: Vec<(&Value, usize)> = schemas.iter().map(|s| (*s, depth)).collect();
    while let Some((schema, level)) = todo.pop() {
        if level > MAX_DEPTH || out.len() > 256 {
            continue;
        }
        out.push(schema);
        if let Some(target) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|pointer| root.pointer(pointer))
        {
            todo.push((target, level + 1));
        }
        for key in ["allOf", "anyOf", "oneOf"] {
            for branch in schema
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                todo.push((branch, level + 1));
            }
        }
        // Conditional and dependent subschemas may apply: both branches are followed.
        for key in ["if", "then", "else"] {
            if let Some(branch) = schema.get(key).filter(|b| b.is_object()) {
                todo.push((branch, level + 1));
            }
        }
        for branch in schema
            .get("dependentSchemas")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(Map::values)
        {
            todo.push((branch, level + 1));
        }
    }
    out
}

fn sensitive(schema: &Value) -> bool {
    let flag = |key: &str| schema.get(key).and_then(Value::as_bool) == Some(true);
    flag("writeOnly") || flag("x-sensitive")
}

fn property<'a>(schema: &'a Value, key: &str) -> Vec<&'a Value> {
    let mut found: Vec<&Value> = schema
        .get("patternProperties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(pattern, _)| {
            regex::RegexBuilder::new(pattern)
                .size_limit(1 << 20)
                .build()
                .map_or(true, |re| re.is_match(key))
        })
        .map(|(_, subschema)| subschema)
        .collect();
    match schema.get("properties").and_then(|p| p.get(key)) {
        Some(declared) => found.push(declared),
        None => found.extend(schema.get("additionalProperties").filter(|a| a.is_object())),
    }
    found
}

fn item_schema(schema: &Value, index: usize) -> Option<&Value> {
    schema
        .get("prefixItems")
        .and_then(|p| p.get(index))
        .or_else(|| schema.get("items").filter(|i| i.is_object()))
}

/// `sha256:` and the hex SHA-256 of `value` as canonical JSON: keys sorted, no whitespace
/// (Python: `json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`).
pub fn digest(value: &Value) -> String {
    let mut text = String::new();
    canonical(value, &mut text);
    let hash = Sha256::digest(text.as_bytes());
    let mut out = String::from("sha256:");
    for byte in hash.iter() {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(fields) => {
            let mut keys: Vec<&String> = fields.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical(&fields[key.as_str()], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn follows_pattern_conditional_and_dependent_subschemas() {
        let schema = json!({
            "type": "object",
            "patternProperties": {"^secret_": {"type": "string", "writeOnly": true}},
            "properties": {"kind": {"type": "string"}, "plain": {"type": "string"}},
            "if": {"properties": {"kind": {"const": "token"}}},
            "then": {"properties": {"value": {"x-sensitive": true}}},
            "else": {"properties": {"other": {"x-sensitive": true}}},
            "dependentSchemas": {"user": {"properties": {"pin": {"writeOnly": true}}}}
        });
        let args = json!({"kind": "token", "value": "tok-1", "other": "oth-2",
            "secret_a": "sec-3", "user": "ada", "pin": "pin-4"});
        let (value, paths) = redact(&schema, &args);
        let text = value.to_string();
        for secret in ["tok-1", "oth-2", "sec-3", "pin-4"] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
        assert_eq!(paths.len(), 4, "{paths:?}");
    }

    #[test]
    fn redacts_fields_marked_sensitive_wherever_they_are() {
        let schema = json!({
            "type": "object",
            "properties": {
                "user": {"type": "string"},
                "password": {"type": "string", "writeOnly": true},
                "nested": {"$ref": "#/$defs/creds"},
                "list": {"type": "array", "items": {"type": "object", "properties": {"pin": {"x-sensitive": true}}}},
                "either": {"anyOf": [{"type": "null"}, {"type": "string", "x-sensitive": true}]}
            },
            "$defs": {"creds": {"type": "object", "properties": {"api/key": {"type": "string", "x-sensitive": true}}}}
        });
        let args = json!({
            "user": "ada",
            "password": "hunter2",
            "nested": {"api/key": "k-123", "other": 1},
            "list": [{"pin": 1234}, {"pin": 5678}],
            "either": "s3"
        });
        let (value, paths) = redact(&schema, &args);
        let text = value.to_string();
        for secret in ["hunter2", "k-123", "1234", "5678", "s3\""] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
        assert_eq!(value["user"], "ada");
        assert_eq!(value["nested"]["other"], 1);
        let mut paths = paths;
        paths.sort();
        assert_eq!(
            paths,
            [
                "/either",
                "/list/0/pin",
                "/list/1/pin",
                "/nested/api~1key",
                "/password"
            ]
        );
    }

    #[test]
    fn the_digest_hides_redacted_values_and_sees_the_others() {
        let schema = json!({"properties": {"token": {"writeOnly": true}, "city": {}}});
        let digest_of = |args: Value| digest(&redact(&schema, &args).0);
        let a = digest_of(json!({"city": "Paris", "token": "one"}));
        assert_eq!(a, digest_of(json!({"token": "two", "city": "Paris"})));
        assert_ne!(a, digest_of(json!({"city": "Lyon", "token": "one"})));
    }

    #[test]
    fn digests_canonical_json() {
        // printf '{"a":[1,"é"],"b":null}' | sha256sum
        assert_eq!(
            digest(&json!({"b": null, "a": [1, "é"]})),
            "sha256:1e02bc81a26af2f027329541e97eef36f3290bedc6dfe043dbe66b057ecb13ba"
        );
    }

    #[test]
    fn fields_marked_in_shared_schemas_are_redacted_as_served() {
        // `spec.schemas` reach the audit through the compiled descriptor, as local `$defs`.
        let manifest = mcp_declaration::parse_manifest(
            "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {name: t}\nspec:\n  \
             schemas:\n    Login: {type: object, properties: {password: {$ref: '#/schemas/Secret'}}}\n    \
             Secret: {type: string, writeOnly: true}\n  tools:\n  - name: login\n    \
             inputSchema: {type: object, properties: {login: {$ref: '#/schemas/Login'}}}\n    \
             content: [{type: text, text: ok}]\n",
            std::path::PathBuf::new(),
        )
        .unwrap();
        let compiled =
            mcp_declaration::compile(&manifest, &mcp_declaration::CompileOptions::default())
                .unwrap();
        let schema = &compiled.tools[0].descriptor["inputSchema"];
        let (value, paths) = redact(schema, &json!({"login": {"password": "hunter2"}}));
        assert!(!value.to_string().contains("hunter2"), "{value}");
        assert_eq!(paths, ["/login/password"]);
    }

    #[test]
    fn survives_reference_cycles() {
        let schema = json!({"$ref": "#", "properties": {"x": {"$ref": "#"}}});
        let args = json!({"x": {"x": {"x": 1}}});
        assert_eq!(redact(&schema, &args).0, args);
    }
}
