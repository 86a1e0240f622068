//! OpenAPI schemas to JSON Schema 2020-12, as `inputSchema` and `outputSchema` need them:
//! `$ref`s become `$defs` entries of the tool's schema (so shared and recursive schemas stay
//! linear in size and cycles are kept), 3.0 `nullable` becomes a type union, boolean
//! `exclusiveMinimum`/`exclusiveMaximum` become numbers, OpenAPI-only keywords are dropped.
//! Pure.

use super::load::{Documents, Location, Version};
use super::summary::Reason;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::path::Path;

/// Deepest schema nesting converted.
const MAX_DEPTH: usize = 64;

/// Keywords whose value is a schema.
const SCHEMA_KEYWORDS: &[&str] = &[
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
];
/// Keywords whose value is a list of schemas.
const LIST_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords whose value maps names to schemas.
const MAP_KEYWORDS: &[&str] = &["properties", "patternProperties", "dependentSchemas"];
/// OpenAPI-only or document-structure keywords left out of the converted schema.
const DROPPED: &[&str] = &[
    "discriminator",
    "xml",
    "externalDocs",
    "example",
    "nullable",
    "$schema",
    "$id",
    "$anchor",
    "$comment",
    "$defs",
    "definitions",
];

/// Converts the schemas of one tool, collecting the `$defs` they share.
pub(super) struct SchemaConverter<'d> {
    docs: &'d Documents,
    defs: Map<String, Value>,
    names: HashMap<Location, String>,
}

impl<'d> SchemaConverter<'d> {
    /// A converter with no `$defs` yet.
    pub(super) fn new(docs: &'d Documents) -> Self {
        Self {
            docs,
            defs: Map::new(),
            names: HashMap::new(),
        }
    }

    /// Converts a schema that becomes (part of) a root schema: a `$ref` at the top is inlined.
    pub(super) fn inline(&mut self, file: &Path, schema: &Value) -> Result<Value, Reason> {
        let (file, target) = self
            .docs
            .deref(file, schema)
            .map_err(|err| Reason::new("unresolvable $ref", err.to_string()))?;
        self.convert(&file, target, 0)
    }

