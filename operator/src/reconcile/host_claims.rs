//! Host and path claims between `MCPServer`s: two servers exposed on the same host that route a
//! same path would share (and fight over) it, possibly across namespaces and teams. A claim is
//! every path a server may route (its endpoints and its OAuth metadata), not only its prefix: a
//! server under `/mcp` must not answer `/.well-known/oauth-protected-resource/mcp`, the metadata
//! of the server at the root. The older claim wins; the newer is refused with `HostConflict`
//! naming the other server and the path. Decided
//! from the controller's cache of servers, where each server's claim is computed once when it is
//! cached, so it costs no API call and no parsing. Pure, except [`requeue`], which gives the
//! controller the servers to look at again when a claim may have been released.

use crate::reconcile::build::{
    BuildConfig, endpoint_paths, metadata_paths, public_endpoint, url, view_paths,
};
use crate::reconcile::validate::{Accepted, RefusalReason, Refused};
pub use crate::resource::Claim;
use crate::resource::{CachedServer, MCPServer};
use futures_util::Stream;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Resource, ResourceExt};
use mcp_declaration::FieldError;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Server changes queued for [`requeue`] at most: past this, a change is dropped (the periodic
/// resync looks at every server again anyway).
const QUEUE: usize = 1024;

/// The claim of `server`, when it is exposed outside the cluster.
pub fn claim(server: &MCPServer) -> Option<Claim> {
    let endpoint = public_endpoint(server)?;
    let mut routes = endpoint_paths(endpoint.prefix, true);
    routes.extend(metadata_paths(endpoint.prefix));
    routes.extend(view_paths(server, endpoint.prefix, true));
    routes.sort();
    routes.dedup();
    Some(Claim {
        field: endpoint.field,
        host: endpoint.host.to_ascii_lowercase(),
        path: endpoint.prefix.unwrap_or("/").to_owned(),
        url: url(server, &BuildConfig::default()),
        routes,
    })
}

/// The first path both claims route on the same host, if any.
fn shared_route<'a>(mine: &'a Claim, theirs: &Claim) -> Option<&'a str> {
    if mine.host != theirs.host {
        return None;
    }
    mine.routes
        .iter()
        .find(|route| theirs.routes.binary_search(route).is_ok())
        .map(String::as_str)
}

/// Order of precedence between two claims of the same route: a server already serving it (its
/// status URL is the claimed one) first, then the older object; namespace and name break ties,
/// so every reconcile decides the same way.
fn precedence<'a>(
    claim: &Claim,
    meta: &'a ObjectMeta,
    status_url: Option<&str>,
) -> (bool, Option<jiff::Timestamp>, &'a str, &'a str) {
    (
        status_url != Some(claim.url.as_str()),
        meta.creation_timestamp.as_ref().map(|t| t.0),
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
    )
}

/// The precedence of a cached server's claim.
fn cached_precedence(other: &CachedServer) -> Option<(bool, Option<jiff::Timestamp>, &str, &str)> {
    let claim = other.claim.as_ref()?;
    let status_url = other.status.as_ref().and_then(|s| s.url.as_deref());
    Some(precedence(claim, &other.metadata, status_url))
}

/// The server whose claim beats `server`'s on the same host and path, if any.
pub fn winner<'a>(
    server: &MCPServer,
    others: impl IntoIterator<Item = &'a CachedServer>,
) -> Option<&'a CachedServer> {
    let mine = claim(server)?;
    let my_rank = precedence(
        &mine,
        &server.metadata,
        server.status.as_ref().and_then(|s| s.url.as_deref()),
    );
    others
        .into_iter()
        .filter(|other| {
            other.metadata.deletion_timestamp.is_none()
                && !(other.metadata.namespace == server.metadata.namespace
                    && other.metadata.name == server.metadata.name)
                && other
                    .claim
                    .as_ref()
                    .is_some_and(|theirs| shared_route(&mine, theirs).is_some())
        })
        .filter_map(|other| Some((cached_precedence(other)?, other)))
        .min_by(|(a, _), (b, _)| a.cmp(b))
        .filter(|(rank, _)| *rank < my_rank)
        .map(|(_, other)| other)
}

