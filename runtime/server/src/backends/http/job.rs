//! Upstream jobs (`http.async`): the start request (made as a plain call is, with the same
//! credential, headers, concurrency limit and deadline), the status URL found in its answer,
//! status reads, the result of a finished job, and the cancel request. Network I/O; every
//! follow-up request has the backend's deadline and size cap, goes only to the start URL's
//! origin (`CompiledAsync::follow_up_url`), and what it returns is scrubbed of secrets.

use super::mapping::{call_secrets, excerpt, map_tool, run_jq, scrubbed, unmapped_tool};
use super::request::{Prepared, follow_up_headers};
use super::{Answer, CallError, CallFor, Upstreams, credential, fetch_until, once, redact};
use crate::backends::{ToolReply, text_block};
use crate::metrics::Metrics;
use crate::principal::Principal;
use mcp_declaration::{AsyncOutcome, CompiledAsync, CompiledHttp, Secret, StatusUrl, Templates};
use reqwest::Url;
use serde_json::{Value, json};
use std::borrow::Cow;
use tokio::time::Instant;

/// What a start request led to.
#[derive(Debug)]
pub enum Started {
    /// The upstream accepted the job; its status is read here.
    Job(Url),
    /// No job: the answer (an error, or a non-2xx answer mapped as a plain call's is).
    Reply(ToolReply),
}

/// What a status read found.
#[derive(Debug)]
pub enum JobState {
    /// Still running.
    Working,
    /// Finished: the tool's reply (a tool error when `failed` said so).
    Finished(ToolReply),
    /// Cancelled (`cancelled` said so).
    Cancelled,
    /// The status URL answered 404 or 410: the upstream no longer knows the job.
    Gone,
}

/// Starts the job of an `http.async` tool for `args` (validated), for `caller`.
pub async fn start_job(
    http: &CompiledHttp,
    upstreams: &Upstreams,
    templates: &Templates,
    metrics: &Metrics,
    args: &Value,
    caller: Option<&Principal>,
) -> Started {
    let Some(job) = &http.job else {
        return Started::Reply(
            super::tool_reply(http, upstreams, templates, metrics, args, caller).await,
        );
    };
    let deadline = Instant::now() + http.timeout;
    let subject = caller.and_then(|c| c.token.as_ref());
    let credential = match credential(http, upstreams, metrics, subject, deadline).await {
        Ok(credential) => credential,
        Err(message) => return Started::Reply(ToolReply::error(message)),
    };
    let secrets = call_secrets(http, credential.as_ref().map(|(_, token)| token), caller);
    let call_for = CallFor {
        credential: credential.as_ref().map(|(header, _)| header),
        claims: caller.map(|c| &c.claims),
    };
    let answer = match fetch_until(
        http, upstreams, templates, metrics, args, deadline, call_for,
    )
    .await
    {
        Ok(answer) => answer,
        Err(err) => return Started::Reply(ToolReply::error(err.to_string())),
    };
    if !answer.status.is_success() || answer.refused_redirect {
        let reply = map_tool(http, templates, args, answer).await;
        return Started::Reply(scrubbed(reply, &secrets));
    }
    match status_url(http, job, templates, args, &answer).await {
        Ok(url) => Started::Job(url),
        Err(why) => Started::Reply(ToolReply::error(redact::text(
            &format!(
                "the upstream accepted the job ({}), but its status cannot be found: {why}",
                answer.status
            ),
            &secrets,
        ))),
    }
}

/// Reads the job's status at `status_url` and, once it finished, its result.
/// `Err`: the status could not be read now (a later read may succeed).
pub async fn job_state(
    http: &CompiledHttp,
    upstreams: &Upstreams,
    templates: &Templates,
    metrics: &Metrics,
    status_url: &Url,
    caller: Option<&Principal>,
) -> Result<JobState, String> {
    let Some(job) = &http.job else {
        return Err("the tool no longer starts jobs".into());
    };
    let follow = FollowUp::new(http, upstreams, metrics, caller).await?;
    let answer = follow.send(&reqwest::Method::GET, status_url).await?;
    match answer.status.as_u16() {
        404 | 410 => return Ok(JobState::Gone),
        status if !answer.status.is_success() => {
            return Err(follow.scrub_text(&format!(
                "the upstream answered {status} to the status read: {}",
                excerpt(&answer.body, &follow.secrets)
            )));
        }
        _ => {}
    }
    if let Some(cancelled) = &job.cancelled
        && truthy(&run_jq(cancelled, &answer.body).await?)
    {
        return Ok(JobState::Cancelled);
    }
    if !truthy(&run_jq(&job.done, &answer.body).await?) {
        return Ok(JobState::Working);
    }
    let failed = match &job.failed {
        Some(failed) => truthy(&run_jq(failed, &answer.body).await?),
        None => false,
    };
    let mut reply = match &job.result {
        AsyncOutcome::StatusBody => unmapped_tool(&answer, &follow.secrets),
        AsyncOutcome::Jq(jq) => match run_jq(jq, &answer.body).await {
            Ok(result) => ToolReply {
                content: vec![text_block(result.to_string())],
                structured: Some(result),
                is_error: false,
            },
            Err(message) => ToolReply::error(format!("the job finished; {message}")),
        },
        AsyncOutcome::Fetch(url) => {
            let vars =
                json!({"status": {"url": status_url.as_str(), "body": body_value(&answer.body)}});
            match rendered_url(templates, url, &vars, status_url, http) {
                Ok(url) => match follow.send(&reqwest::Method::GET, &url).await {
                    Ok(result) => unmapped_tool(&result, &follow.secrets),
                    Err(message) => ToolReply::error(message),
                },
                Err(message) => ToolReply::error(format!("the result URL: {message}")),
            }
        }
    };
    reply.is_error |= failed;
    Ok(JobState::Finished(scrubbed(reply, &follow.secrets)))
}

