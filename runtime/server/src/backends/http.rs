//! The HTTP backend: tools, resources and resource templates answered by an upstream HTTP API.
//! This file makes the call (network I/O): concurrency limit, one deadline for the whole call,
//! retries with backoff when the declaration allows them, a size cap on the body, metrics and a
//! debug log line per request (no secrets, no query string). Dropping the future (the client
//! cancelled) aborts the request in flight.

mod job;
mod mapping;
mod redact;
mod request;
mod resolver;
mod token;
mod upstreams;

pub use job::{JobState, Started, cancel_job, job_state, start_job};
pub use mapping::{ResourceRead, resource_contents, tool_reply};
pub use upstreams::{BuildError, Upstream, Upstreams};

use crate::metrics::Metrics;
use mcp_declaration::{CompiledHttp, Templates};
use reqwest::StatusCode;
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{Map, Value};
use std::time::Duration;
use tokio::time::Instant;

/// What the upstream answered.
#[derive(Debug)]
pub struct Answer {
    /// Status.
    pub status: StatusCode,
    /// Headers, names in lower case (repeated headers joined by `, `).
    pub headers: Map<String, Value>,
    /// Body, at most the declared size.
    pub body: Vec<u8>,
    /// A redirect was not followed because it led to another scheme, host or port.
    pub refused_redirect: bool,
}

/// The header that carries the token `http.auth` obtained for one call, for `subject` (the
/// caller's token, for token exchange), by `deadline`; the token is also returned, to be
/// redacted from the answer.
async fn credential(
    http: &CompiledHttp,
    upstreams: &Upstreams,
    metrics: &Metrics,
    subject: Option<&crate::SubjectToken>,
    deadline: Instant,
) -> Result<Option<((HeaderName, HeaderValue), mcp_declaration::Secret)>, String> {
    let Some(auth) = &http.auth else {
        return Ok(None);
    };
    let live = upstreams
        .of(http)
        .ok_or_else(|| CallError::Request("the backend is not loaded".into()).to_string())?;
    let clients = token::Live {
        client: &live.client,
        signer: live.signer.as_ref(),
        actor_signer: live.actor_signer.as_ref(),
        assertion_signer: live.assertion_signer.as_ref(),
    };
    let token = token::token_for(auth, clients, &upstreams.tokens, metrics, subject, deadline)
        .await
        .map_err(|err| err.to_string())?;
    let mut value = HeaderValue::from_str(&format!("{}{}", auth.prefix, token.expose()))
        // Checked when the token was read; a prefix was checked at compile time.
        .map_err(|_| "the obtained token is not a valid header value".to_owned())?;
    value.set_sensitive(true);
    Ok(Some(((auth.header.clone(), value), token)))
}

/// Why no answer came. Messages never hold secrets or the request URL.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The arguments did not make a valid request.
    #[error("cannot build the upstream request: {0}")]
    Request(String),
    /// Too many calls in flight until the deadline.
    #[error("too many calls in flight: none finished within {} ms", .0.as_millis())]
    Busy(Duration),
    /// The deadline passed.
    #[error("the upstream did not answer within {} ms", .0.as_millis())]
    Timeout(Duration),
    /// The body is larger than allowed.
    #[error("the upstream response exceeds the limit of {0} bytes")]
    TooLarge(u64),
    /// Connection or protocol failure.
    #[error("cannot reach the upstream: {0}")]
    Transport(String),
}

impl CallError {
    fn code(&self) -> &'static str {
        match self {
            Self::Request(_) => "request_error",
            Self::Busy(_) => "busy",
            Self::Timeout(_) => "timeout",
            Self::TooLarge(_) => "too_large",
            Self::Transport(_) => "transport_error",
        }
    }
}

/// Who an upstream call is made for: the `http.auth` header obtained for it, and the caller's
/// claims (`claim` headers).
#[derive(Clone, Copy, Default)]
struct CallFor<'a> {
    credential: Option<&'a (HeaderName, HeaderValue)>,
    claims: Option<&'a Map<String, Value>>,
}

