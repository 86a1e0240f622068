//! Compiling `http.async` (a job the start request creates, polled until done) and
//! `tools[].task` (whether a call may become an MCP task). Every problem is a field error. Pure.
//!
//! URLs the upstream hands back (status, result, cancel) can only be checked when they arrive:
//! the runtime resolves them against the start URL and refuses any that leaves its scheme, host
//! and port (`CompiledAsync::follow_up_url`), the same egress rule as the backend's redirects.

use super::Compiler;
use crate::template::Text;
use crate::types::{HttpAsync, HttpMethod, TaskSupport, Tool};
use std::time::Duration;

pub use super::http_async_types::{AsyncOutcome, CompiledAsync, StatusUrl};

const DEFAULT_INTERVAL_MS: u64 = 2_000;
const MIN_INTERVAL_MS: u64 = 100;
const MAX_INTERVAL_MS: u64 = 600_000;
const DEFAULT_TTL_MS: u64 = 3_600_000;
const MIN_TTL_MS: u64 = 1_000;
/// A week: a handle outliving that is a job nobody polls.
const MAX_TTL_MS: u64 = 604_800_000;
/// The cancel URL when none is declared.
const DEFAULT_CANCEL_URL: &str = "{{ status.url }}";

impl Compiler<'_> {
    /// `http.async` of a tool at `path` (the `http` block's path).
    pub(super) fn http_async(&mut self, path: &str, job: &HttpAsync) -> Option<CompiledAsync> {
        let errors_before = self.errors.len();
        let path = format!("{path}.async");
        let status = match (&job.status.url, &job.status.jq) {
            (Some(url), None) => self
                .text(&format!("{path}.status.url"), url)
                .map(StatusUrl::Template),
            (None, Some(jq)) => self
                .jq_at(&format!("{path}.status.jq"), jq)
                .map(StatusUrl::Jq),
            _ => {
                self.error(
                    format!("{path}.status"),
                    "declare exactly one of `url` or `jq`",
                );
                None
            }
        };
        let interval_ms = job.interval_ms.unwrap_or(DEFAULT_INTERVAL_MS);
        if !(MIN_INTERVAL_MS..=MAX_INTERVAL_MS).contains(&interval_ms) {
            self.error(
                format!("{path}.intervalMs"),
                format!("must be {MIN_INTERVAL_MS}-{MAX_INTERVAL_MS}"),
            );
        }
        let ttl_ms = job.ttl_ms.unwrap_or(DEFAULT_TTL_MS);
        if !(MIN_TTL_MS..=MAX_TTL_MS).contains(&ttl_ms) {
            self.error(
                format!("{path}.ttlMs"),
                format!("must be {MIN_TTL_MS}-{MAX_TTL_MS}"),
            );
        }
        let done = self.jq_at(&format!("{path}.done"), &job.done);
        let failed = job
            .failed
            .as_ref()
            .and_then(|jq| self.jq_at(&format!("{path}.failed"), jq));
        let cancelled = job
            .cancelled
            .as_ref()
            .and_then(|jq| self.jq_at(&format!("{path}.cancelled"), jq));
        let result = match &job.result {
            None => Some(AsyncOutcome::StatusBody),
            Some(result) => match (&result.jq, &result.http) {
                (Some(jq), None) => self
                    .jq_at(&format!("{path}.result.jq"), jq)
                    .map(AsyncOutcome::Jq),
                (None, Some(fetch)) => self
                    .text(&format!("{path}.result.http.url"), &fetch.url)
                    .map(AsyncOutcome::Fetch),
                _ => {
                    self.error(
                        format!("{path}.result"),
                        "declare exactly one of `jq` or `http`",
                    );
                    None
                }
            },
        };
        let cancel = job.cancel.as_ref().and_then(|cancel| {
            let url = cancel.url.as_deref().unwrap_or(DEFAULT_CANCEL_URL);
            let url: Text = self.text(&format!("{path}.cancel.url"), url)?;
            Some((
                super::http::method(cancel.method.unwrap_or(HttpMethod::Delete)),
                url,
            ))
        });
        if self.errors.len() > errors_before {
            return None;
        }
        Some(CompiledAsync {
            status: status?,
            interval: Duration::from_millis(interval_ms),
            done: done?,
            failed,
            cancelled,
            result: result?,
            cancel,
            ttl: Duration::from_millis(ttl_ms),
        })
    }

    /// `tools[].task`: `optional` by default for async tools, `never` for the others, which
    /// cannot be tasks.
    pub(super) fn task_support(&mut self, path: &str, tool: &Tool) -> TaskSupport {
        let is_async = tool
            .http
            .as_ref()
            .is_some_and(|http| http.r#async.is_some());
        match (tool.task, is_async) {
            (None, true) => TaskSupport::Optional,
            (None, false) | (Some(TaskSupport::Never), _) => TaskSupport::Never,
            (Some(support), true) => support,
            (Some(_), false) => {
                self.error(
                    format!("{path}.task"),
                    "only a tool with `http.async` can be a task",
                );
                TaskSupport::Never
            }
        }
    }

    fn jq_at(&mut self, path: &str, source: &str) -> Option<std::sync::Arc<crate::jq::JqProgram>> {
        self.jq(source)
            .map_err(|message| self.error(path, message))
            .ok()
    }
}

#[cfg(test)]
mod tests;
