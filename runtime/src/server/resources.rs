//! `resources/read` of fixed resources and resource templates, and the legacy subscribe check.
//! Pure.

use crate::declaration::Compiled;
use crate::protocol::McpError;
use serde_json::{Map, Value, json};

fn uri_param(params: &Value) -> Result<&str, McpError> {
    params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or_else(|| McpError::InvalidParams("missing `uri`".into()))
}

/// Reads a resource: a fixed one by URI, else the first template that matches.
pub fn read(decl: &Compiled, params: &Value) -> Result<Value, McpError> {
    let uri = uri_param(params)?;
    if let Some(resource) = decl.resource(uri) {
        return Ok(json!({"contents": [resource.contents]}));
    }
    for template in &decl.resource_templates {
        let Some(values) = template.uri.matches(uri) else {
            continue;
        };
        let args: Map<String, Value> = values
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        let text = decl
            .templates
            .render(&template.text, &Value::Object(args))
            .map_err(|err| McpError::Internal(err.to_string()))?;
        let mut contents = json!({"uri": uri, "text": text});
        if let Some(mime_type) = &template.mime_type {
            contents["mimeType"] = json!(mime_type);
        }
        return Ok(json!({"contents": [contents]}));
    }
    Err(McpError::ResourceNotFound {
        uri: uri.to_owned(),
    })
}

/// A subscription is accepted for any URI this server can read.
pub fn check_subscribable(decl: &Compiled, params: &Value) -> Result<(), McpError> {
    let uri = uri_param(params)?;
    if decl.resource(uri).is_some()
        || decl
            .resource_templates
            .iter()
            .any(|t| t.uri.matches(uri).is_some())
    {
        Ok(())
    } else {
        Err(McpError::ResourceNotFound {
            uri: uri.to_owned(),
        })
    }
}
