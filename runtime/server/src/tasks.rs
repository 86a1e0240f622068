//! Tasks without a task store. A `tools/call` of an `http.async` tool starts the upstream job
//! and, for a client that supports tasks, answers with a task whose id is a sealed handle
//! (`handle.rs`); `tasks/get`, `tasks/cancel` and `tasks/result` open the handle on any
//! replica and ask the upstream. The task exists durably before the answer returns because the
//! upstream job does. Upstream I/O through `backends/http/job.rs`.
//!
//! The seams:
//! - [`decide`]: whether a `tools/call` runs inline or becomes a task (called by `tools.rs`
//!   before any interaction, so `task: required` refuses first).
//! - [`start`]: starts the work and seals the handle; [`handle::Pending`] names the kind of
//!   work: an upstream job, or a call waiting for its approval (`approval.rs`, whose task is
//!   created by the gate in `tools/gated.rs`), each with its own arm in [`observe`].
//! - [`answer`]: the `tasks/*` methods, per era.
//!
//! `tasks/list` is not served (-32601, and `capabilities.tasks.list` is not advertised): a task
//! lives only in its id, which only its client holds, so no replica could list them.

pub(crate) mod approval;
pub(crate) mod handle;
mod inline;
pub(crate) mod watch;
mod wire;

pub(crate) use inline::run_inline;

use crate::RequestContext;
use crate::approvals::ApprovalStore;
use crate::backends::{ToolReply, http};
use crate::metrics::Metrics;
use crate::served::Served;
use crate::sessions::Sealer;
use handle::{MAX_STATUS_URL_LEN, Pending, TaskHandle, now_ms};
use mcp_declaration::{CompiledTool, TaskSupport};
use mcp_protocol::extensions::TASKS;
use mcp_protocol::{Era, LegacyVersion, McpError, meta, methods};
use serde_json::{Value, json};
use std::time::Duration;
use wire::Status;

/// Longest a call waits for a job inline (a client without tasks, or `tasks/result`): the
/// upper bound of an upstream call's own deadline (`http.timeoutMs`).
pub(crate) const MAX_INLINE_WAIT: Duration = Duration::from_secs(120);
/// Shortest TTL a 2025-11-25 client may ask for.
const MIN_REQUESTED_TTL_MS: u64 = 1_000;

/// How a `tools/call` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Execution {
    /// Answered in the request (a job is waited for, within [`MAX_INLINE_WAIT`]).
    Inline,
    /// As a task; a 2025-11-25 client may have asked for a shorter TTL.
    Task { requested_ttl_ms: Option<u64> },
}

/// Decides how a call of `tool` runs for this client: a task when the tool can be one and the
/// client supports tasks (2026-07-28: the extension in this request's capabilities;
/// 2025-11-25: a task-augmented request); a refusal when the tool must be a task and the
/// client cannot take one.
pub(crate) fn decide(
    ctx: &RequestContext,
    params: &Value,
    tool: &CompiledTool,
) -> Result<Execution, McpError> {
    if tool.task == TaskSupport::Never {
        // A sync tool is never promoted; a legacy `task` param is tolerated and ignored.
        return Ok(Execution::Inline);
    }
    // 2025-11-25's task augmentation; 2026-07-28 tolerates the param and ignores it (the
    // server alone decides there).
    let augmented = match ctx.era {
        Era::Modern => None,
        Era::Legacy(_) => params.get("task").filter(|task| task.is_object()),
    };
    let wants = client_takes_tasks(ctx, params);
    match (wants, tool.task, ctx.era) {
        (true, _, _) => Ok(Execution::Task {
            requested_ttl_ms: augmented
                .and_then(|task| task.get("ttl"))
                .and_then(Value::as_u64)
                .map(|ttl| ttl.max(MIN_REQUESTED_TTL_MS)),
        }),
        (false, TaskSupport::Required, Era::Modern) => Err(missing_extension()),
        (false, TaskSupport::Required, Era::Legacy(_)) => Err(McpError::MethodNotFound(
            "tools/call of a tool that runs only as a task needs a task-augmented request".into(),
        )),
        (false, _, _) => Ok(Execution::Inline),
    }
}

