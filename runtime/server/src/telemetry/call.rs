//! Spans of one request: the request span (kind server) that transports' dispatch opens, and a
//! child span (kind client) per upstream HTTP attempt, whose context goes to the upstream in
//! `traceparent`. A task-local [`CallScope`] carries the request span to the HTTP backend and
//! the upstream's answer back to the audit record, so no signature in between changes. Pure
//! apart from handing finished spans to the exporter's queue.
//!
//! Attributes never hold argument values, URLs with their query, header values or messages
//! (error texts may quote arguments): names, codes and counts only.

use crate::audit::ApprovalNote;
use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use std::future::Future;
use std::sync::{Arc, Mutex};

tokio::task_local! {
    static CALL: Arc<CallScope>;
}

/// What one dispatched request collects while it runs.
#[derive(Default)]
pub struct CallScope {
    trace: Option<Context>,
    upstream: Mutex<Option<String>>,
    token: Mutex<Option<TokenNote>>,
    approval: Mutex<Option<ApprovalNote>>,
}

/// How the token of an upstream call (`http.auth`) was obtained, for its spans and audit record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenNote {
    /// `ok`, `cached`, `refused` or `error` (as `mcp_token_exchanges_total`).
    pub outcome: &'static str,
    /// The audience (else the resource) the token was asked for.
    pub audience: Option<String>,
    /// The token's `act` chain: who acts for its subject, the current actor first.
    pub act: Vec<String>,
}

impl CallScope {
    /// A scope whose upstream spans are children of `trace` (none when `None`).
    pub fn new(trace: Option<Context>) -> Arc<Self> {
        Arc::new(Self {
            trace,
            upstream: Mutex::new(None),
            token: Mutex::new(None),
            approval: Mutex::new(None),
        })
    }

    /// Runs `future` inside this scope.
    pub async fn run<F: Future>(self: &Arc<Self>, future: F) -> F::Output {
        CALL.scope(self.clone(), future).await
    }

    /// The last upstream answer in this scope: a status code such as `200`, or an error code
    /// such as `timeout`.
    pub fn upstream(&self) -> Option<String> {
        self.upstream.lock().ok().and_then(|last| last.clone())
    }

    /// How the last upstream token in this scope was obtained (`http.auth`).
    pub fn token(&self) -> Option<TokenNote> {
        self.token.lock().ok().and_then(|last| last.clone())
    }

    /// The approval of the gated call in this scope.
    pub fn approval(&self) -> Option<ApprovalNote> {
        self.approval.lock().ok().and_then(|last| last.clone())
    }
}

/// Notes the approval the running request's gated call went through.
pub fn record_approval(id: &str, state: &'static str, requester: &str, approver: Option<&str>) {
    let _ = CALL.try_with(|scope| {
        if let Ok(mut last) = scope.approval.lock() {
            *last = Some(ApprovalNote {
                id: id.to_owned(),
                state,
                requester: requester.to_owned(),
                approver: approver.map(str::to_owned),
            });
        }
    });
}

/// Notes how the token of the running request's upstream call was obtained.
pub fn record_token(outcome: &'static str, audience: Option<&str>, act: &[String]) {
    let _ = CALL.try_with(|scope| {
        if let Ok(mut last) = scope.token.lock() {
            *last = Some(TokenNote {
                outcome,
                audience: audience.map(str::to_owned),
                act: act.to_vec(),
            });
        }
    });
}

/// Notes an upstream answer (status or error code) for the running request's audit record.
pub fn record_upstream(code: &str) {
    // Outside a scope (audit and tracing off) there is nobody to tell.
    let _ = CALL.try_with(|scope| {
        if let Ok(mut last) = scope.upstream.lock() {
            *last = Some(code.to_owned());
        }
    });
}

/// The trace of the running request, when it is traced and sampled (the exemplar of the
/// latencies it observes); `None` at once when tracing is off.
pub fn current_trace_id() -> Option<String> {
    super::tracer()?;
    CALL.try_with(|scope| scope.trace.as_ref().and_then(sampled_trace_id))
        .ok()
        .flatten()
}

/// The trace id of `cx`'s span as 32 hex digits, when it is sampled (an unsampled trace never
/// reaches a backend, so it would be a dead link).
fn sampled_trace_id(cx: &Context) -> Option<String> {
    let span = cx.span();
    let span_context = span.span_context();
    span_context
        .is_sampled()
        .then(|| span_context.trace_id().to_string())
}

/// The span of one JSON-RPC request.
pub struct RequestSpan {
    cx: Context,
}

