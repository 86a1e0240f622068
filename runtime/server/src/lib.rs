//! mcp-server: every MCP method decided over the compiled declaration, with the state serving
//! needs: legacy sessions (`sessions`), where answers come from (`backends`), metrics, tracing and
//! audit. Knows nothing of HTTP transports: `mcp-http` maps requests to [`Server`] calls.
//!
//! Dispatch: every MCP method is decided here, one file per method group (the `match` in
//! [`Server::dispatch`] is the index). A request plus its era (and, in legacy eras, its session)
//! becomes a result, served from the current compiled declaration. Knows nothing of HTTP:
//! transports call [`Server::handle`], [`Server::initialize`], [`Server::notification`] and
//! [`Server::listen`]. The declaration is swapped atomically on reload (no lock on the request
//! path).

#![warn(missing_docs, unreachable_pub)]

pub mod approvals;
pub mod audit;
pub mod backends;
pub mod budget;
pub mod clients;
pub mod limits;
pub mod metrics;
pub mod param_headers;
pub mod sessions;
pub mod telemetry;

mod principal;
pub use principal::{Principal, SubjectToken};

mod authorize;
mod catalog;
mod completion;
mod discovery;
mod extensions;
mod finish;
mod interactive;
mod lifecycle;
mod observe;
mod params;
mod polling;
mod prompts;
mod read_cache;
mod request;
mod resources;
mod served;
mod subscriptions;
mod tasks;
mod tool_result;
mod tools;
mod view;

use crate::clients::ClientKey;
use crate::metrics::Metrics;
use crate::sessions::{Sealer, Session};
use arc_swap::ArcSwap;
use futures_util::Stream;
use mcp_declaration::{Compiled, LogLevel};
use mcp_protocol::methods::{self, notifications};
use mcp_protocol::{Era, LegacyVersion, McpError, RequestId, member};
use polling::Poller;
use read_cache::ReadCache;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

pub use authorize::{Authorized, Decision};
pub use finish::Finished;
pub use lifecycle::{initialize_result, parse_level, served_declaration};
pub use polling::MAX_POLLED;
pub use request::MAX_SUBSCRIPTIONS;
pub use request::{Request, Target};
pub use served::Served;
pub use subscriptions::ListenLimit;
pub use view::ViewRef;

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
/// them to the client before the result. Messages are boxed: a channel allocates its slots 32 at
/// a time up front, and a session's stream channel lives as long as the session (32 boxes take
/// 256 bytes, 32 values 2.3 KiB).
pub type Notifier = mpsc::Sender<Box<Outgoing>>;

/// A message on its way to a client.
#[derive(Debug)]
pub enum Outgoing {
    /// Built here (notifications, questions, pings): small, written as it comes.
    Message(Value),
    /// An answer already written as JSON (one line), with the budget charges its bytes hold
    /// until it is written to the client.
    Written {
        /// The JSON text.
        json: String,
        /// What its bytes are charged to.
        held: budget::Held,
    },
}

impl Outgoing {
    /// `message`, boxed for a channel.
    pub fn boxed(message: Value) -> Box<Self> {
        Box::new(Self::Message(message))
    }
}

