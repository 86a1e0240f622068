//! Change notifications, both eras: legacy `resources/subscribe` and `resources/unsubscribe`
//! (state kept on the session), the 2026-07-28 `subscriptions/listen` stream, and which
//! notifications a reload's [`Changes`] become for a session or a listen stream. Subscribing to
//! an upstream-backed resource starts polling it (see `polling.rs`); the rest is pure.

use super::polling::Poller;
use super::request::{MAX_SUBSCRIPTIONS, Target};
use super::{Changes, RequestContext};
use crate::clients::{ClientKey, ClientLimit, ClientPlace, ClientShares};
use crate::metrics::Metrics;
use crate::sessions::Session;
use futures_util::Stream;
use mcp_declaration::{Compiled, canonical_uri};
use mcp_protocol::methods::notifications;
use mcp_protocol::{McpError, RequestId, meta, notification, success_response};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, broadcast};
use tokio_util::sync::CancellationToken;

/// The canonical URI a subscribe or unsubscribe names (the request resolved it to a resource
/// this server serves, or refused it before dispatch).
fn subscribed_uri(target: &Target) -> Result<&str, McpError> {
    match target {
        Target::Resource(resolved) => Ok(&resolved.uri),
        Target::Invalid(err) => Err(err.clone()),
        _ => Err(McpError::Internal(
            "a subscription without a resource target".into(),
        )),
    }
}

/// `resources/subscribe` (legacy): any URI this server can read, under its canonical spelling;
/// upstream-backed ones are polled while the session lives.
pub(crate) fn subscribe(
    poller: &Poller,
    decl: &Compiled,
    ctx: &RequestContext,
    target: &Target,
) -> Result<Value, McpError> {
    let uri = subscribed_uri(target)?;
    if super::resources::read_per_caller(decl, uri) {
        return Err(McpError::InvalidParams(format!(
            "{uri} is read as each caller (http.auth tokenExchange), so its changes cannot be \
             watched; read it again instead"
        )));
    }
    if let Some(session) = &ctx.session {
        if !session.is_subscribed(uri) && session.subscription_count() >= MAX_SUBSCRIPTIONS {
            return Err(McpError::InvalidParams(format!(
                "at most {MAX_SUBSCRIPTIONS} resource subscriptions per session; unsubscribe first"
            )));
        }
        session.subscribe(uri, true);
        poller.watch(uri, &session.id, session.client, session.ended.clone());
    }
    Ok(json!({}))
}

/// `resources/unsubscribe` (legacy).
pub(crate) fn unsubscribe(
    poller: &Poller,
    ctx: &RequestContext,
    target: &Target,
) -> Result<Value, McpError> {
    let uri = subscribed_uri(target)?;
    if let Some(session) = &ctx.session {
        session.subscribe(uri, false);
        poller.unwatch(uri, &session.id);
    }
    Ok(json!({}))
}

/// What a reload changed, as a session that lagged behind the change stream must assume it:
/// every list, and every resource it subscribed to.
pub(crate) fn everything(updated_uris: Vec<String>) -> Changes {
    Changes {
        tools: true,
        prompts: true,
        resources: true,
        updated_uris,
    }
}

/// The notifications a legacy session's stream carries for `changes`; `None` when the stream
/// lagged behind the change broadcast (then [`everything`] it subscribed to may have changed).
pub(crate) fn session_notifications(session: &Session, changes: Option<&Changes>) -> Vec<Value> {
    let lagged;
    let changes = match changes {
        Some(changes) => changes,
        None => {
            lagged = everything(session.subscriptions());
            &lagged
        }
    };
    let mut out = Vec::new();
    for (changed, method) in [
        (changes.tools, notifications::TOOLS_LIST_CHANGED),
        (changes.prompts, notifications::PROMPTS_LIST_CHANGED),
        (changes.resources, notifications::RESOURCES_LIST_CHANGED),
    ] {
        if changed {
            out.push(notification(method, json!({})));
        }
    }
    for uri in changes
        .updated_uris
        .iter()
        .filter(|uri| session.is_subscribed(uri))
    {
        out.push(notification(
            notifications::RESOURCES_UPDATED,
            json!({"uri": uri}),
        ));
    }
    out
}

