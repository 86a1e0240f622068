//! Dispatch: one request plus its era becomes a result, served from the current compiled
//! declaration. Knows nothing of HTTP or sessions; transports call [`Server::handle`]. The
//! declaration is swapped atomically on reload (no lock on the request path).

mod access;
mod catalog;
mod completion;
mod lifecycle;
mod prompts;
mod resources;
mod tools;
mod upstream;

use crate::admin::metrics::{Metrics, method_label};
use crate::auth::Principal;
use crate::declaration::{CacheScope, Compiled, LogLevel};
use crate::protocol::{Era, McpError, meta, object};
use arc_swap::ArcSwap;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{broadcast, mpsc};

use access::Kind;
pub use lifecycle::{initialize_result, parse_level};
use tokio_util::sync::CancellationToken;
pub use upstream::MAX_POLLED;
use upstream::{Poller, ReadCache};

/// Capacity of the change broadcast; a stream that lags this far behind gets a full refresh.
const CHANGE_CAPACITY: usize = 64;

/// What a reload changed, sent to every open stream that may notify its client.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Changes {
    /// The tool list differs.
    pub tools: bool,
    /// The prompt list differs.
    pub prompts: bool,
    /// The resource or resource-template list differs.
    pub resources: bool,
    /// Fixed resources whose contents differ.
    pub updated_uris: Vec<String>,
}

impl Changes {
    /// Whether anything changed.
    pub fn any(&self) -> bool {
        self.tools || self.prompts || self.resources || !self.updated_uris.is_empty()
    }
}

/// Where a request's own notifications (progress, log messages) go, if the transport can stream
/// them to the client before the result.
pub type Notifier = mpsc::Sender<Value>;

/// Per-request facts the dispatch needs besides method and params.
#[derive(Clone, Debug)]
pub struct RequestContext {
    /// How the request is served.
    pub era: Era,
    /// Send `notifications/message` at or above this level; `None` sends none.
    pub log_level: Option<LogLevel>,
    /// The client's progress token, if it asked for progress.
    pub progress_token: Option<Value>,
    /// The stream for this request's notifications.
    pub notifier: Option<Notifier>,
    /// The authenticated caller (with `spec.auth`): lists and `allow` conditions are decided
    /// for it.
    pub caller: Option<Arc<Principal>>,
}

impl RequestContext {
    /// A context for `params`, reading the progress token from `params._meta`.
    pub fn new(
        era: Era,
        params: &Value,
        log_level: Option<LogLevel>,
        notifier: Option<Notifier>,
    ) -> Self {
        Self {
            era,
            log_level,
            progress_token: Self::progress_token(params).cloned(),
            notifier,
            caller: None,
        }
    }

    /// The same context, for `caller`.
    #[must_use]
    pub fn with_caller(mut self, caller: Option<Arc<Principal>>) -> Self {
        self.caller = caller;
        self
    }

    /// The progress token in `params._meta`, if the client asked for progress.
    pub fn progress_token(params: &Value) -> Option<&Value> {
        params
            .get("_meta")
            .and_then(|m| m.get("progressToken"))
            .filter(|token| token.is_string() || token.is_number())
    }

    /// Sends a notification related to this request; dropped when no stream can carry it.
    pub async fn notify(&self, message: Value) {
        if let Some(notifier) = &self.notifier {
            // A closed receiver means the client went away; the request is being dropped too.
            let _ = notifier.send(message).await;
        }
    }
}

/// Settings of the dispatch layer.
#[derive(Clone, Debug)]
pub struct ServerSettings {
    /// Items per page of list results.
    pub page_size: usize,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self { page_size: 100 }
    }
}

/// The dispatch layer over the current declaration.
pub struct Server {
    current: Arc<ArcSwap<Compiled>>,
    settings: ServerSettings,
    metrics: Arc<Metrics>,
    changes: broadcast::Sender<Arc<Changes>>,
    cache: Arc<ReadCache>,
    poller: Poller,
}

impl Server {
    /// Serves `compiled`.
    pub fn new(compiled: Compiled, settings: ServerSettings, metrics: Arc<Metrics>) -> Self {
        let (changes, _) = broadcast::channel(CHANGE_CAPACITY);
        let current = Arc::new(ArcSwap::from_pointee(compiled));
        let cache = Arc::new(ReadCache::default());
        let poller = Poller::new(
            current.clone(),
            metrics.clone(),
            changes.clone(),
            cache.clone(),
        );
        Self {
            current,
            settings,
            metrics,
            changes,
            cache,
            poller,
        }
    }

    /// The declaration being served.
    pub fn declaration(&self) -> Arc<Compiled> {
        self.current.load_full()
    }

    /// The metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Records a request answered outside [`Server::handle`] (`initialize`, which opens a
    /// session, and `subscriptions/listen`, which is a stream).
    pub fn record(&self, method: &str, ok: bool, started: Instant) {
        self.metrics
            .request(method_label(method), ok, started.elapsed());
    }

    /// Change notifications from reloads.
    pub fn subscribe_changes(&self) -> broadcast::Receiver<Arc<Changes>> {
        self.changes.subscribe()
    }

    /// Swaps in a new declaration and tells open streams what changed.
    pub fn replace(&self, compiled: Compiled) -> Changes {
        let old = self.current.swap(Arc::new(compiled));
        self.cache.forget(None);
        let changes = diff(&old, &self.current.load());
        if changes.any() {
            // No receivers is fine: nobody listens.
            let _ = self.changes.send(Arc::new(changes.clone()));
        }
        changes
    }

