//! Task status notifications. On a 2026-07-28 `subscriptions/listen` stream
//! (`notifications.taskIds`): each task the caller may open is polled upstream, at its tool's
//! interval but at most once a second, and a `notifications/tasks` with the `DetailedTask`
//! (what `tasks/get` would answer) is sent when its status changes, until it is terminal or the
//! stream ends; at most [`MAX_WATCHED_TASKS`] per stream, within the listen streams' own
//! limits. In a 2025-11-25 session: the tasks its task-augmented calls create are followed the
//! same way, `notifications/tasks/status` going to the session's stream, at most
//! [`MAX_SESSION_WATCHES`] per replica (past that clients poll, as they should anyway).
//! Upstream I/O through `observe`.

use super::approval::Approvals;
use super::handle::{TaskHandle, now_ms};
use super::wire::{self, Status};
use super::{Observed, client_declares_tasks, missing_extension, observe, poll_interval};
use crate::approvals::ApprovalStore;
use crate::metrics::Metrics;
use crate::principal::Principal;
use crate::served::Served;
use crate::sessions::Sealer;
use crate::{RequestContext, tool_result};
use arc_swap::ArcSwap;
use futures_util::Stream;
use mcp_protocol::{Era, McpError, meta, notification};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Most tasks one listen stream follows.
pub(crate) const MAX_WATCHED_TASKS: usize = 16;
/// Shortest time between two status reads of one watched task.
const MIN_WATCH_INTERVAL: Duration = Duration::from_secs(1);
/// `notifications/tasks` (the Tasks extension's status notification).
pub(crate) const TASKS_NOTIFICATION: &str = "notifications/tasks";
/// `notifications/tasks/status` (2025-11-25).
pub(crate) const LEGACY_TASKS_NOTIFICATION: &str = "notifications/tasks/status";
/// Most tasks followed for legacy sessions at once, per replica.
pub(crate) const MAX_SESSION_WATCHES: usize = 256;

/// The tasks a listen request asks to follow that this caller may open (others are left out
/// of the acknowledgement): a refusal without the Tasks extension, or for too many.
pub(crate) fn watched(
    sealer: &Sealer,
    params: &Value,
    caller: Option<&Principal>,
) -> Result<Vec<(String, TaskHandle)>, McpError> {
    let asked: Vec<&str> = params
        .pointer("/notifications/taskIds")
        .and_then(Value::as_array)
        .map(|ids| ids.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if asked.is_empty() {
        return Ok(Vec::new());
    }
    if !client_declares_tasks(params) {
        return Err(missing_extension());
    }
    if asked.len() > MAX_WATCHED_TASKS {
        return Err(McpError::InvalidParams(format!(
            "at most {MAX_WATCHED_TASKS} taskIds per listen request ({} asked)",
            asked.len()
        )));
    }
    let principal = caller.map(Principal::hex_digest);
    let now = now_ms();
    Ok(asked
        .into_iter()
        .filter_map(|id| {
            TaskHandle::open(sealer, id, principal.as_deref(), now)
                .ok()
                .map(|handle| (id.to_owned(), handle))
        })
        .collect())
}

/// What watching tasks reads: the declaration served now, the metrics, and for tasks waiting
/// for an approval the store and the key their outcomes are sealed with.
#[derive(Clone)]
pub(crate) struct Sources {
    pub(crate) current: Arc<ArcSwap<Served>>,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) approvals: Option<Arc<dyn ApprovalStore>>,
    pub(crate) sealer: Arc<Sealer>,
}

