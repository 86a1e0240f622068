//! The deployment fields of an `MCPServer` spec: read by the operator, ignored by the runtime
//! (`mcp_declaration::DEPLOYMENT_FIELDS` lists their names; a test keeps both in step).
//! Pure data.

use super::platform_fields::{
    DNS_SUBDOMAIN, Exposure, GatewaySpec, NetworkPolicySpec, URL_PATH_MESSAGE, URL_PATH_RULE,
};
use k8s_openapi::api::core::v1::{
    Affinity, EnvVar, LocalObjectReference, ResourceRequirements, Toleration,
    TopologySpreadConstraint,
};
use kube::KubeSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A Go-style duration of whole units, as the runtime's flags take it: `30s`, `10m`, `1h30m`.
const DURATION: &str = r"^([0-9]+(ms|s|m|h))+$";

/// How the server's pods, Service and Ingress are set up.
#[derive(KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentFields {
    /// Number of runtime pods. Any replica serves any session, so no sticky sessions are needed;
    /// with more than one, a PodDisruptionBudget keeps all but one serving during voluntary
    /// disruptions. When unset, the Deployment starts with 1 and the operator leaves its count to
    /// whoever scales it (a HorizontalPodAutoscaler); `kubectl scale mcps/NAME` sets this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1000))]
    pub replicas: Option<i32>,
    /// Runtime image (default: the image the operator was installed with).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub image: Option<String>,
    /// When the kubelet pulls the image (default: Kubernetes' default for the tag).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<ImagePullPolicy>,
    /// CPU and memory of the runtime container (default: requests of 50m CPU and 64Mi memory,
    /// a 256Mi memory limit). Named apart from `resources`, which holds the MCP resources served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_resources: Option<ResourceRequirements>,
    /// Node labels the pods must match.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Taints the pods tolerate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// Node and pod affinity of the pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Extra environment variables of the runtime container.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// Traces and audit records of the runtime (both off by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<TelemetrySpec>,
    /// Exposes the server outside the cluster through an Ingress; without it the server is
    /// reachable in the cluster only, through its Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress: Option<IngressSpec>,
    /// The server's Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<ServiceSpec>,
    /// Limits of legacy (pre-2026) protocol sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionsSpec>,
    /// Log level of the runtime (default `info`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<RuntimeLogLevel>,
    /// How the server is reached from outside the cluster: `ingress` (default; `spec.ingress`)
    /// or `gateway` (a Gateway API HTTPRoute; `spec.gateway`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exposure: Option<Exposure>,
    /// The HTTPRoute, with `exposure: gateway`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<GatewaySpec>,
    /// The server's NetworkPolicy (on by default when the operator is so configured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_policy: Option<NetworkPolicySpec>,
    /// Extra annotations of the pods, such as a service mesh's or a Vault agent's injection
    /// settings.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pod_annotations: BTreeMap<String, String>,
    /// Extra labels of the pods (the operator's own labels win).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pod_labels: BTreeMap<String, String>,
    /// ServiceAccount of the pods (default: the namespace's `default`). Its token is still not
    /// mounted into the runtime container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253), pattern(DNS_SUBDOMAIN))]
    pub service_account_name: Option<String>,
    /// Secrets for pulling `image` from a private registry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    /// PriorityClass of the pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub priority_class_name: Option<String>,
    /// How the pods spread over topology domains (default: across nodes, best effort). The
    /// server's own pod labels are a good `labelSelector`: `kube-mcp.io/server: <name>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    pub topology_spread_constraints: Vec<TopologySpreadConstraint>,
    /// Stop reconciling: the children stay exactly as they are (and keep serving) until this is
    /// false again; status says `Suspended`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Secrets in this namespace that HTTP-backed tools reference by `secretKeyRef`; each is
    /// mounted read-only at `/var/run/kube-mcp/secrets/<name>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(pattern(DNS_SUBDOMAIN), length(max = 253)))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub secrets: Vec<String>,
}

/// When the kubelet pulls the runtime image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum ImagePullPolicy {
    /// Pull on every pod start.
    Always,
    /// Pull only when the node lacks the image.
    IfNotPresent,
    /// Never pull; the node must have the image.
    Never,
}

