//! `mcp-operator`: command line only; the work is in the library.

use anyhow::Context as _;
use clap::{Parser, Subcommand, ValueEnum};
use mcp_operator::leader::LeaseConfig;
use mcp_operator::reconcile::build::{BuildConfig, NetworkConfig};
use mcp_operator::registry;
use mcp_operator::run::{RunConfig, run};
use mcp_operator::verifier;
use std::net::SocketAddr;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// jemalloc instead of glibc's allocator, as in the runtime: reconciles run on every worker
/// thread and free what they built (a parsed declaration is tens of KiB), which glibc keeps in
/// per-thread arenas; jemalloc returns it.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(version, about = "Runs MCPServer resources as mcp-runtime servers")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the controller.
    Run(Box<RunArgs>),
    /// Print the MCPServer CustomResourceDefinition (the YAML that crds/ holds).
    Crd,
    /// Print the MCPToolSet and MCPToolSetGrant CustomResourceDefinitions (crds/ holds them).
    ToolsetCrds,
    /// Print the MCPApproval CustomResourceDefinition (crds/ holds it).
    ApprovalCrd,
}

#[derive(clap::Args)]
struct RunArgs {
    /// Watch MCPServers in these namespaces only (repeatable, or comma-separated; default: all
    /// namespaces). Namespaced rights (a Role in each) are then enough.
    #[arg(
        long,
        alias = "namespace",
        env = "MCP_OPERATOR_NAMESPACES",
        value_delimiter = ','
    )]
    namespaces: Vec<String>,
    /// Runtime image for servers whose spec names none.
    #[arg(
        long,
        env = "MCP_OPERATOR_RUNTIME_IMAGE",
        default_value = "ghcr.io/kube-mcp/kube-mcp:latest"
    )]
    runtime_image: String,
    /// Pull policy for the runtime image (default: Kubernetes' default).
    #[arg(long, env = "MCP_OPERATOR_RUNTIME_IMAGE_PULL_POLICY")]
    runtime_image_pull_policy: Option<String>,
    /// DNS domain of the cluster.
    #[arg(
        long,
        env = "MCP_OPERATOR_CLUSTER_DOMAIN",
        default_value = "cluster.local"
    )]
    cluster_domain: String,
    /// Address of /healthz, /readyz and /metrics.
    #[arg(
        long,
        env = "MCP_OPERATOR_ADMIN_LISTEN",
        default_value = "127.0.0.1:9090"
    )]
    admin_listen: SocketAddr,
    /// Give every MCPServer a NetworkPolicy unless its spec turns it off.
    #[arg(long, env = "MCP_OPERATOR_NETWORK_POLICIES", default_value_t = false, action = clap::ArgAction::Set)]
    network_policies: bool,
    /// Namespace of an ingress controller or gateway whose pods may reach the MCP port
    /// (repeatable, or comma-separated).
    #[arg(long, env = "MCP_OPERATOR_INGRESS_NAMESPACES", value_delimiter = ',')]
    ingress_namespace: Vec<String>,
    /// Addresses that may reach the MCP port although they are no pod of a namespace: the
    /// nodes of a hostNetwork ingress controller, or a cloud load balancer that keeps the
    /// client's address (CIDRs, repeatable or comma-separated).
    #[arg(
        long,
        env = "MCP_OPERATOR_INGRESS_CIDRS",
        value_name = "CIDR",
        value_delimiter = ','
    )]
    ingress_cidr: Vec<ipnet::IpNet>,
    /// Network of the proxies in front of the servers, such as the ingress controller's pod
    /// network (CIDRs, repeatable or comma-separated): every runtime gets it as
    /// `--trusted-proxy`, so that its per-client shares count each client behind the proxy
    /// apart. Default: none (all clients of a proxy share one client's shares).
    #[arg(
        long,
        env = "MCP_OPERATOR_RUNTIME_TRUSTED_PROXY",
        value_name = "CIDR",
        value_delimiter = ','
    )]
    runtime_trusted_proxy: Vec<ipnet::IpNet>,
    /// Let declared upstreams be at link-local addresses (cloud instance metadata and
    /// credentials): the operator accepts such declarations and every runtime gets
    /// `--allow-link-local-upstreams`. Default: refused.
    #[arg(long, env = "MCP_OPERATOR_RUNTIME_ALLOW_LINK_LOCAL_UPSTREAMS")]
    runtime_allow_link_local_upstreams: bool,
    /// After a session key rotation (a new value of a server's `kube-mcp.io/rotate-session-key`
    /// annotation), how long the replaced key still opens what it sealed before it is unmounted
    /// and deleted. Below the runtime's 24-hour session limit, older sessions end early: after a
    /// leak, that is the point.
    #[arg(long, env = "MCP_OPERATOR_SESSION_KEY_OVERLAP", default_value = "25h", value_parser = humantime::parse_duration)]
    session_key_overlap: Duration,
    /// The transports every runtime serves (its `--transports`), such as `modern,streamable` to
    /// turn the deprecated HTTP+SSE off across the cluster; a server's `spec.transports` can
    /// narrow it further. Default: the runtime's (all three).
    #[arg(
        long,
        env = "MCP_OPERATOR_RUNTIME_TRANSPORTS",
        value_name = "LIST",
        value_parser = mcp_declaration::Transports::parse
    )]
    runtime_transports: Option<mcp_declaration::Transports>,
    /// Namespace whose pods may scrape the admin port (repeatable, or comma-separated).
    #[arg(
        long,
        env = "MCP_OPERATOR_MONITORING_NAMESPACES",
        value_delimiter = ','
    )]
    monitoring_namespace: Vec<String>,
    /// Elect a leader with a Lease, so that replicas never reconcile at once.
    #[arg(long, env = "MCP_OPERATOR_LEADER_ELECT", default_value_t = true, action = clap::ArgAction::Set)]
    leader_elect: bool,
    /// Namespace of the leader Lease (default: the pod's namespace).
    #[arg(long, env = "POD_NAMESPACE")]
    lease_namespace: Option<String>,
    /// Name of the leader Lease.
    #[arg(long, env = "MCP_OPERATOR_LEASE_NAME", default_value = "mcp-operator")]
    lease_name: String,
    /// This replica's name (default: the host name).
    #[arg(long, env = "POD_NAME")]
    identity: Option<String>,
    /// Have every runtime serve its server card (SEP-2127, a draft) at `<mcp url>/server-card`,
    /// and the registry list each host's cards at `/.well-known/ai-catalog.json`.
    #[arg(long, env = "MCP_OPERATOR_SERVER_CARDS", default_value_t = false, action = clap::ArgAction::Set)]
    server_cards: bool,
    #[command(flatten)]
    registry: RegistryArgs,
    /// How `Verified` asks each Ready pod which declaration it serves (`GET /declaration` on the
    /// runtime's admin port): `pods` straight to the pod IP (the operator runs in the cluster;
    /// the servers' NetworkPolicies admit its pods on the admin port), `apiserver-proxy` through
    /// the API server's pod proxy (an operator run outside the cluster; needs `get` on
    /// `pods/proxy`), `off` (no `Verified` condition).
    #[arg(long, env = "MCP_OPERATOR_VERIFY", value_enum, default_value_t = Verify::Pods)]
    verify: Verify,
    /// How long pods may keep serving an older declaration after a change before `Verified` is
    /// `False/StaleDeclaration` (until then `Unknown/Propagating`): a ConfigMap update takes up
    /// to about a minute to reach a pod's volume, plus the runtime's reload interval.
    #[arg(long, env = "MCP_OPERATOR_VERIFY_GRACE", default_value = "150s", value_parser = humantime::parse_duration)]
    verify_grace: Duration,
    /// Servers whose pods roll at once at most, when their pod template changes (an operator
    /// upgrade with a new runtime image, a key rotation): the others wait in line, their
    /// Deployments unchanged, with `status.rolloutQueued`. A slot is held until the Deployment
    /// has rolled out or passed its progress deadline. 0: no limit.
    #[arg(
        long,
        env = "MCP_OPERATOR_MAX_CONCURRENT_ROLLOUTS",
        default_value_t = 50
    )]
    max_concurrent_rollouts: usize,
    /// At start-up, raise the installed MCPServer CRD to this operator's revision, or install it
    /// when missing (server-side apply; a newer CRD is left alone). Off: only check it, and
    /// refuse to run while it is missing or older than the operator (stored servers would lose
    /// the fields it lacks).
    #[arg(long, env = "MCP_OPERATOR_MANAGE_CRD", default_value_t = true, action = clap::ArgAction::Set)]
    manage_crd: bool,
    /// Log format.
    #[arg(long, env = "MCP_OPERATOR_LOG_FORMAT", value_enum, default_value_t = LogFormat::Json)]
    log_format: LogFormat,
    /// Log filter, such as `info` or `mcp_operator=debug,kube=info`.
    #[arg(long, env = "MCP_OPERATOR_LOG_LEVEL", default_value = "info")]
    log_level: String,
}

