//! The controller: watches `MCPServer`s (in all namespaces or a list of them), the children the operator
//! labelled and their pods, caches the children (reflector stores the reconciles read), and runs
//! the reconcile pipeline only on news. I/O.
//!
//! What counts as news: a server's new generation (its own status writes are not); a child
//! changed or deleted by someone else (the echo of the operator's own apply is not); a change of
//! the Deployment fields readiness depends on; a pod whose containers start or stop naming a
//! problem. Reconciles are debounced and their concurrency is bounded.

mod changes;
mod namespaces;
mod strip;

use crate::reconcile::build::{
    GATEWAY_GROUP, GATEWAY_VERSION, HttpRoute, MANAGED_BY, SERVER_LABEL,
};
use crate::reconcile::cache::Stores;
use crate::reconcile::host_claims;
use crate::reconcile::memory::{Memory, fingerprint};
use crate::reconcile::{
    Context, error_chain, error_policy, exposed, pods, reconcile, session_keys, status,
};
use crate::resource::{CachedServer, CachedToolSet, CachedToolSetGrant};
use crate::verifier::{self, Verifier};
use changes::{Filter, changes};
use futures_util::StreamExt as _;
use futures_util::stream::BoxStream;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt as _, controller, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// Most reconciles running at once: enough to keep the API server busy, few enough that a burst
/// of servers does not queue thousands of requests on it.
pub const CONCURRENCY: u16 = 16;
/// Requests for the same server within this time become one reconcile (a Deployment's status
/// moves in several writes as its pods come up).
pub const DEBOUNCE: Duration = Duration::from_millis(1500);

/// A namespaced kind the operator watches and caches (the bounds kube's watcher and store need).
trait Watched:
    Resource<Scope = NamespaceResourceScope, DynamicType = ()>
    + Clone
    + Debug
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
}

impl<K> Watched for K where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + Debug
        + DeserializeOwned
        + Send
        + Sync
        + 'static
{
}

/// The watch events of `K`: one watch of every namespace (`namespaces` empty), or one per
/// namespace, merged so that `store` can follow them as one. Each watch backs off on errors.
fn watch_events<K>(
    client: &Client,
    namespaces: &[String],
    config: &watcher::Config,
    store: &Store<K>,
) -> BoxStream<'static, Result<watcher::Event<K>, watcher::Error>>
where
    K: Watched,
{
    let one = |api: Api<K>| watcher(api, config.clone()).default_backoff().boxed();
    match namespaces {
        [] => one(Api::all(client.clone())),
        [namespace] => one(Api::namespaced(client.clone(), namespace)),
        many => namespaces::merged(
            many.to_vec(),
            many.iter()
                .map(|namespace| one(Api::namespaced(client.clone(), namespace)))
                .collect(),
            store.clone(),
        )
        .boxed(),
    }
}

/// A label-scoped watch of `K` cached into a store, as a stream of raw watch events; `strip`
/// drops what the operator never reads before an object is cached (`strip.rs`).
fn cached_watch<K>(
    client: &Client,
    namespaces: &[String],
    strip: fn(&mut K),
) -> (
    Store<K>,
    impl futures_util::Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
)
where
    K: Watched,
{
    let config =
        watcher::Config::default().labels(&format!("app.kubernetes.io/managed-by={MANAGED_BY}"));
    let (reader, writer) = reflector::store();
    let stream = watch_events(client, namespaces, &config, &reader)
        .modify(strip)
        .reflect(writer);
    (reader, stream)
}

/// A watch of every `K` in the watched namespaces (no label scope) cached into a store, as a
/// stream of the objects it adds, changes or deletes.
fn unscoped_watch<K>(
    client: &Client,
    namespaces: &[String],
) -> (
    Store<K>,
    impl futures_util::Stream<Item = Result<K, watcher::Error>> + Send + 'static,
)
where
    K: Watched,
{
    let (reader, writer) = reflector::store();
    let stream = watch_events(client, namespaces, &watcher::Config::default(), &reader)
        .reflect(writer)
        .touched_objects();
    (reader, stream)
}

/// The servers whose `spec.include` takes sets from `namespace`: a set or grant there changed.
fn including(
    servers: &Store<CachedServer>,
    namespace: Option<String>,
) -> Vec<ObjectRef<CachedServer>> {
    let Some(namespace) = namespace else {
        return Vec::new();
    };
    servers
        .state()
        .iter()
        .filter(|server| server.include_namespaces.contains(&namespace))
        .map(|server| ObjectRef::from_obj(server.as_ref()))
        .collect()
}

