//! `--split-by-tag` imports from inline specs: which set each tool lands in, the schemas each set
//! carries, the parts of a big tag, and that the server and its sets load, as `serve --manifest
//! DIR` loads them, into one declaration that compiles.

use super::*;
use mcp_declaration::{CompileOptions, compile, read_bundle};
use serde_json::{Value, json};
use std::path::Path;

fn split(spec: &str, options: ImportOptions) -> Result<Imported, ImportError> {
    let docs = Documents::parse(spec, Path::new("."))?;
    import_openapi(
        &docs,
        &ImportOptions {
            split_by_tag: true,
            methods: Some(IMPORTABLE_METHODS.to_vec()),
            ..options
        },
    )
}

fn value(yaml: &str) -> Value {
    serde_yaml_ng::from_str(yaml).unwrap()
}

fn names(list: &Value) -> Vec<&str> {
    let list = list.as_array().map(Vec::as_slice).unwrap_or_default();
    list.iter().map(|t| t["name"].as_str().unwrap()).collect()
}

/// The files as `serve --manifest DIR` reads them: by name.
fn files(imported: &Imported) -> Vec<(std::path::PathBuf, String)> {
    let mut files: Vec<_> = imported
        .sets
        .iter()
        .map(|set| (Path::new("dir").join(&set.file), set.yaml.clone()))
        .chain([(Path::new("dir").join(SERVER_FILE), imported.yaml.clone())])
        .collect();
    files.sort();
    files
}

/// Tags `a` (two tools, reaching A and through it B), `b` (one tool, reaching C), the tag named
/// `untagged` and `server` (names the importer also wants), and operations without a tag.
const TAGGED: &str = r##"
openapi: 3.0.3
info: {title: Shop, version: "1"}
servers: [{url: "https://shop.example.com"}]
paths:
  /a:
    get:
      operationId: getA
      tags: [a, b]
      responses: {"200": {content: {application/json: {schema: {$ref: "#/components/schemas/A"}}}}}
    post:
      operationId: makeA
      tags: [a]
      requestBody: {content: {application/json: {schema: {$ref: "#/components/schemas/A"}}}}
  /b:
    get:
      operationId: getB
      tags: [b, a]
      responses:
        "200": {content: {application/json: {schema: {type: array, items: {$ref: "#/components/schemas/C"}}}}}
  /c:
    get: {operationId: getC}
    delete: {operationId: deleteC, tags: [untagged]}
  /d:
    get: {operationId: getD, tags: [server]}
    put: {operationId: putD, tags: []}
components:
  schemas:
    A: {type: object, properties: {b: {$ref: "#/components/schemas/B"}}}
    B: {type: object, properties: {a: {$ref: "#/components/schemas/A"}, n: {type: integer}}}
    C: {type: object, properties: {s: {type: string}}}
"##;

#[test]
fn each_tool_goes_to_its_first_tags_set_with_only_the_schemas_it_reaches() {
    let imported = split(TAGGED, ImportOptions::default()).unwrap();
    assert_eq!(imported.summary.tools, 7);
    let server = value(&imported.yaml);
    assert_eq!(server["kind"], "MCPServer");
    assert_eq!(server["metadata"]["name"], "shop");
    assert!(server["spec"].get("tools").is_none());
    assert!(server["spec"].get("schemas").is_none());
    assert_eq!(
        server["spec"]["include"],
        json!([{"selector": {"matchLabels": {"api": "shop"}}}])
    );
    assert_eq!(server["spec"]["title"], "Shop");
    assert!(
        imported
            .yaml
            .starts_with("# Imported by mcp-runtime import openapi.\n")
    );
    let sets: Vec<(&str, &str, Option<&str>)> = imported
        .sets
        .iter()
        .map(|s| (s.file.as_str(), s.name.as_str(), s.tag.as_deref()))
        .collect();
    // The real tag `untagged` keeps its name; the file `server.yaml` is the server's.
    assert_eq!(
        sets,
        [
            ("a.yaml", "shop-a", Some("a")),
            ("b.yaml", "shop-b", Some("b")),
            ("server-2.yaml", "shop-server-2", Some("server")),
            ("untagged.yaml", "shop-untagged", Some("untagged")),
            ("untagged-2.yaml", "shop-untagged-2", None),
        ]
    );
    let set = |file: &str| {
        let set = imported.sets.iter().find(|s| s.file == file).unwrap();
        value(&set.yaml)
    };
    let a = set("a.yaml");
    assert_eq!(a["kind"], "MCPToolSet");
    assert_eq!(a["metadata"]["labels"], json!({"api": "shop"}));
    assert_eq!(names(&a["spec"]["tools"]), ["getA", "makeA"]);
    // B only through A: the closure, nothing else.
    let keys = |v: &Value| -> Vec<String> {
        let map = v["spec"]["schemas"].as_object();
        map.map(|m| m.keys().cloned().collect()).unwrap_or_default()
    };
    assert_eq!(keys(&a), ["A", "B"]);
    let b = set("b.yaml");
    assert_eq!(names(&b["spec"]["tools"]), ["getB"]);
    assert_eq!(keys(&b), ["C"]);
    let untagged = set("untagged-2.yaml");
    assert_eq!(names(&untagged["spec"]["tools"]), ["getC", "putD"]);
    assert!(keys(&untagged).is_empty());
    assert!(
        imported.sets[4]
            .yaml
            .starts_with("# Imported by mcp-runtime import openapi for MCPServer shop: the operations without a tag.\n")
    );
    // Deterministic: the same spec gives the same bytes.
    let again = split(TAGGED, ImportOptions::default()).unwrap();
    assert_eq!(again.yaml, imported.yaml);
    assert_eq!(again.sets, imported.sets);
}