impl RequestSpan {
    /// Starts a server span named `name` under `parent` (a root span when `None`); `None` when
    /// tracing is off.
    pub fn start(
        name: String,
        parent: Option<&Context>,
        attributes: Vec<KeyValue>,
    ) -> Option<Self> {
        let tracer = super::tracer()?;
        let parent = parent.cloned().unwrap_or_default();
        let span = tracer
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .with_attributes(attributes)
            .start_with_context(tracer, &parent);
        Some(Self {
            cx: parent.with_span(span),
        })
    }

    /// The context that parents upstream spans.
    pub fn context(&self) -> &Context {
        &self.cx
    }

    /// The trace id, as 32 hex digits.
    pub fn trace_id(&self) -> String {
        self.cx.span().span_context().trace_id().to_string()
    }

    /// The trace id when the span is sampled.
    pub fn sampled_trace_id(&self) -> Option<String> {
        sampled_trace_id(&self.cx)
    }

    /// Ends the span with the outcome's attributes; `error` marks it failed with that short,
    /// fixed description.
    pub fn end(self, attributes: Vec<KeyValue>, error: Option<&'static str>) {
        let span = self.cx.span();
        span.set_attributes(attributes);
        if let Some(error) = error {
            span.set_status(Status::error(error));
        }
        span.end();
    }
}

/// The span of one upstream HTTP attempt.
pub struct UpstreamSpan {
    cx: Context,
}

/// Starts the span of an upstream attempt when the running request is traced. `template` is
/// the declared URL (its query is left out); the expanded URL, which holds argument values, is
/// not recorded.
pub fn upstream_span(
    method: &str,
    url: &reqwest::Url,
    template: &str,
    upstream: &str,
    attempt: u32,
) -> Option<UpstreamSpan> {
    let tracer = super::tracer()?;
    let parent = CALL.try_with(|scope| scope.trace.clone()).ok().flatten()?;
    let template = template.split('?').next().unwrap_or_default().to_owned();
    let mut attributes = vec![
        KeyValue::new("http.request.method", method.to_owned()),
        KeyValue::new("url.scheme", url.scheme().to_owned()),
        KeyValue::new(
            "server.address",
            url.host_str().unwrap_or_default().to_owned(),
        ),
        KeyValue::new("url.template", template.clone()),
        KeyValue::new("kube_mcp.upstream", upstream.to_owned()),
    ];
    if let Some(port) = url.port_or_known_default() {
        attributes.push(KeyValue::new("server.port", i64::from(port)));
    }
    if let Some(token) = CALL.try_with(|scope| scope.token()).ok().flatten() {
        attributes.push(KeyValue::new("kube_mcp.token_exchange", token.outcome));
        if let Some(audience) = token.audience {
            attributes.push(KeyValue::new("kube_mcp.upstream.audience", audience));
        }
        if !token.act.is_empty() {
            let act: Vec<opentelemetry::StringValue> =
                token.act.into_iter().map(Into::into).collect();
            attributes.push(KeyValue::new(
                "kube_mcp.upstream.act",
                opentelemetry::Value::Array(act.into()),
            ));
        }
    }
    if attempt > 1 {
        attributes.push(KeyValue::new(
            "http.request.resend_count",
            i64::from(attempt - 1),
        ));
    }
    let span = tracer
        .span_builder(format!("{method} {template}"))
        .with_kind(SpanKind::Client)
        .with_attributes(attributes)
        .start_with_context(tracer, &parent);
    Some(UpstreamSpan {
        cx: parent.with_span(span),
    })
}

impl UpstreamSpan {
    /// The `traceparent` (and `tracestate`) headers that make the upstream's work a child of
    /// this span.
    pub fn headers(&self) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        TraceContextPropagator::new().inject_context(
            &self.cx,
            &mut opentelemetry_http::HeaderInjector(&mut headers),
        );
        headers
    }

    /// Ends the span with the upstream's status code, or the error code when none came.
    pub fn end(self, code: &str) {
        let span = self.cx.span();
        match code.parse::<u16>() {
            Ok(status) => {
                span.set_attribute(KeyValue::new(
                    "http.response.status_code",
                    i64::from(status),
                ));
                if status >= 400 {
                    span.set_attribute(KeyValue::new("error.type", code.to_owned()));
                    span.set_status(Status::error("upstream error status"));
                }
            }
            Err(_) => {
                span.set_attribute(KeyValue::new("error.type", code.to_owned()));
                span.set_status(Status::error("upstream call failed"));
            }
        }
        span.end();
    }
}
