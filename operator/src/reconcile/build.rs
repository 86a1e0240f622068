//! Build step of the reconcile pipeline: the objects an accepted `MCPServer` needs, as they should
//! be. Pure: same input, same objects; nothing here talks to the cluster.

mod approvals;
mod deployment;
mod exposure;
mod meta;
mod network;
mod route;

pub use approvals::{ApprovalAccess, approval_access};
pub use deployment::{
    ADMIN_PORT, HTTP_PORT, MANIFEST_DIR, PREVIOUS_SESSION_KEY_DIR, RUNTIME_IMAGE_ANNOTATION,
    SECRETS_DIR, SERVICE_ACCOUNT_TOKEN_SECONDS, SERVICE_ACCOUNT_TOKENS_DIR, SESSION_KEY_DIR,
    TEMPLATE_HASH_ANNOTATION, deployment,
};
pub use exposure::{
    PublicEndpoint, endpoint_paths, ingress, metadata_paths, path_prefix, pod_disruption_budget,
    public_endpoint, service, url, view_paths,
};
pub use meta::{
    MANAGED_BY, SERVER_LABEL, child_meta, config_map_name, labels, pod_selector, selector_labels,
};
pub use network::{NetworkConfig, network_policy};
pub use route::{GATEWAY_GROUP, GATEWAY_VERSION, HttpRoute, http_route};

use super::session_keys::SessionKeys;
use super::validate::HASH_ANNOTATION;
use crate::resource::MCPServer;
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use std::collections::{BTreeMap, BTreeSet};

/// Settings of the operator that shape what it builds.
#[derive(Clone, Debug, PartialEq)]
pub struct BuildConfig {
    /// Runtime image used when a spec names none.
    pub runtime_image: String,
    /// Pull policy used when a spec names none (`None`: Kubernetes' default).
    pub image_pull_policy: Option<String>,
    /// The cluster's DNS domain, for the in-cluster URL and allowed hosts.
    pub cluster_domain: String,
    /// Have the runtimes serve their server cards (`--server-card`).
    pub server_cards: bool,
    /// Proxies whose `X-Forwarded-For` names the client (the runtimes' `--trusted-proxy`).
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Declared upstreams may be at link-local addresses (the runtimes'
    /// `--allow-link-local-upstreams`; the operator's own compile allows them too).
    pub allow_link_local_upstreams: bool,
    /// The transports the runtimes serve (their `--transports`; `None`: the runtime's default).
    pub transports: Option<mcp_declaration::Transports>,
    /// Who may reach the servers' pods (their NetworkPolicies).
    pub network: NetworkConfig,
    /// How long a replaced session key keeps opening what it sealed.
    pub session_key_overlap: std::time::Duration,
}

impl Default for BuildConfig {
    fn default() -> Self {
        Self {
            runtime_image: "ghcr.io/kube-mcp/kube-mcp:latest".into(),
            image_pull_policy: None,
            cluster_domain: "cluster.local".into(),
            server_cards: false,
            trusted_proxies: Vec::new(),
            allow_link_local_upstreams: false,
            transports: None,
            network: NetworkConfig::default(),
            session_key_overlap: super::session_keys::DEFAULT_OVERLAP,
        }
    }
}

/// Every object an accepted `MCPServer` owns, except the session key (see [`session_key`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Children {
    /// The runtime manifest.
    pub config_map: ConfigMap,
    /// The runtime pods.
    pub deployment: Deployment,
    /// The pods' Service.
    pub service: Service,
    /// The Ingress, when the spec asks for one.
    pub ingress: Option<Ingress>,
    /// The PodDisruptionBudget, when there is more than one replica.
    pub pod_disruption_budget: Option<PodDisruptionBudget>,
    /// The NetworkPolicy, unless turned off.
    pub network_policy: Option<NetworkPolicy>,
    /// The Gateway API HTTPRoute, with `exposure: gateway`.
    pub http_route: Option<HttpRoute>,
    /// The approvals RBAC, when a tool needs approvals.
    pub approvals: Option<ApprovalAccess>,
}

/// Replicas the server should have: its spec's, else what the Deployment has been scaled to
/// (the operator does not force a count the spec leaves unset), else 1.
pub fn desired_replicas(server: &MCPServer, deployment: Option<&Deployment>) -> i32 {
    server
        .spec
        .deployment
        .replicas
        .or_else(|| deployment.and_then(|d| d.spec.replicas))
        .unwrap_or(1)
}

use super::manifest_data::ManifestData;
pub use super::manifest_data::{COMPRESSED_MANIFEST_KEY, MANIFEST_KEY};

/// Builds the children of `server` from its validated manifest and the manifest's hash, its
/// pods mounting the session `keys` and a projected ServiceAccount token for each of the
/// declaration's `audiences` (`Accepted::service_account_audiences`), and the approvals RBAC
/// when its gated tools name `approver_groups`.
pub fn children(
    server: &MCPServer,
    manifest: &ManifestData,
    hash: &str,
    config: &BuildConfig,
    keys: &SessionKeys,
    audiences: &BTreeSet<String>,
    approver_groups: &[String],
) -> Children {
    let mut config_map = config_map(server, manifest);
    config_map
        .metadata
        .annotations
        .get_or_insert_default()
        .insert(HASH_ANNOTATION.to_owned(), hash.to_owned());
    Children {
        config_map,
        deployment: deployment(server, config, keys, audiences, !approver_groups.is_empty()),
        service: service(server),
        ingress: ingress(server, config),
        pod_disruption_budget: pod_disruption_budget(server),
        network_policy: network_policy(server, config),
        http_route: http_route(server, config),
        approvals: approval_access(server, approver_groups),
    }
}

