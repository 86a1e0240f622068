//! How clients reach the server: the Service, the optional Ingress (only the MCP endpoints,
//! SSE-safe for ingress-nginx), the PodDisruptionBudget of a replicated server, and the URL
//! reported in status. Pure.

use super::BuildConfig;
use super::meta::{child_meta, selector_labels};
use crate::resource::{IngressSpec, MCPServer, ServiceType};
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

/// Where the protected resource metadata of a server at the root is looked up.
const METADATA_PATHS: [&str; 3] = [
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-protected-resource/mcp",
    "/.well-known/oauth-protected-resource/sse",
];

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

/// The Ingress, when the spec declares one.
pub fn ingress(server: &MCPServer) -> Option<Ingress> {
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
    let path = |path: String, path_type: &str| HTTPIngressPath {
        path: Some(path),
        path_type: path_type.into(),
        backend: backend.clone(),
    };
    let auth = server.spec.declaration.auth.is_some();
    let paths = match path_prefix(declared) {
        // At the root, the endpoints are routed as they are, by any ingress controller; with
        // `spec.auth`, so is the protected resource metadata (RFC 9728) clients look up.
        None => ENDPOINTS
            .iter()
            .map(|endpoint| format!("/{endpoint}"))
            .chain(
                auth.then(|| METADATA_PATHS.map(str::to_owned))
                    .into_iter()
                    .flatten(),
            )
            .map(|p| path(p, "Exact"))
            .collect(),
        // Under a prefix, the runtime still serves at the root (the prefix only shapes the
        // endpoint its HTTP+SSE stream announces): ingress-nginx strips the prefix.
        Some(prefix) => {
            annotations.insert(
                "nginx.ingress.kubernetes.io/use-regex".into(),
                "true".into(),
            );
            annotations.insert(
                "nginx.ingress.kubernetes.io/rewrite-target".into(),
                "/$1".into(),
            );
            let mut paths = vec![path(
                format!("{}/({})$", regex_escape(prefix), ENDPOINTS.join("|")),
                "ImplementationSpecific",
            )];
            if auth {
                // The metadata of `https://host/prefix` lives at
                // `/.well-known/oauth-protected-resource/prefix` (outside the prefix); the
                // rewrite keeps that path, which the runtime serves.
                paths.push(path(
                    format!(
                        "/(\\.well-known/oauth-protected-resource{}(?:/mcp|/sse)?)$",
                        regex_escape(prefix)
                    ),
                    "ImplementationSpecific",
                ));
            }
            paths
        }
    };
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

/// `text` with the characters regular expressions give a meaning escaped.
pub(super) fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if r"\.+*?()|[]{}^$".contains(c) {
                vec!['\\', c]
            } else {
                vec![c]
            }
        })
        .collect()
}

/// The ingress path as the runtime's `--path-prefix`, or `None` at the root.
pub fn path_prefix(ingress: &IngressSpec) -> Option<&str> {
    ingress
        .path
        .as_deref()
        .filter(|path| *path != "/" && !path.is_empty())
}

/// Where MCP clients connect: the Ingress URL when one is declared, else the Service's.
pub fn url(server: &MCPServer, config: &BuildConfig) -> String {
    format!("{}/mcp", public_url(server, config))
}

/// The server's canonical URL (the runtime's `--public-url`): where its endpoints live, path
/// prefix included, without `/mcp` (HTTP+SSE clients call `/sse` under it).
pub fn public_url(server: &MCPServer, config: &BuildConfig) -> String {
    match &server.spec.deployment.ingress {
        Some(ingress) => {
            let scheme = if ingress.tls.is_some() {
                "https"
            } else {
                "http"
            };
            format!(
                "{scheme}://{}{}",
                ingress.host,
                path_prefix(ingress).unwrap_or_default()
            )
        }
        None => format!(
            "http://{}.{}.svc.{}",
            server.name_any(),
            server.namespace().unwrap_or_default(),
            config.cluster_domain
        ),
    }
}
