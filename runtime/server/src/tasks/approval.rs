//! Tasks that wait for an approval. A client that takes tasks and calls a gated tool whose
//! approval is pending gets a task whose sealed id carries the approval's id, the call's digest
//! and the whole arguments ([`waiting`]). `tasks/get` re-checks the approval by id and digest
//! ([`observe`]): pending is `working`; denied or expired completes with a tool error; approved
//! and unused is claimed (single use, through the store, as the gate does) and the exact sealed
//! call runs, once, under the tool's current declaration only if its version is the approved
//! one; its outcome (a reply, or the job an `http.async` tool started) is sealed with the
//! session key and recorded in the approval once (`ApprovalStore::settle`), so a later
//! `tasks/get`, on any replica, answers the same without running the call again. Store and
//! upstream I/O.

use super::handle::{MAX_SEALED_ARGS_BYTES, MAX_STATUS_URL_LEN, Pending, TaskHandle, now_ms};
use super::wire::{self, Status};
use super::{MAX_INLINE_WAIT, Observed, observe_job};
use crate::RequestContext;
use crate::approvals::{
    self, Approval, ApprovalStore, MAX_OUTCOME_CHARS, SealedCall, State, format_time,
};
use crate::backends::{ToolReply, content, http};
use crate::metrics::Metrics;
use crate::served::Served;
use crate::sessions::Sealer;
use crate::telemetry;
use crate::tool_result::checked;
use mcp_declaration::CompiledTool;
use mcp_protocol::{Era, McpError};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How often a client is asked to poll a task waiting for a person.
pub(crate) const APPROVAL_POLL: Duration = Duration::from_secs(2);
/// How long a used approval without a recorded outcome reads as `working` (another request or
/// replica is running the call; a call runs within [`MAX_INLINE_WAIT`]), counted from its use.
/// Past it the runtime that ran it is taken to have died mid-call: the task completes with a
/// tool error, and the call is not run again (it may have had its effect).
pub(crate) const UNRECORDED_WAIT: Duration =
    MAX_INLINE_WAIT.saturating_add(Duration::from_secs(30));
/// How long a task outlives its approval's expiry: a client that polls late still reads what
/// became of the call (expired, or its recorded outcome) rather than "unknown task".
pub(crate) const KEPT_AFTER_EXPIRY: Duration = Duration::from_secs(10 * 60);
/// Purpose an outcome is sealed for (with the approval's id: an outcome copied onto another
/// approval does not open).
const OUTCOME_AAD: &str = "kube-mcp approval outcome v1 ";

/// The approval store and the key outcomes are sealed with.
#[derive(Clone, Copy)]
pub(crate) struct Approvals<'a> {
    pub(crate) store: &'a dyn ApprovalStore,
    pub(crate) sealer: &'a Sealer,
}

/// What an approved call came to, as recorded in its approval.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "k")]
enum Outcome {
    /// The tool's reply.
    #[serde(rename = "reply")]
    Reply {
        content: Vec<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        structured: Option<Value>,
        is_error: bool,
    },
    /// The job an `http.async` tool started: observed like any job task.
    #[serde(rename = "job")]
    Job { status_url: String },
}

impl Outcome {
    fn reply(reply: ToolReply) -> Self {
        Self::Reply {
            content: reply.content,
            structured: reply.structured,
            is_error: reply.is_error,
        }
    }

    fn error(text: impl Into<String>) -> Self {
        Self::reply(ToolReply::error(text))
    }

    /// Sealed for approval `id`; a tool error saying so when too large to record.
    fn seal(&self, sealer: &Sealer, id: &str) -> String {
        let aad = format!("{OUTCOME_AAD}{id}");
        // Plain JSON values: serializing cannot fail.
        let sealed = sealer.seal_bytes(
            aad.as_bytes(),
            &serde_json::to_vec(self).unwrap_or_default(),
        );
        if sealed.len() <= MAX_OUTCOME_CHARS {
            return sealed;
        }
        let too_large = Self::error(format!(
            "the call ran (approval {id}), but its result is larger than the {} KiB an approval \
             records, so it was not kept",
            MAX_OUTCOME_CHARS / 1024
        ));
        sealer.seal_bytes(
            aad.as_bytes(),
            &serde_json::to_vec(&too_large).unwrap_or_default(),
        )
    }