/// Per-request facts the dispatch needs besides method and params.
#[derive(Clone)]
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
    /// The legacy session the request belongs to: `logging/setLevel` and
    /// `resources/(un)subscribe` change its state.
    pub session: Option<Arc<Session>>,
    /// The trace parent named by the HTTP `traceparent` header (`_meta.traceparent` wins).
    pub trace_parent: Option<opentelemetry::Context>,
    /// The client's address (its connection's peer, or what a trusted proxy forwarded): who
    /// an unauthenticated stateless caller is, for `spec.limits.perPrincipal`.
    pub address: std::net::IpAddr,
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
            session: None,
            trace_parent: None,
            address: clients::UNKNOWN_ADDRESS,
        }
    }

    /// The same context, from a client at `address`.
    #[must_use]
    pub fn from_address(mut self, address: std::net::IpAddr) -> Self {
        self.address = address;
        self
    }

    /// Who the caller is for per-principal limits: its session's client, else its principal,
    /// else its address.
    pub fn client(&self) -> ClientKey {
        match &self.session {
            Some(session) => session.client,
            None => ClientKey::new(self.caller.as_deref().map(Principal::digest), self.address),
        }
    }

    /// The same context, with the trace parent of the request's HTTP headers.
    #[must_use]
    pub fn with_trace_parent(mut self, parent: Option<opentelemetry::Context>) -> Self {
        self.trace_parent = parent;
        self
    }

    /// The same context, for `caller`.
    #[must_use]
    pub fn with_caller(mut self, caller: Option<Arc<Principal>>) -> Self {
        self.caller = caller;
        self
    }

    /// The same context, in `session`.
    #[must_use]
    pub fn in_session(mut self, session: Arc<Session>) -> Self {
        self.session = Some(session);
        self
    }

    /// The progress token in `params._meta`, if the client asked for progress.
    pub fn progress_token(params: &Value) -> Option<&Value> {
        member(params, "_meta")
            .and_then(|m| member(m, "progressToken"))
            .filter(|token| token.is_string() || token.is_number())
    }

    /// Sends a notification related to this request; dropped when no stream can carry it.
    pub async fn notify(&self, message: Value) {
        if let Some(notifier) = &self.notifier {
            // A closed receiver means the client went away; the request is being dropped too.
            let _ = notifier.send(Outgoing::boxed(message)).await;
        }
    }
}

/// Settings of the dispatch layer.
#[derive(Clone, Debug)]
pub struct ServerSettings {
    /// Items per page of list results.
    pub page_size: usize,
    /// Most upstream-backed resources one client's subscribers may have polled at once (of
    /// [`MAX_POLLED`] per replica).
    pub max_polled_per_client: usize,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            page_size: 100,
            max_polled_per_client: clients::default_share(MAX_POLLED),
        }
    }
}

/// The dispatch layer over the current declaration.
pub struct Server {
    current: Arc<ArcSwap<Served>>,
    settings: ServerSettings,
    metrics: Arc<Metrics>,
    changes: broadcast::Sender<Arc<Changes>>,
    cache: Arc<ReadCache>,
    poller: Poller,
    rounds: Arc<interactive::Rounds>,
    /// Places of the tasks followed for legacy sessions' streams.
    task_watches: Arc<tokio::sync::Semaphore>,
    approvals: Option<Arc<dyn approvals::ApprovalStore>>,
}

impl Server {
    /// Serves `served`.
    pub fn new(served: Served, settings: ServerSettings, metrics: Arc<Metrics>) -> Self {
        metrics.declaration_served(None, &served.hash);
        let (changes, _) = broadcast::channel(CHANGE_CAPACITY);
        let current = Arc::new(ArcSwap::from_pointee(served));
        let cache = Arc::new(ReadCache::default());
        let poller = Poller::new(
            current.clone(),
            metrics.clone(),
            changes.clone(),
            cache.clone(),
            settings.max_polled_per_client,
        );
        Self {
            current,
            settings,
            metrics,
            changes,
            cache,
            poller,
            rounds: Arc::new(interactive::Rounds::new(Arc::new(Sealer::random()))),
            task_watches: Arc::new(tokio::sync::Semaphore::new(
                tasks::watch::MAX_SESSION_WATCHES,
            )),
            approvals: None,
        }
    }

    /// The same server, keeping the approvals of gated tools (`tools[].approval`) in `store`.
    #[must_use]
    pub fn with_approvals(mut self, store: Arc<dyn approvals::ApprovalStore>) -> Self {
        self.approvals = Some(store);
        self
    }

    /// The same server, sealing 2026-07-28 `requestState` with `sealer` (the session key all
    /// replicas share, so any replica continues any round). Default: a random key.
    #[must_use]
    pub fn with_sealer(mut self, sealer: Arc<Sealer>) -> Self {
        self.rounds = Arc::new(interactive::Rounds::new(sealer));
        self
    }

