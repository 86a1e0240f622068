//! The `mcp-runtime` command line: parses flags and calls the library.

use clap::{Args, Parser, Subcommand, ValueEnum};
use mcp_declaration::{
    CompileOptions, DEFAULT_FUEL, DEFAULT_SECRETS_DIR, DEFAULT_SERVICE_ACCOUNT_TOKENS_DIR,
    Transports,
};
use mcp_http::app::{RunConfig, run};
use mcp_http::auth::{AuthSettings, KeySettings};
use mcp_http::transport::{HttpSettings, OriginPolicy, check_path_prefix};
use mcp_server::ServerSettings;
use mcp_server::clients::default_share;
use mcp_server::sessions::SessionSettings;
use mcp_server::{audit, telemetry};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

mod approvals_cli;
use approvals_cli::ApprovalsArgs;

/// jemalloc instead of glibc's allocator. Measured (bench/results/2026-12-01-hotpath.md): a
/// stateless `tools/call` allocates and frees a few dozen small blocks, which glibc serves at
/// about twice the instructions; and an idle HTTP+SSE connection's 8 KiB buffers, mostly never
/// written, stay out of RSS (jemalloc keeps no header inside small blocks): 10,000 idle sessions
/// took 164 MiB with glibc, 126 MiB with jemalloc.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Serves the tools, resources and prompts an MCPServer manifest declares, to MCP clients of
/// every protocol era (2026-07-28 stateless, Streamable HTTP sessions, HTTP+SSE).
#[derive(Parser)]
#[command(name = "mcp-runtime", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the approvals of a local `serve --approvals-dir DIR`.
    #[command(subcommand)]
    Approvals(approvals_cli::ApprovalsCommand),
    /// Approve a pending approval of a local `serve --approvals-dir DIR` (recorded as the OS
    /// user); the caller then calls again with the same arguments, and the call runs once.
    Approve(approvals_cli::DecideArgs),
    /// Deny a pending approval of a local `serve --approvals-dir DIR` (recorded as the OS user).
    Deny(approvals_cli::DecideArgs),
    /// Serve a manifest until SIGTERM or Ctrl-C (the manifest is reloaded live when it changes).
    Serve(Box<ServeArgs>),
    /// Write an MCPServer manifest from an API description.
    #[command(subcommand)]
    Import(mcp_openapi::import::ImportCommand),
    /// Compile manifests offline as the operator would; exit status 1 if any is refused.
    Check(mcp_openapi::check::CheckArgs),
}