    fn open(sealer: &Sealer, id: &str, sealed: &str) -> Option<Self> {
        let aad = format!("{OUTCOME_AAD}{id}");
        let plain = sealer.open_bytes(aad.as_bytes(), sealed, MAX_OUTCOME_CHARS)?;
        serde_json::from_slice(&plain).ok()
    }
}

/// The `tools/call` answer of a call of `tool` with `args` waiting for `approval`: a task
/// (`statusMessage`: what the approver is asked, who approves and how), with the gate's
/// `_meta` denial for programs. `None` when the arguments are too large to seal into an id
/// (the caller then gets the tool error of a client without tasks).
pub(crate) fn waiting(
    sealer: &Sealer,
    ctx: &RequestContext,
    tool: &str,
    approval: &Approval,
    args: &Value,
    status_message: String,
    meta: Value,
) -> Option<Value> {
    if args.to_string().len() > MAX_SEALED_ARGS_BYTES {
        return None;
    }
    let now = now_ms();
    let expires = approval
        .expires
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let handle = TaskHandle {
        work: Pending::Approval {
            id: approval.id.clone(),
            digest: approval.call.digest.clone(),
            args: args.clone(),
        },
        tool: tool.to_owned(),
        principal: crate::interactive::principal(ctx),
        args: crate::audit::digest(args),
        created_ms: now,
        // As long as the approval may be decided and used, and a while to read the outcome.
        ttl_ms: expires
            .saturating_sub(now)
            .saturating_add(KEPT_AFTER_EXPIRY.as_secs() * 1000),
    };
    let id = handle.seal(sealer);
    let mut task = wire::task(ctx.era, &id, &handle, Status::Working, APPROVAL_POLL, now);
    task.insert("statusMessage".into(), json!(status_message));
    let mut created = wire::created(ctx.era, task);
    created["_meta"] = json!({ approvals::AUTHORIZATION_META: meta });
    Some(created)
}

/// What the task of `handle` (an approval's) is now; runs the call when it was just approved.
/// `Err`: the store could not be asked.
pub(super) async fn observe(
    decl: &Served,
    metrics: &Metrics,
    approvals: Option<Approvals<'_>>,
    ctx: &RequestContext,
    handle: &TaskHandle,
) -> Result<Observed, McpError> {
    let Pending::Approval { id, digest, args } = &handle.work else {
        return Err(McpError::Internal("not an approval's task".into()));
    };
    let Some(approvals) = approvals else {
        return Ok(done(Outcome::error(
            "this server has no approval store configured; the call did not run",
        )));
    };
    let found = approvals.store.find(digest).await.map_err(|err| {
        tracing::warn!(error = %err, tool = handle.tool, "approval store failed");
        McpError::Internal("the approval store is unavailable; ask again later".into())
    })?;
    let Some(approval) = found.into_iter().find(|a| &a.id == id) else {
        return Ok(done(Outcome::error(format!(
            "approval {id} no longer exists; the call did not run"
        ))));
    };
    let now = SystemTime::now();
    let decider = approval.decided_by.clone().unwrap_or_default();
    Ok(match approval.state {
        State::Pending | State::Approved if approval.expired(now) => done(Outcome::error(format!(
            "approval {id} expired at {} before the call could run; the call did not run",
            format_time(approval.expires)
        ))),
        State::Pending => Observed::Working,
        State::Denied => done(Outcome::error(format!(
            "{decider} denied this call (approval {id}); it did not run"
        ))),
        State::Approved => {
            let Some(outcome) =
                run_once(decl, metrics, approvals, ctx, handle, &approval, args).await?
            else {
                // Another request or replica claimed it first: its outcome is read next time.
                return Ok(Observed::Working);
            };
            into_observed(decl, metrics, ctx, handle, outcome).await?
        }
        State::Used => match &approval.outcome {
            Some(sealed) => match Outcome::open(approvals.sealer, id, sealed) {
                Some(outcome) => into_observed(decl, metrics, ctx, handle, outcome).await?,
                None => Observed::Failed(McpError::Internal(
                    "the recorded outcome does not open with this server's key".into(),
                )),
            },
            None if approval
                .used_at
                .is_some_and(|used| now < used + UNRECORDED_WAIT) =>
            {
                Observed::Working
            }
            None => done(Outcome::error(format!(
                "the call ran (approval {id}) but its outcome was not recorded; it is not run \
                 again"
            ))),
        },
    })
}

