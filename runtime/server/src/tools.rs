//! `tools/call`: argument validation, declared progress and log notifications, the backend's
//! reply (declared content, an upstream HTTP call, or a job: inline or as a task), metrics;
//! output validation and shaping the result for the era in `tool_result.rs`. A tool with
//! `approval` first passes its gate (`tools/gated.rs`), or waits for it as a task.

mod gated;

use super::RequestContext;
use super::Served;
use super::interactive::Rounds;
use super::interactive::{self, Outcome, Vars};
use super::params::CallTool;
use super::request::{Request, Target};
use super::tasks;
use super::tool_result::{checked, shape, violations};
use crate::approvals::ApprovalStore;
use crate::backends::{ToolReply, content, http};
use crate::metrics::Metrics;
use mcp_declaration::{Compiled, CompiledTool};
use mcp_protocol::methods::notifications;
use mcp_protocol::{McpError, notification};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;

/// Calls a declared tool. Unknown tools are protocol errors; everything that goes wrong inside a
/// known tool is an `isError` result the model can read.
///
/// The slow paths (approval gate, questions, tasks, upstream calls) are boxed where they are
/// awaited, allocated only when taken: inline, this future would be as large as the largest of
/// them, and a declared-content call's future is moved several times on its way to hyper
/// (those copies were over a third of a stateless call's instructions by callgrind).
pub(crate) async fn call(
    decl: &Served,
    metrics: &Arc<Metrics>,
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
    // Before any question is asked: a tool that must be a task refuses a client without tasks.
    let execution = tasks::decide(ctx, params, tool)?;
    let started = Instant::now();
    if let Some(approval) = &tool.approval {
        if let Some(problem) = violations(&tool.input, args) {
            metrics.tool_call(name, false, started.elapsed());
            return Ok(shape(
                ToolReply::error(format!("invalid arguments: {problem}")),
                ctx.era,
            ));
        }
        let as_task = tasks::client_takes_tasks(ctx, params).then_some(&*rounds.sealer);
        let gate = gated::stop(decl, approvals, ctx, name, approval, args, as_task);
        if let Some(stopped) = Box::pin(gate).await {
            metrics.tool_call(name, false, started.elapsed());
            return Ok(stopped);
        }
    }
    let vars = if tool.interaction.is_empty() {
        None
    } else {
        match Box::pin(interactive::resolve_item(
            decl,
            metrics,
            rounds,
            ctx,
            method,
            params,
            &tool.access,
            &tool.interaction,
            args,
        ))
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
    let reply = match execution {
        tasks::Execution::Task { requested_ttl_ms } => {
            let args = vars.as_ref().map_or(args, |vars| &vars.args);
            if let Some(problem) = violations(&tool.input, args) {
                ToolReply::error(format!("invalid arguments: {problem}"))
            } else {
                let sealer = &rounds.sealer;
                let start = tasks::start(decl, metrics, sealer, ctx, index, args, requested_ttl_ms);
                match Box::pin(start).await {
                    Ok(created) => {
                        metrics.tool_call(name, true, started.elapsed());
                        return Ok(created);
                    }
                    Err(reply) => checked(tool, reply),
                }
            }
        }
        tasks::Execution::Inline => {
            let decl = request.declaration();
            run(decl, metrics, tool, ctx, args, vars.as_ref()).await
        }
    };
    metrics.tool_call(name, !reply.is_error, started.elapsed());
    Ok(shape(reply, ctx.era))
}

async fn run(
    decl: &Arc<Served>,
    metrics: &Arc<Metrics>,
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
        Some(upstream) if upstream.job.is_some() => {
            Box::pin(tasks::run_inline(decl, metrics, tool, ctx, args)).await
        }
        Some(upstream) => {
            Box::pin(http::tool_reply(
                upstream,
                &decl.upstreams,
                &decl.templates,
                metrics,
                args,
                ctx.caller.as_deref(),
            ))
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
    checked(tool, reply)
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
