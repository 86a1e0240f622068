//! `completion/complete`: declared values for prompt arguments and URI-template variables,
//! filtered by what the user typed. Pure.

use super::params::Complete;
use super::request::{Request, Target};
use mcp_declaration::Compiled;
use mcp_protocol::McpError;
use serde_json::{Value, json};

/// MCP caps a completion at 100 values.
const MAX_VALUES: usize = 100;

/// Completes an argument of the prompt, or a variable of the resource template, the request
/// resolved to.
pub(crate) fn complete(decl: &Compiled, request: &Request) -> Result<Value, McpError> {
    let Complete {
        argument: name,
        typed,
        ..
    } = Complete::parse(&request.params)?;
    let candidates: &[String] = match &request.target {
        Target::Prompt(i) => {
            let prompt = &decl.prompts[*i];
            prompt
                .arguments
                .iter()
                .find(|(argument, ..)| argument == name)
                .map(|(_, _, values)| values.as_slice())
                .ok_or_else(|| {
                    McpError::InvalidParams(format!(
                        "prompt {} has no argument `{name}`",
                        prompt.descriptor["name"].as_str().unwrap_or_default()
                    ))
                })?
        }
        Target::Template(i) => decl.resource_templates[*i]
            .completions
            .get(name)
            .map(Vec::as_slice)
            .unwrap_or_default(),
        Target::Invalid(err) => return Err(err.clone()),
        _ => return Err(McpError::Internal("completion without a target".into())),
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