/// Whether this request's client takes a task as the answer of a `tools/call`: 2026-07-28,
/// the extension in this request's capabilities; 2025-11-25, a task-augmented request.
pub(crate) fn client_takes_tasks(ctx: &RequestContext, params: &Value) -> bool {
    match ctx.era {
        Era::Modern => client_declares_tasks(params),
        Era::Legacy(version) => {
            version >= LegacyVersion::V2025_11_25
                && params.get("task").is_some_and(Value::is_object)
        }
    }
}

/// Starts `tool`'s job for `args` (validated) and answers with the task, or, when no job
/// started (the upstream refused, an error), with the plain reply.
pub(crate) async fn start(
    decl: &Served,
    metrics: &Metrics,
    sealer: &Sealer,
    ctx: &RequestContext,
    tool_index: usize,
    args: &Value,
    requested_ttl_ms: Option<u64>,
) -> Result<Value, ToolReply> {
    let tool = &decl.tools[tool_index];
    let Some((upstream, job)) = tool
        .http
        .as_deref()
        .and_then(|h| h.job.as_ref().map(|job| (h, job)))
    else {
        return Err(ToolReply::error("the tool cannot run as a task"));
    };
    let caller = ctx.caller.as_deref();
    let started = http::start_job(
        upstream,
        &decl.upstreams,
        &decl.templates,
        metrics,
        args,
        caller,
    );
    let status_url = match started.await {
        http::Started::Job(url) => url,
        http::Started::Reply(reply) => return Err(reply),
    };
    if status_url.as_str().len() > MAX_STATUS_URL_LEN {
        return Err(ToolReply::error(
            "the upstream's status URL is too long to carry in a task id",
        ));
    }
    let declared_ttl = u64::try_from(job.ttl.as_millis()).unwrap_or(u64::MAX);
    let handle = TaskHandle {
        work: Pending::UpstreamJob {
            status_url: status_url.into(),
        },
        tool: name_of(tool).to_owned(),
        principal: crate::interactive::principal(ctx),
        args: crate::audit::digest(args),
        created_ms: now_ms(),
        ttl_ms: requested_ttl_ms.map_or(declared_ttl, |asked| asked.min(declared_ttl)),
    };
    let id = handle.seal(sealer);
    let task = wire::task(
        ctx.era,
        &id,
        &handle,
        Status::Working,
        job.interval,
        now_ms(),
    );
    Ok(wire::created(ctx.era, task))
}

/// What a task is now.
enum Observed {
    Working,
    Completed(ToolReply),
    Failed(McpError),
    Cancelled,
}

impl Observed {
    fn status(&self) -> Status {
        match self {
            Self::Working => Status::Working,
            Self::Completed(_) => Status::Completed,
            Self::Failed(_) => Status::Failed,
            Self::Cancelled => Status::Cancelled,
        }
    }
}

/// The tool a handle names, if it still runs jobs, with its poll interval.
fn job_tool<'a>(decl: &'a Served, handle: &TaskHandle) -> Option<(&'a CompiledTool, Duration)> {
    job_tool_named(decl, &handle.tool)
}

fn job_tool_named<'a>(decl: &'a Served, name: &str) -> Option<(&'a CompiledTool, Duration)> {
    let tool = decl.tool(name)?;
    let interval = tool.http.as_ref()?.job.as_ref()?.interval;
    Some((tool, interval))
}

/// How often a client is asked to poll the task of `handle`.
fn poll_interval(decl: &Served, handle: &TaskHandle) -> Duration {
    match handle.work {
        Pending::UpstreamJob { .. } => job_tool(decl, handle).map_or(Duration::ZERO, |(_, p)| p),
        Pending::Approval { .. } => approval::APPROVAL_POLL,
    }
}