/// Bounds the `subscriptions/listen` streams open at once (sized like the session limit), and
/// how many of them one client holds.
pub struct ListenLimit {
    permits: Arc<Semaphore>,
    max: usize,
    shares: Arc<ClientShares>,
}

impl ListenLimit {
    /// At most `max` streams, `per_client` of them for one client.
    pub fn new(max: usize, per_client: usize, metrics: Arc<Metrics>) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(max)),
            max,
            shares: ClientShares::new(ClientLimit::ListenStreams, per_client, metrics),
        }
    }

    /// Streams `client` holds open.
    pub fn held_by(&self, client: &ClientKey) -> usize {
        self.shares.held_by(client)
    }

    /// A permit for one more stream of `client`, held while it is open.
    pub(super) fn try_acquire(
        &self,
        client: ClientKey,
    ) -> Result<(OwnedSemaphorePermit, ClientPlace), McpError> {
        let permit = self
            .permits
            .clone()
            .try_acquire_owned()
            .map_err(|_| McpError::TooManySessions(self.max))?;
        Ok((permit, self.shares.take(client)?))
    }
}

/// What a listen request asked for (and is honored in full).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Filter {
    #[serde(default)]
    tools_list_changed: bool,
    #[serde(default)]
    prompts_list_changed: bool,
    #[serde(default)]
    resources_list_changed: bool,
    #[serde(default)]
    resource_subscriptions: Vec<String>,
    /// `resource_subscriptions` in canonical spelling, as changes name them.
    #[serde(skip)]
    watched: Vec<String>,
    /// The task ids whose status notifications the stream sends (`None`: none were asked).
    #[serde(skip)]
    task_ids: Option<Vec<String>>,
}

/// The params of `subscriptions/listen`.
#[derive(Deserialize)]
struct ListenParams {
    #[serde(default)]
    notifications: Option<Filter>,
}

impl Filter {
    /// The filter of a listen request.
    pub(crate) fn parse(params: &Value) -> Result<Self, McpError> {
        let parsed = ListenParams::deserialize(params).map_err(|err| {
            McpError::InvalidParams(format!("invalid subscriptions/listen params: {err}"))
        })?;
        let mut filter = parsed.notifications.unwrap_or_default();
        filter.watched = filter
            .resource_subscriptions
            .iter()
            .map(|uri| canonical_uri(uri).into_owned())
            .collect();
        Ok(filter)
    }

    /// The acknowledged filter (only what was asked).
    fn honored(&self) -> Value {
        let mut honored = json!({});
        for (key, on) in [
            ("toolsListChanged", self.tools_list_changed),
            ("promptsListChanged", self.prompts_list_changed),
            ("resourcesListChanged", self.resources_list_changed),
        ] {
            if on {
                honored[key] = json!(true);
            }
        }
        if !self.resource_subscriptions.is_empty() {
            honored["resourceSubscriptions"] = json!(self.resource_subscriptions);
        }
        if let Some(task_ids) = &self.task_ids {
            honored["taskIds"] = json!(task_ids);
        }
        honored
    }

    /// The same filter, acknowledging `task_ids` (those of the asked tasks it will follow).
    pub(crate) fn with_tasks(mut self, task_ids: Option<Vec<String>>) -> Self {
        self.task_ids = task_ids;
        self
    }

    /// The notifications (method, updated URI) this filter lets through for `changes`.
    fn notifications(&self, changes: &Changes) -> Vec<(&'static str, Option<String>)> {
        let mut out = Vec::new();
        if self.tools_list_changed && changes.tools {
            out.push((notifications::TOOLS_LIST_CHANGED, None));
        }
        if self.prompts_list_changed && changes.prompts {
            out.push((notifications::PROMPTS_LIST_CHANGED, None));
        }
        if self.resources_list_changed && changes.resources {
            out.push((notifications::RESOURCES_LIST_CHANGED, None));
        }
        for uri in changes
            .updated_uris
            .iter()
            .filter(|uri| self.watched.contains(uri))
        {
            out.push((notifications::RESOURCES_UPDATED, Some(uri.clone())));
        }
        out
    }
}