/// The HTTPRoute cache and its watch events, when the API server serves the Gateway API (its
/// CRDs are optional); else a cache that is empty and ready, and no events. Checked once, at
/// start-up: installing the Gateway API later needs an operator restart to watch routes.
async fn route_watch(
    client: &Client,
    namespaces: &[String],
) -> (
    Store<HttpRoute>,
    BoxStream<'static, Result<watcher::Event<HttpRoute>, watcher::Error>>,
) {
    let served = match client
        .list_api_group_resources(&format!("{GATEWAY_GROUP}/{GATEWAY_VERSION}"))
        .await
    {
        Ok(list) => list.resources.iter().any(|r| r.name == "httproutes"),
        Err(error) => {
            tracing::info!(error = %error_chain(&error), "Gateway API not served; HTTPRoutes are not watched");
            false
        }
    };
    if served {
        let (store, events) = cached_watch::<HttpRoute>(client, namespaces, strip::route);
        return (store, events.boxed());
    }
    let (store, mut writer) = reflector::store::<HttpRoute>();
    // Nothing will ever list: the empty cache is complete as it is.
    writer.apply_watcher_event(&watcher::Event::InitDone);
    (store, futures_util::stream::empty().boxed())
}

/// What of a Deployment the `Ready` condition reads, plus its [`fingerprint`]: the steps of a
/// rollout in progress that do not change `Ready` (the controller's first look, the ReplicaSet
/// making pods) trigger no reconcile.
fn readiness(deployment: &Deployment) -> u64 {
    let desired = deployment.spec.replicas.unwrap_or(1);
    let rollout = status::rollout(deployment, desired).decides(desired);
    changes::hash_one(&(fingerprint(deployment), rollout))
}

/// The echo of the operator's own Deployment apply: what it wrote, before the Deployment
/// controller has looked at it (its first status write is news).
fn deployment_echo(memory: &Memory, deployment: &Deployment) -> bool {
    let seen = deployment
        .status
        .as_ref()
        .and_then(|s| s.observed_generation);
    memory.is_echo(deployment) && seen < deployment.metadata.generation
}

/// A child is news when its fingerprint changed and it is not the echo of the operator's apply.
#[allow(clippy::type_complexity)]
fn child_filter<K: Resource<DynamicType = ()>>(
    memory: Arc<Memory>,
) -> Filter<fn(&K) -> u64, impl Fn(&K) -> bool, fn(&K) -> bool> {
    Filter {
        key: fingerprint::<K>,
        echo: move |object: &K| memory.is_echo(object),
        baseline: None,
        on_delete: |_| true,
        lost: changes::ignore_lost,
    }
}

/// An exposing child (Ingress, HTTPRoute) is news also when its status changes (a controller
/// took it, or refused it: the `Exposed` condition reads it); the echo of the operator's own
/// apply is the answer with no status yet.
#[allow(clippy::type_complexity)]
fn exposing_filter<K: Resource<DynamicType = ()>>(
    memory: Arc<Memory>,
    status: fn(&K) -> Option<u64>,
) -> Filter<impl Fn(&K) -> u64, impl Fn(&K) -> bool, fn(&K) -> bool> {
    Filter {
        key: move |object: &K| changes::hash_one(&(fingerprint(object), status(object))),
        echo: move |object: &K| memory.is_echo(object) && status(object).is_none(),
        baseline: None,
        on_delete: |_| true,
        lost: changes::ignore_lost,
    }
}

/// The digest of an Ingress's load balancer status, when it has one.
fn ingress_status(ingress: &Ingress) -> Option<u64> {
    ingress
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .filter(|lb| lb.ingress.as_ref().is_some_and(|i| !i.is_empty()))
        .map(exposed::status_digest)
}

/// The digest of an HTTPRoute's status, when it has one.
fn route_status(route: &HttpRoute) -> Option<u64> {
    route
        .status
        .as_ref()
        .filter(|s| !s.is_null())
        .map(exposed::status_digest)
}