    /// Polls the upstream behind `uri` (if any) for `watcher` until `until` is cancelled or
    /// [`Server::unwatch_resource`]; changes become `notifications/resources/updated`.
    pub fn watch_resource(&self, uri: &str, watcher: &str, until: CancellationToken) {
        self.poller.watch(uri, watcher, until);
    }

    /// Stops polling `uri` for `watcher`.
    pub fn unwatch_resource(&self, uri: &str, watcher: &str) {
        self.poller.unwatch(uri, watcher);
    }

    /// How many upstream resources are being polled for subscribers.
    pub fn polled_resources(&self) -> usize {
        self.poller.polled()
    }

    /// Answers one request.
    pub async fn handle(
        &self,
        ctx: &RequestContext,
        method: &str,
        params: &Value,
    ) -> Result<Value, McpError> {
        let started = Instant::now();
        let decl = self.current.load_full();
        let result = self.dispatch(&decl, ctx, method, params).await;
        let result = result.map(|result| finish(&decl, ctx.era, method, result));
        self.metrics
            .request(method_label(method), result.is_ok(), started.elapsed());
        result
    }

    async fn dispatch(
        &self,
        decl: &Compiled,
        ctx: &RequestContext,
        method: &str,
        params: &Value,
    ) -> Result<Value, McpError> {
        let page_size = self.settings.page_size;
        match (ctx.era, method) {
            (Era::Modern, "server/discover") => Ok(lifecycle::discover_result(decl)),
            (Era::Legacy(_), "ping") => Ok(json!({})),
            (Era::Legacy(_), "logging/setLevel") => lifecycle::set_level(params).map(|_| json!({})),
            (Era::Legacy(_), "resources/subscribe" | "resources/unsubscribe") => {
                resources::check_subscribable(decl, params).map(|_| json!({}))
            }
            (_, "tools/list") => catalog::list(
                params,
                page_size,
                "tools",
                access::visible(
                    decl,
                    ctx,
                    Kind::Tool,
                    decl.tools.iter().map(|t| &t.descriptor),
                )
                .into_iter(),
            ),
            (_, "tools/call") => match access::tool_refusal(decl, ctx, params) {
                Some(refused) => Ok(refused),
                None => tools::call(decl, &self.metrics, ctx, params).await,
            },
            (_, "resources/list") => catalog::list(
                params,
                page_size,
                "resources",
                access::visible(
                    decl,
                    ctx,
                    Kind::Resource,
                    decl.resources.iter().map(|r| &r.descriptor),
                )
                .into_iter(),
            ),
            (_, "resources/templates/list") => catalog::list(
                params,
                page_size,
                "resourceTemplates",
                access::visible(
                    decl,
                    ctx,
                    Kind::ResourceTemplate,
                    decl.resource_templates.iter().map(|t| &t.descriptor),
                )
                .into_iter(),
            ),
            (_, "resources/read") => match access::resource_refusal(decl, ctx, params) {
                Some(refused) => Err(McpError::InvalidParams(refused)),
                None => resources::read(decl, &self.metrics, &self.cache, params).await,
            },
            (_, "prompts/list") => catalog::list(
                params,
                page_size,
                "prompts",
                access::visible(
                    decl,
                    ctx,
                    Kind::Prompt,
                    decl.prompts.iter().map(|p| &p.descriptor),
                )
                .into_iter(),
            ),
            (_, "prompts/get") => match access::prompt_refusal(decl, ctx, params) {
                Some(refused) => Err(McpError::InvalidParams(refused)),
                None => prompts::get(decl, params),
            },
            (_, "completion/complete") => completion::complete(decl, params),
            _ => Err(McpError::MethodNotFound(method.to_owned())),
        }
    }
}

/// Methods whose 2026-07-28 results carry `ttlMs` and `cacheScope`.
const CACHEABLE: &[&str] = &[
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

/// Adds what the era requires on every result: in 2026-07-28 `resultType`, server info and, for
/// cacheable methods, caching hints. Legacy results are sent as built (`ping` must be `{}`).
fn finish(decl: &Compiled, era: Era, method: &str, mut result: Value) -> Value {
    if era != Era::Modern {
        return result;
    }
    result["resultType"] = Value::String("complete".to_owned());
    result["_meta"] = object([(meta::SERVER_INFO, decl.server_info.clone())]);
    if CACHEABLE.contains(&method) {
        result["ttlMs"] = Value::from(decl.cache.ttl_ms);
        // What an authenticated server answers depends on who asks: never shared.
        result["cacheScope"] = if decl.auth.is_some() {
            json!(CacheScope::Private)
        } else {
            json!(decl.cache.scope)
        };
    }
    result
}

fn diff(old: &Compiled, new: &Compiled) -> Changes {
    fn same<'a, T: 'a>(
        a: impl Iterator<Item = &'a T>,
        b: impl Iterator<Item = &'a T>,
        key: impl Fn(&T) -> &Value,
    ) -> bool {
        a.map(&key).eq(b.map(&key))
    }
    let updated_uris = new
        .resources
        .iter()
        .filter(|r| {
            old.resource(r.contents["uri"].as_str().unwrap_or_default())
                .is_some_and(|o| o.contents != r.contents)
        })
        .filter_map(|r| r.contents["uri"].as_str().map(str::to_owned))
        .collect();
    Changes {
        tools: !same(old.tools.iter(), new.tools.iter(), |t| &t.descriptor),
        prompts: !same(old.prompts.iter(), new.prompts.iter(), |p| &p.descriptor),
        resources: !same(old.resources.iter(), new.resources.iter(), |r| {
            &r.descriptor
        }) || !same(
            old.resource_templates.iter(),
            new.resource_templates.iter(),
            |t| &t.descriptor,
        ),
        updated_uris,
    }
}
