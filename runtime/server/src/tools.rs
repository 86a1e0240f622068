//! `tools/call`: argument validation, declared progress and log notifications, the backend's
//! reply (declared content, or an upstream HTTP call), output validation, metrics, and shaping
//! the result for the era. A tool with `approval` first passes its gate (`tools/gated.rs`).

mod gated;

use super::RequestContext;
use super::Served;
use super::interactive::Rounds;
use super::interactive::{self, Outcome, Vars};
use super::params::CallTool;
use super::request::{Request, Target};
use crate::approvals::ApprovalStore;
use crate::backends::{ToolReply, content, http, text_block};
use crate::metrics::Metrics;
use mcp_declaration::{Compiled, CompiledTool};
use mcp_protocol::methods::notifications;
use mcp_protocol::{Era, LegacyVersion, McpError, notification, object};
use serde_json::{Value, json};
use std::time::Instant;

/// How many schema violations a tool error lists.
const MAX_REPORTED_VIOLATIONS: usize = 5;

/// Calls a declared tool. Unknown tools are protocol errors; everything that goes wrong inside a
/// known tool is an `isError` result the model can read.
pub(crate) async fn call(
    decl: &Served,
    metrics: &Metrics,
    rounds: &Rounds,
    approvals: Option<&dyn ApprovalStore>,
    ctx: &RequestContext,
    request: &Request,
) -> Result<Value, McpError> {
    let Target::Tool(index) = request.target else {
        return Err(McpError::Internal(
            "tools/call without a tool target".into(),
        ));
    };
    let (method, params) = (request.method.as_str(), &request.params);
    let CallTool {
        name,
        arguments: args,
    } = CallTool::parse(params)?;
    let tool = &decl.tools[index];
    let started = Instant::now();
    if let Some(approval) = &tool.approval {
        if let Some(problem) = violations(&tool.input, args) {
            metrics.tool_call(name, false, started.elapsed());
            return Ok(shape(
                ToolReply::error(format!("invalid arguments: {problem}")),
                ctx.era,
            ));
        }
        if let Some(stopped) = gated::stop(decl, approvals, ctx, name, approval, args).await {
            metrics.tool_call(name, false, started.elapsed());
            return Ok(stopped);
        }
    }
    let vars = if tool.interaction.is_empty() {
        None
    } else {
        match interactive::resolve_item(
            decl,
            metrics,
            rounds,
            ctx,
            method,
            params,
            &tool.access,
            &tool.interaction,
            args,
        )
        .await?
        {
            Outcome::Ready(vars) => Some(vars),
            Outcome::Reply(result) => return Ok(result),
            Outcome::Stop(text) => {
                metrics.tool_call(name, false, started.elapsed());
                return Ok(shape(ToolReply::error(text), ctx.era));
            }
        }
    };
    let reply = run(decl, metrics, tool, ctx, args, vars.as_ref()).await;
    metrics.tool_call(name, !reply.is_error, started.elapsed());
    Ok(shape(reply, ctx.era))
}

async fn run(
    decl: &Served,
    metrics: &Metrics,
    tool: &CompiledTool,
    ctx: &RequestContext,
    args: &Value,
    vars: Option<&Vars>,
) -> ToolReply {
    // Elicited values are arguments like the others: validated, then seen by every template.
    let args = vars.map_or(args, |vars| &vars.args);
    if let Some(problem) = violations(&tool.input, args) {
        return ToolReply::error(format!("invalid arguments: {problem}"));
    }
    send_logs(decl, tool, ctx, args).await;
    send_progress(decl, tool, ctx, args).await;
    let reply = match &tool.http {
        Some(upstream) => {
            http::tool_reply(
                upstream,
                &decl.upstreams,
                &decl.templates,
                metrics,
                args,
                ctx.caller.as_deref(),
            )
            .await
        }
        None => match vars.map_or_else(
            || content::reply(tool, &decl.templates, args),
            |vars| content::reply_in(tool, &decl.templates, &vars.to_json()),
        ) {
            Ok(reply) => reply,
            Err(err) => return ToolReply::error(err.to_string()),
        },
    };
    if tool.output.is_some() && reply.structured.is_none() && !reply.is_error {
        return ToolReply::error(
            "the tool declares an outputSchema but produced no structured result",
        );
    }
    let mut reply = reply;
    if let (Some(validator), Some(structured)) = (&tool.output, &reply.structured)
        && let Some(problem) = violations(validator, structured)
    {
        if reply.is_error {
            // An error's details need not follow the success schema; the content still tells.
            reply.structured = None;
            return reply;
        }
        return ToolReply::error(format!(
            "the tool's structured result does not match its outputSchema: {problem}"
        ));
    }
    reply
}

/// The first few schema violations, each located by its JSON pointer.
fn violations(validator: &jsonschema::Validator, value: &Value) -> Option<String> {
    // The common case, valid input, takes the validator's short-circuiting path.
    if validator.is_valid(value) {
        return None;
    }
    let found: Vec<String> = validator
        .iter_errors(value)
        .take(MAX_REPORTED_VIOLATIONS)
        .map(|err| {
            let message = without_long_echo(&err.to_string(), &err.instance().to_string());
            match err.instance_path().to_string() {
                path if path.is_empty() => message,
                path => format!("{path}: {message}"),
            }
        })
        .collect();
    (!found.is_empty()).then(|| found.join("; "))
}

