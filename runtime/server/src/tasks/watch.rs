//! Task status notifications on a 2026-07-28 `subscriptions/listen` stream
//! (`notifications.taskIds`): each task the caller may open is polled upstream, at its tool's
//! interval but at most once a second, and a `notifications/tasks` with the `DetailedTask`
//! (what `tasks/get` would answer) is sent when its status changes, until it is terminal or the
//! stream ends. Bounded: at most [`MAX_WATCHED_TASKS`] per stream, within the listen streams'
//! own limits. Upstream I/O through `observe`.

use super::handle::{TaskHandle, now_ms};
use super::wire::{self, Status};
use super::{Observed, client_declares_tasks, job_tool, missing_extension, observe};
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
use tokio_util::sync::CancellationToken;

/// Most tasks one listen stream follows.
pub(crate) const MAX_WATCHED_TASKS: usize = 16;
/// Shortest time between two status reads of one watched task.
const MIN_WATCH_INTERVAL: Duration = Duration::from_secs(1);
/// `notifications/tasks` (the Tasks extension's status notification).
pub(crate) const TASKS_NOTIFICATION: &str = "notifications/tasks";

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

/// The status notifications of `tasks`, tagged with the listen request's `tag`, until each is
/// terminal or `until` is cancelled.
pub(crate) fn notifications(
    current: Arc<ArcSwap<Served>>,
    metrics: Arc<Metrics>,
    caller: Option<Arc<Principal>>,
    tasks: Vec<(String, TaskHandle)>,
    tag: Value,
    until: CancellationToken,
) -> impl Stream<Item = Value> + Send + 'static {
    let ctx = RequestContext::new(Era::Modern, &json!({}), None, None).with_caller(caller);
    async_stream::stream! {
        let mut live: Vec<(String, TaskHandle, Option<Status>)> =
            tasks.into_iter().map(|(id, handle)| (id, handle, None)).collect();
        while !live.is_empty() {
            let decl = current.load_full();
            let mut interval = Duration::MAX;
            let mut next = Vec::with_capacity(live.len());
            for (id, handle, last) in live {
                let poll = job_tool(&decl, &handle).map_or(MIN_WATCH_INTERVAL, |(_, poll)| poll);
                interval = interval.min(poll.max(MIN_WATCH_INTERVAL));
                let observed = tokio::select! {
                    () = until.cancelled() => return,
                    observed = observe(&decl, &metrics, &ctx, &handle) => observed,
                };
                // A read that fails now is tried again at the next round.
                let Ok(observed) = observed else {
                    next.push((id, handle, last));
                    continue;
                };
                let status = observed.status();
                if last != Some(status) {
                    let mut params = detailed(&id, &handle, observed, poll);
                    params["_meta"] = json!({meta::SUBSCRIPTION_ID: tag.clone()});
                    yield notification(TASKS_NOTIFICATION, params);
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