/// The status notifications of `tasks` in `era` until each is terminal or `until` is
/// cancelled; 2026-07-28 ones tagged with the listen request's id `tag`, starting with the
/// current status; 2025-11-25 ones on changes from `working` only. A task waiting for an
/// approval is read as `tasks/get` reads it: once approved, the call runs.
pub(crate) fn notifications(
    sources: Sources,
    caller: Option<Arc<Principal>>,
    tasks: Vec<(String, TaskHandle)>,
    tag: Value,
    until: CancellationToken,
    era: Era,
) -> impl Stream<Item = Value> + Send + 'static {
    let ctx = RequestContext::new(era, &json!({}), None, None).with_caller(caller);
    let first = match era {
        Era::Modern => None,
        Era::Legacy(_) => Some(Status::Working),
    };
    async_stream::stream! {
        let mut live: Vec<(String, TaskHandle, Option<Status>)> =
            tasks.into_iter().map(|(id, handle)| (id, handle, first)).collect();
        while !live.is_empty() {
            let decl = sources.current.load_full();
            let approvals = sources.approvals.as_deref().map(|store| Approvals {
                store,
                sealer: &sources.sealer,
            });
            let mut interval = Duration::MAX;
            let mut next = Vec::with_capacity(live.len());
            for (id, handle, last) in live {
                let poll = Some(poll_interval(&decl, &handle))
                    .filter(|poll| !poll.is_zero())
                    .unwrap_or(MIN_WATCH_INTERVAL);
                interval = interval.min(poll.max(MIN_WATCH_INTERVAL));
                let observed = tokio::select! {
                    () = until.cancelled() => return,
                    observed = observe(&decl, &sources.metrics, approvals, &ctx, &handle) => observed,
                };
                // A read that fails now is tried again at the next round.
                let Ok(observed) = observed else {
                    next.push((id, handle, last));
                    continue;
                };
                let status = observed.status();
                if last != Some(status) {
                    yield match era {
                        Era::Modern => {
                            let mut params = detailed(&id, &handle, observed, poll);
                            params["_meta"] = json!({meta::SUBSCRIPTION_ID: tag.clone()});
                            notification(TASKS_NOTIFICATION, params)
                        }
                        Era::Legacy(_) => {
                            let task = wire::task(era, &id, &handle, status, poll, now_ms());
                            notification(LEGACY_TASKS_NOTIFICATION, Value::Object(task))
                        }
                    };
                }
                if status == Status::Working && handle.expires_ms() > now_ms() {
                    next.push((id, handle, Some(status)));
                }
            }
            live = next;
            if live.is_empty() {
                break;
            }
            tokio::select! {
                () = until.cancelled() => return,
                () = tokio::time::sleep(interval) => {}
            }
        }
    }
}

/// What `tasks/get` would answer now, as notification params.
fn detailed(id: &str, handle: &TaskHandle, observed: Observed, poll: Duration) -> Value {
    let task = wire::task(Era::Modern, id, handle, observed.status(), poll, now_ms());
    match observed {
        Observed::Completed(reply) => {
            wire::detailed(task, Some(tool_result::shape(reply, Era::Modern)), None)
        }
        Observed::Failed(error) => wire::detailed(task, None, Some(&error)),
        Observed::Working | Observed::Cancelled => Value::Object(task),
    }
}

/// Follows the task a 2025-11-25 session's `tools/call` just created (`created`), sending its
/// status changes to the session's stream, if one of `slots` is free.
pub(crate) fn follow_in_session(
    sources: Sources,
    ctx: &RequestContext,
    created: &Value,
    slots: &Arc<Semaphore>,
) {
    let (Some(session), Era::Legacy(_)) = (ctx.session.clone(), ctx.era) else {
        return;
    };
    let Some(id) = created.pointer("/task/taskId").and_then(Value::as_str) else {
        return;
    };
    let Ok(slot) = slots.clone().try_acquire_owned() else {
        return;
    };
    let principal = ctx.caller.as_deref().map(Principal::hex_digest);
    let Ok(handle) = TaskHandle::open(&sources.sealer, id, principal.as_deref(), now_ms()) else {
        return;
    };
    let statuses = notifications(
        sources,
        ctx.caller.clone(),
        vec![(id.to_owned(), handle)],
        Value::Null,
        session.ended.clone(),
        ctx.era,
    );
    tokio::spawn(async move {
        let _slot = slot;
        let mut statuses = std::pin::pin!(statuses);
        while let Some(message) = futures_util::StreamExt::next(&mut statuses).await {
            // No stream open now: this change goes unheard; the client polls.
            if let Some(stream) = session.stream() {
                let _ = stream.send(crate::Outgoing::boxed(message)).await;
            }
        }
    });
}
