//! Whole imports from inline specs: what the manifest holds, that it compiles, that the summary
//! accounts for every operation, and hostile specs.

use super::*;
use mcp_declaration::{CompileOptions, compile, parse_manifest};
use std::path::Path;

fn import(spec: &str, options: &ImportOptions) -> Result<Imported, ImportError> {
    let docs = Documents::parse(spec, Path::new("."))?;
    import_openapi(&docs, options)
}

fn spec_value(imported: &Imported) -> serde_json::Value {
    serde_yaml_ng::from_str(&imported.yaml).unwrap()
}

const PETS: &str = r##"
openapi: 3.0.3
info: {title: Pet Store, version: 2.1.0, description: Pets.}
servers: [{url: "https://pets.example.com/v1"}]
security: [{token: []}]
paths:
  /pets:
    get:
      operationId: listPets
      tags: [pets]
      parameters: [{name: limit, in: query, schema: {type: integer, nullable: true}}]
      responses:
        "200": {content: {application/json: {schema: {type: array, items: {$ref: "#/components/schemas/Pet"}}}}}
    post:
      operationId: createPet
      tags: [pets]
      requestBody:
        required: true
        content: {application/json: {schema: {$ref: "#/components/schemas/Pet"}}}
      responses: {"201": {description: created}}
  /pets/{petId}:
    parameters: [{name: petId, in: path, required: true, schema: {type: string}}]
    get:
      operationId: showPet
      responses:
        "200": {content: {application/json: {schema: {$ref: "#/components/schemas/Pet"}}}}
    delete:
      operationId: deletePet
      tags: [admin]
  /pets/{petId}/photo:
    parameters: [{name: petId, in: path, required: true, schema: {type: string}}]
    put:
      operationId: uploadPhoto
      requestBody: {content: {multipart/form-data: {schema: {type: object}}}}
components:
  securitySchemes:
    token: {type: http, scheme: bearer}
  schemas:
    Pet:
      type: object
      required: [name]
      properties:
        name: {type: string}
        parent: {$ref: "#/components/schemas/Pet"}
"##;

/// The token mapped, every method imported.
fn token() -> ImportOptions {
    ImportOptions {
        methods: Some(IMPORTABLE_METHODS.to_vec()),
        secrets: vec![(
            "token".into(),
            mcp_declaration::SecretKeyRef {
                name: "pets-api".into(),
                key: "token".into(),
            },
        )],
        ..Default::default()
    }
}

