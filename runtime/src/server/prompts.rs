//! `prompts/get`: checks the arguments and renders the declared messages. Pure.

use crate::declaration::Compiled;
use crate::protocol::McpError;
use serde_json::{Map, Value, json};

/// Renders a prompt with its arguments.
pub fn get(decl: &Compiled, params: &Value) -> Result<Value, McpError> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| McpError::InvalidParams("missing `name`".into()))?;
    let prompt = decl
        .prompt(name)
        .ok_or_else(|| McpError::InvalidParams(format!("unknown prompt: {name}")))?;
    let args = match params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(args)) => args.clone(),
        Some(_) => {
            return Err(McpError::InvalidParams(
                "`arguments` must be an object".into(),
            ));
        }
    };
    for (argument, value) in &args {
        if !value.is_string() {
            return Err(McpError::InvalidParams(format!(
                "argument `{argument}` must be a string"
            )));
        }
    }
    if let Some((missing, ..)) = prompt
        .arguments
        .iter()
        .find(|(n, required, _)| *required && !args.contains_key(n))
    {
        return Err(McpError::InvalidParams(format!(
            "missing required argument `{missing}` of prompt {name}"
        )));
    }
    let args = Value::Object(args);
    let messages = prompt
        .messages
        .iter()
        .map(|message| message.render(&decl.templates, &args))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| McpError::Internal(err.to_string()))?;
    let mut result = json!({"messages": messages});
    if let Some(description) = &prompt.description {
        result["description"] = json!(description);
    }
    Ok(result)
}