#[derive(Args)]
struct ServeArgs {
    /// MCPServer manifest (YAML as for `kubectl apply`, or the config the operator renders).
    /// Repeatable, and a directory stands for its *.yaml, *.yml, *.json (and .gz) files: one
    /// MCPServer among them, with the MCPToolSets (and MCPToolSetGrants) its spec.include takes.
    #[arg(long, value_name = "FILE|DIR", required = true)]
    manifest: Vec<PathBuf>,
    /// Address of the MCP endpoints (/mcp, /sse, /messages).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Address of the admin endpoints (/healthz, /readyz, /metrics).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9090")]
    admin_listen: SocketAddr,
    /// Allowed Host header value (repeatable; without a port it matches any port; `*` allows
    /// any). Default: localhost, 127.0.0.1, [::1].
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_hosts: Vec<String>,
    /// Allowed Origin (repeatable; `scheme://host[:port]`, without a port any port; `*` allows
    /// any). Requests without Origin are always allowed. Default: http(s) on localhost,
    /// 127.0.0.1, [::1].
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    allowed_origins: Vec<String>,
    /// Path prefix under which an ingress or gateway exposes this server, such as /weather: the
    /// endpoints are served under it (as well as at the root) and the HTTP+SSE endpoint event
    /// points there.
    #[arg(long, value_name = "PATH", default_value = "", value_parser = check_path_prefix)]
    path_prefix: String,
    /// Canonical URL of this server as clients reach it, path prefix included (such as
    /// https://mcp.example.com/weather): the resource that `spec.auth` protects, the default
    /// accepted token audience, and the base of the resource metadata URL. Default on a
    /// loopback --listen address: http://ADDR followed by --path-prefix; otherwise required
    /// with spec.auth.
    #[arg(long, value_name = "URL")]
    public_url: Option<String>,
    /// The transports served, comma-separated: modern (2026-07-28 stateless on POST /mcp),
    /// streamable (2025-era Streamable HTTP sessions on /mcp), sse (deprecated 2024-11-05
    /// HTTP+SSE, GET /sse + POST /messages). A manifest's spec.transports can narrow it
    /// further; a path of a transport turned off answers 404 with a hint.
    #[arg(long, value_name = "LIST", default_value = "modern,streamable,sse", value_parser = Transports::parse)]
    transports: Transports,
    /// Serve the server card (SEP-2127, a draft) at <mcp path>/server-card: public, any origin
    /// may read it; its remotes are under --public-url.
    #[arg(long)]
    server_card: bool,
    /// Largest accepted request body, in bytes (larger: 413).
    #[arg(long, value_name = "BYTES", default_value_t = HttpSettings::default().max_body_bytes)]
    max_body_bytes: usize,
    /// Most bytes held for all clients at once: parsed messages (weighed before parsing) while
    /// their requests run, and HTTP+SSE answers not yet written. Over it, 503 + Retry-After.
    #[arg(long, value_name = "BYTES", default_value_t = HttpSettings::default().max_held_bytes)]
    max_held_bytes: usize,
    /// Most bytes one legacy session holds: its parsed requests while they run, its client's
    /// answers to questions, HTTP+SSE answers not yet written. Over it, a Streamable HTTP
    /// request gets 503; an HTTP+SSE session ends.
    #[arg(long, value_name = "BYTES", default_value_t = SessionSettings::default().max_session_bytes)]
    max_session_bytes: usize,
    /// End a legacy session after this long without requests or an open stream.
    #[arg(long, value_name = "DURATION", default_value_t = SessionSettings::default().idle_timeout.into())]
    session_idle_timeout: humantime::Duration,
    /// End a legacy session that served no request after its `initialize` (and has no open
    /// stream) this soon.
    #[arg(long, value_name = "DURATION", default_value_t = SessionSettings::default().unused_timeout.into(), value_parser = positive_duration)]
    session_unused_timeout: humantime::Duration,
    /// Most legacy sessions, and most 2026-07-28 subscriptions/listen streams, open at once;
    /// more are refused with 503. The MCP port serves twice as many connections, and the
    /// runtime raises its open-files limit to match (up to the hard limit; it warns below).
    #[arg(long, value_name = "N", default_value_t = SessionSettings::default().max_sessions)]
    max_sessions: usize,
    /// Most legacy sessions one client holds at once (a client: its principal under
    /// spec.auth, else its address, see --trusted-proxy); more are refused with 429 naming
    /// this flag. Default: a quarter of --max-sessions.
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    max_sessions_per_client: Option<usize>,
    /// Most 2026-07-28 subscriptions/listen streams one client holds open; more are refused
    /// with 429 naming this flag. Default: a quarter of --max-sessions.
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    max_listen_streams_per_client: Option<usize>,
    /// Most upstream-backed resources polled at once for one client's subscriptions (of 256
    /// per replica); past it a subscription is kept but not polled. Default: a quarter of 256.
    #[arg(long, value_name = "N", default_value_t = ServerSettings::default().max_polled_per_client, value_parser = at_least_one)]
    max_polled_per_client: usize,
    /// A proxy in front of this server, such as the ingress controller's pod network
    /// 10.244.0.0/16 (repeatable, or comma-separated): for a connection from one, the client
    /// is the rightmost X-Forwarded-For address that is not a trusted proxy. Default: none
    /// (the connection's peer is the client; X-Forwarded-For is ignored). Behind a proxy
    /// without this, all its clients share one client's shares.
    #[arg(long = "trusted-proxy", value_name = "CIDR", value_delimiter = ',')]
    trusted_proxies: Vec<ipnet::IpNet>,
    /// Let declared upstreams be at link-local addresses (169.254.0.0/16, fe80::/10,
    /// fd00:ec2::254), where clouds serve instance metadata and the node's or pod's
    /// credentials. Off by default: a URL naming one is refused when compiled, and a name that
    /// resolves only to one fails to connect.
    #[arg(long)]
    allow_link_local_upstreams: bool,
    /// Interval of server pings on open session streams (0s disables).
    #[arg(long, value_name = "DURATION", default_value_t = SessionSettings::default().ping_interval.unwrap_or_default().into())]
    ping_interval: humantime::Duration,
    /// End a session whose client leaves a ping unanswered this long.
    #[arg(long, value_name = "DURATION", default_value_t = SessionSettings::default().ping_timeout.into())]
    ping_timeout: humantime::Duration,
    /// File with the 32-byte key shared by all replicas, so any replica serves any session.
    /// Default: a random key (one replica only).
    #[arg(long, value_name = "FILE")]
    session_key_file: Option<PathBuf>,
    /// File with the key --session-key-file replaced, while a rotation is under way: ids and
    /// tokens it sealed still open (until they expire; sessions live at most 24 hours), and
    /// nothing new is sealed with it.
    #[arg(long, value_name = "FILE", requires = "session_key_file")]
    previous_session_key_file: Option<PathBuf>,
    /// This replica's address as the other replicas reach it (IP, or IP:PORT; without a port,
    /// the --listen port), such as the pod IP. The sessions it opens name it, and a request
    /// another replica (with the same --session-key-file and this flag) receives for one of
    /// them is forwarded here, so a session's stream, log level, subscriptions and answers to
    /// the server's questions all meet on one replica. Default: no routing.
    #[arg(long, value_name = "ADDR", value_parser = advertise_address)]
    advertise_address: Option<Advertised>,
    /// A network the replicas live in, such as the pod network 10.244.0.0/16 (repeatable): a
    /// session whose sealed owner lies outside every one is served here, its owner never
    /// dialled. Default: the private (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) and
    /// loopback ranges.
    #[arg(long = "replica-network", value_name = "CIDR")]
    replica_networks: Vec<ipnet::IpNet>,
    /// Interval of `:` keep-alive comments on SSE streams (keeps proxies from cutting them).
    #[arg(long, value_name = "DURATION", default_value_t = HttpSettings::default().keepalive.into(), value_parser = positive_duration)]
    sse_keepalive: humantime::Duration,
    /// How often the manifest is checked for changes.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = positive_duration)]
    reload_interval: humantime::Duration,
    /// Longest wait for open connections and streams after SIGTERM.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = humantime::parse_duration)]
    shutdown_timeout: Duration,
    /// Close a kept-alive connection that sends no new request this long (both ports; HTTP/2:
    /// no stream open this long). Keep it longer than any proxy in front keeps idle upstream
    /// connections, so that the proxy closes them first.
    #[arg(long, value_name = "DURATION", default_value_t = mcp_http::listener::DEFAULT_IDLE_TIMEOUT.into(), value_parser = positive_duration)]
    connection_idle_timeout: humantime::Duration,
    /// Items per page of list results.
    #[arg(long, value_name = "N", default_value_t = ServerSettings::default().page_size, value_parser = page_size)]
    page_size: usize,
    /// Work one template render may do (bounds runaway templates).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_FUEL)]
    template_fuel: u64,
    /// Directory of the Secrets that `secretKeyRef`s name: a reference `{name, key}` reads the
    /// file `<DIR>/<name>/<key>` (the operator mounts each Secret at `<DIR>/<name>`).
    #[arg(long, value_name = "DIR", default_value = DEFAULT_SECRETS_DIR)]
    secrets_dir: PathBuf,
    /// Directory of the projected ServiceAccount tokens that `serviceAccountToken` clients of
    /// `http.auth` send as their client assertion: the token for an audience is the file
    /// `<DIR>/aud-<hash of the audience>/token` (the operator mounts one per audience there),
    /// read again for each token request, since the kubelet rotates it.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_SERVICE_ACCOUNT_TOKENS_DIR)]
    service_account_tokens_dir: PathBuf,
    /// Log format on stderr.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Log level (trace, debug, info, warn, error); RUST_LOG overrides it.
    #[arg(long, value_name = "LEVEL", default_value = "info")]
    log_level: String,
    /// OTLP/HTTP collector base URL, such as http://127.0.0.1:4318: traces each request and its
    /// upstream calls (spans go to URL/v1/traces). Off when neither this nor
    /// OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set; the other
    /// standard OTEL_* variables (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
    /// OTEL_TRACES_SAMPLER, OTEL_BSP_*, OTEL_EXPORTER_OTLP_HEADERS) apply.
    #[arg(long, value_name = "URL")]
    otlp_endpoint: Option<String>,
    /// Longest an active answer of token introspection (opaque tokens) is trusted: a revoked
    /// token stops working within this, whatever its `exp`.
    #[arg(long, value_name = "DURATION", default_value_t = KeySettings::default().introspection_ttl.into(), value_parser = positive_duration)]
    introspection_cache_ttl: humantime::Duration,
    /// Most token introspection requests per second; more unknown opaque tokens get 503.
    #[arg(long, value_name = "N", default_value_t = KeySettings::default().introspection_rate)]
    introspection_rate: u32,
    /// Where audit records of tool calls and resource reads go, as JSON lines.
    #[arg(long, value_enum, default_value_t = AuditLog::Off)]
    audit_log: AuditLog,
    #[command(flatten)]
    approvals: ApprovalsArgs,
}