/// A checked listen request: its filter, within bounds, matching URIs by their canonical
/// spelling (the acknowledgement repeats them as asked).
pub(crate) fn check_listen(params: &Value) -> Result<Filter, McpError> {
    let filter = Filter::parse(params)?;
    let asked = filter.resource_subscriptions.len();
    if asked > MAX_SUBSCRIPTIONS {
        return Err(McpError::InvalidParams(format!(
            "at most {MAX_SUBSCRIPTIONS} resourceSubscriptions per listen request ({asked} asked)"
        )));
    }
    Ok(filter)
}

/// The messages of a `subscriptions/listen` stream: the acknowledgement, then matching changes
/// until `until` is cancelled (server shutdown), then the listen request's result, which ends
/// it gracefully. Upstream-backed resources are polled while the stream is alive; `keep` is
/// held as long (the transport's stream permit).
pub(crate) fn listen_stream<K: Send + 'static>(
    poller: &Poller,
    client: ClientKey,
    mut changes: broadcast::Receiver<Arc<Changes>>,
    id: RequestId,
    filter: Filter,
    until: CancellationToken,
    keep: K,
) -> impl Stream<Item = Value> + Send + 'static {
    let tag = json!({ meta::SUBSCRIPTION_ID: id });
    let watching = CancellationToken::new();
    let watcher = format!("listen:{}", rand::random::<u64>());
    for uri in &filter.watched {
        poller.watch(uri, &watcher, client, watching.clone());
    }
    let stop_watching = watching.drop_guard();
    async_stream::stream! {
        let _keep = keep;
        let _stop_watching = stop_watching;
        let ack = json!({"_meta": tag, "notifications": filter.honored()});
        yield notification(notifications::SUBSCRIPTIONS_ACKNOWLEDGED, ack);
        loop {
            let changed = tokio::select! {
                () = until.cancelled() => break,
                changed = changes.recv() => changed,
            };
            let changes = match changed {
                Ok(changes) => changes,
                // Fell behind: tell the client everything it asked for may have changed.
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    Arc::new(everything(filter.watched.clone()))
                }
                Err(broadcast::error::RecvError::Closed) => break,
            };
            for (method, uri) in filter.notifications(&changes) {
                let mut params = json!({"_meta": tag});
                if let Some(uri) = uri {
                    params["uri"] = json!(uri);
                }
                yield notification(method, params);
            }
        }
        let done = json!({"resultType": "complete", "_meta": tag});
        yield success_response(&id, done);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::SessionTransport;

    #[test]
    fn acknowledges_only_what_was_asked() {
        let filter = Filter::parse(
            &json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": ["a://b"]}}),
        )
        .unwrap();
        assert_eq!(
            filter.honored(),
            json!({"toolsListChanged": true, "resourceSubscriptions": ["a://b"]})
        );
        let sent: Vec<_> = filter
            .notifications(&everything(vec!["a://b".into(), "c://d".into()]))
            .into_iter()
            .map(|(m, _)| m)
            .collect();
        assert_eq!(
            sent,
            [
                notifications::TOOLS_LIST_CHANGED,
                notifications::RESOURCES_UPDATED
            ]
        );
    }

    #[test]
    fn refuses_too_many_subscriptions() {
        let uris: Vec<String> = (0..=MAX_SUBSCRIPTIONS)
            .map(|i| format!("a://{i}"))
            .collect();
        let params = json!({"notifications": {"resourceSubscriptions": uris}});
        assert!(matches!(
            check_listen(&params),
            Err(McpError::InvalidParams(_))
        ));
    }

    /// A legacy session whose change stream lagged still hears about its subscribed resources
    /// (it used to get the list changes only, so subscribers missed `resources/updated`).
    #[test]
    fn a_lagged_session_hears_about_its_subscriptions() {
        let session = Session::new("s".into(), SessionTransport::Sse, None, 0);
        session.subscribe("a://subscribed", true);
        let sent = session_notifications(&session, None);
        let updated: Vec<_> = sent
            .iter()
            .filter(|m| m["method"] == notifications::RESOURCES_UPDATED)
            .map(|m| m["params"]["uri"].clone())
            .collect();
        assert_eq!(updated, [json!("a://subscribed")]);
        assert_eq!(sent.len(), 4, "three list changes and one update: {sent:?}");
    }
}