impl ImagePullPolicy {
    /// The value Kubernetes expects.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Always => "Always",
            Self::IfNotPresent => "IfNotPresent",
            Self::Never => "Never",
        }
    }
}

/// An Ingress in front of the server. Only the MCP endpoints (`/mcp`, `/sse`, `/messages`) under
/// `path` are routed; for ingress-nginx, response buffering is off and read timeouts are an hour
/// so server-sent event streams stay open.
#[derive(KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IngressSpec {
    /// Host name clients use, such as `mcp.example.com`.
    #[schemars(length(min = 1, max = 253), pattern(DNS_SUBDOMAIN))]
    pub host: String,
    /// Path prefix the endpoints live under, such as `/weather` (default `/`): clients then use
    /// `https://<host>/weather/mcp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new(URL_PATH_RULE).message(URL_PATH_MESSAGE))]
    #[schemars(length(max = 200))]
    pub path: Option<String>,
    /// IngressClass to use (default: the cluster's default class).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class_name: Option<String>,
    /// Serve HTTPS with a certificate from a Secret; the URL in status is `https://` then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<IngressTls>,
    /// Extra annotations of the Ingress; they override the operator's defaults.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// TLS of an Ingress.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IngressTls {
    /// Secret (type `kubernetes.io/tls`) holding the certificate for `host`.
    #[schemars(length(min = 1, max = 253), pattern(DNS_SUBDOMAIN))]
    pub secret_name: String,
}

/// The server's Service.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceSpec {
    /// Service type (default `ClusterIP`).
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "type")]
    pub type_: Option<ServiceType>,
    /// Annotations of the Service, such as a cloud load balancer's settings.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// How the Service is exposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum ServiceType {
    /// A cluster-internal virtual IP.
    ClusterIP,
    /// A port on every node, as well.
    NodePort,
    /// A cloud load balancer, as well.
    LoadBalancer,
}

impl ServiceType {
    /// The value Kubernetes expects.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClusterIP => "ClusterIP",
            Self::NodePort => "NodePort",
            Self::LoadBalancer => "LoadBalancer",
        }
    }
}

/// Limits of legacy protocol sessions (2024-11-05 to 2025-11-25 clients). Sessions are
/// self-describing and signed with a key shared by all replicas, so any replica serves any session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionsSpec {
    /// A session unused this long ends, such as `30m` (runtime default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(DURATION))]
    pub idle_timeout: Option<String>,
    /// Most open sessions per pod (runtime default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_sessions: Option<u32>,
    /// How often open streams are pinged, such as `30s` (runtime default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(DURATION))]
    pub ping_interval: Option<String>,
    /// How long a ping may go unanswered before the session ends, such as `10s` (runtime default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(DURATION))]
    pub ping_timeout: Option<String>,
}

/// Traces and audit records. The pods are named in traces by `OTEL_SERVICE_NAME` (the
/// MCPServer's name) and `OTEL_RESOURCE_ATTRIBUTES` (its namespace); variables of the same names
/// in `env` win, as do any other standard `OTEL_*` variables set there.
#[derive(KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TelemetrySpec {
    /// OTLP/HTTP (protobuf) collector base URL, such as
    /// `http://otel-collector.observability:4318`: each request, and each upstream call, becomes a
    /// span sent to `<url>/v1/traces`. Tracing is off without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self.startsWith('http://') || self.startsWith('https://')").message("must be an http:// or https:// URL"))]
    #[schemars(length(max = 2048))]
    pub otlp_endpoint: Option<String>,
    /// Share of traces sampled, in percent (default 100), where the caller did not decide: a
    /// request whose `traceparent` says sampled or not sampled follows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub sampling_percent: Option<u8>,
    /// Write an audit record (a JSON line on standard output) per tool call and resource read.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub audit: bool,
}

/// Log level of the runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RuntimeLogLevel {
    /// Errors only.
    Error,
    /// Errors and warnings.
    Warn,
    /// Also requests and lifecycle (default).
    Info,
    /// Also details for debugging.
    Debug,
    /// Everything.
    Trace,
}

impl RuntimeLogLevel {
    /// The value of the runtime's `--log-level` flag.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warn => "warn",
            Self::Info => "info",
            Self::Debug => "debug",
            Self::Trace => "trace",
        }
    }
}
