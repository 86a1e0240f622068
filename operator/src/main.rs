//! `mcp-operator`: command line only; the work is in the library.

use anyhow::Context as _;
use clap::{Parser, Subcommand, ValueEnum};
use mcp_operator::leader::LeaseConfig;
use mcp_operator::reconcile::build::{BuildConfig, NetworkConfig};
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
    Crd {
        /// Print the Helm chart's CRD template instead.
        #[arg(long)]
        helm_template: bool,
    },
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
    /// Log format.
    #[arg(long, env = "MCP_OPERATOR_LOG_FORMAT", value_enum, default_value_t = LogFormat::Json)]
    log_format: LogFormat,
    /// Log filter, such as `info` or `mcp_operator=debug,kube=info`.
    #[arg(long, env = "MCP_OPERATOR_LOG_LEVEL", default_value = "info")]
    log_level: String,
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
        Command::Crd { helm_template } => {
            let text = if helm_template {
                mcp_operator::resource::helm_crd_template()
            } else {
                mcp_operator::resource::crd_yaml()
            };
            print!("{}", text.context("cannot write the CRD as YAML")?);
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
            network: NetworkConfig {
                enabled: args.network_policies,
                ingress_namespaces: args.ingress_namespace,
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
        verify: match args.verify {
            Verify::Pods => verifier::Mode::Pods,
            Verify::ApiserverProxy => verifier::Mode::ApiServerProxy,
            Verify::Off => verifier::Mode::Off,
        },
        verify_grace: args.verify_grace,
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
