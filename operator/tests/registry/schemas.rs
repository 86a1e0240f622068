//! The published MCP Registry documents (`SOURCES.md` names them) as validators: the OpenAPI
//! `v0.1` response schemas (its component schemas, referenced as the document does) and the
//! `server.json` schema (2025-12-11). Shared by the registry tests; reads the fixture files.

#![allow(dead_code, clippy::expect_used)]

use serde_json::{Value, json};
use std::path::Path;

/// One validator per answer the registry gives.
pub struct Schemas {
    server: jsonschema::Validator,
    list: jsonschema::Validator,
    response: jsonschema::Validator,
    error: jsonschema::Validator,
}

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/registry")
        .join(name);
    std::fs::read_to_string(&path).expect("the fixture is readable")
}

fn build(schema: &Value, draft: jsonschema::Draft) -> jsonschema::Validator {
    // Formats (uri, date-time) are checked too: the documents rely on them.
    jsonschema::options()
        .with_draft(draft)
        .should_validate_formats(true)
        .build(schema)
        .expect("the published schema compiles")
}

impl Schemas {
    /// Loads both documents.
    pub fn load() -> Self {
        let openapi: Value =
            serde_yaml_ng::from_str(&fixture("openapi.v0.1.yaml")).expect("the OpenAPI is YAML");
        assert_eq!(openapi["openapi"], "3.1.0");
        assert!(openapi["paths"]["/v0.1/servers"]["get"].is_object());
        let server: Value = serde_json::from_str(&fixture("server.schema.2025-12-11.json"))
            .expect("the server.json schema is JSON");
        assert_eq!(
            server["$id"],
            "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
        );
        // A component schema, with every component beside it so `#/components/...` resolves.
        let component = |name: &str| {
            json!({
                "$ref": format!("#/components/schemas/{name}"),
                "components": openapi["components"],
            })
        };
        let error = openapi["paths"]["/v0.1/servers/{serverName}/versions/{version}"]["get"]
            ["responses"]["404"]["content"]["application/json"]["schema"]
            .clone();
        assert!(error.is_object(), "the OpenAPI documents its 404 body");
        let draft = jsonschema::Draft::Draft202012;
        Self {
            server: build(&server, jsonschema::Draft::Draft7),
            list: build(&component("ServerList"), draft),
            response: build(&component("ServerResponse"), draft),
            error: build(&error, draft),
        }
    }

    fn errors(validator: &jsonschema::Validator, value: &Value) -> Vec<String> {
        validator
            .iter_errors(value)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect()
    }

    /// Problems of a `server.json` document.
    pub fn server_problems(&self, server: &Value) -> Vec<String> {
        Self::errors(&self.server, server)
    }

    /// Problems of a `ServerList`, each `server` in it included.
    pub fn list_problems(&self, list: &Value) -> Vec<String> {
        let mut problems = Self::errors(&self.list, list);
        for (i, item) in list["servers"].as_array().into_iter().flatten().enumerate() {
            problems.extend(
                self.server_problems(&item["server"])
                    .into_iter()
                    .map(|p| format!("servers[{i}].server{p}")),
            );
        }
        problems
    }

    /// Problems of a `ServerResponse`, its `server` included.
    pub fn response_problems(&self, response: &Value) -> Vec<String> {
        let mut problems = Self::errors(&self.response, response);
        problems.extend(self.server_problems(&response["server"]));
        problems
    }

    /// Problems of an error body.
    pub fn error_problems(&self, body: &Value) -> Vec<String> {
        let mut problems = Self::errors(&self.error, body);
        if !body["error"].is_string() {
            problems.push("no `error` text".into());
        }
        problems
    }
}