    /// Follows a top-level `$ref` without converting (to look at an object's properties).
    pub(super) fn resolve<'a>(
        &'a self,
        file: &Path,
        schema: &'a Value,
    ) -> Result<(std::path::PathBuf, &'a Value), Reason> {
        self.docs
            .deref(file, schema)
            .map_err(|err| Reason::new("unresolvable $ref", err.to_string()))
    }

    /// Converts `schema` found in `file`.
    pub(super) fn convert(
        &mut self,
        file: &Path,
        schema: &Value,
        depth: usize,
    ) -> Result<Value, Reason> {
        if depth > MAX_DEPTH {
            return Err(Reason::new(
                "unsupported schema",
                format!("schema nesting deeper than {MAX_DEPTH}"),
            ));
        }
        let map = match schema {
            Value::Bool(_) => return Ok(schema.clone()),
            Value::Object(map) => map,
            _ => {
                return Err(Reason::new(
                    "unsupported schema",
                    "a schema that is not an object".into(),
                ));
            }
        };
        let mut out = Map::new();
        for (key, value) in map {
            let key = key.as_str();
            if DROPPED.contains(&key) || key.starts_with("x-") {
                continue;
            }
            let converted = match key {
                "$ref" => {
                    let reference = value.as_str().unwrap_or_default();
                    Value::String(self.reference(file, reference, depth)?)
                }
                "$dynamicRef" | "$recursiveRef" => {
                    return Err(Reason::new(
                        "unsupported schema",
                        format!("`{key}` is not supported"),
                    ));
                }
                "type" if value == "file" => {
                    return Err(Reason::new(
                        "file upload",
                        "a `type: file` schema (Swagger 2.0 upload)".into(),
                    ));
                }
                "items" if value.is_array() => {
                    // Draft 4 tuple form, as 2020-12 spells it.
                    out.insert("prefixItems".into(), self.list(file, value, depth)?);
                    continue;
                }
                "items" => self.convert(file, value, depth + 1)?,
                k if SCHEMA_KEYWORDS.contains(&k) => self.convert(file, value, depth + 1)?,
                k if LIST_KEYWORDS.contains(&k) => self.list(file, value, depth)?,
                k if MAP_KEYWORDS.contains(&k) => {
                    let Value::Object(entries) = value else {
                        continue;
                    };
                    let mut converted = Map::new();
                    for (name, sub) in entries {
                        converted.insert(name.clone(), self.convert(file, sub, depth + 1)?);
                    }
                    Value::Object(converted)
                }
                _ => value.clone(),
            };
            out.insert(key.to_owned(), converted);
        }
        exclusive_bounds(&mut out);
        let nullable = map.get("nullable") == Some(&Value::Bool(true))
            || map.get("x-nullable") == Some(&Value::Bool(true));
        if nullable && self.docs.version != Version::V31 {
            return Ok(add_null(out));
        }
        Ok(Value::Object(out))
    }

    fn list(&mut self, file: &Path, value: &Value, depth: usize) -> Result<Value, Reason> {
        let Value::Array(items) = value else {
            return Ok(value.clone());
        };
        items
            .iter()
            .map(|item| self.convert(file, item, depth + 1))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array)
    }

    /// The `$defs` pointer standing for `reference`, converting its target the first time.
    fn reference(&mut self, file: &Path, reference: &str, depth: usize) -> Result<String, Reason> {
        let unresolvable =
            |err: super::ImportError| Reason::new("unresolvable $ref", err.to_string());
        let location = self.docs.locate(file, reference).map_err(unresolvable)?;
        if let Some(name) = self.names.get(&location) {
            return Ok(format!("#/$defs/{name}"));
        }
        let target = self.docs.get(&location).ok_or_else(|| {
            Reason::new(
                "unresolvable $ref",
                format!("`{reference}` points at nothing"),
            )
        })?;
        // A chain of bare references must end somewhere: a loop of aliases would make a
        // schema that refers to itself without ever constraining anything.
        self.docs
            .deref(&location.file, target)
            .map_err(|err| Reason::new("unresolvable $ref", err.to_string()))?;
        let name = self.def_name(&location);
        self.names.insert(location.clone(), name.clone());
        // A placeholder first, so a reference back to this schema while converting it (a
        // cycle) finds its name.
        self.defs.insert(name.clone(), Value::Bool(true));
        let converted = self.convert(&location.file, target, depth + 1)?;
        self.defs.insert(name.clone(), converted);
        Ok(format!("#/$defs/{name}"))
    }

    fn def_name(&self, location: &Location) -> String {
        let last = location
            .pointer
            .rsplit('/')
            .next()
            .filter(|s| !s.is_empty())
            .map(|s| s.replace("~1", "/").replace("~0", "~"))
            .or_else(|| {
                location
                    .file
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| "schema".into());
        let base: String = last
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "_-.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .take(100)
            .collect();
        let mut name = base.clone();
        let mut n = 1;
        while self.defs.contains_key(&name) {
            n += 1;
            name = format!("{base}_{n}");
        }
        name
    }

    /// Puts the collected `$defs` into a root schema (an object).
    pub(super) fn attach_defs(&self, root: &mut Map<String, Value>) {
        if !self.defs.is_empty() {
            root.insert("$defs".into(), Value::Object(self.defs.clone()));
        }
    }
}

/// Draft 4 boolean `exclusiveMinimum`/`exclusiveMaximum` as 2020-12 numbers.
fn exclusive_bounds(out: &mut Map<String, Value>) {
    for (exclusive, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        match out.get(exclusive) {
            Some(Value::Bool(true)) => {
                out.remove(exclusive);
                if let Some(value) = out.remove(bound) {
                    out.insert(exclusive.into(), value);
                }
            }
            Some(Value::Bool(false)) => {
                out.remove(exclusive);
            }
            _ => {}
        }
    }
}

