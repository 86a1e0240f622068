//! Running the runtime: load and compile the manifest, bind the MCP and admin ports, watch the
//! manifest, and drain on SIGTERM or Ctrl-C. The CLI in `main.rs` fills [`RunConfig`].

use crate::admin::routes::{self, AdminState};
use crate::auth::{AuthSettings, AuthState};
use crate::reload;
use crate::transport::{self, AppState, BodyBudget, Forwarder, HttpSettings};
use anyhow::Context as _;
use mcp_declaration::CompileOptions;
use mcp_server::approvals::StoreConfig;
use mcp_server::budget::Budget;
use mcp_server::metrics::Metrics;
use mcp_server::sessions::{Sealer, SessionSettings, SessionStore, read_key};
use mcp_server::{ListenLimit, Server, ServerSettings};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Everything `serve` needs.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// The manifests: files, or directories of them (one `MCPServer` and the `MCPToolSet`s and
    /// grants it includes).
    pub manifests: Vec<PathBuf>,
    /// MCP listen address.
    pub listen: SocketAddr,
    /// Admin listen address.
    pub admin_listen: SocketAddr,
    /// HTTP settings.
    pub http: HttpSettings,
    /// Session settings.
    pub sessions: SessionSettings,
    /// Shared session key file; `None` uses a random key (a single replica).
    pub session_key_file: Option<PathBuf>,
    /// The key `session_key_file` replaced, during a rotation: it opens what it sealed (session
    /// ids, hop and request-state tokens) and seals nothing. Needs `session_key_file`.
    pub previous_session_key_file: Option<PathBuf>,
    /// This replica's MCP address as the other replicas reach it: sealed into the ids of the
    /// sessions it opens, which the others then route here. `None`: no routing.
    pub advertise_address: Option<SocketAddr>,
    /// The networks replicas live in: a session owner outside them is never dialled (empty:
    /// private and loopback ranges).
    pub replica_networks: Vec<ipnet::IpNet>,
    /// Dispatch settings.
    pub server: ServerSettings,
    /// Compile settings.
    pub compile: CompileOptions,
    /// How often the manifest is checked for changes.
    pub reload_interval: Duration,
    /// Longest wait for open connections at shutdown.
    pub shutdown_timeout: Duration,
    /// Longest a kept-alive connection may wait for its next request (both ports).
    pub connection_idle_timeout: Duration,
    /// Authentication settings (used when the declaration has `spec.auth`).
    pub auth: AuthSettings,
    /// Where the approvals of gated tools (`tools[].approval`) are kept.
    pub approvals: StoreConfig,
}

/// Serves until SIGTERM or Ctrl-C.
pub async fn run(config: RunConfig) -> anyhow::Result<()> {
    let shutdown = CancellationToken::new();
    let signal = shutdown.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutdown requested; draining");
        signal.cancel();
    });
    crate::open_files::raise_for(max_connections(config.sessions.max_sessions));
    let (mcp, admin) = bind(&config).await?;
    serve(config, mcp, admin, shutdown).await
}

/// Connections the MCP port serves at once: each session may hold a stream's, with as many
/// again for requests (20,000 at the default 10,000 sessions).
fn max_connections(max_sessions: usize) -> usize {
    max_sessions.saturating_mul(2).max(256)
}

/// Binds both listeners (tests bind port 0 themselves and call [`serve`]).
pub async fn bind(config: &RunConfig) -> anyhow::Result<(TcpListener, TcpListener)> {
    let mcp = TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    let admin = TcpListener::bind(config.admin_listen)
        .await
        .with_context(|| format!("cannot listen on {} (admin)", config.admin_listen))?;
    Ok((mcp, admin))
}

