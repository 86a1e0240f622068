//! The server-to-client stream of a legacy session (Streamable HTTP GET, or the HTTP+SSE
//! stream): list_changed and resource-updated notifications after reloads, and pings that end a
//! session whose client stopped answering.

use super::AppState;
use super::reply::{Notifications, outgoing_event};
use axum::response::sse::Event;
use futures_util::Stream;
use mcp_protocol::methods;
use mcp_protocol::request;
use mcp_server::sessions::Session;
use mcp_server::{Notifier, Outgoing};
use serde_json::{Value, json};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};

/// Messages a stream may buffer for a slow client. Notifications wait for room (up to
/// [`STALLED_CLIENT_TIMEOUT`]); an HTTP+SSE answer that finds none ends the session. As many
/// as a session may have requests in flight, so a reading client never fills it.
const STREAM_CAPACITY: usize = mcp_server::sessions::MAX_IN_FLIGHT;

/// A client whose stream stays full this long is not reading it: its session ends.
const STALLED_CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// Puts `message` on the stream; ends the session of a client that stopped reading (a full
/// stream would otherwise hold the session, its connection and this task forever).
async fn deliver(state: &AppState, session: &Session, sender: &Notifier, message: Value) -> bool {
    match sender
        .send_timeout(Outgoing::boxed(message), STALLED_CLIENT_TIMEOUT)
        .await
    {
        Ok(()) => true,
        Err(mpsc::error::SendTimeoutError::Timeout(_)) => {
            tracing::info!(session = %short(&session.id), "ending session: its client stopped reading the stream");
            state.sessions.end(&session.id);
            false
        }
        Err(mpsc::error::SendTimeoutError::Closed(_)) => false,
    }
}

/// Opens the session's stream; `None` if one is already open. The returned receiver carries
/// every message for the client; a background task feeds it until the client leaves, the
/// session ends or the server shuts down.
pub(super) fn open(state: &Arc<AppState>, session: &Arc<Session>) -> Option<Notifications> {
    let (sender, receiver) = mpsc::channel(STREAM_CAPACITY);
    if !session.attach_stream(sender.clone()) {
        return None;
    }
    tokio::spawn(feed(state.clone(), session.clone(), sender));
    Some(receiver)
}

/// The SSE events of a stream: an optional first event (the HTTP+SSE endpoint), the 2025-11-25
/// priming event when asked, then each message.
pub(super) fn events(
    mut messages: Notifications,
    priming: bool,
    first: Option<Event>,
) -> impl Stream<Item = Result<Event, Infallible>> + Send + 'static {
    let named = first.is_some();
    async_stream::stream! {
        if let Some(first) = first {
            yield Ok(first);
        }
        if priming {
            yield Ok(Event::default().id("0").retry(Duration::from_secs(3)).data(""));
        }
        while let Some(message) = messages.recv().await {
            yield Ok(outgoing_event(*message, named.then_some("message")));
        }
    }
}

async fn feed(state: Arc<AppState>, session: Arc<Session>, sender: Notifier) {
    let mut changes = state.server.subscribe_changes();
    let settings = state.sessions.settings().clone();
    let mut pings = settings
        .ping_interval
        .map(|every| tokio::time::interval_at(tokio::time::Instant::now() + every, every));
    let mut sequence = 0u64;
    loop {
        tokio::select! {
            () = session.ended.cancelled() => break,
            () = state.shutdown.cancelled() => break,
            () = sender.closed() => break,
            changed = changes.recv() => {
                let messages = match changed {
                    Ok(changes) => state.server.session_notifications(&session, Some(&changes)),
                    // Fell behind: everything, subscribed resources included, may have changed.
                    Err(broadcast::error::RecvError::Lagged(_)) => state.server.session_notifications(&session, None),
                    Err(broadcast::error::RecvError::Closed) => break,
                };
                for message in messages {
                    if !deliver(&state, &session, &sender, message).await {
                        break;
                    }
                }
            }
            () = tick(&mut pings) => {
                sequence += 1;
                ping(&state, &session, &sender, sequence, settings.ping_timeout).await;
            }
        }
    }
    session.detach_stream(&sender);
}

/// The next tick of the ping timer; never, when pings are disabled.
async fn tick(timer: &mut Option<tokio::time::Interval>) {
    match timer {
        Some(timer) => {
            timer.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// Sends a ping and, in the background, ends the session if no answer comes in time.
async fn ping(
    state: &Arc<AppState>,
    session: &Arc<Session>,
    sender: &Notifier,
    sequence: u64,
    timeout: Duration,
) {
    let id = json!(format!("kube-mcp-ping-{sequence}"));
    let answered = session.expect_pong(&id);
    if !deliver(
        state,
        session,
        sender,
        request(&id, methods::PING, json!({})),
    )
    .await
    {
        session.forget_ping(&id);
        return;
    }
    let (state, session) = (state.clone(), session.clone());
    tokio::spawn(async move {
        if !matches!(tokio::time::timeout(timeout, answered).await, Ok(Ok(()))) {
            session.forget_ping(&id);
            if !session.ended.is_cancelled() {
                tracing::info!(session = %short(&session.id), "ending session: ping unanswered");
                state.server.metrics().ping_failed();
                state.sessions.end(&session.id);
            }
        }
    });
}

/// A session id shortened for logs (ids are bearer-like: never log them whole).
pub(super) fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}
