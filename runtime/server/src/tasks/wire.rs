//! How a task looks on the wire in each era: the 2026-07-28 Tasks extension (flat
//! `CreateTaskResult` with `resultType: "task"`, `DetailedTask` with `ttlMs`, `pollIntervalMs`
//! and the inlined `result` or `error`) and 2025-11-25's experimental core tasks (`{task: …}`,
//! `ttl`, `pollInterval`, the result through `tasks/result`). Pure.

use super::handle::TaskHandle;
use mcp_protocol::{Era, McpError};
use serde_json::{Map, Value, json};
use std::time::{Duration, UNIX_EPOCH};

/// `_meta` key tying a 2025-11-25 `tasks/result` to its task.
pub(crate) const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// A task's status as the protocol names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    Working,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

/// The `Task` fields of `handle` (id `id`) in `status`, observed at `now_ms`.
pub(crate) fn task(
    era: Era,
    id: &str,
    handle: &TaskHandle,
    status: Status,
    poll: Duration,
    now_ms: u64,
) -> Map<String, Value> {
    let poll_ms = u64::try_from(poll.as_millis()).unwrap_or(u64::MAX);
    let (ttl_key, poll_key) = match era {
        Era::Modern => ("ttlMs", "pollIntervalMs"),
        Era::Legacy(_) => ("ttl", "pollInterval"),
    };
    let mut task = Map::new();
    task.insert("taskId".into(), json!(id));
    task.insert("status".into(), json!(status.as_str()));
    task.insert("createdAt".into(), json!(timestamp(handle.created_ms)));
    task.insert("lastUpdatedAt".into(), json!(timestamp(now_ms)));
    task.insert(ttl_key.into(), json!(handle.ttl_ms));
    task.insert(poll_key.into(), json!(poll_ms));
    task
}

/// The `tools/call` answer that creates the task.
pub(crate) fn created(era: Era, task: Map<String, Value>) -> Value {
    match era {
        Era::Modern => {
            let mut result = task;
            result.insert("resultType".into(), json!("task"));
            Value::Object(result)
        }
        Era::Legacy(_) => json!({"task": task}),
    }
}

/// The 2026-07-28 `tasks/get` answer: the task, with the tool's result when completed or the
/// JSON-RPC error when failed.
pub(crate) fn detailed(
    mut task: Map<String, Value>,
    result: Option<Value>,
    error: Option<&McpError>,
) -> Value {
    if let Some(mut result) = result {
        result["resultType"] = json!("complete");
        task.insert("result".into(), result);
    }
    if let Some(error) = error {
        task.insert("statusMessage".into(), json!(error.to_string()));
        task.insert("error".into(), error.to_json(Era::Modern));
    }
    Value::Object(task)
}

/// A 2025-11-25 `tasks/result` answer: the tool's result tied to its task.
pub(crate) fn related(mut result: Value, id: &str) -> Value {
    result["_meta"] = json!({RELATED_TASK: {"taskId": id}});
    result
}

/// ISO 8601 (RFC 3339, UTC, milliseconds).
fn timestamp(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::handle::Pending;

    fn handle() -> TaskHandle {
        TaskHandle {
            work: Pending::UpstreamJob {
                status_url: "https://jobs.example.com/j/1".into(),
            },
            tool: "export".into(),
            principal: None,
            args: String::new(),
            created_ms: 1_764_066_600_000,
            ttl_ms: 60_000,
        }
    }

    #[test]
    fn each_era_names_its_fields() {
        let poll = Duration::from_millis(500);
        let modern = created(
            Era::Modern,
            task(
                Era::Modern,
                "t1",
                &handle(),
                Status::Working,
                poll,
                1_764_066_601_000,
            ),
        );
        assert_eq!(
            modern,
            json!({"taskId": "t1", "status": "working", "createdAt": "2025-11-25T10:30:00.000Z",
                   "lastUpdatedAt": "2025-11-25T10:30:01.000Z", "ttlMs": 60000,
                   "pollIntervalMs": 500, "resultType": "task"})
        );
        let legacy_era = Era::Legacy(mcp_protocol::LegacyVersion::V2025_11_25);
        let legacy = created(
            legacy_era,
            task(
                legacy_era,
                "t1",
                &handle(),
                Status::Working,
                poll,
                1_764_066_601_000,
            ),
        );
        assert_eq!(legacy["task"]["ttl"], 60000);
        assert_eq!(legacy["task"]["pollInterval"], 500);
        assert!(legacy.get("resultType").is_none());
    }

    #[test]
    fn a_failed_task_carries_the_error_and_no_result() {
        let fields = task(
            Era::Modern,
            "t1",
            &handle(),
            Status::Failed,
            Duration::ZERO,
            0,
        );
        let failed = detailed(fields, None, Some(&McpError::Internal("gone".into())));
        assert_eq!(failed["error"]["code"], -32603);
        assert!(failed.get("result").is_none());
    }
}