/// The MCP Registry API and catalog page (off unless `--registry-listen` is given).
#[derive(clap::Args)]
struct RegistryArgs {
    /// Serve the MCP Registry API (`/v0.1/...`) and the catalog page (`/`) on this address;
    /// a bare port listens on 127.0.0.1. Off when absent.
    #[arg(long, env = "MCP_OPERATOR_REGISTRY_LISTEN", value_parser = listen_address)]
    registry_listen: Option<SocketAddr>,
    /// Reverse-DNS namespace of the published names: `<this>/<namespace>.<name>`.
    #[arg(long, env = "MCP_OPERATOR_REGISTRY_NAMESPACE", default_value = "local.kube-mcp", value_parser = registry_prefix)]
    registry_namespace: String,
    /// Publish every server of this namespace unless it sets `spec.registry.publish: false`
    /// (repeatable, or comma-separated).
    #[arg(
        long,
        env = "MCP_OPERATOR_REGISTRY_PUBLISH_NAMESPACES",
        value_delimiter = ','
    )]
    registry_publish_namespace: Vec<String>,
    /// Publish every server with this label (`key=value`) unless it opts out (repeatable).
    #[arg(long, env = "MCP_OPERATOR_REGISTRY_PUBLISH_LABELS", value_delimiter = ',', value_parser = registry_label)]
    registry_publish_label: Vec<(String, String)>,
    /// Deleted servers remembered, so clients syncing with `updated_since` learn of deletions.
    #[arg(long, env = "MCP_OPERATOR_REGISTRY_TOMBSTONES", default_value_t = 1000,
          value_parser = clap::value_parser!(u16).range(0..=10_000))]
    registry_tombstones: u16,
}