    /// The declaration being served.
    pub fn declaration(&self) -> Arc<Served> {
        self.current.load_full()
    }

    /// Records, when auditing is on, a call the transport refused before dispatch (403).
    pub fn audit_refused(
        &self,
        request: &Request,
        caller: &Principal,
        era: Era,
        session: Option<&str>,
    ) {
        observe::refused_before_dispatch(request, caller, era, session);
    }

    /// Parses a request once and resolves the item it names against the current declaration,
    /// as seen through the `spec.views` view named `view` (`None`: the whole server).
    pub fn request(&self, method: String, params: Value, view: Option<&str>) -> Request {
        Request::from_message(self.current.load_full(), method, params, view)
    }

    /// The one authorization decision for `request` by `caller` (`None`: no `spec.auth`).
    pub fn authorize(&self, caller: Option<&Principal>, request: Request) -> Authorized {
        authorize::authorize(caller, request)
    }

    /// The metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Records a request refused before it reached the dispatch (by a transport's checks).
    pub fn record(&self, method: &str, ok: bool, started: Instant) {
        self.metrics.request(method, ok, started.elapsed(), None);
    }

    /// Change notifications from reloads.
    pub fn subscribe_changes(&self) -> broadcast::Receiver<Arc<Changes>> {
        self.changes.subscribe()
    }

    /// Swaps in a new declaration and tells open streams what changed.
    pub fn replace(&self, served: Served) -> Changes {
        self.swap(served).0
    }

    /// [`Server::replace`], returning the declaration replaced as well, so that the caller
    /// decides where it is freed: a large one takes milliseconds, which live reload spends off
    /// the request workers (`mcp-http`'s `reload.rs`).
    pub fn swap(&self, served: Served) -> (Changes, Arc<Served>) {
        let new_hash = served.hash.clone();
        let old = self.current.swap(Arc::new(served));
        self.metrics.declaration_served(Some(&old.hash), &new_hash);
        self.cache.forget(None);
        let changes = diff(&old, &self.current.load());
        if changes.any() {
            // No receivers is fine: nobody listens.
            let _ = self.changes.send(Arc::new(changes.clone()));
        }
        (changes, old)
    }

    /// `initialize` (legacy eras): negotiates the version and describes this server. `open`
    /// gives the transport's session that version (and may refuse: too many sessions).
    pub fn initialize<T>(
        &self,
        params: &Value,
        open: impl FnOnce(LegacyVersion) -> Result<T, McpError>,
    ) -> (LegacyVersion, Result<(T, Value), McpError>) {
        let started = Instant::now();
        let version = LegacyVersion::negotiate(params);
        let outcome =
            open(version).map(|opened| (opened, initialize_result(&self.declaration(), version)));
        self.record(methods::INITIALIZE, outcome.is_ok(), started);
        (version, outcome)
    }

    /// A client notification in a legacy session: `notifications/cancelled` stops an in-flight
    /// request; the others need nothing.
    pub fn notification(&self, session: &Session, method: &str, params: &Value) {
        if method == notifications::CANCELLED
            && let Some(id) = params.get("requestId")
        {
            session.cancel_request(id);
        }
    }

