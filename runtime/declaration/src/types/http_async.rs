//! Spec types of long-running upstream jobs (`http.async`) and of a tool's task support
//! (`tools[].task`). Shared with the operator's CRD, so every field is documented. Pure data.

use super::HttpMethod;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether a tool call may become a task (MCP Tasks).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// A task for clients that support tasks, else a bounded blocking call.
    Optional,
    /// Only as a task: clients without tasks are refused (-32021).
    Required,
    /// Never a task.
    Never,
}

/// The start request answers with a job to poll (typically `202 Accepted` and a `Location`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpAsync {
    /// Where the job's status is read.
    pub status: AsyncStatus,
    /// Milliseconds between status reads (default 2000, 100-600000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_ms: Option<u64>,
    /// jq over the status body: `true` once the job has finished.
    pub done: String,
    /// jq over the status body: `true` when the finished job failed (the result is a tool
    /// error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// jq over the status body: `true` when the job was cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<String>,
    /// The result of a finished job. Default: the status body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<AsyncResult>,
    /// A request that cancels the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<AsyncCancel>,
    /// How long a task handle is valid, in milliseconds (default 3600000, 1000-604800000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
}

/// The status URL: exactly one of `url` or `jq`. Relative URLs resolve against the start URL
/// and must keep its scheme, host and port.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AsyncStatus {
    /// A template over `response.headers` and `response.body`, such as
    /// `{{ response.headers.location }}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// jq over the start response body, such as `.statusUrl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jq: Option<String>,
}

/// A finished job's result: exactly one of `jq` or `http`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AsyncResult {
    /// jq over the status body; its output is the `structuredContent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jq: Option<String>,
    /// A GET of another URL, answered as a 2xx body is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<AsyncFetch>,
}

/// A follow-up request's URL.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AsyncFetch {
    /// A template over `status.url` and `status.body`; relative URLs resolve against the
    /// status URL and must keep the start URL's scheme, host and port.
    pub url: String,
}

/// The request that cancels a job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AsyncCancel {
    /// HTTP method (default `DELETE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<HttpMethod>,
    /// A template over `status.url` (default `{{ status.url }}`); resolved like `result.http.url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}
