//! `prompts/get`: checks the arguments and renders the declared messages. Pure.

use super::params::GetPrompt;
use crate::declaration::Compiled;
use crate::protocol::McpError;
use serde_json::{Value, json};

/// Renders a prompt with its arguments.
pub fn get(decl: &Compiled, params: &Value) -> Result<Value, McpError> {
    let GetPrompt { name, arguments } = GetPrompt::parse(params)?;
    let prompt = decl
        .prompt(name)
        .ok_or_else(|| McpError::InvalidParams(format!("unknown prompt: {name}")))?;
    let args = arguments.cloned().unwrap_or_default();
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