    /// `subscriptions/listen` (2026-07-28): the stream's messages (acknowledgement, change
    /// notifications, status notifications of the tasks it names that `caller` may open, and
    /// the result when `until` is cancelled), or the refusal. `limit` bounds the listen
    /// streams open at once, and those of `client`.
    pub fn listen(
        &self,
        id: RequestId,
        authorized: &Authorized,
        limit: &ListenLimit,
        client: ClientKey,
        until: CancellationToken,
        caller: Option<Arc<Principal>>,
    ) -> Result<impl Stream<Item = Value> + Send + 'static, McpError> {
        let started = Instant::now();
        let params = &authorized.request.params;
        let permit = refusal(authorized)
            .map_or(Ok(()), Err)
            .and_then(|()| subscriptions::check_listen(params))
            .and_then(|filter| {
                let tasks = tasks::watch::watched(&self.rounds.sealer, params, caller.as_deref())?;
                Ok((filter, tasks))
            })
            .and_then(|(filter, tasks)| Ok((filter, tasks, limit.try_acquire(client)?)));
        self.record(methods::SUBSCRIPTIONS_LISTEN, permit.is_ok(), started);
        let (filter, tasks, permit) = permit?;
        let asked_tasks = params.pointer("/notifications/taskIds").is_some();
        let task_ids = asked_tasks.then(|| tasks.iter().map(|(id, _)| id.clone()).collect());
        let statuses = tasks::watch::notifications(
            self.task_sources(),
            caller,
            tasks,
            id.clone(),
            until.clone(),
            Era::Modern,
        );
        let changes = subscriptions::listen_stream(
            &self.poller,
            client,
            self.subscribe_changes(),
            id,
            filter.with_tasks(task_ids),
            until,
            permit,
        );
        Ok(futures_util::stream::select(changes, statuses))
    }

    /// What watching tasks reads (`tasks/watch.rs`).
    fn task_sources(&self) -> tasks::watch::Sources {
        tasks::watch::Sources {
            current: self.current.clone(),
            metrics: self.metrics.clone(),
            approvals: self.approvals.clone(),
            sealer: self.rounds.sealer.clone(),
        }
    }

    /// The notifications a legacy session's stream carries for a change (`None`: the stream
    /// lagged behind and everything may have changed).
    pub fn session_notifications(
        &self,
        session: &Session,
        changes: Option<&Changes>,
    ) -> Vec<Value> {
        subscriptions::session_notifications(session, changes)
    }

    /// Whether answering this request may ask the client for input (an interactive tool or
    /// prompt): legacy transports then keep a stream open for the server's requests.
    pub fn may_ask(&self, request: &Request) -> bool {
        let decl = &request.decl;
        match request.target {
            Target::Tool(i) => !decl.tools[i].interaction.is_empty(),
            Target::Prompt(i) if request.method == methods::PROMPTS_GET => {
                !decl.prompts[i].interaction.is_empty()
            }
            _ => false,
        }
    }

    /// Answers one request, with what its era adds to every result, as a `Value` (for the
    /// legacy transports, which write it into a JSON-RPC response).
    pub async fn handle(
        &self,
        ctx: &RequestContext,
        authorized: Authorized,
    ) -> Result<Value, McpError> {
        self.answer(ctx, authorized).await.map(Finished::into_value)
    }

    /// Answers one authorized request: the result, to be serialized with what its era adds.
    pub async fn answer(
        &self,
        ctx: &RequestContext,
        authorized: Authorized,
    ) -> Result<Finished, McpError> {
        let started = Instant::now();
        let Authorized { request, decision } = authorized;
        let decl = request.decl.clone();
        let method = request.method.as_str();
        let observed = observe::begin(ctx, &request, &decl);
        // Traced, the dispatch runs boxed in its span's scope: inline, every answer's future
        // would hold the scope's future beside the dispatch's, and the transports move it.
        let result = match &observed {
            Some(observed) => {
                let dispatched = self.dispatch(&decl, ctx, &request, decision);
                Box::pin(observed.scope().run(dispatched)).await
            }
            None => self.dispatch(&decl, ctx, &request, decision).await,
        };
        self.metrics.request(
            method,
            result.is_ok(),
            started.elapsed(),
            observed
                .as_ref()
                .and_then(observe::Observation::sampled_trace_id),
        );
        if let Some(observed) = observed {
            observed.finish(&result);
        }
        result.map(|result| Finished::new(decl, ctx.era, method, result))
    }

    async fn dispatch(
        &self,
        decl: &Served,
        ctx: &RequestContext,
        request: &Request,
        decision: Decision,
    ) -> Result<Value, McpError> {
        let (method, params) = (request.method.as_str(), &request.params);
        if !served_in(ctx.era, method) {
            return Err(McpError::MethodNotFound(method.to_owned()));
        }
        match decision {
            Decision::Allowed => {}
            Decision::NotListed => return Err(authorize::hidden(request)),
            Decision::Refused(reason) if method == methods::TOOLS_CALL => {
                return Ok(json!({"content": [{"type": "text", "text": reason}], "isError": true}));
            }
            Decision::Refused(reason) => return Err(McpError::InvalidParams(reason)),
            Decision::NeedsScopes(scopes) => {
                // Transports answer this with a 403 challenge before dispatch; a caller that
                // did not still gets a refusal, never the item.
                return Err(McpError::InvalidParams(format!(
                    "the caller lacks scopes this needs: {}",
                    scopes.join(" ")
                )));
            }
        }
        if let Target::Invalid(err) = &request.target {
            return Err(err.clone());
        }
        if decl.limiter.any() {
            let tool = match request.target {
                Target::Tool(i) if method == methods::TOOLS_CALL => Some(i),
                _ => None,
            };
            if let Err(refused) = decl.limiter.admit(&ctx.client(), tool) {
                self.metrics.rate_limited(refused.scope.label());
                return limited(method, &refused);
            }
        }
        let page_size = self.settings.page_size;
        let caller = ctx.caller.as_deref();
        // What lists show: what the request's view publishes, and of that what the caller's
        // rules let it see.
        let view = request.view;
        let listed = |access: &mcp_declaration::Access| authorize::listed(decl, caller, access);
        let tool_listed = |i: usize| view.tool(decl, i) && listed(&decl.tools[i].access);
        match method {
            methods::SERVER_DISCOVER => Ok(lifecycle::discover_result(decl)),
            methods::PING => Ok(json!({})),
            methods::LOGGING_SET_LEVEL => lifecycle::set_level(ctx, params),
            methods::RESOURCES_SUBSCRIBE => {
                subscriptions::subscribe(&self.poller, decl, ctx, &request.target)
            }
            methods::RESOURCES_UNSUBSCRIBE => {
                subscriptions::unsubscribe(&self.poller, ctx, &request.target)
            }
            methods::TOOLS_LIST => {
                let views = extensions::client_shows_views(ctx, params);
                let entries = discovery::listing(decl, views, &tool_listed);
                catalog::list(params, page_size, "tools", entries.into_iter())
            }
            methods::TOOLS_CALL => match request.target {
                Target::Meta(meta) => {
                    let started = Instant::now();
                    let views = extensions::client_shows_views(ctx, params);
                    let reply =
                        discovery::call(decl, meta, params.get("arguments"), views, &tool_listed);
                    self.metrics
                        .tool_call(meta.name(), !reply.is_error, started.elapsed());
                    Ok(tool_result::shape(reply, ctx.era))
                }
                _ => {
                    let result = tools::call(
                        decl,
                        &self.metrics,
                        &self.rounds,
                        self.approvals.as_deref(),
                        ctx,
                        request,
                    )
                    .await;
                    if let Ok(created) = &result {
                        tasks::watch::follow_in_session(
                            self.task_sources(),
                            ctx,
                            created,
                            &self.task_watches,
                        );
                    }
                    result
                }
            },
            methods::RESOURCES_LIST => catalog::list(
                params,
                page_size,
                "resources",
                decl.resources
                    .iter()
                    .enumerate()
                    .filter(|(i, r)| view.resource(decl, *i) && listed(&r.access))
                    .map(|(_, r)| &r.descriptor)
                    .collect::<Vec<_>>()
                    .into_iter(),
            ),
            methods::RESOURCES_TEMPLATES_LIST => catalog::list(
                params,
                page_size,
                "resourceTemplates",
                decl.resource_templates
                    .iter()
                    .enumerate()
                    .filter(|(i, t)| view.template(decl, *i) && listed(&t.access))
                    .map(|(_, t)| &t.descriptor)
                    .collect::<Vec<_>>()
                    .into_iter(),
            ),
            methods::RESOURCES_READ => {
                // Boxed, like the other upstream-bound answers below: see `tools::call`.
                Box::pin(resources::read(
                    decl,
                    &self.metrics,
                    &self.cache,
                    &request.target,
                    caller,
                ))
                .await
            }
            methods::PROMPTS_LIST => catalog::list(
                params,
                page_size,
                "prompts",
                decl.prompts
                    .iter()
                    .enumerate()
                    .filter(|(i, p)| view.prompt(decl, *i) && listed(&p.access))
                    .map(|(_, p)| &p.descriptor)
                    .collect::<Vec<_>>()
                    .into_iter(),
            ),
            methods::PROMPTS_GET => {
                Box::pin(prompts::get(
                    decl,
                    &self.metrics,
                    &self.rounds,
                    ctx,
                    request,
                ))
                .await
            }
            methods::COMPLETION_COMPLETE => completion::complete(decl, request),
            methods::TASKS_GET
            | methods::TASKS_CANCEL
            | methods::TASKS_UPDATE
            | methods::TASKS_RESULT
            | methods::TASKS_LIST => {
                let (sealer, store) = (&self.rounds.sealer, self.approvals.as_deref());
                Box::pin(tasks::answer(
                    decl,
                    &self.metrics,
                    sealer,
                    store,
                    ctx,
                    method,
                    params,
                ))
                .await
            }
            _ => Err(McpError::MethodNotFound(method.to_owned())),
        }
    }
}

