//! What the watch caches keep of each object: only what the operator reads, so that thousands of
//! servers fit in a small pod. Deployments lose their pod template (the operator reads replicas
//! and status), pods keep their labels, Ready and container states, IP and the container
//! ports (for the verifier), ingresses and routes their status, servers their spec (as text, see
//! `resource/cached.rs`) and status without `kubectl apply`'s copy of the whole spec. Managed fields
//! go everywhere. Pure.

use super::super::reconcile::build::HttpRoute;
use crate::reconcile::host_claims;
use crate::resource::CachedServer;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, ContainerPort, Pod, PodSpec, PodStatus};
use k8s_openapi::api::networking::v1::Ingress;
use kube::Resource;

/// The annotation `kubectl apply` keeps a copy of the applied object in.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Drops managed fields (never read, and most of a small object's size).
pub fn metadata<K: Resource>(object: &mut K) {
    object.meta_mut().managed_fields = None;
}

/// A server without `kubectl apply`'s copy of its spec, with its host claim computed.
pub fn server(server: &mut CachedServer) {
    metadata(server);
    if let Some(annotations) = &mut server.metadata.annotations {
        annotations.remove(LAST_APPLIED);
    }
    server.compact(host_claims::claim);
}

/// A Deployment without its pod template (what the operator wants of it is rebuilt from the
/// server on every reconcile; the cache is read for replicas, status and ownership).
pub fn deployment(deployment: &mut Deployment) {
    metadata(deployment);
    if let Some(annotations) = &mut deployment.metadata.annotations {
        annotations.remove(LAST_APPLIED);
    }
    deployment.spec.template = Default::default();
    deployment.spec.strategy = None;
}

/// A pod reduced to its server label, readiness, IP, container states and container ports.
pub fn pod(pod: &mut Pod) {
    metadata(pod);
    pod.metadata.annotations = None;
    pod.metadata.owner_references = None;
    let containers = pod
        .spec
        .take()
        .map(|spec| {
            spec.containers
                .into_iter()
                .map(|c| Container {
                    name: c.name,
                    ports: c.ports.map(|ports| {
                        ports
                            .into_iter()
                            .map(|p| ContainerPort {
                                name: p.name,
                                container_port: p.container_port,
                                ..Default::default()
                            })
                            .collect()
                    }),
                    ..Default::default()
                })
                .collect()
        })
        .unwrap_or_default();
    pod.spec = Some(PodSpec {
        containers,
        ..Default::default()
    });
    pod.status = pod.status.take().map(|status| PodStatus {
        phase: status.phase,
        pod_ip: status.pod_ip,
        conditions: status.conditions,
        container_statuses: status.container_statuses,
        init_container_statuses: status.init_container_statuses,
        ..Default::default()
    });
}

/// An Ingress without its spec (its status says whether it is exposed).
pub fn ingress(ingress: &mut Ingress) {
    metadata(ingress);
    ingress.spec = None;
}

/// An HTTPRoute without its spec (its status says whether its gateways took it).
pub fn route(route: &mut HttpRoute) {
    metadata(route);
    route.spec = serde_json::Value::Null;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verifier::{PodShape, facts};

    #[test]
    fn a_stripped_pod_still_tells_the_verifier_and_the_failure_reasons_all_they_read() {
        let full: Pod = serde_yaml_ng::from_str(
            "
            metadata:
              name: p
              namespace: n
              uid: u
              labels: {kube-mcp.io/server: s}
              annotations: {prometheus.io/scrape: 'true'}
              ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: rs, uid: r}]
            spec:
              volumes: [{name: manifest, configMap: {name: s-manifest}}]
              containers:
                - name: mcp-runtime
                  image: x
                  args: [serve, --manifest, /etc/kube-mcp/manifest.yaml]
                  env: [{name: A, value: b}]
                  ports: [{name: http, containerPort: 8080}, {name: admin, containerPort: 9191}]
            status:
              phase: Running
              podIP: 10.0.0.7
              hostIP: 10.1.0.1
              conditions: [{type: Ready, status: 'True'}]
              containerStatuses:
                - {name: mcp-runtime, image: x, imageID: '', ready: false, restartCount: 2,
                   state: {waiting: {reason: CrashLoopBackOff, message: back-off}}}
            ",
        )
        .unwrap();
        let mut stripped = full.clone();
        pod(&mut stripped);
        let shape = PodShape {
            server_label: "kube-mcp.io/server",
            default_admin_port: 9090,
        };
        assert_eq!(facts(&stripped, shape), facts(&full, shape));
        assert_eq!(
            crate::reconcile::pods::problem([&stripped]),
            crate::reconcile::pods::problem([&full])
        );
        let text = serde_json::to_string(&stripped).unwrap();
        for gone in [
            "volumes",
            "args",
            "env",
            "hostIP",
            "image\":\"x\",\"name",
            "prometheus",
            "ReplicaSet",
        ] {
            assert!(!text.contains(gone), "{gone} in {text}");
        }
    }

    #[test]
    fn a_stripped_deployment_keeps_what_ready_reads() {
        let full: Deployment = serde_yaml_ng::from_str(
            "
            metadata: {name: d, generation: 3, annotations: {deployment.kubernetes.io/revision: '2'}}
            spec:
              replicas: 2
              selector: {matchLabels: {a: b}}
              template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: x}]}}
            status: {observedGeneration: 3, replicas: 2, updatedReplicas: 2, availableReplicas: 2}
            ",
        )
        .unwrap();
        let mut stripped = full.clone();
        deployment(&mut stripped);
        assert_eq!(stripped.spec.replicas, Some(2));
        assert_eq!(
            crate::reconcile::status::rollout(&stripped, 2),
            crate::reconcile::status::rollout(&full, 2)
        );
        assert_eq!(
            crate::reconcile::memory::fingerprint(&stripped),
            crate::reconcile::memory::fingerprint(&full)
        );
        assert!(stripped.spec.template.spec.is_none());
    }

    #[test]
    fn a_stripped_server_loses_only_the_last_applied_copy() {
        let full = crate::reconcile::test_support::server(
            "
            metadata:
              name: s
              namespace: n
              annotations: {kubectl.kubernetes.io/last-applied-configuration: '{...}', keep: me}
            spec:
              tools: [{name: hi, content: [{type: text, text: hi}]}]
            ",
        );
        let mut s: CachedServer =
            serde_json::from_value(serde_json::to_value(&full).unwrap()).unwrap();
        server(&mut s);
        assert_eq!(s.parse().unwrap().spec, full.spec);
        assert_eq!(
            s.metadata.annotations.unwrap().keys().collect::<Vec<_>>(),
            ["keep"]
        );
    }
}