#[test]
fn a_spec_becomes_a_manifest_that_compiles() {
    let imported = import(PETS, &token()).unwrap();
    assert_eq!(
        imported.summary.line(),
        "5 operations: 4 tools, 1 skipped: multipart body"
    );
    assert!(imported.summary.balanced());
    let manifest = parse_manifest(&imported.yaml, Default::default()).unwrap();
    assert_eq!(manifest.name, "pet-store");
    compile(&manifest, &CompileOptions::default()).unwrap();
    let doc = spec_value(&imported);
    let spec = &doc["spec"];
    assert_eq!(spec["secrets"], serde_json::json!(["pets-api"]));
    let tools = spec["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["listPets", "createPet", "showPet", "deletePet"]);
    assert_eq!(tools[0]["http"]["url"], "https://pets.example.com/v1/pets");
    assert_eq!(
        tools[0]["inputSchema"]["properties"]["limit"]["type"],
        serde_json::json!(["integer", "null"])
    );
    // Pet is written once, as a shared schema, and stays recursive; each tool refers to it.
    assert_eq!(
        spec["schemas"],
        serde_json::json!({"Pet": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"}, "parent": {"$ref": "#/schemas/Pet"}}}})
    );
    assert_eq!(
        tools[0]["outputSchema"]["properties"]["result"]["items"]["$ref"],
        "#/schemas/Pet"
    );
    assert_eq!(
        tools[1]["inputSchema"]["properties"]["parent"]["$ref"],
        "#/schemas/Pet"
    );
    // As served, each tool carries Pet under its own $defs.
    let compiled = compile(&manifest, &CompileOptions::default()).unwrap();
    let served = &compiled.tools[0].descriptor["outputSchema"];
    assert_eq!(
        served["$defs"]["Pet"]["properties"]["parent"]["$ref"],
        "#/$defs/Pet"
    );
    assert_eq!(
        tools[1]["http"]["body"]["json"],
        serde_json::json!({"name": {"$arg": "name"}, "parent": {"$arg": "parent"}})
    );
    assert_eq!(
        tools[2]["http"]["url"],
        "https://pets.example.com/v1/pets/{petId}"
    );
    assert_eq!(
        tools[3]["annotations"],
        serde_json::json!({"destructiveHint": true, "idempotentHint": true})
    );
    let auth = &tools[3]["http"]["headers"][0];
    assert_eq!(auth["secretKeyRef"]["name"], "pets-api");
    assert_eq!(auth["prefix"], "Bearer ");
    assert!(
        imported
            .yaml
            .starts_with("# Imported by mcp-runtime import openapi.\n# 5 operations")
    );
    // Deterministic: the same spec gives the same bytes.
    assert_eq!(import(PETS, &token()).unwrap().yaml, imported.yaml);
}

#[test]
fn a_first_import_is_read_only_and_named_operations_are_imported_whatever_their_method() {
    let read_only = ImportOptions {
        methods: None,
        ..token()
    };
    let imported = import(PETS, &read_only).unwrap();
    assert_eq!(
        imported.summary.line(),
        "5 operations: 2 tools, 3 left out by filters, 3 of them writes \
         (read-only by default: --methods all imports them)"
    );
    assert!(imported.summary.balanced());
    let names = |imported: &Imported| -> Vec<String> {
        spec_value(imported)["spec"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&imported), ["listPets", "showPet"]);
    let chosen = ImportOptions {
        include_operations: vec!["createPet".into(), "deletePet".into()],
        ..read_only.clone()
    };
    assert_eq!(
        names(&import(PETS, &chosen).unwrap()),
        ["createPet", "deletePet"]
    );
    let writes = ImportOptions {
        methods: Some(vec!["post", "delete"]),
        ..read_only
    };
    assert_eq!(
        names(&import(PETS, &writes).unwrap()),
        ["createPet", "deletePet"]
    );
}

#[test]
fn a_selection_naming_what_the_spec_lacks_or_keeping_nothing_is_refused() {
    let refused = |options: ImportOptions| import(PETS, &options).unwrap_err().to_string();
    assert_eq!(
        refused(ImportOptions {
            include_tags: vec!["pet".into()],
            ..token()
        }),
        "--include-tag `pet`: no operation has this tag (the spec's tags: admin, pets)"
    );
    assert_eq!(
        refused(ImportOptions {
            exclude_operations: vec!["listPet".into()],
            ..token()
        }),
        "--exclude-operation `listPet`: no operation has this operationId (5 operations have one)"
    );
    assert!(
        refused(ImportOptions {
            include_paths: vec!["/pet".into()],
            ..token()
        })
        .starts_with("--include-path `/pet`: matches no path of the spec")
    );
    assert_eq!(
        refused(ImportOptions {
            include_operations: vec!["deletePet".into()],
            methods: Some(vec!["get"]),
            ..token()
        }),
        "--operation `deletePet` is a DELETE request, which --methods leaves out"
    );
    // Each filter names something, but together they keep nothing.
    assert_eq!(
        refused(ImportOptions {
            include_tags: vec!["admin".into()],
            methods: None,
            ..token()
        }),
        "the selection keeps none of the spec's 5 operations: only GET and HEAD are imported \
         unless --methods names others (or `all`)"
    );
    assert_eq!(
        refused(ImportOptions {
            include_tags: vec!["admin".into()],
            exclude_paths: vec!["/pets/*".into()],
            ..token()
        }),
        "the selection keeps none of the spec's 5 operations"
    );
}

#[test]
fn methods_parse_in_any_case_and_all_means_every_importable_one() {
    assert_eq!(parse_methods("Get").unwrap(), ["get"]);
    assert_eq!(parse_methods("ALL").unwrap(), IMPORTABLE_METHODS);
    let err = parse_methods("OPTIONS").unwrap_err();
    assert!(
        err.contains("expected GET, HEAD, POST, PUT, PATCH, DELETE or all"),
        "{err}"
    );
    assert!(parse_methods("").is_err());
}

#[test]
fn filters_max_tools_and_strict() {
    let options = ImportOptions {
        include_tags: vec!["pets".into()],
        ..token()
    };
    let imported = import(PETS, &options).unwrap();
    assert_eq!(
        imported.summary.line(),
        "5 operations: 2 tools, 3 left out by filters"
    );
    let options = ImportOptions {
        max_tools: Some(1),
        ..token()
    };
    let imported = import(PETS, &options).unwrap();
    assert_eq!(imported.summary.tools, 1);
    assert!(imported.summary.balanced());
    assert!(
        imported
            .summary
            .line()
            .contains("4 skipped: over --max-tools")
    );
    let options = ImportOptions {
        strict: true,
        ..token()
    };
    let err = import(PETS, &options).unwrap_err();
    assert!(
        err.to_string().starts_with("--strict: 5 operations"),
        "{err}"
    );
    // Without the Secret mapping, every operation needing the token is skipped with the fix.
    let imported = import(PETS, &ImportOptions::default()).unwrap();
    assert_eq!(imported.summary.tools, 0);
    assert!(
        imported.yaml.contains("needs --secret token=SECRET/KEY"),
        "{}",
        imported.yaml
    );
    // Resources instead of read-only tools.
    let options = ImportOptions {
        resources: true,
        ..token()
    };
    let imported = import(PETS, &options).unwrap();
    assert_eq!(imported.summary.resource_templates, 1);
    let doc = spec_value(&imported);
    assert_eq!(
        doc["spec"]["resourceTemplates"][0]["uriTemplate"],
        "pet-store:/pets/{petId}"
    );
}

#[test]
fn the_base_url_must_be_literal() {
    let spec = PETS.replace(
        "servers: [{url: \"https://pets.example.com/v1\"}]",
        "servers: [{url: \"https://{tenant}.example.com\", variables: {tenant: {default: a}}}]",
    );
    let err = import(&spec, &token()).unwrap_err();
    assert!(
        err.to_string().contains("has variables: pass --base-url"),
        "{err}"
    );
    let options = ImportOptions {
        base_url: Some("https://a.example.com/".into()),
        ..token()
    };
    let imported = import(&spec, &options).unwrap();
    assert!(imported.yaml.contains("url: https://a.example.com/pets\n"));
    let relative = PETS.replace("https://pets.example.com/v1", "/v1");
    let err = import(&relative, &token()).unwrap_err();
    assert!(
        err.to_string().contains("not an absolute http(s) URL"),
        "{err}"
    );
    let options = ImportOptions {
        base_url: Some("https://user@evil.example.com".into()),
        ..token()
    };
    assert!(import(PETS, &options).is_err());
    // A path without a leading `/` would move the host: `https://a.example.com@evil.example.com`.
    let hijack = "openapi: 3.1.0\nservers: [{url: 'https://a.example.com'}]\npaths:\n  \
        '@evil.example.com/steal':\n    get: {operationId: steal}\n  /ok:\n    get: {operationId: ok}\n";
    let imported = import(hijack, &ImportOptions::default()).unwrap();
    assert!(
        !imported.yaml.contains("evil.example.com/steal\n"),
        "{}",
        imported.yaml
    );
    assert!(
        imported
            .summary
            .line()
            .contains("1 skipped: path without a leading /"),
        "{}",
        imported.summary.line()
    );
}

#[test]
fn hostile_specs_give_errors_or_safe_output() {
    // A `$ref` loop outside schemas: that operation is skipped, the rest imported.
    let looped = "openapi: 3.1.0\nservers: [{url: 'http://127.0.0.1:1'}]\npaths:\n  /a:\n    get:\n      \
        parameters: [{$ref: '#/components/parameters/P'}]\n  /b:\n    get: {}\ncomponents:\n  parameters:\n    \
        P: {$ref: '#/components/parameters/Q'}\n    Q: {$ref: '#/components/parameters/P'}\n";
    let imported = import(looped, &ImportOptions::default()).unwrap();
    assert_eq!(
        imported.summary.line(),
        "2 operations: 1 tools, 1 skipped: unresolvable $ref"
    );
    // A schema the validator refuses (an invalid regex): that tool alone is dropped, named.
    let bad_regex = "openapi: 3.1.0\nservers: [{url: 'http://127.0.0.1:1'}]\npaths:\n  /a:\n    get:\n      \
        operationId: a\n      parameters: [{name: q, in: query, schema: {type: string, pattern: '['}}]\n  \
        /b:\n    get: {operationId: b}\n";
    let imported = import(bad_regex, &ImportOptions::default()).unwrap();
    assert_eq!(
        imported.summary.line(),
        "2 operations: 1 tools, 1 skipped: does not compile"
    );
    assert!(
        imported
            .yaml
            .contains("#   skipped GET /a (a): does not compile: spec.tools[0].inputSchema"),
        "{}",
        imported.yaml
    );
    assert!(imported.yaml.contains("- name: b\n"));
    // Huge descriptions are cut, odd names sanitised, odd characters stay out of comments.
    let huge = "x".repeat(10 << 20);
    let odd = format!(
        "{{\"openapi\": \"3.0.0\", \"info\": {{\"title\": \"T\", \"version\": \"1\", \"description\": \"{huge}\"}}, \
         \"servers\": [{{\"url\": \"http://127.0.0.1:1\"}}], \"paths\": {{\"/a b/{{id}}\": {{\"get\": \
         {{\"operationId\": \"get thing\\n# injected: true\", \"description\": \"{huge}\", \"parameters\": \
         [{{\"name\": \"id\", \"in\": \"path\", \"required\": true}}], \"responses\": {{\"404\": {{\"description\": \"x\"}}}}}}}}}}}}"
    );
    let imported = import(&odd, &ImportOptions::default()).unwrap();
    assert!(imported.yaml.len() < 20_000, "{}", imported.yaml.len());
    let doc = spec_value(&imported);
    let tool = &doc["spec"]["tools"][0];
    assert_eq!(tool["name"], "get_thing_injected_true");
    assert_eq!(tool["http"]["url"], "http://127.0.0.1:1/a%20b/{id}");
    assert!(doc.get("injected").is_none());
    // YAML aliases that expand far past the document's size are refused: 10 KiB of text
    // repeated a thousand times (few enough alias jumps for the YAML parser's own limit).
    let laughs = format!(
        "openapi: 3.1.0\nservers: [{{url: 'http://127.0.0.1:1'}}]\npaths:\n  /a:\n    get: {{operationId: a}}\n\
         x-0: &a0 '{}'\nx-1: &a1 [*a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0]\n\
         x-2: &a2 [*a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1]\n\
         x-3: [*a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2]\n",
        "x".repeat(10 * 1024)
    );
    let err = import(&laughs, &ImportOptions::default()).unwrap_err();
    assert!(
        err.to_string().contains("budget") || err.to_string().contains("expand"),
        "{err}"
    );
    // Not OpenAPI, and too deep to parse.
    assert!(import("just: yaml", &ImportOptions::default()).is_err());
    let deep = format!("{}{}", "[".repeat(1_000), "]".repeat(1_000));
    assert!(import(&deep, &ImportOptions::default()).is_err());
    // A `--secret` for a scheme the spec does not define.
    let options = ImportOptions {
        secrets: vec![(
            "tokn".into(),
            mcp_declaration::SecretKeyRef {
                name: "a".into(),
                key: "b".into(),
            },
        )],
        ..Default::default()
    };
    assert!(matches!(
        import(PETS, &options),
        Err(ImportError::Option(_))
    ));
}

#[test]
fn swagger_2_documents_import() {
    let spec = r##"
swagger: "2.0"
info: {title: Todo, version: "1"}
host: todo.example.com
basePath: /api
schemes: [http, https]
securityDefinitions:
  key: {type: apiKey, in: header, name: X-Key}
security: [{key: []}]
paths:
  /todos:
    get:
      operationId: list
      parameters: [{name: done, in: query, type: boolean}]
      responses: {"200": {description: ok, schema: {type: array, items: {$ref: "#/definitions/Todo"}}}}
    post:
      operationId: create
      consumes: [application/json]
      parameters: [{name: todo, in: body, required: true, schema: {$ref: "#/definitions/Todo"}}]
      responses: {"201": {description: ok, schema: {$ref: "#/definitions/Todo"}}}
definitions:
  Todo: {type: object, properties: {title: {type: string}, done: {type: boolean, x-nullable: true}}}
"##;
    let options = ImportOptions {
        secrets: vec![(
            "key".into(),
            mcp_declaration::SecretKeyRef {
                name: "todo".into(),
                key: "key".into(),
            },
        )],
        methods: Some(IMPORTABLE_METHODS.to_vec()),
        ..Default::default()
    };
    let imported = import(spec, &options).unwrap();
    assert_eq!(imported.summary.line(), "2 operations: 2 tools");
    let doc = spec_value(&imported);
    let tools = &doc["spec"]["tools"];
    assert_eq!(
        tools[0]["http"]["url"],
        "https://todo.example.com/api/todos"
    );
    assert_eq!(tools[0]["http"]["headers"][0]["name"], "X-Key");
    // `done` is both a query parameter of `list` and a body property of `create`; each tool
    // has its own arguments.
    assert_eq!(
        tools[1]["http"]["body"]["json"],
        serde_json::json!({"title": {"$arg": "title"}, "done": {"$arg": "done"}})
    );
    assert_eq!(
        tools[1]["inputSchema"]["properties"]["done"]["type"],
        serde_json::json!(["boolean", "null"])
    );
}