/// Sends the declared cancel request for the job at `status_url` (nothing without one). A job
/// the upstream no longer knows (404, 410) counts as cancelled.
pub async fn cancel_job(
    http: &CompiledHttp,
    upstreams: &Upstreams,
    templates: &Templates,
    metrics: &Metrics,
    status_url: &Url,
    caller: Option<&Principal>,
) -> Result<(), String> {
    let Some((method, url)) = http.job.as_ref().and_then(|job| job.cancel.as_ref()) else {
        return Ok(());
    };
    let vars = json!({"status": {"url": status_url.as_str()}});
    let url = rendered_url(templates, url, &vars, status_url, http)?;
    let follow = FollowUp::new(http, upstreams, metrics, caller).await?;
    let answer = follow.send(method, &url).await?;
    match answer.status.as_u16() {
        200..=299 | 404 | 410 => Ok(()),
        status => Err(follow.scrub_text(&format!(
            "the upstream answered {status} to the cancel request: {}",
            excerpt(&answer.body, &follow.secrets)
        ))),
    }
}

/// The status URL of a started job, from the start answer.
async fn status_url(
    http: &CompiledHttp,
    job: &CompiledAsync,
    templates: &Templates,
    args: &Value,
    answer: &Answer,
) -> Result<Url, String> {
    let found = match &job.status {
        StatusUrl::Template(text) => {
            let vars = json!({
                "args": args,
                "response": {
                    "status": answer.status.as_u16(),
                    "headers": answer.headers,
                    "body": body_value(&answer.body),
                },
            });
            templates
                .render_in(text, &vars)
                .map_err(|err| err.to_string())?
        }
        StatusUrl::Jq(jq) => match run_jq(jq, &answer.body).await? {
            Value::String(url) => url,
            _ => return Err("the status jq did not give a string".into()),
        },
    };
    let base = http.url.expand(args)?;
    CompiledAsync::follow_up_url(&found, &base, http.url.origin())
}

/// A follow-up URL template rendered over `vars` and resolved against `base`.
fn rendered_url(
    templates: &Templates,
    url: &mcp_declaration::Text,
    vars: &Value,
    base: &Url,
    http: &CompiledHttp,
) -> Result<Url, String> {
    let found = templates
        .render_in(url, vars)
        .map_err(|err| err.to_string())?;
    CompiledAsync::follow_up_url(&found, base, http.url.origin())
}

/// One follow-up request's credential, headers and secrets to scrub.
struct FollowUp<'a> {
    http: &'a CompiledHttp,
    upstreams: &'a Upstreams,
    metrics: &'a Metrics,
    headers: reqwest::header::HeaderMap,
    secrets: Cow<'a, [Secret]>,
    deadline: Instant,
}

impl<'a> FollowUp<'a> {
    async fn new(
        http: &'a CompiledHttp,
        upstreams: &'a Upstreams,
        metrics: &'a Metrics,
        caller: Option<&Principal>,
    ) -> Result<Self, String> {
        let deadline = Instant::now() + http.timeout;
        let subject = caller.and_then(|c| c.token.as_ref());
        let credential = credential(http, upstreams, metrics, subject, deadline).await?;
        let mut headers = follow_up_headers(http, caller.map(|c| &c.claims))?;
        if let Some(((name, value), _)) = &credential {
            headers.insert(name.clone(), value.clone());
        }
        let secrets = call_secrets(http, credential.as_ref().map(|(_, token)| token), caller);
        Ok(Self {
            http,
            upstreams,
            metrics,
            headers,
            secrets,
            deadline,
        })
    }

    /// One request without a body, in the backend's concurrency limit, by the deadline.
    async fn send(&self, method: &reqwest::Method, url: &Url) -> Result<Answer, String> {
        let http = self.http;
        let live = self
            .upstreams
            .of(http)
            .ok_or_else(|| "the backend is not loaded".to_owned())?;
        let _permit = match tokio::time::timeout_at(self.deadline, live.permits.acquire()).await {
            Ok(Ok(permit)) => permit,
            _ => return Err(CallError::Busy(http.timeout).to_string()),
        };
        let prepared = Prepared {
            url: url.clone(),
            headers: self.headers.clone(),
            body: None,
        };
        let started = Instant::now();
        let sent = once(http, method, &live.client, &prepared, None);
        let outcome = match tokio::time::timeout_at(self.deadline, sent).await {
            Ok(outcome) => outcome,
            Err(_) => Err(CallError::Timeout(http.timeout)),
        };
        let code = match &outcome {
            Ok(answer) => answer.status.as_str().to_owned(),
            Err(err) => err.code().to_owned(),
        };
        self.metrics.upstream(&http.label, &code, started.elapsed());
        tracing::debug!(upstream = %http.label, %method, code, "upstream job request");
        outcome.map_err(|err| self.scrub_text(&err.to_string()))
    }

    fn scrub_text(&self, text: &str) -> String {
        redact::text(text, &self.secrets)
    }
}

/// A body as templates see it: parsed JSON, else text.
fn body_value(body: &[u8]) -> Value {
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}

/// jq's truth: anything but `false` and `null`.
fn truthy(value: &Value) -> bool {
    !matches!(value, Value::Null | Value::Bool(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truth_is_jq_truth() {
        assert!(truthy(&json!(true)));
        assert!(truthy(&json!("done")));
        assert!(truthy(&json!(0)));
        assert!(!truthy(&json!(false)));
        assert!(!truthy(&Value::Null));
    }
}
