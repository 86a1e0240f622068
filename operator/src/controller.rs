//! The controller: watches `MCPServer`s (in one namespace or all) and the children the operator
//! labelled, and runs the reconcile pipeline on every change. I/O.

use crate::reconcile::build::MANAGED_BY;
use crate::reconcile::{Context, error_chain, error_policy, reconcile};
use crate::resource::MCPServer;
use futures_util::StreamExt as _;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::runtime::{Controller, controller, watcher};
use kube::{Api, Client, Resource};
use std::future::Future;
use std::sync::Arc;

/// An API handle for all namespaces, or the one the operator is scoped to.
fn scoped<K>(client: &Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<Scope = NamespaceResourceScope>,
    K::DynamicType: Default,
{
    match namespace {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    }
}

/// Runs the controller until `stop` completes; in-flight reconciles finish first.
pub async fn run(
    ctx: Arc<Context>,
    namespace: Option<&str>,
    stop: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let client = ctx.client.clone();
    // Only the operator's children are watched (and cached), not every ConfigMap of the cluster.
    let children =
        watcher::Config::default().labels(&format!("app.kubernetes.io/managed-by={MANAGED_BY}"));
    let servers = Controller::new(
        scoped::<MCPServer>(&client, namespace),
        watcher::Config::default().any_semantic(),
    );
    let _ = ctx.servers.set(servers.store());
    crate::host_claims::watch(servers, scoped::<MCPServer>(&client, namespace))
        .owns(scoped::<Deployment>(&client, namespace), children.clone())
        .owns(scoped::<ConfigMap>(&client, namespace), children.clone())
        .owns(scoped::<Service>(&client, namespace), children.clone())
        .owns(scoped::<Ingress>(&client, namespace), children.clone())
        .owns(
            scoped::<PodDisruptionBudget>(&client, namespace),
            children.clone(),
        )
        .owns(scoped::<NetworkPolicy>(&client, namespace), children)
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
        })
        .await;
}
