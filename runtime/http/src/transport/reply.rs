//! Turning a request's outcome into an HTTP response: a JSON body when the answer is ready at
//! once, or an SSE stream when notifications come first or the answer takes a while (an open
//! stream with keep-alives also notices a client that went away, which cancels the request).

use axum::Json;
use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::{FutureExt as _, Stream};
use mcp_protocol::{Era, McpError, RequestId, error_response};
use mcp_server::{Notifier, Outgoing};
use serde::Serialize;
use serde_json::Value;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio::sync::mpsc;

/// After this long without an answer, a client that accepts SSE gets a stream.
const SWITCH_TO_STREAM_AFTER: Duration = Duration::from_millis(500);

/// Capacity of a request's notification channel.
pub(super) const NOTIFICATION_CAPACITY: usize = 32;

/// A JSON-RPC error body.
pub(super) fn error_body(id: Option<&RequestId>, err: &McpError, era: Era) -> Json<Value> {
    Json(error_response(id, err.to_json(era)))
}

/// Seconds a client refused at a limit of sessions or streams (the replica's, or its own
/// share) is told to wait: a place frees when a session or stream ends, which takes longer
/// than a request.
const LIMIT_RETRY_AFTER: &str = "5";

/// A JSON-RPC error response with the era's HTTP status (and `Retry-After` for a refusal at a
/// limit: 503 for the replica's, 429 for the client's share and for a declared rate limit).
pub(super) fn error(id: Option<&RequestId>, err: &McpError, era: Era) -> Response {
    let status = StatusCode::from_u16(err.http_status(era)).unwrap_or(StatusCode::BAD_REQUEST);
    let mut response = (status, error_body(id, err, era)).into_response();
    if let Some(value) = retry_after(err) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

/// The `Retry-After` of a refusal at a limit, in whole seconds (RFC 9110), rounded up so that a
/// retry at that time passes; `None` for other errors.
pub(super) fn retry_after(err: &McpError) -> Option<HeaderValue> {
    match err {
        McpError::TooManySessions(_) | McpError::ClientShare { .. } => {
            Some(HeaderValue::from_static(LIMIT_RETRY_AFTER))
        }
        McpError::RateLimited { retry_after_ms, .. } => {
            Some(HeaderValue::from(retry_after_ms.div_ceil(1000).max(1)))
        }
        _ => None,
    }
}

/// Room for a typical answer, so that writing it takes one allocation.
const ANSWER_CAPACITY: usize = 512;

/// `body` written as JSON, with `status`.
pub(super) fn json(status: StatusCode, body: &impl Serialize) -> Response {
    let mut bytes = Vec::with_capacity(ANSWER_CAPACITY);
    if serde_json::to_writer(&mut bytes, body).is_err() {
        // Only a map with non-string keys fails; no answer is built that way.
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    let mut response = Response::new(Body::from(bytes));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// An SSE response with `:` keep-alive comments every `keepalive` (idle proxies would otherwise
/// cut the stream) and the header that stops nginx from buffering events.
pub(super) fn sse<S>(events: S, keepalive: Duration) -> Response
where
    S: Stream<Item = Result<Event, Infallible>> + Send + 'static,
{
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(keepalive))
        .into_response();
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// One JSON-RPC message as an SSE event (JSON is always one line).
pub(super) fn event(message: &impl Serialize, name: Option<&'static str>) -> Event {
    // Only a map with non-string keys fails to serialize; no message is built that way.
    let data = serde_json::to_string(message).unwrap_or_else(|_| "null".to_owned());
    let event = Event::default().data(data);
    match name {
        Some(name) => event.event(name),
        None => event,
    }
}

/// An outgoing message as an SSE event; an answer written ahead releases its budget charges
/// here, its bytes now in the event.
pub(super) fn outgoing_event(message: Outgoing, name: Option<&'static str>) -> Event {
    let event = match message {
        Outgoing::Message(message) => return self::event(&message, name),
        Outgoing::Written { json, held } => {
            let event = Event::default().data(json);
            drop(held);
            event
        }
    };
    match name {
        Some(name) => event.event(name),
        None => event,
    }
}

/// The notification channel of a request that may send notifications (it asked for progress or
/// log messages); requests that cannot notify get no channel at all.
pub(super) fn notification_channel(may_notify: bool) -> (Option<Notifier>, Option<Notifications>) {
    if may_notify {
        let (sender, receiver) = mpsc::channel(NOTIFICATION_CAPACITY);
        (Some(sender), Some(receiver))
    } else {
        (None, None)
    }
}

/// The receiving end of a request's notifications.
pub(super) type Notifications = mpsc::Receiver<Box<Outgoing>>;

/// The next notification; never, without a channel.
async fn next(notifications: &mut Option<Notifications>) -> Option<Outgoing> {
    match notifications {
        Some(receiver) => receiver.recv().await.map(|message| *message),
        None => std::future::pending().await,
    }
}

/// A notification already queued.
fn queued(notifications: &mut Option<Notifications>) -> Option<Outgoing> {
    notifications
        .as_mut()?
        .try_recv()
        .ok()
        .map(|message| *message)
}

/// Answers a request whose outcome `outcome` resolves to (HTTP status, JSON-RPC response) and
/// whose notifications arrive on `notifications`. Without SSE support, notifications are dropped
/// and the answer is JSON.
///
/// The outcome comes boxed where it is made: it holds the whole answer's future, and taken by
/// value it would be copied into this future and again into the box a stream needs.
pub(super) async fn respond<F, B>(
    mut outcome: Pin<Box<F>>,
    mut notifications: Option<Notifications>,
    client_accepts_sse: bool,
    keepalive: Duration,
) -> Response
where
    F: Future<Output = (StatusCode, B)> + Send + 'static,
    B: Serialize + Send + 'static,
{
    if !client_accepts_sse {
        if let Some(receiver) = &mut notifications {
            receiver.close();
        }
        let (status, body) = outcome.await;
        return json(status, &body);
    }
    // Most answers (declared content) are ready at the first poll: answer them without arming
    // the switch-to-stream timer, which costs a timer-wheel registration per request.
    if let Some((status, body)) = (&mut outcome).now_or_never() {
        let Some(first) = queued(&mut notifications) else {
            return json(status, &body);
        };
        return sse(
            stream(Some(first), Some(body), outcome, notifications),
            keepalive,
        );
    }
    let (first, done) = tokio::select! {
        biased;
        Some(first) = next(&mut notifications) => (Some(first), None),
        (status, body) = &mut outcome => match queued(&mut notifications) {
            // Notifications sent while the request ran to completion within one poll.
            Some(first) => (Some(first), Some(body)),
            None => return json(status, &body),
        },
        () = tokio::time::sleep(SWITCH_TO_STREAM_AFTER) => (None, None),
    };
    sse(stream(first, done, outcome, notifications), keepalive)
}

/// The events of a streamed answer: the first notification (if one came), the rest as they
/// come, then the response (`done` when the outcome is already known).
fn stream<F, B>(
    first: Option<Outgoing>,
    done: Option<B>,
    mut outcome: Pin<Box<F>>,
    mut notifications: Option<Notifications>,
) -> impl Stream<Item = Result<Event, Infallible>> + Send + 'static
where
    F: Future<Output = (StatusCode, B)> + Send + 'static,
    B: Serialize + Send + 'static,
{
    async_stream::stream! {
        if let Some(first) = first {
            yield Ok(outgoing_event(first, None));
        }
        let body = match done {
            Some(body) => body,
            None => loop {
                tokio::select! {
                    biased;
                    Some(note) = next(&mut notifications) => yield Ok(outgoing_event(note, None)),
                    (_, body) = &mut outcome => break body,
                }
            },
        };
        while let Some(note) = queued(&mut notifications) {
            yield Ok(outgoing_event(note, None));
        }
        yield Ok(event(&body, None));
    }
}
