//! Legacy eras (2024-11-05 … 2025-11-25): the interactive rounds as server-to-client requests
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`) sent on the request's stream
//! (Streamable HTTP: the POST's SSE response; HTTP+SSE: the session stream), answered by the
//! client with a JSON-RPC response posted to the session. Each round's requests go out
//! together; every wait is bounded; a cancelled call drops its waits. The answers keep their
//! budget charges (global and session) as long as the call keeps them. Does I/O through the
//! request's notifier.

use super::{Outcome, Plan, Templates, claims, count_answer, count_asked, plan};
use crate::budget::Held;
use crate::metrics::Metrics;
use crate::sessions::Session;
use crate::{Outgoing, RequestContext};
use futures_util::future::join_all;
use mcp_declaration::CompiledInteraction;
use mcp_protocol::{McpError, request};
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Longest wait for one answer: a person may need to read and fill in a form.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(300);
/// Most rounds one call may take (answers asked again count).
const MAX_ROUNDS: usize = 8;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Asks over the session until the call is ready, declined, or the client cannot answer.
pub(crate) async fn resolve(
    metrics: &Metrics,
    ctx: &RequestContext,
    interaction: &CompiledInteraction,
    templates: &Templates,
    args: &Value,
) -> Result<Outcome, McpError> {
    let session = ctx
        .session
        .as_ref()
        .ok_or_else(|| McpError::Internal("a legacy request without its session".into()))?;
    let caps = session.client_capabilities();
    let mut answers = Map::new();
    // The bytes of the answers kept, charged until the call ends.
    let mut held = Held::none();
    for _ in 0..MAX_ROUNDS {
        let ask = match plan(interaction, templates, args, &answers, &caps, &claims(ctx))? {
            Plan::Ready(vars) => return Ok(Outcome::Ready(vars)),
            Plan::Stop(text) => return Ok(Outcome::Stop(text)),
            Plan::Ask(ask) => ask,
        };
        count_asked(metrics, &ask);
        let asked = ask
            .into_iter()
            .map(|(key, input)| async move { (key, ask_one(ctx, session, &input).await) });
        for (key, answer) in join_all(asked).await {
            match answer? {
                Ok((result, charges)) => {
                    count_answer(metrics, &key, Some(&result));
                    answers.insert(key, result);
                    held.join(charges);
                }
                Err(refusal) => {
                    count_answer(metrics, &key, None);
                    return Ok(Outcome::Stop(refusal));
                }
            }
        }
    }
    Err(McpError::Internal(format!(
        "the client did not give usable answers in {MAX_ROUNDS} rounds"
    )))
}

/// Removes the wait when the call ends early (cancelled, timed out, client gone).
struct Waiting<'a> {
    session: &'a Session,
    id: Value,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.session.forget_answer(&self.id);
    }
}

/// Sends one input request (`{method, params}`) and waits for its answer: `Ok(result)` with
/// the charges its bytes hold, or `Err(text)` when the client answered with an error (the user
/// refused, or it cannot).
async fn ask_one(
    ctx: &RequestContext,
    session: &Session,
    input: &Value,
) -> Result<Result<(Value, Held), String>, McpError> {
    let method = input["method"].as_str().unwrap_or_default();
    let id = Value::String(format!(
        "kube-mcp-input-{}",
        NEXT_ID.fetch_add(1, Ordering::Relaxed)
    ));
    let answer = session.expect_answer(&id);
    let _waiting = Waiting {
        session,
        id: id.clone(),
    };
    let Some(notifier) = &ctx.notifier else {
        return Err(McpError::InvalidRequest(
            "this call asks the client for input: accept text/event-stream on the POST".into(),
        ));
    };
    let message = request(&id, method, input["params"].clone());
    if tokio::time::timeout(ANSWER_TIMEOUT, notifier.send(Outgoing::boxed(message)))
        .await
        .map_or(true, |sent| sent.is_err())
    {
        return Err(McpError::InvalidRequest(
            "cannot ask the client for input: its stream for this request is closed (accept text/event-stream)".into(),
        ));
    }
    let (response, held) = tokio::select! {
        answered = tokio::time::timeout(ANSWER_TIMEOUT, answer) => match answered {
            Ok(Ok(response)) => response,
            Ok(Err(_)) => return Err(McpError::Internal("the session ended".into())),
            Err(_) => {
                return Ok(Err(format!(
                    "The client did not answer {method} within {} s; nothing was done.",
                    ANSWER_TIMEOUT.as_secs()
                )));
            }
        },
        () = session.ended.cancelled() => return Err(McpError::Internal("the session ended".into())),
    };
    match (response.get("result"), response.get("error")) {
        (Some(result), None) if result.is_object() => Ok(Ok((result.clone(), held))),
        (_, Some(error)) => Ok(Err(format!(
            "The client refused {method}: {}; nothing was done.",
            error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("no reason given")
        ))),
        _ => Err(McpError::InvalidParams(format!(
            "the client's answer to {method} is not an object"
        ))),
    }
}