/// Asks the work's owner (the upstream, or the approval store) what the task is now. `Err`:
/// it could not be asked.
async fn observe(
    decl: &Served,
    metrics: &Metrics,
    approvals: Option<approval::Approvals<'_>>,
    ctx: &RequestContext,
    handle: &TaskHandle,
) -> Result<Observed, McpError> {
    match &handle.work {
        Pending::UpstreamJob { status_url } => {
            observe_job(decl, metrics, ctx, &handle.tool, status_url).await
        }
        Pending::Approval { .. } => approval::observe(decl, metrics, approvals, ctx, handle).await,
    }
}

/// Asks the upstream what the job of `tool` at `status_url` is now.
async fn observe_job(
    decl: &Served,
    metrics: &Metrics,
    ctx: &RequestContext,
    tool: &str,
    status_url: &str,
) -> Result<Observed, McpError> {
    let Some((tool, _)) = job_tool_named(decl, tool) else {
        return Ok(Observed::Failed(McpError::Internal(format!(
            "the tool `{tool}` no longer runs as a task here"
        ))));
    };
    let Some(upstream) = tool.http.as_deref() else {
        return Ok(Observed::Failed(McpError::Internal("no upstream".into())));
    };
    let url = sealed_url(status_url)?;
    let caller = ctx.caller.as_deref();
    let state = http::job_state(
        upstream,
        &decl.upstreams,
        &decl.templates,
        metrics,
        &url,
        caller,
    )
    .await
    .map_err(McpError::Internal)?;
    Ok(match state {
        http::JobState::Working => Observed::Working,
        http::JobState::Finished(reply) => {
            Observed::Completed(crate::tool_result::checked(tool, reply))
        }
        http::JobState::Cancelled => Observed::Cancelled,
        http::JobState::Gone => Observed::Failed(McpError::Internal(
            "the upstream no longer knows this job".into(),
        )),
    })
}

/// The status URL a task id sealed (checked when it was sealed).
fn sealed_url(status_url: &str) -> Result<reqwest::Url, McpError> {
    reqwest::Url::parse(status_url)
        .map_err(|_| McpError::Internal("the sealed status URL is invalid".into()))
}

/// Asks the work's owner to stop it: `false` when there is no way to (the tool declares no
/// cancel request, or is no longer served).
async fn cancel_work(
    decl: &Served,
    metrics: &Metrics,
    ctx: &RequestContext,
    handle: &TaskHandle,
) -> Result<bool, McpError> {
    let Some(upstream) = job_tool(decl, handle).and_then(|(tool, _)| tool.http.as_deref()) else {
        return Ok(false);
    };
    match &handle.work {
        // Never asked: `answer` acknowledges these itself.
        Pending::Approval { .. } => Ok(false),
        Pending::UpstreamJob { status_url } => {
            if upstream.job.as_ref().is_none_or(|job| job.cancel.is_none()) {
                return Ok(false);
            }
            let url = sealed_url(status_url)?;
            let caller = ctx.caller.as_deref();
            http::cancel_job(
                upstream,
                &decl.upstreams,
                &decl.templates,
                metrics,
                &url,
                caller,
            )
            .await
            .map(|()| true)
            .map_err(McpError::Internal)
        }
    }
}

