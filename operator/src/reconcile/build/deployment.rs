//! The runtime Deployment: one hardened container serving the mounted manifest. Only deployment
//! fields reach the pod template, so a declaration change never rolls pods, with one exception:
//! the set of audiences of the declaration's `serviceAccountToken` clients, one projected token
//! volume each (a volume cannot be added without new pods). Pure.

use super::BuildConfig;
use super::exposure::{public_endpoint, public_url};
use super::meta::{child_meta, config_map_name, labels, selector_labels};
use crate::reconcile::memory::hash_of;
use crate::reconcile::session_keys::SessionKeys;
use crate::reconcile::validate::POD_IP_VAR;
use crate::resource::MCPServer;
use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, RollingUpdateDeployment,
};
use k8s_openapi::api::core::v1::{
    Capabilities, ConfigMapProjection, ConfigMapVolumeSource, Container, ContainerPort,
    DownwardAPIProjection, DownwardAPIVolumeFile, EmptyDirVolumeSource, EnvVar, EnvVarSource,
    HTTPGetAction, KeyToPath, ObjectFieldSelector, PodSecurityContext, PodSpec, PodTemplateSpec,
    Probe, ProjectedVolumeSource, ResourceRequirements, SeccompProfile, SecretVolumeSource,
    SecurityContext, ServiceAccountTokenProjection, TopologySpreadConstraint, Volume, VolumeMount,
    VolumeProjection,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::ResourceExt;
use std::collections::{BTreeMap, BTreeSet};

/// Port of the MCP endpoints in the pod.
pub const HTTP_PORT: i32 = 8080;
/// Port of `/healthz`, `/readyz` and `/metrics` in the pod.
pub const ADMIN_PORT: i32 = 9090;
/// Where the ConfigMap is mounted (a directory mount, so the kubelet updates the file in place).
pub const MANIFEST_DIR: &str = "/etc/kube-mcp";
/// Where the session key Secret is mounted.
pub const SESSION_KEY_DIR: &str = "/var/run/kube-mcp/session";
/// Where the key the session key replaced is mounted, during a rotation.
pub const PREVIOUS_SESSION_KEY_DIR: &str = "/var/run/kube-mcp/previous-session";
/// Where the Secrets listed in `spec.secrets` are mounted, one directory each: the runtime's
/// default `--secrets-dir`, so no flag is passed.
pub const SECRETS_DIR: &str = "/var/run/kube-mcp/secrets";
/// Where the projected ServiceAccount tokens of `serviceAccountToken` clients are mounted, one
/// directory per audience named by `mcp_declaration::token_dir_name`: the runtime's default
/// `--service-account-tokens-dir`, so no flag is passed.
pub const SERVICE_ACCOUNT_TOKENS_DIR: &str = mcp_declaration::DEFAULT_SERVICE_ACCOUNT_TOKENS_DIR;
/// Life of a projected ServiceAccount token; the kubelet renews it at 80% of that.
pub const SERVICE_ACCOUNT_TOKEN_SECONDS: i64 = 3600;
/// Deployment annotation: the hash of the pod template the operator asked for, so a changed
/// template (a rollout: `reconcile/rollouts.rs`) is told from other changes without the template
/// (the watch cache drops it).
pub const TEMPLATE_HASH_ANNOTATION: &str = "kube-mcp.io/template-hash";
/// Deployment annotation: the runtime image of the pod template.
pub const RUNTIME_IMAGE_ANNOTATION: &str = "kube-mcp.io/runtime-image";
/// Unprivileged user and group of the runtime (distroless `nonroot`).
const RUNTIME_UID: i64 = 65532;
const CONTAINER: &str = "mcp-runtime";

/// The Deployment running the runtime for `server`, with its session `keys` and a projected
/// ServiceAccount token for each of `audiences`.
pub fn deployment(
    server: &MCPServer,
    config: &BuildConfig,
    keys: &SessionKeys,
    audiences: &BTreeSet<String>,
    approvals: bool,
) -> Deployment {
    let spec = &server.spec.deployment;
    // Declared labels first, so the operator's own (the selector among them) win.
    let mut pod_labels = spec.pod_labels.clone();
    pod_labels.extend(labels(server));
    let pod_annotations = pod_annotations(server);
    let selector = selector_labels(server);
    let mut volumes = vec![
        Volume {
            name: "manifest".into(),
            config_map: Some(ConfigMapVolumeSource {
                name: config_map_name(server),
                ..Default::default()
            }),
            ..Default::default()
        },
        secret_volume("session-key", &keys.current),
        Volume {
            name: "tmp".into(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Default::default()
        },
    ];
    let mut mounts = vec![
        mount("manifest", MANIFEST_DIR),
        mount("session-key", SESSION_KEY_DIR),
        VolumeMount {
            name: "tmp".into(),
            mount_path: "/tmp".into(),
            ..Default::default()
        },
    ];
    if let Some(previous) = &keys.previous {
        volumes.push(secret_volume("previous-session-key", previous));
        mounts.push(mount("previous-session-key", PREVIOUS_SESSION_KEY_DIR));
    }
    for (i, secret) in spec.secrets.iter().enumerate() {
        let volume = format!("secret-{i}");
        volumes.push(secret_volume(&volume, secret));
        mounts.push(mount(&volume, &format!("{SECRETS_DIR}/{secret}")));
    }
    // The pod's own ServiceAccount's token, for one audience each, which `serviceAccountToken`
    // clients send as their client assertion. `automountServiceAccountToken` stays off: these
    // tokens are valid only for their audience (not for the API server, unless declared so).
    for audience in audiences {
        let dir = mcp_declaration::token_dir_name(audience);
        volumes.push(service_account_token_volume(&dir, audience));
        mounts.push(mount(&dir, &format!("{SERVICE_ACCOUNT_TOKENS_DIR}/{dir}")));
    }
    if approvals {
        // The API credentials `automountServiceAccountToken` would give, only to servers whose
        // gated tools keep approvals as MCPApproval objects (its Role allows nothing else).
        volumes.push(kube_api_volume());
        mounts.push(VolumeMount {
            read_only: Some(true),
            ..mount(KUBE_API_VOLUME, KUBE_API_DIR)
        });
    }

    let image = spec
        .image
        .clone()
        .unwrap_or_else(|| config.runtime_image.clone());
    let container = Container {
        name: CONTAINER.into(),
        image: Some(image.clone()),
        image_pull_policy: spec
            .image_pull_policy
            .map(|p| p.as_str().to_owned())
            .or_else(|| config.image_pull_policy.clone()),
        command: Some(vec!["mcp-runtime".into()]),
        args: Some(args(server, config, keys, approvals)),
        ports: Some(vec![port("http", HTTP_PORT), port("admin", ADMIN_PORT)]),
        env: Some(env(server)),
        resources: Some(
            spec.container_resources
                .clone()
                .unwrap_or_else(default_resources),
        ),
        readiness_probe: Some(probe("/readyz", 5, 2)),
        liveness_probe: Some(probe("/healthz", 10, 3)),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            run_as_non_root: Some(true),
            run_as_user: Some(RUNTIME_UID),
            run_as_group: Some(RUNTIME_UID),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".into()]),
                ..Default::default()
            }),
            seccomp_profile: Some(runtime_default_seccomp()),
            ..Default::default()
        }),
        volume_mounts: Some(mounts),
        termination_message_policy: Some("FallbackToLogsOnError".into()),
        ..Default::default()
    };

    let pod = PodSpec {
        containers: vec![container],
        volumes: Some(volumes),
        automount_service_account_token: Some(false),
        enable_service_links: Some(false),
        security_context: Some(PodSecurityContext {
            run_as_non_root: Some(true),
            fs_group: Some(RUNTIME_UID),
            seccomp_profile: Some(runtime_default_seccomp()),
            ..Default::default()
        }),
        node_selector: (!spec.node_selector.is_empty()).then(|| spec.node_selector.clone()),
        tolerations: (!spec.tolerations.is_empty()).then(|| spec.tolerations.clone()),
        affinity: spec.affinity.clone(),
        service_account_name: spec.service_account_name.clone(),
        image_pull_secrets: (!spec.image_pull_secrets.is_empty())
            .then(|| spec.image_pull_secrets.clone()),
        priority_class_name: spec.priority_class_name.clone(),
        topology_spread_constraints: Some(if spec.topology_spread_constraints.is_empty() {
            vec![TopologySpreadConstraint {
                max_skew: 1,
                topology_key: "kubernetes.io/hostname".into(),
                when_unsatisfiable: "ScheduleAnyway".into(),
                label_selector: Some(LabelSelector {
                    match_labels: Some(selector.clone()),
                    ..Default::default()
                }),
                ..Default::default()
            }]
        } else {
            spec.topology_spread_constraints.clone()
        }),
        termination_grace_period_seconds: Some(30),
        ..Default::default()
    };

    let template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(pod_labels),
            annotations: Some(pod_annotations),
            ..Default::default()
        }),
        spec: Some(pod),
    };
    let mut metadata = child_meta(server, server.name_any());
    let mut annotations = keys.annotations();
    annotations.insert(
        TEMPLATE_HASH_ANNOTATION.to_owned(),
        format!("{:016x}", hash_of(&template)),
    );
    annotations.insert(RUNTIME_IMAGE_ANNOTATION.to_owned(), image);
    metadata.annotations = Some(annotations);
    Deployment {
        metadata,
        spec: DeploymentSpec {
            // Unset: left out of the applied object, so the API server's default (1) applies on
            // creation and whoever scales the Deployment afterwards owns the count.
            replicas: spec.replicas,
            selector: LabelSelector {
                match_labels: Some(selector),
                ..Default::default()
            },
            strategy: Some(DeploymentStrategy {
                type_: Some("RollingUpdate".into()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: Some(IntOrString::Int(1)),
                    max_unavailable: Some(IntOrString::Int(0)),
                }),
            }),
            revision_history_limit: Some(5),
            template,
            ..Default::default()
        },
        status: None,
    }
}

