//! OpenAPI schemas to JSON Schema 2020-12, as `inputSchema` and `outputSchema` need them:
//! each `$ref` becomes a reference to a shared schema (`#/schemas/NAME`, the manifest's
//! `spec.schemas`), converted once per import however many tools use it (so the manifest stays
//! linear in the spec's size, and cycles are kept); 3.0 `nullable` becomes a type union, boolean
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

/// How a converted schema refers to a shared one (`spec.schemas`).
const SHARED_PREFIX: &str = "#/schemas/";

/// Converts the schemas of every tool of one import, collecting the shared schemas they refer
/// to.
pub(super) struct SchemaConverter<'d> {
    docs: &'d Documents,
    /// Shared schemas converted so far, by name.
    shared: Map<String, Value>,
    /// The name each converted location got.
    names: HashMap<Location, String>,
    /// Locations in the order they were named, to take back those named while converting a
    /// schema that then fails.
    named: Vec<Location>,
}

impl<'d> SchemaConverter<'d> {
    /// A converter with no shared schemas yet.
    pub(super) fn new(docs: &'d Documents) -> Self {
        Self {
            docs,
            shared: Map::new(),
            names: HashMap::new(),
            named: Vec::new(),
        }
    }

    /// Every shared schema converted so far, by name (some may be used by no emitted tool).
    pub(super) fn shared(&self) -> &Map<String, Value> {
        &self.shared
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

    /// The shared-schema reference standing for `reference`, converting its target the first
    /// time. When the target cannot be converted, every schema named while trying is taken
    /// back: a later tool must not refer to a half-converted one.
    fn reference(&mut self, file: &Path, reference: &str, depth: usize) -> Result<String, Reason> {
        let unresolvable =
            |err: super::ImportError| Reason::new("unresolvable $ref", err.to_string());
        let location = self.docs.locate(file, reference).map_err(unresolvable)?;
        if let Some(name) = self.names.get(&location) {
            return Ok(format!("{SHARED_PREFIX}{name}"));
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
        let mark = self.named.len();
        self.names.insert(location.clone(), name.clone());
        self.named.push(location.clone());
        // A placeholder first, so a reference back to this schema while converting it (a
        // cycle) finds its name.
        self.shared.insert(name.clone(), Value::Bool(true));
        match self.convert(&location.file, target, depth + 1) {
            Ok(converted) => {
                self.shared.insert(name.clone(), converted);
                Ok(format!("{SHARED_PREFIX}{name}"))
            }
            Err(reason) => {
                for location in self.named.drain(mark..) {
                    if let Some(name) = self.names.remove(&location) {
                        self.shared.remove(&name);
                    }
                }
                Err(reason)
            }
        }
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
        while self.shared.contains_key(&name) {
            n += 1;
            name = format!("{base}_{n}");
        }
        name
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
        (out, Value::Object(converter.shared.clone()))
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
    fn refs_become_shared_schemas_and_cycles_are_kept() {
        let d = docs(
            "openapi: 3.1.0\ncomponents:\n  schemas:\n    Node:\n      type: object\n      \
             properties:\n        children: {type: array, items: {$ref: '#/components/schemas/Node'}}\n        \
             tag: {$ref: '#/components/schemas/Tag'}\n    Tag: {type: string}\n",
        );
        let (root, shared) = convert(&d, "/components/schemas/Node");
        assert_eq!(
            root["properties"]["children"]["items"],
            json!({"$ref": "#/schemas/Node"})
        );
        assert_eq!(root["properties"]["tag"], json!({"$ref": "#/schemas/Tag"}));
        assert_eq!(shared["Tag"], json!({"type": "string"}));
        assert_eq!(
            shared["Node"]["properties"]["children"]["items"],
            json!({"$ref": "#/schemas/Node"})
        );
        // With the shared schemas where the runtime's compiler puts them, the result is a schema
        // the validator accepts and that means what it says.
        let mut schema = root.as_object().unwrap().clone();
        schema.insert("$defs".into(), shared);
        let text = serde_json::to_string(&schema).unwrap();
        let schema: Value = serde_json::from_str(&text.replace("#/schemas/", "#/$defs/")).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        assert!(validator.is_valid(&json!({"children": [{"children": [], "tag": "x"}]})));
        assert!(!validator.is_valid(&json!({"children": [{"tag": 1}]})));
    }

    #[test]
    fn a_schema_that_fails_is_taken_back_with_what_it_named() {
        let d = docs(
            "swagger: '2.0'\nA: {properties: {b: {$ref: '#/B'}, f: {$ref: '#/F'}}}\n\
             B: {properties: {a: {$ref: '#/A'}}}\nF: {type: file}\n\
             s: {properties: {a: {$ref: '#/A'}}}\nt: {properties: {b: {$ref: '#/B'}}}\n",
        );
        let mut c = SchemaConverter::new(&d);
        let err = c.inline(Path::new("<stdin>"), &d.root()["s"]).unwrap_err();
        assert_eq!(err.kind, "file upload");
        assert!(c.shared().is_empty(), "{:?}", c.shared());
        // B alone was fine, but it refers to A, which fails: B must fail again, never refer to a
        // placeholder.
        let err = c.inline(Path::new("<stdin>"), &d.root()["t"]).unwrap_err();
        assert_eq!(err.kind, "file upload");
        assert!(c.shared().is_empty());
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
    fn same_named_schemas_in_two_places_get_distinct_names() {
        let d = docs(
            "openapi: 3.1.0\na: {Item: {type: string}}\nb: {Item: {type: integer}}\n\
             s: {properties: {x: {$ref: '#/a/Item'}, y: {$ref: '#/b/Item'}, z: {$ref: '#/a/Item'}}}\n",
        );
        let (root, shared) = convert(&d, "/s");
        assert_eq!(root["properties"]["y"], json!({"$ref": "#/schemas/Item_2"}));
        assert_eq!(root["properties"]["z"], json!({"$ref": "#/schemas/Item"}));
        assert_eq!(shared["Item_2"], json!({"type": "integer"}));
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
