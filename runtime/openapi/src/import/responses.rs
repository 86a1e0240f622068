//! Responses to the `http` backend: the success response's JSON schema becomes `outputSchema`
//! with a `2xx` mapping (non-object results wrapped as `{result: ...}`, since structured
//! content is an object), and 4xx/5xx answers become tool errors that carry the status and the
//! API's problem detail, so the model can correct its call. Pure.

use super::load::{Documents, Version};
use super::schema::SchemaConverter;
use super::select::Operation;
use mcp_declaration::{ContentBlock, HttpResponse};
use serde_json::{Map, Value, json};

/// The tool's `outputSchema` and `http.responses`.
#[derive(Debug, Default)]
pub(super) struct Mapped {
    /// `outputSchema`, when the one success response has a JSON schema.
    pub output_schema: Option<Map<String, Value>>,
    /// Status mappings.
    pub responses: Vec<HttpResponse>,
    /// Things dropped, for the summary.
    pub notes: Vec<String>,
}

/// Maps `op`'s responses.
pub(super) fn map(docs: &Documents, converter: &mut SchemaConverter, op: &Operation) -> Mapped {
    let mut mapped = Mapped::default();
    match success_schema(docs, op) {
        Ok(Some((file, schema))) => match converter.inline(&file, &schema) {
            Ok(Value::Object(converted)) if !converted.is_empty() => {
                let object = converted.get("type") == Some(&json!("object"));
                let (root, jq) = if object {
                    (converted, ".")
                } else {
                    let mut root = Map::new();
                    root.insert("type".into(), json!("object"));
                    root.insert("properties".into(), json!({"result": converted}));
                    root.insert("required".into(), json!(["result"]));
                    (root, "{result: .}")
                };
                mapped.output_schema = Some(root);
                mapped.responses.push(HttpResponse {
                    status: "2xx".into(),
                    jq: Some(jq.into()),
                    ..Default::default()
                });
            }
            Ok(_) => {}
            Err(reason) => mapped.notes.push(format!(
                "{}: no outputSchema ({}: {})",
                op.label(),
                reason.kind,
                reason.detail
            )),
        },
        Ok(None) => {}
        Err(message) => mapped
            .notes
            .push(format!("{}: no outputSchema ({message})", op.label())),
    }
    for (status, text) in [
        (
            "4xx",
            "The API refused the call with HTTP {{ status }}: {{ body | tojson }}",
        ),
        (
            "5xx",
            "The API failed with HTTP {{ status }}: {{ body | tojson }}",
        ),
    ] {
        mapped.responses.push(HttpResponse {
            status: status.into(),
            content: Some(vec![ContentBlock::Text {
                text: text.into(),
                annotations: None,
            }]),
            is_error: Some(true),
            ..Default::default()
        });
    }
    mapped
}

/// The JSON schema of the one documented success response (none when there are several, or
/// it has no JSON body: then the answer is passed on as received).
fn success_schema(
    docs: &Documents,
    op: &Operation,
) -> Result<Option<(std::path::PathBuf, Value)>, String> {
    let Some(responses) = op.op.get("responses").and_then(Value::as_object) else {
        return Ok(None);
    };
    let success: Vec<&Value> = responses
        .iter()
        .filter(|(code, _)| code.starts_with('2'))
        .map(|(_, r)| r)
        .collect();
    let [response] = success.as_slice() else {
        return Ok(None);
    };
    let (file, response) = docs
        .deref(&op.file, response)
        .map_err(|err| err.to_string())?;
    let schema = if docs.version == Version::Swagger2 {
        response.get("schema")
    } else {
        response
            .get("content")
            .and_then(Value::as_object)
            .and_then(|content| {
                content
                    .iter()
                    .find(|(t, _)| {
                        let t = t.split(';').next().unwrap_or_default().trim();
                        t == "application/json" || t.ends_with("+json")
                    })
                    .map(|(_, media)| media)
            })
            .and_then(|media| media.get("schema"))
    };
    Ok(schema.map(|schema| (file, schema.clone())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn run(text: &str) -> Mapped {
        let docs = Documents::parse(text, Path::new(".")).unwrap();
        let ops = super::super::select::operations(&docs).unwrap();
        map(&docs, &mut SchemaConverter::new(&docs), &ops[0])
    }

    #[test]
    fn an_object_success_schema_is_the_output_schema() {
        let mapped = run(
            "openapi: 3.1.0\npaths:\n  /a:\n    get:\n      responses:\n        '200':\n          \
             content:\n            application/json:\n              schema: {$ref: '#/components/schemas/A'}\n        \
             '404': {description: gone}\ncomponents:\n  schemas:\n    A: {type: object, properties: {b: {$ref: '#/components/schemas/B'}}}\n    B: {type: string}\n",
        );
        let schema = mapped.output_schema.unwrap();
        assert_eq!(
            Value::Object(schema),
            json!({"type": "object", "properties": {"b": {"$ref": "#/schemas/B"}}})
        );
        let statuses: Vec<&str> = mapped.responses.iter().map(|r| r.status.as_str()).collect();
        assert_eq!(statuses, ["2xx", "4xx", "5xx"]);
        assert_eq!(mapped.responses[0].jq.as_deref(), Some("."));
        assert_eq!(mapped.responses[1].is_error, Some(true));
    }

    #[test]
    fn other_results_are_wrapped_and_ambiguous_ones_passed_on() {
        let mapped = run(
            "swagger: '2.0'\npaths:\n  /a:\n    get:\n      responses:\n        '200': {description: ok, schema: {type: array, items: {type: string}}}\n",
        );
        assert_eq!(
            mapped.output_schema.unwrap()["properties"],
            json!({"result": {"type": "array", "items": {"type": "string"}}})
        );
        assert_eq!(mapped.responses[0].jq.as_deref(), Some("{result: .}"));
        let mapped = run(
            "openapi: 3.0.3\npaths:\n  /a:\n    post:\n      responses:\n        \
             '200': {content: {application/json: {schema: {type: object}}}}\n        '204': {description: none}\n",
        );
        assert!(mapped.output_schema.is_none());
        assert_eq!(mapped.responses.len(), 2);
    }
}