/// Serves on bound listeners until `shutdown`.
pub async fn serve(
    config: RunConfig,
    mcp: TcpListener,
    admin: TcpListener,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let (compiled, served) = reload::load(&config.manifests, &config.compile);
    let compiled = compiled.map_err(|err| anyhow::anyhow!("invalid manifest: {err}"))?;
    let auth = Arc::new(AuthState::new(config.auth.clone()));
    // A declaration that asks for authentication must be servable with it from the start.
    auth.for_spec(&compiled)
        .context("cannot authenticate requests")?;
    let approvals = config
        .approvals
        .open()
        .context("cannot open the approval store")?;
    let groups = compiled.approver_groups();
    if approvals.is_none() && !groups.is_empty() {
        // Running a gated tool without a place for approvals would either run it unguarded
        // or never: refuse to start instead.
        anyhow::bail!(
            "the manifest declares approvals (tools[].approval, approvers {}) but no approval \
             store is configured: pass --approvals-dir DIR (local) or --approvals-kube (in a cluster)",
            groups.join(", ")
        );
    }
    let key = |path: &PathBuf| {
        read_key(path).with_context(|| format!("cannot read session key {}", path.display()))
    };
    let sealer = match (&config.session_key_file, &config.previous_session_key_file) {
        (Some(path), None) => Sealer::new(&key(path)?),
        (Some(path), Some(previous)) => Sealer::new(&key(path)?).with_previous(&key(previous)?),
        (None, None) => Sealer::random(),
        (None, Some(_)) => {
            anyhow::bail!("a previous session key needs the current one (--session-key-file)")
        }
    };
    let metrics = Arc::new(Metrics::default());
    let held = Budget::with_gauge(
        config.http.max_held_bytes,
        Some(metrics.held_gauge("global")),
    );
    let mut server = Server::new(compiled, config.server.clone(), metrics.clone())
        .with_sealer(Arc::new(sealer.clone()));
    if let Some(store) = approvals {
        server = server.with_approvals(store);
    }
    let server = Arc::new(server);
    // A forwarded GET stream holds one forward: as many as there may be sessions, plus room
    // for their other requests.
    let forwarder = config.advertise_address.map(|_| {
        Forwarder::new(
            sealer.clone(),
            config.sessions.max_sessions.saturating_mul(2),
            config.replica_networks.clone(),
        )
    });
    if let (Some(me), Some(forwarder)) = (config.advertise_address, &forwarder)
        && !forwarder.may_dial(me)
    {
        anyhow::bail!(
            "--advertise-address {me} lies outside the replica networks (--replica-network): the other replicas would never forward to it"
        );
    }
    let sessions = Arc::new(
        SessionStore::new(sealer, config.sessions.clone(), metrics.clone())
            .with_owner(config.advertise_address),
    );
    let state = Arc::new(AppState {
        server: server.clone(),
        sessions,
        http: config.http.clone(),
        shutdown: shutdown.clone(),
        listen_streams: ListenLimit::new(
            config.sessions.max_sessions,
            config.http.max_listen_streams_per_client,
            metrics.clone(),
        ),
        auth,
        bodies: BodyBudget::new(&config.http),
        held,
        forwarder,
    });
    let log = Arc::new(reload::ReloadLog::default());
    let admin_state = Arc::new(AdminState {
        server: server.clone(),
        ready: AtomicBool::new(false),
        log: log.clone(),
    });

    tokio::spawn(reload::watch(
        config.manifests.clone(),
        config.compile.clone(),
        server.clone(),
        served,
        config.reload_interval,
        log,
        shutdown.clone(),
    ));
    let admin_addr = admin.local_addr()?;
    let admin_app = routes::router(admin_state.clone());
    let admin_stop = shutdown.clone();
    let admin_task = tokio::spawn(async move {
        let limits = crate::listener::ConnectionLimits {
            max_connections: 256,
            idle_timeout: config.connection_idle_timeout,
            ..crate::listener::ConnectionLimits::default()
        };
        crate::listener::serve(admin, admin_app, limits, admin_stop).await
    });
    tracing::info!(mcp = %mcp.local_addr()?, admin = %admin_addr, "serving");
    admin_state.set_ready(true);
    let stop_ready = admin_state.clone();
    let ready_watch = shutdown.clone();
    tokio::spawn(async move {
        ready_watch.cancelled().await;
        stop_ready.set_ready(false);
    });
    let limits = crate::listener::ConnectionLimits {
        idle_timeout: config.connection_idle_timeout,
        max_connections: max_connections(config.sessions.max_sessions),
        ..crate::listener::ConnectionLimits::default()
    };
    transport::serve(mcp, state, limits, config.shutdown_timeout).await?;
    admin_task.abort();
    tracing::info!("stopped");
    Ok(())
}

async fn wait_for_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
