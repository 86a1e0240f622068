//! An `http.async` tool answered inside its request, for a client without tasks: the job is
//! started and polled until it finishes, within [`MAX_INLINE_WAIT`] and the job's TTL. A job
//! left behind is cancelled (when the tool declares a cancel request): past the wait, and when
//! the client goes away first (the request's future is dropped), from a task spawned then.
//! Upstream I/O through `backends/http/job.rs`.

use super::MAX_INLINE_WAIT;
use crate::RequestContext;
use crate::backends::{ToolReply, http};
use crate::metrics::Metrics;
use crate::principal::Principal;
use crate::served::Served;
use mcp_declaration::CompiledTool;
use reqwest::Url;
use serde_json::Value;
use std::sync::Arc;

/// Runs `tool`'s job for `args` (validated) and waits for its reply.
pub(crate) async fn run_inline(
    decl: &Arc<Served>,
    metrics: &Arc<Metrics>,
    tool: &CompiledTool,
    ctx: &RequestContext,
    args: &Value,
) -> ToolReply {
    let Some((upstream, job)) = tool
        .http
        .as_deref()
        .and_then(|h| h.job.as_ref().map(|job| (h, job)))
    else {
        return ToolReply::error("the tool does not start a job");
    };
    let caller = ctx.caller.as_deref();
    let (upstreams, templates) = (&decl.upstreams, &decl.templates);
    let status_url =
        match http::start_job(upstream, upstreams, templates, metrics, args, caller).await {
            http::Started::Job(url) => url,
            http::Started::Reply(reply) => return reply,
        };
    let mut left_behind = CancelOnDrop(Some(Job {
        decl: decl.clone(),
        metrics: metrics.clone(),
        tool: tool.descriptor["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        caller: ctx.caller.clone(),
        status_url: status_url.clone(),
    }));
    let wait = MAX_INLINE_WAIT.min(job.ttl);
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        if tokio::time::Instant::now() + job.interval > deadline {
            if let Some(job) = left_behind.0.take() {
                job.cancel().await;
            }
            return ToolReply::error(format!(
                "the job did not finish within {} s; a client that supports tasks can wait for it",
                wait.as_secs()
            ));
        }
        tokio::time::sleep(job.interval).await;
        let state =
            http::job_state(upstream, upstreams, templates, metrics, &status_url, caller).await;
        let reply = match state {
            Ok(http::JobState::Working) | Err(_) => continue,
            Ok(http::JobState::Finished(reply)) => reply,
            Ok(http::JobState::Cancelled) => ToolReply::error("the upstream cancelled the job"),
            Ok(http::JobState::Gone) => ToolReply::error("the upstream no longer knows the job"),
        };
        left_behind.0 = None;
        return reply;
    }
}

/// A started job and what cancelling it needs, owned so that it outlives the request.
struct Job {
    decl: Arc<Served>,
    metrics: Arc<Metrics>,
    tool: String,
    caller: Option<Arc<Principal>>,
    status_url: Url,
}

impl Job {
    async fn cancel(self) {
        let Some(upstream) = self.decl.tool(&self.tool).and_then(|t| t.http.as_deref()) else {
            return;
        };
        let (upstreams, templates) = (&self.decl.upstreams, &self.decl.templates);
        let caller = self.caller.as_deref();
        // Best effort: the upstream's own expiry is the backstop.
        let cancelled = http::cancel_job(
            upstream,
            upstreams,
            templates,
            &self.metrics,
            &self.status_url,
            caller,
        );
        let _ = cancelled.await;
    }
}

/// Cancels the job when dropped still holding it (the client went away mid-wait).
struct CancelOnDrop(Option<Job>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let (Some(job), Ok(runtime)) = (self.0.take(), tokio::runtime::Handle::try_current()) {
            runtime.spawn(job.cancel());
        }
    }
}