/// The validate verdict, refused with `HostConflict` when an older claim holds the route.
pub fn check(
    server: &MCPServer,
    store: &Store<CachedServer>,
    verdict: Result<Accepted, Refused>,
) -> Result<Accepted, Refused> {
    let accepted = verdict?;
    let all: Vec<Arc<CachedServer>> = store.state();
    let Some(other) = winner(server, all.iter().map(Arc::as_ref)) else {
        return Ok(accepted);
    };
    let (Some(mine), Some(theirs)) = (claim(server), other.claim.as_ref()) else {
        return Ok(accepted);
    };
    let route = shared_route(&mine, theirs).unwrap_or_default();
    Err(Refused {
        errors: vec![FieldError {
            path: mine.field.into(),
            message: format!(
                "host `{}` path `{route}` is already routed to MCPServer {}/{} (the older claim \
                 wins): choose another host or path, or remove the other server's claim",
                mine.host,
                other.namespace().unwrap_or_default(),
                other.name_any()
            ),
        }],
        reason: RefusalReason::HostConflict,
    })
}

/// Servers to look at again when `changed` changed or was deleted: every server refused for a
/// host conflict, since `changed` may have released the route it waits for.
pub fn waiting(store: &Store<CachedServer>, changed_uid: &str) -> Vec<ObjectRef<CachedServer>> {
    store
        .state()
        .iter()
        .filter(|server| server.uid().as_deref() != Some(changed_uid))
        .filter(|server| {
            server
                .status
                .as_ref()
                .and_then(|s| s.condition("Accepted"))
                .is_some_and(|c| c.reason == RefusalReason::HostConflict.as_str())
        })
        .map(|server| ObjectRef::from_obj(server.as_ref()))
        .collect()
}

/// A queue of changed or deleted servers (fed with [`changed`]) and the stream of servers to
/// look at again because of them: those waiting for a route, read from `store` when the change
/// is taken off the queue.
pub fn requeue(
    store: Store<CachedServer>,
) -> (
    mpsc::Sender<String>,
    impl Stream<Item = ObjectRef<CachedServer>> + Send + 'static,
) {
    let (sender, receiver) = mpsc::channel::<String>(QUEUE);
    let stream = futures_util::stream::unfold(receiver, move |mut receiver| {
        let store = store.clone();
        async move {
            let uid = receiver.recv().await?;
            Some((futures_util::stream::iter(waiting(&store, &uid)), receiver))
        }
    });
    (sender, futures_util::StreamExt::flatten(stream))
}

/// Queues `server` as changed or deleted, for [`requeue`]; a full queue drops it.
pub fn changed(queue: &mpsc::Sender<String>, server: &impl Resource) {
    released(queue, server.meta().uid.as_deref().unwrap_or_default());
}