/// The ConfigMap holding the runtime manifest. A declaration change changes only this object:
/// the runtime watches the mounted file and reloads, so pods do not roll.
/// Pods mount it as a directory and the runtime reads whichever key it holds.
pub fn config_map(server: &MCPServer, manifest: &ManifestData) -> ConfigMap {
    let metadata = child_meta(server, config_map_name(server));
    match manifest {
        ManifestData::Text(yaml) => ConfigMap {
            metadata,
            data: Some(BTreeMap::from([(MANIFEST_KEY.to_owned(), yaml.clone())])),
            ..Default::default()
        },
        ManifestData::Compressed(gzip) => ConfigMap {
            metadata,
            binary_data: Some(BTreeMap::from([(
                COMPRESSED_MANIFEST_KEY.to_owned(),
                ByteString(gzip.clone()),
            )])),
            ..Default::default()
        },
    }
}

/// A Secret holding a key that seals legacy session ids, shared by all replicas so any replica
/// serves any session. Created once with a random key and never rewritten (see
/// `session_keys` for its name and rotation).
pub fn session_key(server: &MCPServer, name: &str, key: [u8; 32]) -> Secret {
    Secret {
        metadata: child_meta(server, name.to_owned()),
        data: Some(BTreeMap::from([(
            "key".to_owned(),
            ByteString(key.to_vec()),
        )])),
        type_: Some("Opaque".into()),
        immutable: Some(true),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::test_support::server;
    use crate::reconcile::validate::{Accepted, Fragments, validate};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    /// A server using every deployment field that shapes the children.
    fn weather() -> MCPServer {
        server(
            r#"
            metadata: {name: weather, namespace: tools}
            spec:
              title: Weather
              tools:
                - name: greet
                  inputSchema: {type: object, properties: {name: {type: string}}, required: [name]}
                  content: [{type: text, text: "Hello, {{ args.name }}!"}]
              prompts:
                - name: plan_trip
                  arguments: [{name: city, required: true}]
                  messages: [{role: user, content: {type: text, text: "Plan a trip to {{ args.city }}."}}]
              replicas: 2
              logLevel: debug
              sessions: {idleTimeout: 1h, maxSessions: 500}
              service: {type: ClusterIP, annotations: {example.com/team: weather}}
              ingress:
                host: mcp.example.com
                path: /weather
                className: nginx
                tls: {secretName: mcp-tls}
                annotations: {nginx.ingress.kubernetes.io/proxy-read-timeout: "7200"}
            "#,
        )
    }

    #[test]
    fn the_example_builds() {
        let mut example: MCPServer =
            serde_yaml_ng::from_str(include_str!("../../../examples/weather.yaml")).unwrap();
        example.metadata.namespace = Some("tools".into());
        let children = build(&example);
        assert_eq!(
            children.config_map.metadata.name.as_deref(),
            Some("weather-manifest")
        );
    }

    /// The keys of a server with no rotation under way.
    fn keys() -> SessionKeys {
        SessionKeys {
            current: "weather-session-key-bbbbbbbbbb".into(),
            ..Default::default()
        }
    }

    /// The children of `server` from its validation, with the keys of [`keys`].
    fn children_of(server: &MCPServer, accepted: &Accepted, config: &BuildConfig) -> Children {
        children(
            server,
            &accepted.data,
            &accepted.hash,
            config,
            &keys(),
            &accepted.service_account_audiences,
            &accepted.approver_groups,
        )
    }

    fn build(server: &MCPServer) -> Children {
        children_of(
            server,
            &validate(server, false, 1, &Fragments::default()).unwrap(),
            &BuildConfig::default(),
        )
    }

    #[test]
    fn builds_every_child_of_the_weather_example() {
        let children = build(&weather());
        insta::assert_yaml_snapshot!("weather_config_map", children.config_map);
        // The template hash is checked where it matters (a changed template changes it); its
        // value depends on the hasher, so the snapshot leaves it out.
        let mut deployment = children.deployment.clone();
        let hash = deployment
            .metadata
            .annotations
            .as_mut()
            .and_then(|a| a.remove(TEMPLATE_HASH_ANNOTATION));
        assert_eq!(hash.map(|h| h.len()), Some(16));
        insta::assert_yaml_snapshot!("weather_deployment", deployment);
        insta::assert_yaml_snapshot!("weather_service", children.service);
        insta::assert_yaml_snapshot!("weather_ingress", children.ingress);
        insta::assert_yaml_snapshot!("weather_pdb", children.pod_disruption_budget);
        assert_eq!(
            url(&weather(), &BuildConfig::default()),
            "https://mcp.example.com/weather/mcp"
        );
    }

    #[test]
    fn an_ingress_at_the_root_routes_exactly_the_mcp_endpoints() {
        let mut server = weather();
        server.spec.deployment.ingress.as_mut().unwrap().path = None;
        let ingress = build(&server).ingress.unwrap();
        let rule = &ingress.spec.unwrap().rules.unwrap()[0];
        let paths: Vec<(String, String)> = rule
            .http
            .clone()
            .unwrap()
            .paths
            .into_iter()
            .map(|p| (p.path.unwrap(), p.path_type))
            .collect();
        let expected = [("/mcp", "Exact"), ("/sse", "Exact"), ("/messages", "Exact")];
        assert_eq!(paths, expected.map(|(p, t)| (p.to_owned(), t.to_owned())));
        let annotations = ingress.metadata.annotations.unwrap();
        assert!(!annotations.contains_key("nginx.ingress.kubernetes.io/rewrite-target"));
        assert_eq!(
            annotations["nginx.ingress.kubernetes.io/proxy-buffering"],
            "off"
        );
    }

    /// The runtime container's arguments.
    fn runtime_args(children: &Children) -> Vec<String> {
        let pod = children.deployment.spec.template.spec.as_ref().unwrap();
        pod.containers[0].args.clone().unwrap()
    }

    fn paths(ingress: &Ingress) -> Vec<(String, String)> {
        ingress.spec.clone().unwrap().rules.unwrap()[0]
            .http
            .clone()
            .unwrap()
            .paths
            .into_iter()
            .map(|p| (p.path.unwrap(), p.path_type))
            .collect()
    }

    fn path_names(server: &MCPServer) -> Vec<String> {
        paths(&build(server).ingress.unwrap())
            .into_iter()
            .map(|(path, _)| path)
            .collect()
    }

    #[test]
    fn an_authenticated_server_gets_its_public_url_and_metadata_routes() {
        let mut server = weather();
        server.spec.declaration.auth = Some(mcp_declaration::Auth {
            issuer: "https://idp.example.com/realms/acme".into(),
            ..Default::default()
        });
        let args = runtime_args(&build(&server));
        assert!(
            args.windows(2)
                .any(|w| w == ["--public-url", "https://mcp.example.com/weather"]),
            "{args:?}"
        );
        // Under the prefix, the metadata paths (outside the prefix) are routed exactly.
        let ingress = build(&server).ingress.unwrap();
        assert!(paths(&ingress).iter().all(|(_, kind)| kind == "Exact"));
        assert_eq!(
            path_names(&server),
            [
                "/weather/mcp",
                "/weather/sse",
                "/weather/messages",
                "/.well-known/oauth-protected-resource/weather",
                "/.well-known/oauth-protected-resource/weather/mcp",
                "/.well-known/oauth-protected-resource/weather/sse",
            ]
        );
        // At the root, likewise.
        server.spec.deployment.ingress.as_mut().unwrap().path = None;
        assert_eq!(
            path_names(&server),
            [
                "/mcp",
                "/sse",
                "/messages",
                "/.well-known/oauth-protected-resource",
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource/sse",
            ]
        );
        // Without spec.auth, neither.
        server.spec.declaration.auth = None;
        assert_eq!(path_names(&server), ["/mcp", "/sse", "/messages"]);
        let plain = runtime_args(&build(&server));
        assert!(!plain.contains(&"--public-url".to_owned()));
    }

    /// Children are written through the server's namespace (`apply.rs` uses its namespaced API,
    /// which refuses an object naming another): no child may name another, or a tenant's server
    /// would write into a namespace it does not own.
    #[test]
    fn every_child_lives_in_its_servers_namespace() {
        let weather = weather();
        let gateway = server(
            "
            metadata: {name: routed, namespace: tools}
            spec:
              tools: [{name: hi, content: [{type: text, text: hi}]}]
              exposure: gateway
              gateway: {host: mcp.example.com, parentRefs: [{name: shared, namespace: gateway-system}]}
            ",
        );
        for server in [&weather, &gateway] {
            let built = build(server);
            let mut namespaces = vec![
                built.config_map.metadata.namespace.clone(),
                built.deployment.metadata.namespace.clone(),
                built.service.metadata.namespace.clone(),
                session_key(server, "k", [0; 32]).metadata.namespace,
            ];
            namespaces.extend(built.ingress.map(|i| i.metadata.namespace));
            namespaces.extend(built.pod_disruption_budget.map(|p| p.metadata.namespace));
            namespaces.extend(built.network_policy.map(|n| n.metadata.namespace));
            namespaces.extend(built.http_route.map(|r| r.metadata.namespace));
            assert!(namespaces.len() >= 5, "{namespaces:?}");
            for namespace in namespaces {
                assert_eq!(namespace.as_deref(), Some("tools"));
            }
        }
    }

    #[test]
    fn link_local_upstreams_are_refused_unless_the_platform_allows_them() {
        let metadata = server(
            "
            metadata: {name: creds, namespace: tools}
            spec:
              tools: [{name: steal, http: {url: 'http://169.254.169.254/latest/meta-data/'}}]
            ",
        );
        let refused = validate(&metadata, false, 1, &Fragments::default()).unwrap_err();
        assert!(
            refused.errors[0].message.contains("is link-local"),
            "{:?}",
            refused.errors
        );
        let allowed = BuildConfig {
            allow_link_local_upstreams: true,
            ..BuildConfig::default()
        };
        let accepted = validate(
            &metadata,
            allowed.allow_link_local_upstreams,
            1,
            &Fragments::default(),
        )
        .unwrap();
        let plain = runtime_args(&build(&weather()));
        assert!(!plain.contains(&"--allow-link-local-upstreams".to_owned()));
        let built = children_of(&metadata, &accepted, &allowed);
        assert!(runtime_args(&built).contains(&"--allow-link-local-upstreams".to_owned()));
    }

    #[test]
    fn the_platforms_transports_reach_every_runtime() {
        let server = weather();
        let plain = runtime_args(&build(&server));
        assert!(!plain.contains(&"--transports".to_owned()), "{plain:?}");
        let accepted = validate(&server, false, 1, &Fragments::default()).unwrap();
        let config = BuildConfig {
            transports: Some(mcp_declaration::Transports::parse("streamable,modern").unwrap()),
            ..BuildConfig::default()
        };
        let args = runtime_args(&children_of(&server, &accepted, &config));
        assert!(
            args.windows(2)
                .any(|w| w == ["--transports", "modern,streamable"]),
            "{args:?}"
        );
    }

    #[test]
    fn trusted_proxies_reach_every_runtime_and_none_by_default() {
        let server = weather();
        let accepted = validate(&server, false, 1, &Fragments::default()).unwrap();
        let plain = runtime_args(&build(&server));
        assert!(!plain.contains(&"--trusted-proxy".to_owned()), "{plain:?}");
        let config = BuildConfig {
            trusted_proxies: vec![
                "10.244.0.0/16".parse().unwrap(),
                "fd00::/8".parse().unwrap(),
            ],
            ..BuildConfig::default()
        };
        let built = children_of(&server, &accepted, &config);
        let args = runtime_args(&built);
        assert!(
            args.windows(2)
                .any(|w| w == ["--trusted-proxy", "10.244.0.0/16,fd00::/8"]),
            "{args:?}"
        );
    }

    #[test]
    fn with_server_cards_the_runtime_serves_its_card_and_the_ingress_routes_it() {
        let server = weather();
        let config = BuildConfig {
            server_cards: true,
            ..BuildConfig::default()
        };
        let accepted = validate(&server, false, 1, &Fragments::default()).unwrap();
        let built = children_of(&server, &accepted, &config);
        let args = runtime_args(&built);
        assert!(args.contains(&"--server-card".to_owned()), "{args:?}");
        assert!(
            args.windows(2)
                .any(|w| w == ["--public-url", "https://mcp.example.com/weather"]),
            "{args:?}"
        );
        let names: Vec<String> = paths(&built.ingress.unwrap())
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        assert!(
            names.contains(&"/weather/mcp/server-card".to_owned()),
            "{names:?}"
        );
        // Off by default: neither the flag nor the path.
        assert!(!runtime_args(&build(&server)).contains(&"--server-card".to_owned()));
        assert!(
            !path_names(&server)
                .iter()
                .any(|p| p.ends_with("server-card"))
        );
    }

    #[test]
    fn an_authenticated_server_behind_a_gateway_gets_its_metadata_routed() {
        let mut server = gateway_server();
        let route_paths = |server: &MCPServer| -> Vec<String> {
            let route = build(server).http_route.unwrap();
            route.spec["rules"][0]["matches"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["path"]["value"].as_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(
            route_paths(&server),
            ["/weather/mcp", "/weather/sse", "/weather/messages"]
        );
        server.spec.declaration.auth = Some(mcp_declaration::Auth {
            issuer: "https://idp.example.com/realms/acme".into(),
            ..Default::default()
        });
        assert_eq!(
            route_paths(&server)[3..],
            [
                "/.well-known/oauth-protected-resource/weather",
                "/.well-known/oauth-protected-resource/weather/mcp",
                "/.well-known/oauth-protected-resource/weather/sse",
            ]
        );
        let args = runtime_args(&build(&server));
        assert!(
            args.windows(2)
                .any(|w| w == ["--public-url", "https://mcp.example.com/weather"])
        );
    }

    #[test]
    fn an_ingress_under_a_prefix_routes_exact_paths_without_rewriting() {
        let children = build(&weather());
        let ingress = children.ingress.clone().unwrap();
        let expected = ["/weather/mcp", "/weather/sse", "/weather/messages"];
        assert_eq!(
            paths(&ingress),
            expected.map(|p| (p.to_owned(), "Exact".to_owned()))
        );
        let annotations = ingress.metadata.annotations.unwrap();
        assert!(
            annotations
                .keys()
                .all(|k| !k.ends_with("/rewrite-target") && !k.ends_with("/use-regex")),
            "{annotations:?}"
        );
        let args = runtime_args(&children);
        assert!(args.windows(2).any(|w| w == ["--path-prefix", "/weather"]));
    }

    #[test]
    fn each_view_is_routed_at_its_path_with_its_metadata() {
        let mut server = weather();
        server.spec.declaration.views = vec![mcp_declaration::View {
            name: "readers".into(),
            path: "/readers".into(),
            tools: vec!["greet".into()],
            ..Default::default()
        }];
        let view_endpoints = [
            "/weather/readers/mcp",
            "/weather/readers/sse",
            "/weather/readers/messages",
        ];
        assert_eq!(path_names(&server)[3..], view_endpoints);
        server.spec.declaration.auth = Some(mcp_declaration::Auth {
            issuer: "https://idp.example.com/realms/acme".into(),
            ..Default::default()
        });
        assert_eq!(
            path_names(&server)[6..],
            [
                "/weather/readers/mcp",
                "/weather/readers/sse",
                "/weather/readers/messages",
                "/.well-known/oauth-protected-resource/weather/readers",
                "/.well-known/oauth-protected-resource/weather/readers/mcp",
                "/.well-known/oauth-protected-resource/weather/readers/sse",
            ]
        );
        // Behind a gateway, the HTTPRoute routes the same paths.
        let mut gateway = gateway_server();
        gateway.spec.declaration.views = vec![mcp_declaration::View {
            name: "readers".into(),
            path: "/readers/".into(),
            tools: vec!["hi".into()],
            ..Default::default()
        }];
        let route = build(&gateway).http_route.unwrap();
        let values: Vec<&str> = route.spec["rules"][0]["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["path"]["value"].as_str().unwrap())
            .collect();
        assert_eq!(values[3..], view_endpoints);
    }

    fn gateway_server() -> MCPServer {
        server(
            r#"
            metadata: {name: weather, namespace: tools}
            spec:
              tools: [{name: hi, content: [{type: text, text: hi}]}]
              exposure: gateway
              gateway:
                host: mcp.example.com
                path: /weather
                parentRefs: [{name: shared, namespace: infra, sectionName: https}]
            "#,
        )
    }

    #[test]
    fn a_gateway_exposure_builds_an_http_route_and_no_ingress() {
        let server = gateway_server();
        let children = build(&server);
        assert_eq!(children.ingress, None);
        insta::assert_yaml_snapshot!("gateway_http_route", children.http_route);
        assert_eq!(
            url(&server, &BuildConfig::default()),
            "https://mcp.example.com/weather/mcp"
        );
        let args = runtime_args(&children);
        assert!(args.windows(2).any(|w| w == ["--path-prefix", "/weather"]));
        assert!(
            args.windows(2)
                .any(|w| w == ["--allowed-host", "mcp.example.com"])
        );
        assert!(
            args.windows(2)
                .any(|w| w == ["--allowed-origin", "https://mcp.example.com"])
        );
    }

    #[test]
    fn network_policies_admit_only_the_configured_peers() {
        let mut config = BuildConfig::default();
        let accepted = validate(&weather(), false, 1, &Fragments::default()).unwrap();
        assert_eq!(
            children_of(&weather(), &accepted, &config).network_policy,
            None
        );
        config.network = NetworkConfig {
            enabled: true,
            ingress_namespaces: vec!["ingress-nginx".into()],
            monitoring_namespaces: vec!["monitoring".into()],
            operator_namespace: Some("kube-mcp-system".into()),
            ..Default::default()
        };
        let policy = children_of(&weather(), &accepted, &config).network_policy;
        insta::assert_yaml_snapshot!("weather_network_policy", policy);

        // Ingress paths that are no pods (hostNetwork controllers, load balancers keeping the
        // client's address) are admitted on the MCP port by address range, and only there.
        config.network.ingress_cidrs = vec!["10.0.0.0/16".parse().unwrap()];
        let policy = children_of(&weather(), &accepted, &config)
            .network_policy
            .unwrap();
        let rules = policy.spec.unwrap().ingress.unwrap();
        let blocks = |rule: &k8s_openapi::api::networking::v1::NetworkPolicyIngressRule| {
            rule.from
                .iter()
                .flatten()
                .filter_map(|peer| peer.ip_block.as_ref().map(|b| b.cidr.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(blocks(&rules[0]), ["10.0.0.0/16"]);
        assert_eq!(
            rules[0].ports.as_ref().unwrap()[0].port,
            Some(IntOrString::String("http".into()))
        );
        assert!(blocks(&rules[1]).is_empty());
        config.network.ingress_cidrs.clear();

        // Nobody listed for a port: no rule for it (an empty rule would admit everyone); the
        // MCP port admits the server's own pods (replicas forward session requests).
        config.network = NetworkConfig {
            enabled: true,
            ..Default::default()
        };
        let policy = children_of(&weather(), &accepted, &config)
            .network_policy
            .unwrap();
        let rules = policy.spec.unwrap().ingress.unwrap();
        assert_eq!(rules.len(), 1);
        assert_eq!(
            rules[0].ports.as_ref().unwrap()[0].port,
            Some(IntOrString::String("http".into()))
        );

        let mut opted_out = weather();
        opted_out.spec.deployment.network_policy = Some(crate::resource::NetworkPolicySpec {
            enabled: Some(false),
            ..Default::default()
        });
        assert_eq!(
            children_of(&opted_out, &accepted, &config).network_policy,
            None
        );
    }

    #[test]
    fn pod_knobs_reach_the_pod_template_and_the_operator_labels_win() {
        let server = server(
            r#"
            metadata: {name: api, namespace: tools}
            spec:
              tools: [{name: hi, content: [{type: text, text: hi}]}]
              podAnnotations: {vault.hashicorp.com/agent-inject: "true", prometheus.io/port: "1"}
              podLabels: {sidecar.istio.io/inject: "true", kube-mcp.io/server: other}
              serviceAccountName: api-runtime
              imagePullSecrets: [{name: registry}]
              priorityClassName: high
              topologySpreadConstraints:
                - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}
            "#,
        );
        let deployment = build(&server).deployment;
        assert_eq!(
            deployment.spec.replicas, None,
            "an unset count is not forced"
        );
        let template = deployment.spec.template;
        let meta = template.metadata.unwrap();
        let labels = meta.labels.unwrap();
        assert_eq!(labels["sidecar.istio.io/inject"], "true");
        assert_eq!(labels["kube-mcp.io/server"], "api");
        let annotations = meta.annotations.unwrap();
        assert_eq!(annotations["vault.hashicorp.com/agent-inject"], "true");
        assert_eq!(annotations["prometheus.io/port"], "9090");
        let pod = template.spec.unwrap();
        assert_eq!(pod.service_account_name.as_deref(), Some("api-runtime"));
        assert_eq!(pod.automount_service_account_token, Some(false));
        assert_eq!(pod.image_pull_secrets.unwrap()[0].name, "registry");
        assert_eq!(pod.priority_class_name.as_deref(), Some("high"));
        let spread = pod.topology_spread_constraints.unwrap();
        assert_eq!(spread.len(), 1);
        assert_eq!(spread[0].topology_key, "topology.kubernetes.io/zone");
    }

    #[test]
    fn only_a_server_with_approvals_gets_api_access_for_them() {
        let plain = build(&server(
            "metadata: {name: hello, namespace: tools}\nspec: {tools: [{name: hi, content: [{type: text, text: hi}]}]}\n",
        ));
        assert_eq!(plain.approvals, None);
        assert!(!runtime_args(&plain).contains(&"--approvals-kube".to_owned()));
        let gated = server(
            r#"
            metadata: {name: ops, namespace: tools, uid: u-ops}
            spec:
              tools:
                - name: delete_namespace
                  approval: {approvers: {group: oncall}, message: "Delete {{ args.name }}?"}
                  content: [{type: text, text: deleted}]
            "#,
        );
        let children = build(&gated);
        let access = children.approvals.as_ref().expect("approvals RBAC");
        assert_eq!(
            access.approvers.1.subjects.as_ref().unwrap()[0].name,
            "oncall"
        );
        let args = runtime_args(&children);
        assert!(args.contains(&"--approvals-kube".to_owned()), "{args:?}");
        assert!(
            args.windows(2)
                .any(|w| w == ["--approvals-owner-uid", "u-ops"]),
            "{args:?}"
        );
        let pod = children.deployment.spec.template.spec.clone().unwrap();
        // Only the API token of this volume: the pod's own token stays unmounted.
        assert_eq!(pod.automount_service_account_token, Some(false));
        assert!(
            pod.volumes
                .unwrap()
                .iter()
                .any(|v| v.name == "kube-api" && v.projected.is_some())
        );
    }

    #[test]
    fn a_minimal_server_gets_a_service_url_and_no_optional_children() {
        let server = server(
            r#"
            metadata: {name: hello, namespace: tools}
            spec:
              tools: [{name: hi, content: [{type: text, text: hi}]}]
            "#,
        );
        let children = build(&server);
        assert_eq!(children.ingress, None);
        assert_eq!(children.pod_disruption_budget, None);
        assert_eq!(
            url(&server, &BuildConfig::default()),
            "http://hello.tools.svc.cluster.local/mcp"
        );
        let args = runtime_args(&children);
        assert!(!args.contains(&"--path-prefix".to_owned()), "{args:?}");
        assert!(!args.contains(&"--allowed-origin".to_owned()), "{args:?}");
        assert!(
            args.windows(2)
                .any(|w| w == ["--allowed-host", "hello.tools.svc.cluster.local"]),
            "{args:?}"
        );
        // In-cluster clients may also name the Service without the cluster domain.
        assert!(
            args.windows(2)
                .any(|w| w == ["--allowed-host", "hello.tools.svc"]),
            "{args:?}"
        );
    }

    #[test]
    fn a_declaration_change_touches_only_the_config_map() {
        let before = weather();
        let mut after = weather();
        after.spec.declaration.tools[0].description = Some("Says hello.".into());
        after.spec.declaration.prompts.clear();
        let (before, after) = (build(&before), build(&after));
        assert_ne!(before.config_map, after.config_map);
        assert_eq!(before.deployment, after.deployment);
        assert_eq!(before.service, after.service);
        assert_eq!(before.ingress, after.ingress);
    }

    #[test]
    fn a_deployment_field_change_rolls_the_pods() {
        let before = weather();
        let mut after = weather();
        after.spec.deployment.log_level = Some(crate::resource::RuntimeLogLevel::Trace);
        assert_ne!(
            build(&before).deployment.spec.template,
            build(&after).deployment.spec.template
        );
    }

    #[test]
    fn listed_secrets_are_mounted_read_only_where_the_runtime_looks() {
        let server = server(
            r#"
            metadata: {name: api, namespace: tools}
            spec:
              secrets: [upstream-token]
              tools: [{name: hi, content: [{type: text, text: hi}]}]
            "#,
        );
        let pod = build(&server).deployment.spec.template.spec.unwrap();
        let container = &pod.containers[0];
        let mount = container
            .volume_mounts
            .iter()
            .flatten()
            .find(|m| m.mount_path == "/var/run/kube-mcp/secrets/upstream-token")
            .unwrap();
        assert_eq!(mount.read_only, Some(true));
        let volume = pod
            .volumes
            .iter()
            .flatten()
            .find(|v| v.name == mount.name)
            .unwrap();
        assert_eq!(
            volume.secret.as_ref().unwrap().secret_name.as_deref(),
            Some("upstream-token")
        );
    }

    /// The projected ServiceAccount token volumes of a pod, as (volume name, audience, mount).
    fn token_volumes(children: &Children) -> Vec<(String, String, String)> {
        let pod = children.deployment.spec.template.spec.clone().unwrap();
        let mounts = pod.containers[0].volume_mounts.clone().unwrap_or_default();
        pod.volumes
            .unwrap_or_default()
            .into_iter()
            .filter_map(|volume| {
                let projection = volume.projected?.sources?.into_iter().next()?;
                let token = projection.service_account_token?;
                assert_eq!(
                    token.expiration_seconds,
                    Some(SERVICE_ACCOUNT_TOKEN_SECONDS)
                );
                assert_eq!(token.path, "token");
                let mount = mounts.iter().find(|m| m.name == volume.name).unwrap();
                assert_eq!(mount.read_only, Some(true));
                Some((volume.name, token.audience?, mount.mount_path.clone()))
            })
            .collect()
    }

    const SA_TOKEN_TOOLS: &str = r#"
            metadata: {name: api, namespace: tools}
            spec:
              auth: {issuer: "https://idp.example.com", audiences: ["https://mcp.example.com"]}
              tools:
                - name: mine
                  http:
                    url: https://tracker.example.com/me
                    auth:
                      tokenExchange:
                        tokenUrl: https://idp.example.com/token
                        client: {id: kube-mcp, serviceAccountToken: {audience: "https://idp.example.com"}}
                        actor:
                          client: {id: actor, serviceAccountToken: {audience: actor-audience}}
                - name: service
                  http:
                    url: https://tracker.example.com/all
                    auth:
                      clientCredentials:
                        tokenUrl: https://idp.example.com/token
                        client: {id: kube-mcp, serviceAccountToken: {audience: "https://idp.example.com"}}
            "#;

    #[test]
    fn a_projected_token_is_mounted_per_audience_where_the_runtime_reads_it() {
        let server = server(SA_TOKEN_TOOLS);
        let children = build(&server);
        let root = std::path::Path::new(SERVICE_ACCOUNT_TOKENS_DIR);
        let found = token_volumes(&children);
        assert_eq!(found.len(), 2, "{found:?}");
        for audience in ["https://idp.example.com", "actor-audience"] {
            let (name, _, mount) = found.iter().find(|(_, a, _)| a == audience).unwrap();
            assert_eq!(name, &mcp_declaration::token_dir_name(audience));
            // The file the runtime reads, by the same rule.
            assert_eq!(
                std::path::Path::new(mount).join("token"),
                mcp_declaration::service_account_token_path(root, audience)
            );
        }
        let pod = children.deployment.spec.template.spec.unwrap();
        // The projected volumes do not need the automounted token, which stays off.
        assert_eq!(pod.automount_service_account_token, Some(false));
        // No flag: the mount is the runtime's default directory.
        assert!(
            !runtime_args(&build(&server))
                .iter()
                .any(|a| a.contains("tokens-dir"))
        );
    }

    #[test]
    fn no_projected_token_without_a_service_account_token_client() {
        let weather = build(&weather());
        assert!(token_volumes(&weather).is_empty());
        let secret = server(
            r#"
            metadata: {name: api, namespace: tools}
            spec:
              secrets: [idp]
              tools:
                - name: service
                  http:
                    url: https://tracker.example.com/all
                    auth:
                      clientCredentials:
                        tokenUrl: https://idp.example.com/token
                        client: {id: kube-mcp, secretKeyRef: {name: idp, key: secret}}
            "#,
        );
        assert!(token_volumes(&build(&secret)).is_empty());
    }

    #[test]
    fn an_included_sets_service_account_token_client_is_mounted_too() {
        let server = server(
            r#"
            metadata: {name: api, namespace: tools}
            spec:
              include: [{name: tracker}]
              tools: [{name: hi, content: [{type: text, text: hi}]}]
            "#,
        );
        let set: mcp_declaration::ToolSetSpec = serde_yaml_ng::from_str(
            r#"
            tools:
              - name: service
                http:
                  url: https://tracker.example.com/all
                  auth:
                    clientCredentials:
                      tokenUrl: https://idp.example.com/token
                      client: {id: kube-mcp, serviceAccountToken: {audience: from-the-set}}
            "#,
        )
        .unwrap();
        let fragments = Fragments {
            sets: vec![mcp_declaration::ToolSet {
                namespace: "tools".into(),
                name: "tracker".into(),
                labels: Default::default(),
                spec: set,
            }],
            grants: Vec::new(),
        };
        let accepted = validate(&server, false, 1, &fragments).unwrap();
        let children = children_of(&server, &accepted, &BuildConfig::default());
        let found = token_volumes(&children);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].1, "from-the-set");
    }

    #[test]
    fn telemetry_turns_on_tracing_and_audit_in_the_runtime() {
        let server = server(
            r#"
            metadata: {name: api, namespace: tools}
            spec:
              tools: [{name: hi, content: [{type: text, text: hi}]}]
              telemetry: {otlpEndpoint: "http://collector.obs:4318", samplingPercent: 25, audit: true}
              env: [{name: OTEL_SERVICE_NAME, value: mine}, {name: OTEL_EXPORTER_OTLP_HEADERS, value: "x=1"}]
            "#,
        );
        let pod = build(&server).deployment.spec.template.spec.unwrap();
        let container = &pod.containers[0];
        let args = container.args.clone().unwrap().join(" ");
        assert!(
            args.contains("--otlp-endpoint http://collector.obs:4318"),
            "{args}"
        );
        assert!(args.contains("--audit-log stdout"), "{args}");
        let env: Vec<(String, String)> = container
            .env
            .iter()
            .flatten()
            .filter(|e| e.name != "KUBE_MCP_POD_IP")
            .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
            .collect();
        let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        // The spec's own OTEL_SERVICE_NAME wins; names stay unique (server-side apply needs it).
        assert_eq!(
            env,
            pairs(&[
                (
                    "OTEL_RESOURCE_ATTRIBUTES",
                    "k8s.namespace.name=tools,kube_mcp.server=api"
                ),
                ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
                ("OTEL_TRACES_SAMPLER_ARG", "0.25"),
                ("OTEL_SERVICE_NAME", "mine"),
                ("OTEL_EXPORTER_OTLP_HEADERS", "x=1"),
            ])
        );
        // Without an endpoint nothing of tracing is set; audit alone still works.
        let quiet = self::server(
            r#"
            metadata: {name: api, namespace: tools}
            spec:
              tools: [{name: hi, content: [{type: text, text: hi}]}]
              telemetry: {audit: true}
            "#,
        );
        let pod = build(&quiet).deployment.spec.template.spec.unwrap();
        let container = &pod.containers[0];
        let names: Vec<&str> = container
            .env
            .iter()
            .flatten()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(names, ["KUBE_MCP_POD_IP"]);
        let args = container.args.clone().unwrap().join(" ");
        assert!(!args.contains("--otlp-endpoint") && args.contains("--audit-log stdout"));
    }

    #[test]
    fn replicas_advertise_their_pod_ip_and_admit_each_other() {
        let server = server(
            r#"
            metadata: {name: api, namespace: tools}
            spec:
              tools: [{name: hi, content: [{type: text, text: hi}]}]
              env: [{name: KUBE_MCP_POD_IP, value: "10.9.9.9"}]
            "#,
        );
        // Validation refuses that `env` entry; built anyway, it still cannot replace the pod IP.
        assert!(validate(&server, false, 1, &Fragments::default()).is_err());
        let mut accepted_spec = server.clone();
        accepted_spec.spec.deployment.env.clear();
        let accepted = validate(&accepted_spec, false, 1, &Fragments::default()).unwrap();
        let built = children_of(&server, &accepted, &BuildConfig::default());
        let pod = built.deployment.spec.template.spec.unwrap();
        let container = &pod.containers[0];
        let args = container.args.clone().unwrap();
        assert!(
            args.windows(2)
                .any(|w| w == ["--advertise-address", "$(KUBE_MCP_POD_IP)"]),
            "{args:?}"
        );
        // The downward API's pod IP, which the spec cannot replace.
        let env = container.env.clone().unwrap();
        assert_eq!(env.len(), 1, "{env:?}");
        let field = env[0].value_from.as_ref().unwrap().field_ref.as_ref();
        assert_eq!(field.unwrap().field_path, "status.podIP");

        let config = BuildConfig {
            network: NetworkConfig {
                enabled: true,
                ..Default::default()
            },
            ..BuildConfig::default()
        };
        let policy = children_of(&server, &accepted, &config)
            .network_policy
            .unwrap();
        let rules = policy.spec.unwrap().ingress.unwrap();
        assert_eq!(rules.len(), 1);
        let peers = rules[0].from.clone().unwrap();
        assert_eq!(peers.len(), 1);
        assert_eq!(peers[0].namespace_selector, None);
        let pods = peers[0].pod_selector.clone().unwrap().match_labels.unwrap();
        assert_eq!(pods, super::meta::selector_labels(&server));
    }

    #[test]
    fn during_a_rotation_the_pods_mount_the_previous_key_to_open_with() {
        let server = weather();
        let accepted = validate(&server, false, 1, &Fragments::default()).unwrap();
        let rotating = SessionKeys {
            previous: Some("weather-session-key-cccccccccc".into()),
            rotated_at: Some("2026-12-02T12:00:00Z".parse().unwrap()),
            ..keys()
        };
        let config = BuildConfig::default();
        let built = children(
            &server,
            &accepted.data,
            &accepted.hash,
            &config,
            &rotating,
            &accepted.service_account_audiences,
            &accepted.approver_groups,
        );
        let annotations = built.deployment.metadata.annotations.clone().unwrap();
        assert_eq!(
            annotations["kube-mcp.io/previous-session-key"],
            "weather-session-key-cccccccccc"
        );
        assert_eq!(
            annotations["kube-mcp.io/session-key-rotated-at"],
            "2026-12-02T12:00:00Z"
        );
        let pod = built.deployment.spec.template.spec.unwrap();
        let volume = pod
            .volumes
            .unwrap()
            .into_iter()
            .find(|v| v.name == "previous-session-key")
            .unwrap();
        assert_eq!(
            volume.secret.unwrap().secret_name.as_deref(),
            Some("weather-session-key-cccccccccc")
        );
        let args = pod.containers[0].args.clone().unwrap();
        assert!(args.windows(2).any(|w| w
            == [
                "--previous-session-key-file",
                &format!("{PREVIOUS_SESSION_KEY_DIR}/key")
            ]));
        // Settled again: one key, no flag.
        let settled = children_of(&server, &accepted, &config);
        let args = settled.deployment.spec.template.spec.unwrap().containers[0]
            .args
            .clone()
            .unwrap();
        assert!(!args.iter().any(|a| a == "--previous-session-key-file"));
    }

    #[test]
    fn the_template_hash_changes_with_the_pods_only() {
        let hash = |server: &MCPServer, config: &BuildConfig| {
            let children = children_of(
                server,
                &validate(server, false, 1, &Fragments::default()).unwrap(),
                config,
            );
            children.deployment.metadata.annotations.unwrap()[TEMPLATE_HASH_ANNOTATION].clone()
        };
        let config = BuildConfig::default();
        let before = hash(&weather(), &config);
        // A declaration change reaches the ConfigMap only: no rollout.
        let mut edited = weather();
        edited.spec.declaration.title = Some("Weather, edited".into());
        assert_eq!(hash(&edited, &config), before);
        // A new runtime image (an operator upgrade) is a rollout.
        let upgraded = BuildConfig {
            runtime_image: "ghcr.io/kube-mcp/kube-mcp:next".into(),
            ..BuildConfig::default()
        };
        assert_ne!(hash(&weather(), &upgraded), before);
    }

    #[test]
    fn the_session_key_is_an_immutable_owned_secret() {
        let secret = session_key(&weather(), "weather-session-key-bbbbbbbbbb", [7; 32]);
        assert_eq!(
            secret.metadata.name.as_deref(),
            Some("weather-session-key-bbbbbbbbbb")
        );
        assert_eq!(secret.immutable, Some(true));
        assert_eq!(secret.data.unwrap()["key"].0.len(), 32);
        let owner = &secret.metadata.owner_references.unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.controller),
            ("MCPServer", Some(true))
        );
    }
}
