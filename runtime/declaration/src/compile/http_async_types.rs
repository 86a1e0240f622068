//! The compiled form of `http.async`, as the runtime's task plumbing uses it. Pure data, plus
//! the one egress rule for URLs an upstream hands back.

use crate::jq::JqProgram;
use crate::template::Text;
use crate::upstream_url::same_origin;
use std::sync::Arc;
use std::time::Duration;
use url::Url;

/// A job to poll after the start request.
#[derive(Debug)]
pub struct CompiledAsync {
    /// Where the status URL comes from.
    pub status: StatusUrl,
    /// Time between status reads.
    pub interval: Duration,
    /// `true` once the job finished (jq over the status body).
    pub done: Arc<JqProgram>,
    /// `true` when the finished job failed.
    pub failed: Option<Arc<JqProgram>>,
    /// `true` when the job was cancelled.
    pub cancelled: Option<Arc<JqProgram>>,
    /// How the result of a finished job is obtained.
    pub result: AsyncOutcome,
    /// The cancel request: method and URL template over `status.url`.
    pub cancel: Option<(http::Method, Text)>,
    /// How long a task handle is valid.
    pub ttl: Duration,
}

/// Where the status URL comes from.
#[derive(Debug)]
pub enum StatusUrl {
    /// A template over `response.headers` and `response.body`.
    Template(Text),
    /// jq over the start response body.
    Jq(Arc<JqProgram>),
}

/// How a finished job's result is obtained.
#[derive(Debug)]
pub enum AsyncOutcome {
    /// The status body itself.
    StatusBody,
    /// jq over the status body.
    Jq(Arc<JqProgram>),
    /// A GET of this URL (a template over `status.url` and `status.body`).
    Fetch(Text),
}

impl CompiledAsync {
    /// `found` (as the upstream wrote it, maybe relative) resolved against `base`, refused when
    /// it leaves the scheme, host and port of `origin` (the start URL's): an upstream cannot
    /// send the runtime, with its credentials, anywhere else.
    pub fn follow_up_url(found: &str, base: &Url, origin: &Url) -> Result<Url, String> {
        let found = found.trim();
        if found.is_empty() {
            return Err("the upstream gave no URL".into());
        }
        let url = base
            .join(found)
            .map_err(|err| format!("the upstream gave an invalid URL: {err}"))?;
        if !same_origin(&url, origin) {
            return Err(
                "the upstream gave a URL on another scheme, host or port, which is refused".into(),
            );
        }
        Ok(url)
    }
}