/// [`changed`] for a server known only by its UID (deleted while the watch was behind).
pub fn released(queue: &mpsc::Sender<String>, uid: &str) {
    if let Err(error) = queue.try_send(uid.to_owned()) {
        tracing::debug!(%error, "host claim change dropped");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::test_support::{cached, server};

    fn cache(servers: &[MCPServer]) -> Vec<CachedServer> {
        servers.iter().map(cached).collect()
    }

    /// A controller store holding `servers`.
    fn store(servers: &[MCPServer]) -> Store<CachedServer> {
        let (reader, mut writer) = kube::runtime::reflector::store();
        for server in cache(servers) {
            writer.apply_watcher_event(&kube::runtime::watcher::Event::Apply(server));
        }
        reader
    }

    fn accepted() -> Accepted {
        Accepted {
            manifest_yaml: String::new(),
            data: crate::reconcile::manifest_data::ManifestData::Text(String::new()),
            tool_sets: Vec::new(),
            counts: Default::default(),
            hash: "h".into(),
            limits: None,
            service_account_audiences: Default::default(),
            approver_groups: Vec::new(),
        }
    }

    fn exposed(name: &str, namespace: &str, created: &str, host: &str, path: &str) -> MCPServer {
        server(&format!(
            r#"
            metadata: {{name: {name}, namespace: {namespace}, creationTimestamp: "{created}"}}
            spec:
              tools: [{{name: hi, content: [{{type: text, text: hi}}]}}]
              ingress: {{host: {host}, path: {path}}}
            "#
        ))
    }

    #[test]
    fn the_older_claim_wins_across_namespaces() {
        let old = exposed(
            "a",
            "team-a",
            "2026-01-01T00:00:00Z",
            "mcp.example.com",
            "/x",
        );
        let new = exposed(
            "b",
            "team-b",
            "2026-02-01T00:00:00Z",
            "MCP.example.com",
            "/x",
        );
        let all = [old.clone(), new.clone()];
        assert_eq!(
            winner(&new, &cache(&all)).map(ResourceExt::name_any),
            Some("a".into())
        );
        assert!(winner(&old, &cache(&all)).is_none());
    }

    #[test]
    fn another_path_or_host_is_no_conflict() {
        let old = exposed("a", "t", "2026-01-01T00:00:00Z", "mcp.example.com", "/x");
        let path = exposed("b", "t", "2026-02-01T00:00:00Z", "mcp.example.com", "/y");
        let host = exposed("c", "t", "2026-02-01T00:00:00Z", "other.example.com", "/x");
        let all = [old, path.clone(), host.clone()];
        assert!(winner(&path, &cache(&all)).is_none());
        assert!(winner(&host, &cache(&all)).is_none());
    }

    #[test]
    fn a_server_already_serving_the_route_keeps_it() {
        // `b` is newer but serves the route; `a` moved onto it later.
        let a = exposed("a", "t", "2026-01-01T00:00:00Z", "mcp.example.com", "/x");
        let mut b = exposed("b", "t", "2026-02-01T00:00:00Z", "mcp.example.com", "/x");
        b.status = Some(crate::resource::MCPServerStatus {
            url: Some("http://mcp.example.com/x/mcp".into()),
            ..Default::default()
        });
        let all = [a.clone(), b.clone()];
        assert_eq!(
            winner(&a, &cache(&all)).map(ResourceExt::name_any),
            Some("b".into())
        );
        assert!(winner(&b, &cache(&all)).is_none());
    }

    #[test]
    fn a_gateway_claim_and_an_ingress_claim_of_one_route_conflict() {
        let ingress = exposed("a", "t", "2026-01-01T00:00:00Z", "mcp.example.com", "/x");
        let gateway = server(
            r#"
            metadata: {name: g, namespace: u, creationTimestamp: "2026-02-01T00:00:00Z"}
            spec:
              tools: [{name: hi, content: [{type: text, text: hi}]}]
              exposure: gateway
              gateway: {host: mcp.example.com, path: /x, parentRefs: [{name: shared}]}
            "#,
        );
        assert_eq!(claim(&gateway).unwrap().field, "spec.gateway");
        let all = [ingress, gateway.clone()];
        assert_eq!(
            winner(&gateway, &cache(&all)).map(ResourceExt::name_any),
            Some("a".into())
        );
    }

    #[test]
    fn a_prefix_that_routes_the_root_servers_metadata_conflicts() {
        let root = exposed("a", "t", "2026-01-01T00:00:00Z", "mcp.example.com", "/");
        let under = exposed("b", "u", "2026-02-01T00:00:00Z", "mcp.example.com", "/mcp");
        let all = [root.clone(), under.clone()];
        assert_eq!(
            winner(&under, &cache(&all)).map(ResourceExt::name_any),
            Some("a".into())
        );
        let refused = check(&under, &store(&all), Ok(accepted())).unwrap_err();
        assert!(
            refused.errors[0]
                .message
                .contains("path `/.well-known/oauth-protected-resource/mcp` is already routed to MCPServer t/a"),
            "{}",
            refused.errors[0].message
        );
        // A sibling prefix shares nothing.
        let other = exposed(
            "c",
            "u",
            "2026-02-01T00:00:00Z",
            "mcp.example.com",
            "/tools",
        );
        assert!(winner(&other, &cache(&[root, other.clone()])).is_none());
    }

    #[test]
    fn the_claim_is_computed_when_cached() {
        let exposed = server(
            "
            metadata: {name: s, namespace: n}
            spec: {ingress: {host: Shop.Example.com}}
            ",
        );
        let claim = cached(&exposed).claim.unwrap();
        assert_eq!(
            (claim.host.as_str(), claim.path.as_str()),
            ("shop.example.com", "/")
        );
        let internal = server("metadata: {name: s, namespace: n}\nspec: {}");
        assert!(cached(&internal).claim.is_none());
    }

    #[test]
    fn a_server_being_deleted_releases_its_claim() {
        let mut old = exposed("a", "t", "2026-01-01T00:00:00Z", "mcp.example.com", "/x");
        old.metadata.deletion_timestamp = old.metadata.creation_timestamp.clone();
        let new = exposed("b", "t", "2026-02-01T00:00:00Z", "mcp.example.com", "/x");
        assert!(winner(&new, &cache(&[old, new.clone()])).is_none());
    }
}
