//! The server's NetworkPolicy: its pods admit, on the MCP port, the namespaces the ingress or
//! gateway runs in, the address ranges of ingress paths that are no pods (hostNetwork
//! controllers, load balancers keeping the client's address), each other (a legacy session's requests are forwarded to the replica
//! holding it) and the peers the spec adds; on the admin port, the monitoring namespaces and the
//! operator's pods (which ask there what the pods serve). Egress is the platform's to restrict.
//! Pure.

use super::BuildConfig;
use super::meta::{child_meta, selector_labels};
use crate::resource::MCPServer;
use k8s_openapi::api::networking::v1::{
    IPBlock, NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::ResourceExt;
use std::collections::BTreeMap;

/// Labels of the operator's pods as the chart sets them.
const OPERATOR_POD_LABELS: &[(&str, &str)] = &[
    ("app.kubernetes.io/name", "kube-mcp"),
    ("app.kubernetes.io/component", "operator"),
];

/// Who may reach the servers' pods, as the operator was configured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NetworkConfig {
    /// Write NetworkPolicies for servers that do not say otherwise.
    pub enabled: bool,
    /// Namespaces of the ingress controllers and gateways (MCP port).
    pub ingress_namespaces: Vec<String>,
    /// Address ranges that reach the MCP port from outside any pod network (MCP port).
    pub ingress_cidrs: Vec<ipnet::IpNet>,
    /// Namespaces of the metrics scrapers (admin port).
    pub monitoring_namespaces: Vec<String>,
    /// The operator's own namespace, when its pods ask the servers' pods what they serve (admin
    /// port; `--verify=pods`).
    pub operator_namespace: Option<String>,
}

/// The NetworkPolicy of `server`, unless turned off for it or for the operator.
pub fn network_policy(server: &MCPServer, config: &BuildConfig) -> Option<NetworkPolicy> {
    let declared = server.spec.deployment.network_policy.as_ref();
    let network = &config.network;
    if !declared.and_then(|n| n.enabled).unwrap_or(network.enabled) {
        return None;
    }
    let mut mcp_peers: Vec<NetworkPolicyPeer> = network
        .ingress_namespaces
        .iter()
        .map(|ns| namespace(ns, None))
        .collect();
    mcp_peers.extend(network.ingress_cidrs.iter().map(|cidr| NetworkPolicyPeer {
        ip_block: Some(IPBlock {
            cidr: cidr.to_string(),
            except: None,
        }),
        ..Default::default()
    }));
    // The server's own pods (in its namespace): replicas forward session requests to each other.
    mcp_peers.push(NetworkPolicyPeer {
        pod_selector: Some(LabelSelector {
            match_labels: Some(selector_labels(server)),
            ..Default::default()
        }),
        ..Default::default()
    });
    mcp_peers.extend(declared.map(|n| n.from.clone()).unwrap_or_default());
    let mut admin_peers: Vec<NetworkPolicyPeer> = network
        .monitoring_namespaces
        .iter()
        .map(|ns| namespace(ns, None))
        .collect();
    if let Some(operator) = &network.operator_namespace {
        admin_peers.push(namespace(
            operator,
            Some(
                OPERATOR_POD_LABELS
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
        ));
    }
    // A rule with no peers would admit everyone: a port nobody is listed for gets no rule.
    let rules: Vec<NetworkPolicyIngressRule> = [(mcp_peers, "http"), (admin_peers, "admin")]
        .into_iter()
        .filter(|(peers, _)| !peers.is_empty())
        .map(|(peers, port)| NetworkPolicyIngressRule {
            from: Some(peers),
            ports: Some(vec![NetworkPolicyPort {
                port: Some(IntOrString::String(port.into())),
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
        })
        .collect();
    Some(NetworkPolicy {
        metadata: child_meta(server, server.name_any()),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(selector_labels(server)),
                ..Default::default()
            }),
            policy_types: Some(vec!["Ingress".into()]),
            ingress: Some(rules),
            ..Default::default()
        }),
    })
}

/// Pods of namespace `name` (all of them, or those with `pods` labels).
fn namespace(name: &str, pods: Option<BTreeMap<String, String>>) -> NetworkPolicyPeer {
    NetworkPolicyPeer {
        namespace_selector: Some(LabelSelector {
            match_labels: Some(BTreeMap::from([(
                "kubernetes.io/metadata.name".to_owned(),
                name.to_owned(),
            )])),
            ..Default::default()
        }),
        pod_selector: pods.map(|labels| LabelSelector {
            match_labels: Some(labels),
            ..Default::default()
        }),
        ..Default::default()
    }
}
