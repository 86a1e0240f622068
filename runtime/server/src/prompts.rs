//! `prompts/get`: asks for declared `elicit` values, checks the arguments and renders the
//! declared messages. Pure in 2026-07-28; legacy eras ask over the session.

use super::RequestContext;
use super::interactive::Rounds;
use super::interactive::{self, Outcome};
use super::params::GetPrompt;
use super::request::{Request, Target};
use crate::metrics::Metrics;
use mcp_declaration::Compiled;
use mcp_protocol::McpError;
use serde_json::{Value, json};

/// Renders a prompt with its arguments, first asking the client for declared `elicit` values
/// the request lacks.
pub(crate) async fn get(
    decl: &Compiled,
    metrics: &Metrics,
    rounds: &Rounds,
    ctx: &RequestContext,
    request: &Request,
) -> Result<Value, McpError> {
    let Target::Prompt(index) = request.target else {
        return Err(McpError::Internal(
            "prompts/get without a prompt target".into(),
        ));
    };
    let (method, params) = (request.method.as_str(), &request.params);
    let GetPrompt { name, arguments } = GetPrompt::parse(params)?;
    let prompt = &decl.prompts[index];
    let mut args = arguments.cloned().unwrap_or_default();
    if !prompt.interaction.is_empty() {
        let given = Value::Object(args.clone());
        match interactive::resolve_item(
            decl,
            metrics,
            rounds,
            ctx,
            method,
            params,
            &prompt.access,
            &prompt.interaction,
            &given,
        )
        .await?
        {
            Outcome::Ready(vars) => {
                // Prompt arguments are strings: elicited numbers and booleans become text.
                for (key, value) in vars.args.as_object().into_iter().flatten() {
                    let text = match value {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    };
                    args.insert(key.clone(), Value::String(text));
                }
            }
            Outcome::Reply(result) => return Ok(result),
            Outcome::Stop(text) => return Err(McpError::InvalidParams(text)),
        }
    }
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