/// Whether `method` is answered in `era` (`subscriptions/listen` has a path of its own).
fn served_in(era: Era, method: &str) -> bool {
    match method {
        methods::SERVER_DISCOVER => era == Era::Modern,
        methods::PING
        | methods::LOGGING_SET_LEVEL
        | methods::RESOURCES_SUBSCRIBE
        | methods::RESOURCES_UNSUBSCRIBE => era != Era::Modern,
        _ => true,
    }
}

/// The refusal of a method that answers only with an error (`subscriptions/listen`).
fn refusal(authorized: &Authorized) -> Option<McpError> {
    match &authorized.decision {
        Decision::Allowed => None,
        Decision::NotListed => Some(authorize::hidden(&authorized.request)),
        Decision::Refused(reason) => Some(McpError::InvalidParams(reason.clone())),
        Decision::NeedsScopes(scopes) => Some(McpError::InvalidParams(format!(
            "the caller lacks scopes this needs: {}",
            scopes.join(" ")
        ))),
    }
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
    // What a view shows may change with its patterns alone.
    let views = old.views != new.views;
    Changes {
        tools: !same(old.tools.iter(), new.tools.iter(), |t| &t.descriptor)
            || !old.discovery.lists_like(&new.discovery)
            || views,
        prompts: !same(old.prompts.iter(), new.prompts.iter(), |p| &p.descriptor) || views,
        resources: views
            || !same(old.resources.iter(), new.resources.iter(), |r| {
                &r.descriptor
            })
            || !same(
                old.resource_templates.iter(),
                new.resource_templates.iter(),
                |t| &t.descriptor,
            ),
        updated_uris,
    }
}

/// A request over a declared limit: for `tools/call` a tool error the model can read (with the
/// limit in `_meta`), for any other method a JSON-RPC error (HTTP 429 with `Retry-After`).
fn limited(method: &str, refused: &limits::Refusal) -> Result<Value, McpError> {
    let retry_after_ms = u64::try_from(refused.retry_after.as_millis()).unwrap_or(u64::MAX);
    if method == methods::TOOLS_CALL {
        return Ok(json!({
            "content": [{"type": "text", "text": refused.message()}],
            "isError": true,
            "_meta": {LIMIT_META: {
                "scope": refused.scope.label(),
                "limit": refused.limit,
                "retryAfterMs": retry_after_ms,
            }},
        }));
    }
    Err(McpError::RateLimited {
        message: refused.message(),
        scope: refused.scope.label(),
        retry_after_ms,
    })
}

/// `_meta` key of a tool result refused by a declared limit: `{scope, limit, retryAfterMs}`.
pub const LIMIT_META: &str = "kube-mcp.io/limit";

#[cfg(test)]
mod tests;