/// Runs the controller, and the verifier when there is one, until `stop` completes; in-flight
/// reconciles finish first. `context` receives the child caches the reconciles read.
pub async fn run(
    client: Client,
    namespaces: &[String],
    memory: Arc<Memory>,
    verifier: Option<Arc<Verifier>>,
    context: impl FnOnce(Stores) -> Arc<Context>,
    stop: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let (servers, server_events) = {
        let (reader, writer) = reflector::store::<CachedServer>();
        let config = watcher::Config::default().any_semantic();
        let stream = watch_events(&client, namespaces, &config, &reader)
            .modify(strip::server)
            .reflect(writer);
        (reader, stream)
    };
    // Kinds read only through their metadata are watched as metadata only.
    let (config_maps, config_map_events) =
        cached_watch::<PartialObjectMeta<ConfigMap>>(&client, namespaces, strip::metadata);
    let (services, service_events) =
        cached_watch::<PartialObjectMeta<Service>>(&client, namespaces, strip::metadata);
    let (deployments, deployment_events) =
        cached_watch::<Deployment>(&client, namespaces, strip::deployment);
    let (ingresses, ingress_events) = cached_watch::<Ingress>(&client, namespaces, strip::ingress);
    let (pdbs, pdb_events) = cached_watch::<PartialObjectMeta<PodDisruptionBudget>>(
        &client,
        namespaces,
        strip::metadata,
    );
    let (pods, pod_events) = cached_watch::<Pod>(&client, namespaces, strip::pod);
    // The verifier follows the pod cache event by event (Ready, IP), in the cache's order.
    let tapped = verifier.clone();
    let pod_events = pod_events.inspect(move |event| {
        if let (Some(verifier), Ok(event)) = (&tapped, event) {
            verifier.observe(event);
        }
    });
    let (network_policies, network_policy_events) =
        cached_watch::<PartialObjectMeta<NetworkPolicy>>(&client, namespaces, strip::metadata);
    let (roles, role_events) =
        cached_watch::<PartialObjectMeta<Role>>(&client, namespaces, strip::metadata);
    let (role_bindings, role_binding_events) =
        cached_watch::<PartialObjectMeta<RoleBinding>>(&client, namespaces, strip::metadata);
    let (http_routes, http_route_events) = route_watch(&client, namespaces).await;
    let (tool_sets, tool_set_events) = unscoped_watch::<CachedToolSet>(&client, namespaces);
    let (tool_set_grants, grant_events) = unscoped_watch::<CachedToolSetGrant>(&client, namespaces);
    let stores = Stores {
        config_maps,
        services,
        deployments,
        ingresses,
        pod_disruption_budgets: pdbs,
        network_policies,
        roles,
        role_bindings,
        http_routes,
        pods,
        servers: servers.clone(),
        tool_sets,
        tool_set_grants,
    };
    let ctx = context(stores);
    let (set_servers, grant_servers) = (servers.clone(), servers.clone());

    // Servers refused with HostConflict are looked at again when another server changes or goes
    // away (it may have released the route they wait for).
    let (claims_changed, claims_released) = host_claims::requeue(servers.clone());
    let deleted_claim = claims_changed.clone();
    let forget = memory.clone();
    let forget_verified = verifier.clone();
    let forget_rollout = ctx.clone();
    let metrics = ctx.metrics.clone();
    // A server deleted while the watch was behind: forgotten as if its deletion had been seen.
    let lost = {
        let (memory, verifier, metrics, claims, rollouts) = (
            memory.clone(),
            verifier.clone(),
            ctx.metrics.clone(),
            claims_changed.clone(),
            ctx.clone(),
        );
        move |(namespace, name, uid): &changes::Identity| {
            let (namespace, name, uid) = (
                namespace.clone().unwrap_or_default(),
                name.clone().unwrap_or_default(),
                uid.clone().unwrap_or_default(),
            );
            tracing::info!(server = %format!("{namespace}/{name}"), "deleted while the watch was behind; forgotten");
            memory.forget_server(&uid);
            rollouts.rollouts.done(&uid);
            metrics.forget_server(&namespace, &name);
            if let Some(verifier) = &verifier {
                verifier.forget_server(&namespace, &name);
            }
            host_claims::released(&claims, &uid);
        }
    };
    let server_changes = changes(
        server_events,
        Filter {
            // Status writes (the operator's own) change neither the generation nor the spec.
            // The spec's text counts too: after a CRD update a re-listing may show a field the
            // API server pruned before (same generation), which this operator must refuse. A
            // session key rotation is asked for with an annotation.
            key: |server: &CachedServer| {
                let rotation = server.annotations().get(session_keys::ROTATE_ANNOTATION);
                changes::hash_one(&(
                    server.metadata.generation,
                    server.uid(),
                    &server.spec,
                    rotation,
                ))
            },
            echo: |_: &CachedServer| false,
            baseline: None,
            on_delete: move |server: &CachedServer| {
                forget.forget_server(&server.uid().unwrap_or_default());
                forget_rollout
                    .rollouts
                    .done(&server.uid().unwrap_or_default());
                // Reconciles are not called for deleted servers; their series go here.
                metrics.forget_server(&server.namespace().unwrap_or_default(), &server.name_any());
                if let Some(verifier) = &forget_verified {
                    verifier
                        .forget_server(&server.namespace().unwrap_or_default(), &server.name_any());
                }
                host_claims::changed(&deleted_claim, server);
                false
            },
            lost,
        },
    )
    .inspect(move |server| {
        if let Ok(server) = server {
            host_claims::changed(&claims_changed, server);
        }
    });

    let (m8, m9) = (memory.clone(), memory.clone());
    let (m1, m2, m3, m4, m5, m6, m7) = (
        memory.clone(),
        memory.clone(),
        memory.clone(),
        memory.clone(),
        memory.clone(),
        memory.clone(),
        memory.clone(),
    );
    // The verifier's findings reach reconciles as triggers; it stops with the controller.
    let (verified_tx, verified_rx) = verifier::channel();
    let verifier_stop = tokio_util::sync::CancellationToken::new();
    let verifier_task = verifier
        .clone()
        .map(|verifier| tokio::spawn(verifier.run(verified_tx, verifier_stop.clone())));
    let controller = Controller::for_stream(server_changes, servers)
        .with_config(
            controller::Config::default()
                .concurrency(CONCURRENCY)
                .debounce(DEBOUNCE),
        )
        .owns_stream(changes(config_map_events, child_filter(m1)))
        .owns_stream(changes(service_events, child_filter(m2)))
        .owns_stream(changes(ingress_events, exposing_filter(m3, ingress_status)))
        .owns_stream(changes(pdb_events, child_filter(m4)))
        .owns_stream(changes(network_policy_events, child_filter(m6)))
        .owns_stream(changes(role_events, child_filter(m8)))
        .owns_stream(changes(role_binding_events, child_filter(m9)))
        .owns_stream(changes(
            http_route_events,
            exposing_filter(m7, route_status),
        ))
        .watches_stream(tool_set_events, move |set: CachedToolSet| {
            including(&set_servers, set.namespace())
        })
        .watches_stream(grant_events, move |grant: CachedToolSetGrant| {
            including(&grant_servers, grant.namespace())
        })
        .reconcile_on(claims_released)
        .reconcile_on(verifier::changes(verified_rx))
        .reconcile_on(futures_util::StreamExt::flatten(
            futures_util::stream::iter(
                ctx.take_rollout_wakeups()
                    .map(tokio_stream::wrappers::ReceiverStream::new),
            ),
        ))
        .owns_stream(changes(
            deployment_events,
            Filter {
                key: readiness,
                echo: move |deployment: &Deployment| deployment_echo(&m5, deployment),
                baseline: None,
                on_delete: |_: &Deployment| true,
                lost: changes::ignore_lost,
            },
        ))
        .watches_stream(
            changes(
                pod_events,
                Filter {
                    // A pod is news when its containers start or stop naming a problem; a new
                    // pod with none is not (the Deployment's status tells that story).
                    key: |pod: &Pod| changes::hash_one(&pods::problem([pod]).map(|p| p.reason)),
                    echo: |_: &Pod| false,
                    baseline: Some(changes::hash_one(&None::<&str>)),
                    on_delete: |_: &Pod| true,
                    lost: changes::ignore_lost,
                },
            ),
            |pod: Pod| {
                let server = pod.labels().get(SERVER_LABEL).cloned();
                let namespace = pod.namespace();
                server
                    .zip(namespace)
                    .map(|(server, namespace)| ObjectRef::new(&server).within(&namespace))
            },
        )
        .graceful_shutdown_on(stop)
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            match result {
                Ok(_) => {}
                // Already logged by the error policy, or harmless (an object deleted meanwhile).
                Err(
                    error @ (controller::Error::ReconcilerFailed(..)
                    | controller::Error::ObjectNotFound(_)),
                ) => tracing::debug!(error = %error_chain(&error), "controller"),
                // A watch failed: a missing CRD or permission shows here; the watch retries.
                Err(error) => {
                    tracing::warn!(error = %error_chain(&error), "watch failed; retrying")
                }
            }
        });
    controller.await;
    verifier_stop.cancel();
    if let Some(task) = verifier_task {
        let _ = task.await;
    }
}