impl RegistryArgs {
    fn config(self, server_cards: bool) -> Option<registry::RegistryConfig> {
        let listen = self.registry_listen?;
        let mut namespaces = self.registry_publish_namespace;
        namespaces.retain(|n| !n.is_empty());
        Some(registry::RegistryConfig {
            listen,
            settings: registry::Settings {
                prefix: self.registry_namespace,
                namespaces,
                labels: self.registry_publish_label,
                max_tombstones: usize::from(self.registry_tombstones),
                server_cards,
            },
        })
    }
}

/// `HOST:PORT`, or a bare port on 127.0.0.1 (the registry is exposed only when asked).
fn listen_address(text: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = text.trim_start_matches(':').parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse()
        .map_err(|_| format!("`{text}` is not an address such as 127.0.0.1:8080"))
}

fn registry_prefix(text: &str) -> Result<String, String> {
    registry::parse_prefix(text).map_err(|e| e.to_string())
}

fn registry_label(text: &str) -> Result<(String, String), String> {
    registry::parse_label(text).map_err(|e| e.to_string())
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Verify {
    Pods,
    ApiserverProxy,
    Off,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Json,
    Text,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Crd => {
            let text = mcp_operator::resource::crd_yaml();
            print!("{}", text.context("cannot write the CRD as YAML")?);
            Ok(())
        }
        Command::ApprovalCrd => {
            let text = mcp_operator::resource::approval_crd_yaml();
            print!("{}", text.context("cannot write the CRD as YAML")?);
            Ok(())
        }
        Command::ToolsetCrds => {
            let text = mcp_operator::resource::toolset_crds_yaml();
            print!("{}", text.context("cannot write the CRDs as YAML")?);
            Ok(())
        }
        Command::Run(args) => run_operator(*args).await,
    }
}