#[test]
fn the_server_and_its_sets_load_as_serve_loads_a_directory_and_compile() {
    let full = {
        let docs = Documents::parse(TAGGED, Path::new(".")).unwrap();
        let options = ImportOptions {
            methods: Some(IMPORTABLE_METHODS.to_vec()),
            ..Default::default()
        };
        import_openapi(&docs, &options).unwrap()
    };
    let imported = split(TAGGED, ImportOptions::default()).unwrap();
    let bundle = read_bundle(&files(&imported)).unwrap();
    assert_eq!(bundle.sets.len(), imported.sets.len());
    let mut served: Vec<&str> = bundle
        .manifest
        .declaration
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    served.sort();
    let full_value = value(&full.yaml);
    let mut all = names(&full_value["spec"]["tools"]);
    all.sort();
    assert_eq!(served, all);
    // Schema A is in two sets, identically: merged, not a conflict.
    assert_eq!(
        bundle
            .manifest
            .declaration
            .schemas
            .keys()
            .collect::<Vec<_>>(),
        ["A", "B", "C"]
    );
    compile(&bundle.manifest, &CompileOptions::default()).unwrap();
}

#[test]
fn selection_applies_before_the_split_and_secrets_stay_on_the_server() {
    let spec = format!(
        "{TAGGED}  securitySchemes:\n    key: {{type: apiKey, in: header, name: X-Key}}\nsecurity: [{{key: []}}]\n"
    );
    let options = ImportOptions {
        include_tags: vec!["a".into()],
        secrets: vec![(
            "key".into(),
            mcp_declaration::SecretKeyRef {
                name: "shop-key".into(),
                key: "k".into(),
            },
        )],
        ..Default::default()
    };
    let imported = split(&spec, options).unwrap();
    // getB has tag `a` second: selected, and in the set of its first tag.
    let files: Vec<&str> = imported.sets.iter().map(|s| s.file.as_str()).collect();
    assert_eq!(files, ["a.yaml", "b.yaml"]);
    let server = value(&imported.yaml);
    assert_eq!(server["spec"]["secrets"], json!(["shop-key"]));
    let bundle = read_bundle(&self::files(&imported)).unwrap();
    assert_eq!(bundle.manifest.declaration.tools.len(), 3);
    let listed = ["shop-key".to_owned()];
    assert!(mcp_declaration::cluster_problems(&bundle.manifest.declaration, &listed).is_empty());
}

/// A spec of `count` GET operations tagged `big`, each with an enum query parameter of
/// `values` distinct values (to make each tool weigh).
fn many(count: usize, values: usize) -> String {
    let mut spec = String::from(
        "openapi: 3.0.3\ninfo: {title: Big, version: '1'}\nservers: [{url: 'https://big.example.com'}]\npaths:\n",
    );
    for i in 0..count {
        let choices: Vec<String> = (0..values).map(|v| format!("v{i}x{v}")).collect();
        spec.push_str(&format!(
            "  /op{i}:\n    get:\n      operationId: op{i}\n      tags: [Big Things]\n      \
             parameters: [{{name: q, in: query, schema: {{type: string, enum: [{}]}}}}]\n",
            choices.join(", ")
        ));
    }
    spec
}

#[test]
fn a_tag_over_256_tools_is_cut_into_parts_in_import_order() {
    let imported = split(&many(600, 1), ImportOptions::default()).unwrap();
    let parts: Vec<(&str, usize)> = imported
        .sets
        .iter()
        .map(|s| (s.file.as_str(), s.tools))
        .collect();
    assert_eq!(
        parts,
        [
            ("big-things-1.yaml", 200),
            ("big-things-2.yaml", 200),
            ("big-things-3.yaml", 200)
        ]
    );
    let second = value(&imported.sets[1].yaml);
    assert_eq!(second["metadata"]["name"], "big-big-things-2");
    assert_eq!(names(&second["spec"]["tools"])[0], "op200");
    assert!(imported.sets[1].yaml.contains("part 2 of 3.\n"));
    let bundle = read_bundle(&files(&imported)).unwrap();
    assert_eq!(bundle.manifest.declaration.tools.len(), 600);
}

#[test]
fn a_tag_over_the_object_size_is_cut_further_and_one_tool_over_it_is_an_error() {
    // About 7 kB a tool: 200 tools fit the list limit but not one object.
    let imported = split(&many(200, 500), ImportOptions::default()).unwrap();
    assert!(imported.sets.len() >= 2, "{}", imported.sets.len());
    assert!(
        imported
            .sets
            .iter()
            .all(|s| s.yaml.len() <= MAX_OBJECT_BYTES)
    );
    assert_eq!(imported.sets.iter().map(|s| s.tools).sum::<usize>(), 200);
    // Even parts: none empty, sizes a tool apart at most.
    let sizes: Vec<usize> = imported.sets.iter().map(|s| s.tools).collect();
    let (least, most) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
    assert!(*least > 0 && most - least <= 1, "{sizes:?}");
    let err = split(&many(2, 70_000), ImportOptions::default()).unwrap_err();
    assert!(
        err.to_string().starts_with("big-big-things-1 would be 1"),
        "{err}"
    );
    assert!(err.to_string().contains("over the 1000000 bytes"), "{err}");
}
