//! How clients reach the server: the Service, the optional Ingress (only the MCP endpoints,
//! SSE-safe for ingress-nginx), the PodDisruptionBudget of a replicated server, the public
//! endpoint (Ingress or gateway) and the URL reported in status. Pure.

use super::BuildConfig;
use super::meta::{child_meta, selector_labels};
use crate::resource::{Exposure, IngressSpec, MCPServer, ServiceType, UrlScheme};
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::api::networking::v1::{
    HTTPIngressPath, HTTPIngressRuleValue, Ingress, IngressBackend, IngressRule,
    IngressServiceBackend, IngressSpec as K8sIngressSpec, IngressTLS, ServiceBackendPort,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::ResourceExt;
use std::collections::BTreeMap;

/// Port of the Service.
pub const SERVICE_PORT: i32 = 80;
/// The endpoints an Ingress exposes: MCP's (modern and legacy sessions), and HTTP+SSE's.
const ENDPOINTS: &[&str] = &["mcp", "sse", "messages"];

/// The well-known path of OAuth protected resource metadata (RFC 9728).
const PROTECTED_RESOURCE: &str = "/.well-known/oauth-protected-resource";

/// Annotations that keep server-sent event streams open through ingress-nginx: no response
/// buffering and an hour before an idle stream is cut. Other controllers ignore them.
const SSE_ANNOTATIONS: &[(&str, &str)] = &[
    ("nginx.ingress.kubernetes.io/proxy-buffering", "off"),
    ("nginx.ingress.kubernetes.io/proxy-request-buffering", "off"),
    ("nginx.ingress.kubernetes.io/proxy-read-timeout", "3600"),
    ("nginx.ingress.kubernetes.io/proxy-send-timeout", "3600"),
];

/// The Service in front of the runtime pods.
pub fn service(server: &MCPServer) -> Service {
    let declared = server.spec.deployment.service.as_ref();
    let mut metadata = child_meta(server, server.name_any());
    if let Some(annotations) = declared.map(|s| &s.annotations).filter(|a| !a.is_empty()) {
        metadata.annotations = Some(annotations.clone());
    }
    Service {
        metadata,
        spec: Some(ServiceSpec {
            type_: Some(
                declared
                    .and_then(|s| s.type_)
                    .unwrap_or(ServiceType::ClusterIP)
                    .as_str()
                    .into(),
            ),
            selector: Some(selector_labels(server)),
            ports: Some(vec![ServicePort {
                name: Some("http".into()),
                port: SERVICE_PORT,
                target_port: Some(IntOrString::String("http".into())),
                protocol: Some("TCP".into()),
                app_protocol: Some("http".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        status: None,
    }
}

/// The Ingress, when the spec declares one (and no gateway). The runtime serves its endpoints
/// under the path prefix itself, so the paths are exact and nothing is rewritten: any ingress
/// controller routes them the same way, and no regex mode leaks onto other Ingresses of the host.
pub fn ingress(server: &MCPServer, config: &BuildConfig) -> Option<Ingress> {
    if server.spec.deployment.exposure == Some(Exposure::Gateway) {
        return None;
    }
    let declared = server.spec.deployment.ingress.as_ref()?;
    let mut annotations: BTreeMap<String, String> = SSE_ANNOTATIONS
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let backend = IngressBackend {
        service: Some(IngressServiceBackend {
            name: server.name_any(),
            port: Some(ServiceBackendPort {
                name: Some("http".into()),
                ..Default::default()
            }),
        }),
        ..Default::default()
    };
    let auth = server.spec.declaration.auth.is_some();
    let prefix = path_prefix(declared);
    let paths = endpoint_paths(prefix, config.server_cards)
        .into_iter()
        // With `spec.auth`, the protected resource metadata clients look up is routed too.
        .chain(auth.then(|| metadata_paths(prefix)).into_iter().flatten())
        // Each of `spec.views` at its own path, with its own metadata.
        .chain(view_paths(server, prefix, auth))
        .map(|path| HTTPIngressPath {
            path: Some(path),
            path_type: "Exact".into(),
            backend: backend.clone(),
        })
        .collect();
    annotations.extend(declared.annotations.clone());
    let mut metadata = child_meta(server, server.name_any());
    metadata.annotations = Some(annotations);
    Some(Ingress {
        metadata,
        spec: Some(K8sIngressSpec {
            ingress_class_name: declared.class_name.clone(),
            rules: Some(vec![IngressRule {
                host: Some(declared.host.clone()),
                http: Some(HTTPIngressRuleValue { paths }),
            }]),
            tls: declared.tls.as_ref().map(|tls| {
                vec![IngressTLS {
                    hosts: Some(vec![declared.host.clone()]),
                    secret_name: Some(tls.secret_name.clone()),
                }]
            }),
            ..Default::default()
        }),
        status: None,
    })
}

/// The MCP endpoints under `prefix`: `/weather/mcp`, `/weather/sse`, `/weather/messages`, and
/// `/weather/mcp/server-card` when the runtimes serve their cards.
pub fn endpoint_paths(prefix: Option<&str>, server_cards: bool) -> Vec<String> {
    let prefix = prefix.unwrap_or_default();
    let mut paths: Vec<String> = ENDPOINTS
        .iter()
        .map(|endpoint| format!("{prefix}/{endpoint}"))
        .collect();
    if server_cards {
        paths.push(format!("{prefix}/mcp/server-card"));
    }
    paths
}

/// The endpoints of each of `spec.views` under `prefix` (`/weather/readers/mcp`, `/sse`,
/// `/messages`), and with `auth` the protected resource metadata of each view (the runtime
/// serves a view's endpoints and metadata: `runtime/http/src/transport/views.rs`).
pub fn view_paths(server: &MCPServer, prefix: Option<&str>, auth: bool) -> Vec<String> {
    let prefix = prefix.unwrap_or_default();
    let mut paths = Vec::new();
    for view in &server.spec.declaration.views {
        let base = format!("{prefix}{}", view.path.trim_end_matches('/'));
        paths.extend(endpoint_paths(Some(&base), false));
        if auth {
            paths.extend(metadata_paths(Some(&base)));
        }
    }
    paths
}

/// Where the runtime serves the protected resource metadata (RFC 9728) of the server under
/// `prefix`: the well-known path followed by its URL's path, and by its `/mcp` and `/sse`
/// endpoints' paths (clients look up either).
pub fn metadata_paths(prefix: Option<&str>) -> Vec<String> {
    let base = format!("{PROTECTED_RESOURCE}{}", prefix.unwrap_or_default());
    vec![base.clone(), format!("{base}/mcp"), format!("{base}/sse")]
}

/// The PodDisruptionBudget of a server with more than one replica: voluntary disruptions (node
/// drains) take one pod at a time.
pub fn pod_disruption_budget(server: &MCPServer) -> Option<PodDisruptionBudget> {
    if server.spec.deployment.replicas.unwrap_or(1) <= 1 {
        return None;
    }
    Some(PodDisruptionBudget {
        metadata: child_meta(server, server.name_any()),
        spec: Some(PodDisruptionBudgetSpec {
            max_unavailable: Some(IntOrString::Int(1)),
            selector: Some(LabelSelector {
                match_labels: Some(selector_labels(server)),
                ..Default::default()
            }),
            ..Default::default()
        }),
        status: None,
    })
}

/// The ingress path as the runtime's `--path-prefix`, or `None` at the root.
pub fn path_prefix(ingress: &IngressSpec) -> Option<&str> {
    ingress
        .path
        .as_deref()
        .filter(|path| *path != "/" && !path.is_empty())
}

/// Where clients outside the cluster reach the server: the Ingress or the gateway's host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicEndpoint<'a> {
    /// Host name clients use.
    pub host: &'a str,
    /// Path prefix, `None` at the root.
    pub prefix: Option<&'a str>,
    /// Whether clients use HTTPS.
    pub https: bool,
    /// The spec field declaring it, for messages.
    pub field: &'static str,
}

/// The public endpoint of `server`, when it is exposed outside the cluster.
pub fn public_endpoint(server: &MCPServer) -> Option<PublicEndpoint<'_>> {
    let spec = &server.spec.deployment;
    if spec.exposure == Some(Exposure::Gateway) {
        let gateway = spec.gateway.as_ref()?;
        return Some(PublicEndpoint {
            host: &gateway.host,
            prefix: gateway
                .path
                .as_deref()
                .filter(|p| *p != "/" && !p.is_empty()),
            https: gateway.scheme != Some(UrlScheme::Http),
            field: "spec.gateway",
        });
    }
    let ingress = spec.ingress.as_ref()?;
    Some(PublicEndpoint {
        host: &ingress.host,
        prefix: path_prefix(ingress),
        https: ingress.tls.is_some(),
        field: "spec.ingress",
    })
}

/// Where MCP clients connect: the public URL when the server is exposed, else the Service's.
pub fn url(server: &MCPServer, config: &BuildConfig) -> String {
    format!("{}/mcp", public_url(server, config))
}

/// The server's canonical URL (the runtime's `--public-url`): where its endpoints live, path
/// prefix included, without `/mcp` (HTTP+SSE clients call `/sse` under it).
pub fn public_url(server: &MCPServer, config: &BuildConfig) -> String {
    match public_endpoint(server) {
        Some(endpoint) => format!(
            "{}://{}{}",
            if endpoint.https { "https" } else { "http" },
            endpoint.host,
            endpoint.prefix.unwrap_or_default()
        ),
        None => format!(
            "http://{}.{}.svc.{}",
            server.name_any(),
            server.namespace().unwrap_or_default(),
            config.cluster_domain
        ),
    }
}