/// A volume of a Secret, readable by the runtime's group only.
fn secret_volume(name: &str, secret: &str) -> Volume {
    Volume {
        name: name.into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(secret.into()),
            default_mode: Some(0o440),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A projected volume holding the pod's ServiceAccount token for `audience` in the file
/// `token`, readable by the runtime's group only.
fn service_account_token_volume(name: &str, audience: &str) -> Volume {
    Volume {
        name: name.into(),
        projected: Some(ProjectedVolumeSource {
            default_mode: Some(0o440),
            sources: Some(vec![VolumeProjection {
                service_account_token: Some(ServiceAccountTokenProjection {
                    audience: Some(audience.into()),
                    expiration_seconds: Some(SERVICE_ACCOUNT_TOKEN_SECONDS),
                    path: mcp_declaration::SERVICE_ACCOUNT_TOKEN_FILE.into(),
                    ..Default::default()
                }),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Annotations of the pods: the declared ones, then the operator's (which win).
fn pod_annotations(server: &MCPServer) -> BTreeMap<String, String> {
    let mut annotations = server.spec.deployment.pod_annotations.clone();
    annotations.extend(BTreeMap::from([
        (
            "kubectl.kubernetes.io/default-container".to_owned(),
            CONTAINER.to_owned(),
        ),
        ("prometheus.io/scrape".to_owned(), "true".to_owned()),
        ("prometheus.io/port".to_owned(), ADMIN_PORT.to_string()),
        ("prometheus.io/path".to_owned(), "/metrics".to_owned()),
    ]));
    annotations
}

/// The runtime's command line (its flags are fixed by the runtime; see its `serve --help`).
fn args(
    server: &MCPServer,
    config: &BuildConfig,
    keys: &SessionKeys,
    approvals: bool,
) -> Vec<String> {
    let spec = &server.spec.deployment;
    let name = server.name_any();
    let namespace = server.namespace().unwrap_or_default();
    let mut args: Vec<String> = vec![
        "serve".into(),
        // The directory: the ConfigMap holds the manifest as text or, too large, compressed.
        "--manifest".into(),
        MANIFEST_DIR.into(),
        "--listen".into(),
        format!("0.0.0.0:{HTTP_PORT}"),
        "--admin-listen".into(),
        format!("0.0.0.0:{ADMIN_PORT}"),
    ];
    let mut flag = |name: &str, value: String| {
        args.push(name.into());
        args.push(value);
    };
    // Host names clients may use: the public host, the Service's DNS names, and localhost
    // (for `kubectl port-forward`). Any other Host header is refused (DNS rebinding).
    let public = public_endpoint(server);
    let mut hosts = Vec::new();
    if let Some(endpoint) = &public {
        hosts.push(endpoint.host.to_owned());
    }
    hosts.extend([
        name.clone(),
        format!("{name}.{namespace}"),
        format!("{name}.{namespace}.svc"),
        format!("{name}.{namespace}.svc.{}", config.cluster_domain),
        "localhost".into(),
    ]);
    for host in hosts {
        flag("--allowed-host", host);
    }
    if let Some(endpoint) = &public {
        let scheme = if endpoint.https { "https" } else { "http" };
        flag("--allowed-origin", format!("{scheme}://{}", endpoint.host));
        if let Some(prefix) = endpoint.prefix {
            flag("--path-prefix", prefix.to_owned());
        }
    }
    if server.spec.declaration.auth.is_some() || config.server_cards {
        // The resource tokens are issued for, and the base of the card's remotes: the URL
        // clients reach, path prefix included.
        flag("--public-url", public_url(server, config));
    }
    flag("--session-key-file", format!("{SESSION_KEY_DIR}/key"));
    if keys.previous.is_some() {
        flag(
            "--previous-session-key-file",
            format!("{PREVIOUS_SESSION_KEY_DIR}/key"),
        );
    }
    // Replicas reach each other on the MCP port at their pod IPs: a legacy session's requests
    // are forwarded to the replica holding it (the kubelet expands the variable).
    flag("--advertise-address", format!("$({POD_IP_VAR})"));
    if !config.trusted_proxies.is_empty() {
        let proxies: Vec<String> = config
            .trusted_proxies
            .iter()
            .map(ToString::to_string)
            .collect();
        flag("--trusted-proxy", proxies.join(","));
    }
    if let Some(sessions) = &spec.sessions {
        if let Some(timeout) = &sessions.idle_timeout {
            flag("--session-idle-timeout", timeout.clone());
        }
        if let Some(max) = sessions.max_sessions {
            flag("--max-sessions", max.to_string());
        }
        if let Some(interval) = &sessions.ping_interval {
            flag("--ping-interval", interval.clone());
        }
        if let Some(timeout) = &sessions.ping_timeout {
            flag("--ping-timeout", timeout.clone());
        }
    }
    if let Some(telemetry) = &spec.telemetry {
        if let Some(endpoint) = &telemetry.otlp_endpoint {
            flag("--otlp-endpoint", endpoint.clone());
        }
        if telemetry.audit {
            flag("--audit-log", "stdout".into());
        }
    }
    flag("--log-format", "json".into());
    flag(
        "--log-level",
        spec.log_level.map_or("info", |level| level.as_str()).into(),
    );
    if config.server_cards {
        args.push("--server-card".into());
    }
    if config.allow_link_local_upstreams {
        args.push("--allow-link-local-upstreams".into());
    }
    if approvals {
        // The API server, CA and namespace come from the mounted credentials (the runtime's
        // in-cluster defaults); the server owns the approvals, so they go with it.
        args.push("--approvals-kube".into());
        if let Some(uid) = server.uid() {
            args.extend([
                "--approvals-owner-name".into(),
                name.clone(),
                "--approvals-owner-uid".into(),
                uid,
            ]);
        }
    }
    if let Some(transports) = config.transports {
        args.push("--transports".into());
        args.push(transports.names());
    }
    args
}

/// The container's environment: the pod's IP (for `--advertise-address`), `spec.env`, after the
/// OpenTelemetry variables that name the server in traces (and the sampler) when tracing is on;
/// a variable `spec.env` sets itself is left to it.
fn env(server: &MCPServer) -> Vec<EnvVar> {
    let spec = &server.spec.deployment;
    let mut env = vec![EnvVar {
        name: POD_IP_VAR.into(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: "status.podIP".into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }];
    if let Some(telemetry) = spec
        .telemetry
        .as_ref()
        .filter(|t| t.otlp_endpoint.is_some())
    {
        let mut otel = vec![
            ("OTEL_SERVICE_NAME", server.name_any()),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                format!(
                    "k8s.namespace.name={},kube_mcp.server={}",
                    server.namespace().unwrap_or_default(),
                    server.name_any()
                ),
            ),
        ];
        if let Some(percent) = telemetry.sampling_percent {
            otel.push(("OTEL_TRACES_SAMPLER", "parentbased_traceidratio".into()));
            otel.push((
                "OTEL_TRACES_SAMPLER_ARG",
                format!("{}", f64::from(percent) / 100.0),
            ));
        }
        env.extend(
            otel.into_iter()
                .filter(|(name, _)| !spec.env.iter().any(|e| e.name == *name))
                .map(|(name, value)| EnvVar {
                    name: name.into(),
                    value: Some(value),
                    ..Default::default()
                }),
        );
    }
    // Validation refuses a `spec.env` entry for the pod IP; it could only displace the real one.
    env.extend(spec.env.iter().filter(|e| e.name != POD_IP_VAR).cloned());
    env
}

fn mount(volume: &str, path: &str) -> VolumeMount {
    VolumeMount {
        name: volume.into(),
        mount_path: path.into(),
        read_only: Some(true),
        ..Default::default()
    }
}

fn port(name: &str, port: i32) -> ContainerPort {
    ContainerPort {
        name: Some(name.into()),
        container_port: port,
        protocol: Some("TCP".into()),
        ..Default::default()
    }
}

fn probe(path: &str, period: i32, failures: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.into()),
            port: IntOrString::String("admin".into()),
            ..Default::default()
        }),
        period_seconds: Some(period),
        failure_threshold: Some(failures),
        timeout_seconds: Some(2),
        ..Default::default()
    }
}

fn runtime_default_seccomp() -> SeccompProfile {
    SeccompProfile {
        type_: "RuntimeDefault".into(),
        ..Default::default()
    }
}

fn default_resources() -> ResourceRequirements {
    ResourceRequirements {
        requests: Some(BTreeMap::from([
            ("cpu".to_owned(), Quantity("50m".into())),
            ("memory".to_owned(), Quantity("64Mi".into())),
        ])),
        limits: Some(BTreeMap::from([(
            "memory".to_owned(),
            Quantity("256Mi".into()),
        )])),
        ..Default::default()
    }
}

/// Where the runtime reads its API credentials (the in-cluster default path).
const KUBE_API_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
const KUBE_API_VOLUME: &str = "kube-api";
/// Lifetime of the projected API token; the kubelet rotates it well before.
const KUBE_API_TOKEN_SECONDS: i64 = 3600;

/// A projected volume like the one `automountServiceAccountToken` mounts: a token for the API
/// server, its CA and the namespace.
fn kube_api_volume() -> Volume {
    Volume {
        name: KUBE_API_VOLUME.into(),
        projected: Some(ProjectedVolumeSource {
            sources: Some(vec![
                VolumeProjection {
                    service_account_token: Some(ServiceAccountTokenProjection {
                        path: "token".into(),
                        expiration_seconds: Some(KUBE_API_TOKEN_SECONDS),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                VolumeProjection {
                    config_map: Some(ConfigMapProjection {
                        name: "kube-root-ca.crt".into(),
                        items: Some(vec![KeyToPath {
                            key: "ca.crt".into(),
                            path: "ca.crt".into(),
                            ..Default::default()
                        }]),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                VolumeProjection {
                    downward_api: Some(DownwardAPIProjection {
                        items: Some(vec![DownwardAPIVolumeFile {
                            path: "namespace".into(),
                            field_ref: Some(ObjectFieldSelector {
                                field_path: "metadata.namespace".into(),
                                ..Default::default()
                            }),
                            ..Default::default()
                        }]),
                    }),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        }),
        ..Default::default()
    }
}
