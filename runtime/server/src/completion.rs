//! `completion/complete`: declared values for prompt arguments and URI-template variables,
//! filtered by what the user typed. Pure.

use super::params::{Complete, CompletionRef};
use mcp_declaration::Compiled;
use mcp_protocol::McpError;
use serde_json::{Value, json};

/// MCP caps a completion at 100 values.
const MAX_VALUES: usize = 100;

/// Completes an argument of a prompt or a variable of a resource template.
pub fn complete(decl: &Compiled, params: &Value) -> Result<Value, McpError> {
    let Complete {
        reference,
        argument: name,
        typed,
    } = Complete::parse(params)?;
    let candidates: &[String] = match reference {
        CompletionRef::Prompt(prompt_name) => {
            let prompt = decl
                .prompt(prompt_name)
                .ok_or_else(|| McpError::InvalidParams(format!("unknown prompt: {prompt_name}")))?;
            prompt
                .arguments
                .iter()
                .find(|(argument, ..)| argument == name)
                .map(|(_, _, values)| values.as_slice())
                .ok_or_else(|| {
                    McpError::InvalidParams(format!(
                        "prompt {prompt_name} has no argument `{name}`"
                    ))
                })?
        }
        CompletionRef::Resource(uri) => {
            let template = decl
                .resource_templates
                .iter()
                .find(|t| t.descriptor["uriTemplate"] == uri)
                .ok_or_else(|| {
                    McpError::InvalidParams(format!("unknown resource template: {uri}"))
                })?;
            template
                .completions
                .get(name)
                .map(Vec::as_slice)
                .unwrap_or_default()
        }
    };
    let typed = typed.to_lowercase();
    let matching: Vec<&String> = candidates
        .iter()
        .filter(|v| v.to_lowercase().starts_with(&typed))
        .collect();
    let values: Vec<&String> = matching.iter().take(MAX_VALUES).copied().collect();
    Ok(json!({"completion": {
        "values": values,
        "total": matching.len(),
        "hasMore": matching.len() > values.len(),
    }}))
}