/// Answers `tasks/get`, `tasks/cancel`, `tasks/update`, `tasks/result` and `tasks/list`.
pub(crate) async fn answer(
    decl: &Served,
    metrics: &Metrics,
    sealer: &Sealer,
    store: Option<&dyn ApprovalStore>,
    ctx: &RequestContext,
    method: &str,
    params: &Value,
) -> Result<Value, McpError> {
    match ctx.era {
        Era::Modern if matches!(method, methods::TASKS_RESULT | methods::TASKS_LIST) => {
            return Err(McpError::MethodNotFound(method.to_owned()));
        }
        Era::Modern if !client_declares_tasks(params) => return Err(missing_extension()),
        Era::Legacy(version)
            if version < LegacyVersion::V2025_11_25
                || matches!(method, methods::TASKS_UPDATE | methods::TASKS_LIST) =>
        {
            return Err(McpError::MethodNotFound(method.to_owned()));
        }
        _ => {}
    }
    let id = params
        .get("taskId")
        .and_then(Value::as_str)
        .ok_or_else(|| McpError::InvalidParams("missing `taskId`".into()))?;
    let principal = crate::interactive::principal(ctx);
    let handle = TaskHandle::open(sealer, id, principal.as_deref(), now_ms())?;
    let poll = poll_interval(decl, &handle);
    let approvals = store.map(|store| approval::Approvals { store, sealer });
    let fields = |status| wire::task(ctx.era, id, &handle, status, poll, now_ms());
    match method {
        methods::TASKS_GET => {
            let observed = observe(decl, metrics, approvals, ctx, &handle).await?;
            let task = fields(observed.status());
            Ok(match (ctx.era, observed) {
                (Era::Modern, Observed::Completed(reply)) => {
                    wire::detailed(task, Some(crate::tool_result::shape(reply, ctx.era)), None)
                }
                (Era::Modern, Observed::Failed(error)) => wire::detailed(task, None, Some(&error)),
                (_, Observed::Failed(error)) => {
                    let mut task = task;
                    task.insert("statusMessage".into(), json!(error.to_string()));
                    Value::Object(task)
                }
                (_, _) => Value::Object(task),
            })
        }
        methods::TASKS_CANCEL if matches!(handle.work, Pending::Approval { .. }) => {
            // Not observed: reading an approved approval would run the call.
            approval::cancel(ctx.era)
        }
        methods::TASKS_CANCEL => {
            let observed = observe(decl, metrics, approvals, ctx, &handle).await?;
            let terminal = !matches!(observed, Observed::Working);
            let sent = !terminal && cancel_work(decl, metrics, ctx, &handle).await?;
            match ctx.era {
                // An empty acknowledgement, also for a task already finished: cancellation is
                // cooperative, the status tells what happened.
                Era::Modern => Ok(json!({})),
                Era::Legacy(_) if terminal => Err(McpError::InvalidParams(format!(
                    "cannot cancel a task that is already {}",
                    observed.status().as_str()
                ))),
                Era::Legacy(_) if !sent => Err(McpError::InvalidParams(
                    "this task cannot be cancelled: its tool declares no cancel request".into(),
                )),
                Era::Legacy(_) => Ok(Value::Object(fields(Status::Cancelled))),
            }
        }
        // Declared async tools ask nothing while they run: an acknowledgement.
        methods::TASKS_UPDATE => Ok(json!({})),
        methods::TASKS_RESULT => {
            let wait = MAX_INLINE_WAIT.min(Duration::from_millis(
                handle.expires_ms().saturating_sub(now_ms()),
            ));
            let deadline = tokio::time::Instant::now() + wait;
            loop {
                match observe(decl, metrics, approvals, ctx, &handle).await? {
                    Observed::Completed(reply) => {
                        return Ok(wire::related(crate::tool_result::shape(reply, ctx.era), id));
                    }
                    Observed::Failed(error) => return Err(error),
                    Observed::Cancelled => {
                        return Err(McpError::InvalidParams("the task was cancelled".into()));
                    }
                    Observed::Working => {}
                }
                if tokio::time::Instant::now() + poll > deadline {
                    return Err(McpError::Internal(format!(
                        "the task is still working after {} s; call tasks/result again",
                        wait.as_secs()
                    )));
                }
                tokio::time::sleep(poll).await;
            }
        }
        _ => Err(McpError::MethodNotFound(method.to_owned())),
    }
}