/// Claims `approval` and runs the call of `handle` with `args`; records and returns its
/// outcome. `None`: another request claimed it first.
async fn run_once(
    decl: &Served,
    metrics: &Metrics,
    approvals: Approvals<'_>,
    ctx: &RequestContext,
    handle: &TaskHandle,
    approval: &Approval,
    args: &Value,
) -> Result<Option<Outcome>, McpError> {
    let tool = decl
        .tool(&handle.tool)
        .filter(|tool| same_call(decl, ctx, tool, &handle.tool, args, &approval.call));
    let Some(tool) = tool else {
        // Not claimed: the approval stays approved for nothing and expires.
        return Ok(Some(Outcome::error(format!(
            "the tool `{}` is no longer declared as it was when approval {} was asked for; the \
             call did not run, call the tool again",
            handle.tool, approval.id
        ))));
    };
    let claimed = approvals.store.claim(approval).await.map_err(|err| {
        tracing::warn!(error = %err, tool = handle.tool, "approval store failed");
        McpError::Internal("the approval store is unavailable; ask again later".into())
    })?;
    if !claimed {
        return Ok(None);
    }
    let approver = approval.decided_by.as_deref();
    telemetry::record_approval(&approval.id, "approved", &approval.call.principal, approver);
    let started = Instant::now();
    let outcome = run(decl, metrics, ctx, tool, args).await;
    let ok = !matches!(outcome, Outcome::Reply { is_error: true, .. });
    metrics.tool_call(&handle.tool, ok, started.elapsed());
    let sealed = outcome.seal(approvals.sealer, &approval.id);
    match approvals.store.settle(approval, &sealed).await {
        Ok(true) => {}
        Ok(false) => tracing::warn!(
            tool = handle.tool,
            "an approval's outcome was recorded twice"
        ),
        // This caller still gets the outcome; a later read waits, then says it was not kept.
        Err(err) => tracing::warn!(error = %err, tool = handle.tool, "recording an outcome failed"),
    }
    // What every later read opens (a result too large to keep reads as that error now too).
    Ok(Some(
        Outcome::open(approvals.sealer, &approval.id, &sealed).unwrap_or(outcome),
    ))
}

/// Whether `tool`, as declared now, with `args` from this caller is the call approved.
fn same_call(
    decl: &Served,
    ctx: &RequestContext,
    tool: &CompiledTool,
    name: &str,
    args: &Value,
    approved: &SealedCall,
) -> bool {
    let server = decl.server_info["name"].as_str().unwrap_or_default();
    tool.approval.as_ref().is_some_and(|gate| {
        SealedCall::new(ctx.caller.as_deref(), server, name, args, &gate.version).digest
            == approved.digest
    })
}

/// Runs the approved call: an `http.async` tool starts its job, others answer.
async fn run(
    decl: &Served,
    metrics: &Metrics,
    ctx: &RequestContext,
    tool: &CompiledTool,
    args: &Value,
) -> Outcome {
    let caller = ctx.caller.as_deref();
    let (upstreams, templates) = (&decl.upstreams, &decl.templates);
    match tool.http.as_deref() {
        Some(upstream) if upstream.job.is_some() => {
            match http::start_job(upstream, upstreams, templates, metrics, args, caller).await {
                http::Started::Job(url) if url.as_str().len() <= MAX_STATUS_URL_LEN => {
                    Outcome::Job {
                        status_url: url.into(),
                    }
                }
                http::Started::Job(_) => {
                    Outcome::error("the upstream's status URL is too long to record")
                }
                http::Started::Reply(reply) => Outcome::reply(checked(tool, reply)),
            }
        }
        Some(upstream) => Outcome::reply(checked(
            tool,
            http::tool_reply(upstream, upstreams, templates, metrics, args, caller).await,
        )),
        None => Outcome::reply(match content::reply(tool, templates, args) {
            Ok(reply) => checked(tool, reply),
            Err(err) => ToolReply::error(err.to_string()),
        }),
    }
}

