//! Keeps the catalog in step with the cluster: one watch of MCPServers per namespace (or one of
//! all), independent of the controller and of leadership, so every operator replica answers
//! the registry. I/O: it watches the API server until shutdown.

use super::catalog::Catalog;
use crate::resource::{CachedServer, MCPServer};
use futures_util::StreamExt as _;
use jiff::Timestamp;
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Api, Client};
use std::sync::{PoisonError, RwLock};
use tokio_util::sync::CancellationToken;

/// The scopes a watch of `namespaces` covers: each namespace, or `None` for all of them.
pub fn scopes(namespaces: &[String]) -> Vec<Option<String>> {
    if namespaces.is_empty() {
        vec![None]
    } else {
        namespaces.iter().cloned().map(Some).collect()
    }
}

/// Applies watch events of `namespaces` to `catalog` until `shutdown`.
pub async fn run(
    client: Client,
    namespaces: &[String],
    catalog: &RwLock<Catalog>,
    shutdown: CancellationToken,
) {
    let streams = scopes(namespaces).into_iter().map(|scope| {
        // Read object by object: one this operator cannot parse is left out alone.
        let api: Api<CachedServer> = match &scope {
            Some(namespace) => Api::namespaced(client.clone(), namespace),
            None => Api::all(client.clone()),
        };
        watcher(api, watcher::Config::default())
            .default_backoff()
            .map(move |event| (scope.clone(), event))
            .boxed()
    });
    let mut events = futures_util::stream::select_all(streams);
    loop {
        let next = tokio::select! {
            () = shutdown.cancelled() => return,
            next = events.next() => next,
        };
        let Some((scope, event)) = next else { return };
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                // The watch backs off and retries; the catalog keeps what it knew.
                tracing::warn!(error = %crate::reconcile::error_chain(&error), "registry watch failed; retrying");
                continue;
            }
        };
        let now = Timestamp::now();
        let mut catalog = catalog.write().unwrap_or_else(PoisonError::into_inner);
        match event {
            watcher::Event::Init => catalog.list_started(scope),
            watcher::Event::InitApply(server) | watcher::Event::Apply(server) => {
                match server.parse() {
                    Ok(server) => catalog.apply(scope, &server, now),
                    Err(error) => tracing::warn!(
                        server = %format!("{}/{}", server.metadata.namespace.as_deref().unwrap_or_default(), server.metadata.name.as_deref().unwrap_or_default()),
                        %error,
                        "an MCPServer this operator cannot read is not published"
                    ),
                }
            }
            watcher::Event::InitDone => {
                catalog.list_done(scope, now);
                let (live, buried) = catalog.counts();
                tracing::debug!(live, buried, "registry catalog listed");
            }
            watcher::Event::Delete(server) => catalog.delete(
                &MCPServer {
                    metadata: server.metadata,
                    spec: Default::default(),
                    status: server.status,
                },
                now,
            ),
        }
    }
}