/// Whether this 2026-07-28 request's client capabilities declare the Tasks extension.
fn client_declares_tasks(params: &Value) -> bool {
    params
        .get("_meta")
        .and_then(|m| m.get(meta::CLIENT_CAPABILITIES))
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(TASKS))
        .is_some()
}

fn missing_extension() -> McpError {
    McpError::MissingCapability(json!({"extensions": {TASKS: {}}}))
}

fn name_of(tool: &CompiledTool) -> &str {
    tool.descriptor["name"].as_str().unwrap_or_default()
}

/// Whether `decl` has a tool whose call can be a task (the capability and extension are
/// advertised).
pub(crate) fn any(decl: &mcp_declaration::Compiled) -> bool {
    // A gated tool's call waits for its approval as a task.
    decl.tools
        .iter()
        .any(|t| t.task != TaskSupport::Never || t.approval.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_declaration::{CompileOptions, Compiled, compile, parse_manifest};

    fn declaration() -> Compiled {
        let job = "    http:\n      method: POST\n      url: https://jobs.example.com/jobs\n      async: {status: {jq: .url}, done: .done}\n";
        let text = format!(
            "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {{name: t}}\nspec:\n  tools:\n  - name: optional\n{job}  - name: required\n    task: required\n{job}  - name: sync\n    content: [{{type: text, text: hi}}]\n"
        );
        let manifest = parse_manifest(&text, ".".into()).unwrap();
        compile(&manifest, &CompileOptions::default()).unwrap()
    }

    fn modern(extension: bool) -> (RequestContext, Value) {
        let capabilities = if extension {
            json!({"extensions": {TASKS: {}}})
        } else {
            json!({})
        };
        let params =
            json!({"_meta": {meta::CLIENT_CAPABILITIES: capabilities}, "task": {"ttl": 5}});
        (
            RequestContext::new(Era::Modern, &params, None, None),
            params,
        )
    }

    fn legacy(version: LegacyVersion, augmented: bool) -> (RequestContext, Value) {
        let params = if augmented {
            json!({"task": {"ttl": 5}})
        } else {
            json!({})
        };
        (
            RequestContext::new(Era::Legacy(version), &params, None, None),
            params,
        )
    }

    #[test]
    fn a_call_becomes_a_task_only_for_a_client_with_tasks_and_a_tool_that_can_be_one() {
        let decl = declaration();
        let tool = |name: &str| decl.tool(name).unwrap();
        let decide =
            |(ctx, params): (RequestContext, Value), name: &str| decide(&ctx, &params, tool(name));
        let task = |ttl| {
            Ok(Execution::Task {
                requested_ttl_ms: ttl,
            })
        };
        assert_eq!(decide(modern(true), "optional"), task(None));
        assert_eq!(decide(modern(true), "required"), task(None));
        assert_eq!(decide(modern(false), "optional"), Ok(Execution::Inline));
        assert_eq!(decide(modern(false), "required"), Err(missing_extension()));
        // A sync tool is never promoted, whatever the client sends.
        assert_eq!(decide(modern(true), "sync"), Ok(Execution::Inline));
        let v2025_11_25 = LegacyVersion::V2025_11_25;
        assert_eq!(
            decide(legacy(v2025_11_25, true), "optional"),
            task(Some(1_000))
        );
        assert_eq!(
            decide(legacy(v2025_11_25, false), "optional"),
            Ok(Execution::Inline)
        );
        assert_eq!(
            decide(legacy(v2025_11_25, true), "sync"),
            Ok(Execution::Inline)
        );
        assert!(matches!(
            decide(legacy(v2025_11_25, false), "required"),
            Err(McpError::MethodNotFound(_))
        ));
        // Before 2025-11-25 there are no tasks, augmented or not.
        let older = LegacyVersion::V2025_06_18;
        assert_eq!(
            decide(legacy(older, true), "optional"),
            Ok(Execution::Inline)
        );
    }
}