/// Longest offending value a violation message quotes.
const MAX_ECHOED_CHARS: usize = 64;

/// A violation message that quotes the offending value at most [`MAX_ECHOED_CHARS`] long: a
/// large argument would otherwise come back once per violation.
fn without_long_echo(message: &str, instance: &str) -> String {
    if instance.chars().count() <= MAX_ECHOED_CHARS {
        return message.to_owned();
    }
    let short: String = instance.chars().take(MAX_ECHOED_CHARS).collect();
    let short = format!("{short}… ({} bytes)", instance.len());
    let message = message.replace(instance, &short);
    // A message that quotes the value in another form is cut instead.
    match message.char_indices().nth(4 * MAX_ECHOED_CHARS) {
        Some((at, _)) => format!("{}…", &message[..at]),
        None => message,
    }
}

async fn send_logs(decl: &Compiled, tool: &CompiledTool, ctx: &RequestContext, args: &Value) {
    let Some(threshold) = ctx.log_level else {
        return;
    };
    for log in tool.logs.iter().filter(|log| log.level >= threshold) {
        let Ok(message) = decl.templates.render(&log.message, args) else {
            continue;
        };
        let mut params = json!({"level": log.level, "data": message});
        if let Some(logger) = &log.logger {
            params["logger"] = json!(logger);
        }
        ctx.notify(notification(notifications::MESSAGE, params))
            .await;
    }
}

async fn send_progress(decl: &Compiled, tool: &CompiledTool, ctx: &RequestContext, args: &Value) {
    let Some(token) = &ctx.progress_token else {
        return;
    };
    for step in &tool.progress {
        if !step.delay.is_zero() {
            tokio::time::sleep(step.delay).await;
        }
        let mut params = json!({"progressToken": token, "progress": step.progress});
        if let Some(total) = step.total {
            params["total"] = json!(total);
        }
        if let Some(message) = step
            .message
            .as_ref()
            .and_then(|m| decl.templates.render(m, args).ok())
        {
            params["message"] = json!(message);
        }
        ctx.notify(notification(notifications::PROGRESS, params))
            .await;
    }
}

/// Era shaping: `structuredContent` is any JSON in 2026-07-28, an object from 2025-06-18, and
/// absent before (the JSON text block carries it).
pub(crate) fn shape(reply: ToolReply, era: Era) -> Value {
    let content = match era {
        Era::Legacy(version) => reply
            .content
            .into_iter()
            .map(|block| downgrade(block, version))
            .collect(),
        Era::Modern => reply.content,
    };
    let mut result = object([("content", Value::Array(content))]);
    if reply.is_error {
        result["isError"] = Value::Bool(true);
    }
    if let Some(structured) = reply.structured {
        let allowed = match era {
            Era::Modern => true,
            Era::Legacy(version) => version.has_structured_content() && structured.is_object(),
        };
        if allowed {
            result["structuredContent"] = structured;
        }
    }
    result
}

/// Content blocks an older protocol version cannot carry become text that says what they were:
/// audio arrived in 2025-03-26, resource links in 2025-06-18.
fn downgrade(block: Value, version: LegacyVersion) -> Value {
    let field = |key: &str| {
        block
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match block.get("type").and_then(Value::as_str) {
        Some("audio") if version < LegacyVersion::V2025_03_26 => text_block(format!(
            "[{} audio omitted: protocol {} cannot carry audio]",
            field("mimeType"),
            version.as_str()
        )),
        Some("resource_link") if version < LegacyVersion::V2025_06_18 => {
            text_block(format!("{}: {}", field("name"), field("uri")))
        }
        _ => block,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_versions_get_text_instead_of_blocks_they_cannot_carry() {
        let audio = json!({"type": "audio", "data": "AA==", "mimeType": "audio/wav"});
        let link = json!({"type": "resource_link", "uri": "docs://a", "name": "a"});
        let old = downgrade(audio.clone(), LegacyVersion::V2024_11_05);
        assert_eq!(old["type"], "text");
        assert!(
            old["text"]
                .as_str()
                .unwrap()
                .contains("audio/wav audio omitted")
        );
        assert_eq!(downgrade(audio.clone(), LegacyVersion::V2025_03_26), audio);
        assert_eq!(
            downgrade(link.clone(), LegacyVersion::V2025_03_26),
            json!({"type": "text", "text": "a: docs://a"})
        );
        assert_eq!(downgrade(link.clone(), LegacyVersion::V2025_06_18), link);
    }
}

#[cfg(test)]
mod echo_tests {
    use super::*;

    #[test]
    fn violations_do_not_echo_large_values() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "string", "maxLength": 3},
            "b": {"type": "string", "maxLength": 3},
            "c": {"type": "integer"}
        }});
        let validator = jsonschema::validator_for(&schema).unwrap();
        let big = "x".repeat(100_000);
        let args = json!({"a": big, "b": big, "c": big});
        let problem = violations(&validator, &args).unwrap();
        // Before, each of the three violations quoted all 100,000 characters.
        assert!(problem.len() < 2_000, "{} bytes", problem.len());
        assert!(
            problem.contains("/a") && problem.contains("/c"),
            "{problem}"
        );
    }
}