async fn run_operator(args: RunArgs) -> anyhow::Result<()> {
    init_logs(args.log_format, &args.log_level)?;
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "mcp-operator".into());
    let instance = args.identity.clone().unwrap_or(host);
    let lease = if args.leader_elect {
        let namespace = args
            .lease_namespace
            .clone()
            .context("leader election needs --lease-namespace (or POD_NAMESPACE); or pass --leader-elect=false")?;
        // A random suffix keeps a restarted pod from mistaking its predecessor's lease for its own.
        let identity = format!("{instance}_{:08x}", rand::random::<u32>());
        Some(LeaseConfig {
            namespace,
            name: args.lease_name.clone(),
            identity,
            duration: Duration::from_secs(15),
            renew_every: Duration::from_secs(5),
        })
    } else {
        None
    };
    let config = RunConfig {
        namespaces: {
            let mut namespaces = args.namespaces;
            namespaces.retain(|n| !n.is_empty());
            namespaces.sort();
            namespaces.dedup();
            namespaces
        },
        build: BuildConfig {
            runtime_image: args.runtime_image,
            image_pull_policy: args.runtime_image_pull_policy,
            cluster_domain: args.cluster_domain,
            server_cards: args.server_cards,
            trusted_proxies: args.runtime_trusted_proxy,
            allow_link_local_upstreams: args.runtime_allow_link_local_upstreams,
            transports: args.runtime_transports,
            session_key_overlap: args.session_key_overlap,
            network: NetworkConfig {
                enabled: args.network_policies,
                ingress_namespaces: args.ingress_namespace,
                ingress_cidrs: args.ingress_cidr,
                monitoring_namespaces: args.monitoring_namespace,
                // The operator's pods may reach the admin port: `--verify=pods` asks there.
                operator_namespace: args
                    .lease_namespace
                    .clone()
                    .filter(|_| args.verify == Verify::Pods),
            },
        },
        admin_listen: args.admin_listen,
        lease,
        instance,
        registry: args.registry.config(args.server_cards),
        verify: match args.verify {
            Verify::Pods => verifier::Mode::Pods,
            Verify::ApiserverProxy => verifier::Mode::ApiServerProxy,
            Verify::Off => verifier::Mode::Off,
        },
        verify_grace: args.verify_grace,
        max_concurrent_rollouts: args.max_concurrent_rollouts,
        manage_crd: args.manage_crd,
    };
    let shutdown = CancellationToken::new();
    tokio::spawn(cancel_on_signal(shutdown.clone()));
    run(config, shutdown).await?;
    tracing::info!("stopped");
    Ok(())
}

/// Cancels `shutdown` on SIGTERM or Ctrl-C.
async fn cancel_on_signal(shutdown: CancellationToken) {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => drop(ctrl_c.await),
        }
    }
    #[cfg(not(unix))]
    drop(ctrl_c.await);
    shutdown.cancel();
}

fn init_logs(format: LogFormat, filter: &str) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_new(filter).context("invalid --log-level")?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().flatten_event(true).init(),
        LogFormat::Text => builder.init(),
    }
    Ok(())
}