async fn into_observed(
    decl: &Served,
    metrics: &Metrics,
    ctx: &RequestContext,
    handle: &TaskHandle,
    outcome: Outcome,
) -> Result<Observed, McpError> {
    match outcome {
        Outcome::Job { status_url } => {
            observe_job(decl, metrics, ctx, &handle.tool, &status_url).await
        }
        reply => Ok(done(reply)),
    }
}

fn done(outcome: Outcome) -> Observed {
    match outcome {
        Outcome::Reply {
            content,
            structured,
            is_error,
        } => Observed::Completed(ToolReply {
            content,
            structured,
            is_error,
        }),
        Outcome::Job { .. } => Observed::Working,
    }
}

/// The 2025-11-25 refusal of `tasks/cancel` of an approval's task: nothing runs it unless its
/// client asks again, and only approvers decide approvals.
pub(super) fn cancel(era: Era) -> Result<Value, McpError> {
    match era {
        // Acknowledged, nothing recorded: the approval stays for approvers to see and expires;
        // the call runs only if its client reads the task again after an approval.
        Era::Modern => Ok(json!({})),
        Era::Legacy(_) => Err(McpError::InvalidParams(
            "a task waiting for an approval cannot be cancelled: stop polling it (it runs only \
             when read after an approval), or ask an approver to deny it"
                .into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approvals::DirectoryStore;
    use crate::sessions::KEY_LEN;
    use mcp_declaration::{CompileOptions, compile, parse_manifest};

    fn served() -> Served {
        let text = "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {name: ops}\nspec:\n  tools:\n  - name: wipe\n    inputSchema: {type: object, properties: {name: {type: string}}}\n    approval: {approvers: {group: oncall}, message: wipe?}\n    content: [{type: text, text: wiped}]\n";
        let manifest = parse_manifest(text, ".".into()).unwrap();
        Served::new(compile(&manifest, &CompileOptions::default()).unwrap()).unwrap()
    }

    /// A pending approval of `wipe` with `args` in `store`, and its task's handle.
    async fn asked(decl: &Served, store: &DirectoryStore, args: &Value) -> (Approval, TaskHandle) {
        let tool = decl.tool("wipe").unwrap();
        let server = decl.server_info["name"].as_str().unwrap();
        let version = &tool.approval.as_ref().unwrap().version;
        let call = SealedCall::new(None, server, "wipe", args, version);
        let approval = Approval::pending(
            call,
            "wipe?".into(),
            "oncall".into(),
            SystemTime::now(),
            Duration::from_secs(60),
        );
        store.create(&approval).await.unwrap();
        let handle = TaskHandle {
            work: Pending::Approval {
                id: approval.id.clone(),
                digest: approval.call.digest.clone(),
                args: args.clone(),
            },
            tool: "wipe".into(),
            principal: None,
            args: crate::audit::digest(args),
            created_ms: now_ms(),
            ttl_ms: 60_000,
        };
        (approval, handle)
    }

    fn text(observed: &Observed) -> (bool, String) {
        match observed {
            Observed::Completed(reply) => (
                reply.is_error,
                reply.content[0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            ),
            _ => panic!("not completed"),
        }
    }

    #[tokio::test]
    async fn a_task_runs_once_approved_and_every_later_read_gets_the_recorded_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirectoryStore::create(dir.path()).unwrap();
        let (decl, metrics, sealer) = (served(), Metrics::default(), Sealer::new(&[7u8; KEY_LEN]));
        let approvals = Some(Approvals {
            store: &store,
            sealer: &sealer,
        });
        let ctx = RequestContext::new(Era::Modern, &json!({}), None, None);
        let read = |handle: TaskHandle| {
            let (decl, metrics, ctx) = (&decl, &metrics, &ctx);
            async move {
                observe(decl, metrics, approvals, ctx, &handle)
                    .await
                    .unwrap()
            }
        };

        let (approval, handle) = asked(&decl, &store, &json!({"name": "prod"})).await;
        assert!(matches!(read(handle.clone()).await, Observed::Working));
        store
            .decide(&approval.id, true, "alice", SystemTime::now())
            .unwrap();
        assert_eq!(text(&read(handle.clone()).await), (false, "wiped".into()));
        assert!(
            dir.path()
                .join(format!("{}.outcome.json", approval.id))
                .exists()
        );
        assert_eq!(text(&read(handle.clone()).await), (false, "wiped".into()));

        // Used, no outcome yet: another replica runs it; past the wait, it is not run again.
        let (running, handle) = asked(&decl, &store, &json!({"name": "dev"})).await;
        store
            .decide(&running.id, true, "alice", SystemTime::now())
            .unwrap();
        let found = store.find(&running.call.digest).await.unwrap();
        assert!(store.claim(&found[0]).await.unwrap());
        assert!(matches!(read(handle.clone()).await, Observed::Working));
        let long_ago = json!({"usedAt": "2020-01-01T00:00:00Z"}).to_string();
        std::fs::write(
            dir.path().join(format!("{}.used.json", running.id)),
            long_ago,
        )
        .unwrap();
        let (is_error, said) = text(&read(handle).await);
        assert!(
            is_error && said.contains("outcome was not recorded"),
            "{said}"
        );

        // Denied: a tool error naming who denied it.
        let (denied, handle) = asked(&decl, &store, &json!({"name": "qa"})).await;
        store
            .decide(&denied.id, false, "bob", SystemTime::now())
            .unwrap();
        let (is_error, said) = text(&read(handle).await);
        assert!(
            is_error && said.starts_with("bob denied this call"),
            "{said}"
        );

        // Arguments that are not the approved call's (sealed together, so only a changed
        // declaration gets here in practice) do not run, and do not spend the approval.
        let (other, mut handle) = asked(&decl, &store, &json!({"name": "stage"})).await;
        store
            .decide(&other.id, true, "alice", SystemTime::now())
            .unwrap();
        handle.work = Pending::Approval {
            id: other.id.clone(),
            digest: other.call.digest.clone(),
            args: json!({"name": "prod"}),
        };
        let (is_error, said) = text(&read(handle).await);
        assert!(
            is_error && said.contains("no longer declared as it was"),
            "{said}"
        );
        let after = store.find(&other.call.digest).await.unwrap();
        assert_eq!(
            after[0].state,
            State::Approved,
            "a refused call does not spend the approval"
        );
    }

    #[test]
    fn an_outcome_opens_only_for_its_approval_and_a_large_one_is_recorded_as_an_error() {
        let sealer = Sealer::new(&[7u8; KEY_LEN]);
        let outcome = Outcome::reply(ToolReply {
            content: vec![json!({"type": "text", "text": "deleted prod"})],
            structured: None,
            is_error: false,
        });
        let sealed = outcome.seal(&sealer, "apr-1");
        assert!(!sealed.contains("deleted"));
        assert_eq!(Outcome::open(&sealer, "apr-1", &sealed), Some(outcome));
        assert_eq!(Outcome::open(&sealer, "apr-2", &sealed), None);
        let huge = Outcome::reply(ToolReply {
            content: vec![json!({"type": "text", "text": "x".repeat(MAX_OUTCOME_CHARS)})],
            structured: None,
            is_error: false,
        });
        let sealed = huge.seal(&sealer, "apr-1");
        assert!(sealed.len() <= MAX_OUTCOME_CHARS);
        match Outcome::open(&sealer, "apr-1", &sealed) {
            Some(Outcome::Reply {
                is_error: true,
                content,
                ..
            }) => {
                assert!(content[0]["text"].as_str().unwrap().contains("larger than"));
            }
            other => panic!("not an error: {other:?}"),
        }
    }
}