/// Calls the upstream for `args` (already validated) by `deadline`, retrying when allowed, as
/// `call_for` says.
async fn fetch_until(
    http: &CompiledHttp,
    upstreams: &Upstreams,
    templates: &Templates,
    metrics: &Metrics,
    args: &Value,
    deadline: Instant,
    call_for: CallFor<'_>,
) -> Result<Answer, CallError> {
    let live = upstreams
        .of(http)
        .ok_or_else(|| CallError::Request("the backend is not loaded".into()))?;
    let _permit = match tokio::time::timeout_at(deadline, live.permits.acquire()).await {
        Ok(Ok(permit)) => permit,
        _ => return Err(CallError::Busy(http.timeout)),
    };
    let mut prepared =
        request::prepare(http, templates, args, call_for.claims).map_err(CallError::Request)?;
    if let Some((name, value)) = call_for.credential {
        prepared.headers.insert(name.clone(), value.clone());
    }
    let attempts = http.retry.map_or(1, |r| r.attempts);
    let mut backoff = http.retry.map(|r| r.backoff).unwrap_or_default();
    let mut attempt = 1;
    loop {
        let started = Instant::now();
        let span = crate::telemetry::upstream_span(
            http.method.as_str(),
            &prepared.url,
            http.url.as_str(),
            &http.label,
            attempt,
        );
        let trace_headers = span.as_ref().map(crate::telemetry::UpstreamSpan::headers);
        let sent = once(http, &http.method, &live.client, &prepared, trace_headers);
        let outcome = match tokio::time::timeout_at(deadline, sent).await {
            Ok(outcome) => outcome,
            Err(_) => Err(CallError::Timeout(http.timeout)),
        };
        let code = match &outcome {
            Ok(answer) => answer.status.as_str().to_owned(),
            Err(err) => err.code().to_owned(),
        };
        let elapsed = started.elapsed();
        metrics.upstream(&http.label, &code, elapsed);
        crate::telemetry::record_upstream(&code);
        if let Some(span) = span {
            span.end(&code);
        }
        tracing::debug!(
            upstream = %http.label,
            method = %http.method,
            host = prepared.url.host_str().unwrap_or_default(),
            path = prepared.url.path(),
            attempt,
            code,
            elapsed_ms = elapsed.as_millis() as u64,
            "upstream request"
        );
        let retryable = match &outcome {
            Ok(answer) => matches!(answer.status.as_u16(), 502..=504),
            Err(err) => matches!(err, CallError::Transport(_)),
        };
        if retryable && attempt < attempts && Instant::now() + backoff < deadline {
            tokio::time::sleep(backoff).await;
            backoff = backoff.saturating_mul(2);
            attempt += 1;
            continue;
        }
        return outcome;
    }
}

/// One request and its body, read up to the size cap. `trace` (the attempt's `traceparent`)
/// replaces any declared header of the same name.
async fn once(
    http: &CompiledHttp,
    method: &reqwest::Method,
    client: &reqwest::Client,
    prepared: &request::Prepared,
    trace: Option<reqwest::header::HeaderMap>,
) -> Result<Answer, CallError> {
    let mut headers = prepared.headers.clone();
    for (name, value) in trace.into_iter().flatten() {
        if let Some(name) = name {
            headers.insert(name, value);
        }
    }
    let mut request = client
        .request(method.clone(), prepared.url.clone())
        .headers(headers);
    if let Some(body) = &prepared.body {
        request = request.body(body.clone());
    }
    let mut response = request.send().await.map_err(transport)?;
    let limit = http.max_response_bytes;
    if response.content_length().is_some_and(|len| len > limit) {
        return Err(CallError::TooLarge(limit));
    }
    let status = response.status();
    let refused_redirect = status.is_redirection()
        && response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .and_then(|l| response.url().join(l).ok())
            .is_some_and(|target| !mcp_declaration::same_origin(&target, http.url.origin()));
    let mut headers = Map::new();
    for (name, value) in response.headers() {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        match headers.get_mut(name.as_str()) {
            Some(Value::String(existing)) => {
                existing.push_str(", ");
                existing.push_str(&value);
            }
            _ => {
                headers.insert(name.as_str().to_owned(), Value::String(value));
            }
        }
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(transport)? {
        if (body.len() + chunk.len()) as u64 > limit {
            return Err(CallError::TooLarge(limit));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Answer {
        status,
        headers,
        body,
        refused_redirect,
    })
}

/// A transport failure described without the URL (which may carry secret query parameters).
fn transport(err: reqwest::Error) -> CallError {
    let err = err.without_url();
    let mut message = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    CallError::Transport(message)
}