/// `nullable: true` as JSON Schema: `null` added to the type (and the enum).
fn add_null(mut out: Map<String, Value>) -> Value {
    match out.get_mut("type") {
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            out.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(types)) => {
            if !types.contains(&json!("null")) {
                types.push(json!("null"));
            }
        }
        _ => {
            // No type: the value may already be anything, or constrained by combinators.
            if out
                .keys()
                .any(|k| LIST_KEYWORDS.contains(&k.as_str()) || k == "$ref")
            {
                return json!({"anyOf": [Value::Object(out), {"type": "null"}]});
            }
        }
    }
    if let Some(Value::Array(values)) = out.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(text: &str) -> Documents {
        Documents::parse(text, Path::new(".")).unwrap()
    }

    fn convert(docs: &Documents, pointer: &str) -> (Value, Value) {
        let mut converter = SchemaConverter::new(docs);
        let schema = docs.root().pointer(pointer).unwrap();
        let out = converter.inline(Path::new("<stdin>"), schema).unwrap();
        (out, Value::Object(converter.defs.clone()))
    }

    #[test]
    fn nullable_becomes_a_type_union_in_3_0_only() {
        let d = docs(
            "openapi: 3.0.3\ns: {type: string, nullable: true, enum: [a], example: a, x-y: 1}\n",
        );
        assert_eq!(
            convert(&d, "/s").0,
            json!({"type": ["string", "null"], "enum": ["a", null]})
        );
        let d = docs("openapi: 3.0.3\ns: {nullable: true, allOf: [{type: integer}]}\n");
        assert_eq!(
            convert(&d, "/s").0,
            json!({"anyOf": [{"allOf": [{"type": "integer"}]}, {"type": "null"}]})
        );
        let d = docs("swagger: '2.0'\ns: {type: integer, x-nullable: true}\n");
        assert_eq!(convert(&d, "/s").0, json!({"type": ["integer", "null"]}));
    }

    #[test]
    fn boolean_exclusive_bounds_become_numbers() {
        let d = docs(
            "openapi: 3.0.3\ns: {type: integer, minimum: 1, exclusiveMinimum: true, maximum: 9, exclusiveMaximum: false}\n",
        );
        assert_eq!(
            convert(&d, "/s").0,
            json!({"type": "integer", "exclusiveMinimum": 1, "maximum": 9})
        );
    }

    #[test]
    fn refs_become_defs_and_cycles_are_kept() {
        let d = docs(
            "openapi: 3.1.0\ncomponents:\n  schemas:\n    Node:\n      type: object\n      \
             properties:\n        children: {type: array, items: {$ref: '#/components/schemas/Node'}}\n        \
             tag: {$ref: '#/components/schemas/Tag'}\n    Tag: {type: string}\n",
        );
        let (root, defs) = convert(&d, "/components/schemas/Node");
        assert_eq!(
            root["properties"]["children"]["items"],
            json!({"$ref": "#/$defs/Node"})
        );
        assert_eq!(root["properties"]["tag"], json!({"$ref": "#/$defs/Tag"}));
        assert_eq!(defs["Tag"], json!({"type": "string"}));
        assert_eq!(
            defs["Node"]["properties"]["children"]["items"],
            json!({"$ref": "#/$defs/Node"})
        );
        // The result is a schema the validator accepts and that means what it says.
        let mut schema = root.as_object().unwrap().clone();
        schema.insert("$defs".into(), defs);
        let validator = jsonschema::validator_for(&Value::Object(schema)).unwrap();
        assert!(validator.is_valid(&json!({"children": [{"children": [], "tag": "x"}]})));
        assert!(!validator.is_valid(&json!({"children": [{"tag": 1}]})));
    }

    #[test]
    fn loops_of_bare_references_are_refused() {
        let d =
            docs("openapi: 3.1.0\nA: {$ref: '#/B'}\nB: {$ref: '#/A'}\ns: {items: {$ref: '#/A'}}\n");
        let mut c = SchemaConverter::new(&d);
        let err = c.inline(Path::new("<stdin>"), &d.root()["s"]).unwrap_err();
        assert_eq!(err.kind, "unresolvable $ref");
    }

    #[test]
    fn same_named_schemas_in_two_places_get_distinct_defs() {
        let d = docs(
            "openapi: 3.1.0\na: {Item: {type: string}}\nb: {Item: {type: integer}}\n\
             s: {properties: {x: {$ref: '#/a/Item'}, y: {$ref: '#/b/Item'}, z: {$ref: '#/a/Item'}}}\n",
        );
        let (root, defs) = convert(&d, "/s");
        assert_eq!(root["properties"]["y"], json!({"$ref": "#/$defs/Item_2"}));
        assert_eq!(root["properties"]["z"], json!({"$ref": "#/$defs/Item"}));
        assert_eq!(defs["Item_2"], json!({"type": "integer"}));
    }

    #[test]
    fn file_uploads_and_dynamic_refs_are_refused_with_a_reason() {
        let d = docs("swagger: '2.0'\ns: {type: file}\n");
        let mut c = SchemaConverter::new(&d);
        let err = c.inline(Path::new("<stdin>"), &d.root()["s"]).unwrap_err();
        assert_eq!(err.kind, "file upload");
        let d = docs("openapi: 3.1.0\ns: {$dynamicRef: '#meta'}\n");
        let mut c = SchemaConverter::new(&d);
        assert!(c.inline(Path::new("<stdin>"), &d.root()["s"]).is_err());
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let mut text = String::from("{\"openapi\": \"3.1.0\", \"s\": ");
        for _ in 0..100 {
            text.push_str("{\"items\": ");
        }
        text.push_str("true");
        text.push_str(&"}".repeat(101));
        let d = docs(&text);
        let mut c = SchemaConverter::new(&d);
        let err = c.inline(Path::new("<stdin>"), &d.root()["s"]).unwrap_err();
        assert!(err.detail.contains("deeper than"), "{err:?}");
    }
}