#[derive(Clone, Copy, ValueEnum)]
enum AuditLog {
    /// No audit records.
    Off,
    /// Standard output (logs stay on standard error).
    Stdout,
    /// Standard error, among the log lines.
    Stderr,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

fn main() -> ExitCode {
    let args = match Cli::parse().command {
        Command::Serve(args) => args,
        Command::Import(command) => return mcp_openapi::import::run_cli(command),
        Command::Check(args) => return mcp_openapi::check::run_cli(args),
        Command::Approvals(command) => return approvals_cli::list(&command),
        Command::Approve(args) => return approvals_cli::decide(&args, true),
        Command::Deny(args) => return approvals_cli::decide(&args, false),
    };
    init_logging(args.log_format, &args.log_level);
    let observers = observers(&args);
    let served = observers.and_then(|endpoint| {
        let config = config(*args)?;
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(anyhow::Error::from)
            .and_then(|runtime| runtime.block_on(run_observed(endpoint, config)))
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // The whole cause chain on one line, without a backtrace: this is for operators.
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Starts the audit writer and decides where spans go (tracing itself starts in the runtime).
fn observers(args: &ServeArgs) -> anyhow::Result<Option<telemetry::Endpoint>> {
    let endpoint = telemetry::endpoint(args.otlp_endpoint.as_deref(), |name| {
        std::env::var(name).ok()
    })?;
    audit::init(match args.audit_log {
        AuditLog::Off => audit::AuditTarget::Off,
        AuditLog::Stdout => audit::AuditTarget::Stdout,
        AuditLog::Stderr => audit::AuditTarget::Stderr,
    })?;
    Ok(endpoint)
}

/// Serves with tracing on when asked, then exports the last spans and audit records.
async fn run_observed(
    endpoint: Option<telemetry::Endpoint>,
    config: RunConfig,
) -> anyhow::Result<()> {
    let telemetry = telemetry::init(endpoint)?;
    let served = run(config).await;
    // Both flushes block (bounded): off the async workers.
    let _ = tokio::task::spawn_blocking(move || {
        if let Some(telemetry) = telemetry {
            telemetry.shutdown();
        }
        audit::flush();
    })
    .await;
    served
}

fn config(args: ServeArgs) -> anyhow::Result<RunConfig> {
    let approvals = args.approvals.store_config()?;
    let prefix = args.path_prefix.trim_end_matches('/').to_owned();
    let defaults = OriginPolicy::default();
    let origins = OriginPolicy {
        hosts: if args.allowed_hosts.is_empty() {
            defaults.hosts
        } else {
            args.allowed_hosts
        },
        origins: if args.allowed_origins.is_empty() {
            defaults.origins
        } else {
            args.allowed_origins
        },
    };
    Ok(RunConfig {
        approvals,
        manifests: args.manifest,
        listen: args.listen,
        admin_listen: args.admin_listen,
        http: HttpSettings {
            origins,
            path_prefix: args.path_prefix,
            server_card: args.server_card,
            transports: args.transports,
            max_body_bytes: args.max_body_bytes,
            max_held_bytes: args.max_held_bytes,
            keepalive: args.sse_keepalive.into(),
            trusted_proxies: args.trusted_proxies,
            max_listen_streams_per_client: args
                .max_listen_streams_per_client
                .unwrap_or_else(|| default_share(args.max_sessions)),
            ..HttpSettings::default()
        },
        sessions: SessionSettings {
            idle_timeout: args.session_idle_timeout.into(),
            unused_timeout: args.session_unused_timeout.into(),
            max_sessions: args.max_sessions,
            max_sessions_per_client: args
                .max_sessions_per_client
                .unwrap_or_else(|| default_share(args.max_sessions)),
            ping_interval: (!args.ping_interval.is_zero()).then_some(args.ping_interval.into()),
            ping_timeout: args.ping_timeout.into(),
            max_session_bytes: args.max_session_bytes,
        },
        session_key_file: args.session_key_file,
        previous_session_key_file: args.previous_session_key_file,
        advertise_address: args.advertise_address.map(|advertised| match advertised {
            Advertised::Address(address) => address,
            Advertised::Ip(ip) => SocketAddr::new(ip, args.listen.port()),
        }),
        replica_networks: args.replica_networks,
        server: ServerSettings {
            page_size: args.page_size,
            max_polled_per_client: args.max_polled_per_client,
        },
        compile: CompileOptions {
            template_fuel: args.template_fuel,
            read_files: true,
            secrets_dir: Some(args.secrets_dir.clone()),
            service_account_tokens_dir: args.service_account_tokens_dir,
            allow_link_local_upstreams: args.allow_link_local_upstreams,
        },
        reload_interval: args.reload_interval.into(),
        shutdown_timeout: args.shutdown_timeout,
        connection_idle_timeout: args.connection_idle_timeout.into(),
        auth: AuthSettings {
            public_url: args.public_url.or_else(|| {
                // Local development: the address clients on this machine use.
                args.listen
                    .ip()
                    .is_loopback()
                    .then(|| format!("http://{}{}", args.listen, prefix))
            }),
            secrets_dir: Some(args.secrets_dir),
            keys: KeySettings {
                introspection_ttl: args.introspection_cache_ttl.into(),
                introspection_rate: args.introspection_rate,
                ..KeySettings::default()
            },
        },
    })
}

/// An `--advertise-address`: with or without a port.
#[derive(Clone, Copy)]
enum Advertised {
    Address(SocketAddr),
    Ip(IpAddr),
}

/// An address other replicas can connect to: a specific IP (IPv6 in brackets when a port
/// follows), and a port other than 0.
fn advertise_address(value: &str) -> Result<Advertised, String> {
    let parsed = match (value.parse::<SocketAddr>(), value.parse::<IpAddr>()) {
        (Ok(address), _) if address.port() != 0 => Advertised::Address(address),
        (_, Ok(ip)) => Advertised::Ip(ip),
        _ => return Err("expected an IP address, or IP:PORT ([IPv6]:PORT)".into()),
    };
    let ip = match parsed {
        Advertised::Address(address) => address.ip(),
        Advertised::Ip(ip) => ip,
    };
    if ip.is_unspecified() || ip.is_multicast() {
        return Err("other replicas cannot connect to this address".into());
    }
    Ok(parsed)
}

/// A count of at least one.
fn at_least_one(value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("expected a whole number of at least 1".into()),
    }
}

/// A page size: 1 to 65535 items.
fn page_size(value: &str) -> Result<usize, String> {
    match value.parse::<u16>() {
        Ok(size) if size >= 1 => Ok(usize::from(size)),
        _ => Err("expected a number from 1 to 65535".into()),
    }
}

fn init_logging(format: LogFormat, level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// A duration above zero (a zero interval would spin or panic the timer that uses it).
fn positive_duration(text: &str) -> Result<humantime::Duration, String> {
    match humantime::parse_duration(text) {
        Ok(duration) if duration.is_zero() => Err("must be longer than zero".into()),
        Ok(duration) => Ok(duration.into()),
        Err(err) => Err(err.to_string()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn advertised_addresses_are_ones_replicas_can_reach() {
        use super::{Advertised, advertise_address};
        assert!(matches!(
            advertise_address("10.1.2.3"),
            Ok(Advertised::Ip(_))
        ));
        assert!(matches!(
            advertise_address("fd00::7"),
            Ok(Advertised::Ip(_))
        ));
        assert!(matches!(
            advertise_address("[fd00::7]:8080"),
            Ok(Advertised::Address(a)) if a.port() == 8080
        ));
        for bad in [
            "0.0.0.0",
            "[::]:8080",
            "10.1.2.3:0",
            "pod.local:8080",
            "",
            "224.0.0.1",
        ] {
            assert!(advertise_address(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn intervals_must_be_longer_than_zero() {
        // `--reload-interval 0s` panicked the reload task.
        assert!(super::positive_duration("0s").is_err());
        assert!(super::positive_duration("soon").is_err());
        assert_eq!(
            super::positive_duration("250ms").map(std::time::Duration::from),
            Ok(std::time::Duration::from_millis(250))
        );
    }
}
