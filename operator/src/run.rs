//! The operator process: admin server, API connection, leader election, the controller, and a
//! graceful shutdown that finishes in-flight reconciles and hands the lease over. I/O.

use crate::admin::{self, AdminState};
use crate::controller;
use crate::crd_upgrade::{self, CrdError};
use crate::leader::{Elector, LeaseConfig};
use crate::metrics::Metrics;
use crate::reconcile::build::BuildConfig;
use crate::reconcile::build::{ADMIN_PORT, SERVER_LABEL};
use crate::reconcile::memory::Memory;
use crate::reconcile::{Context, Parts};
use crate::registry::{Registry, RegistryConfig};
use crate::verifier::{self, PodShape, Prober, Verifier};
use kube::Client;
use kube::runtime::events::{Recorder, Reporter};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio_util::sync::CancellationToken;

/// Longest wait for in-flight reconciles on shutdown (under the pod's 30 s grace period).
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(15);

/// How the operator runs.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Watch only these namespaces (empty: all namespaces).
    pub namespaces: Vec<String>,
    /// Settings of the built objects.
    pub build: BuildConfig,
    /// Address of `/healthz`, `/readyz` and `/metrics`.
    pub admin_listen: SocketAddr,
    /// Leader election, when enabled.
    pub lease: Option<LeaseConfig>,
    /// Name reported on events (`reportingInstance`).
    pub instance: String,
    /// The MCP Registry and catalog page, when enabled.
    pub registry: Option<RegistryConfig>,
    /// How pods are asked what they serve.
    pub verify: verifier::Mode,
    /// How long pods may serve an older declaration before `Verified` is `False`.
    pub verify_grace: std::time::Duration,
    /// Servers rolling their pods at once at most (`0`: no limit).
    pub max_concurrent_rollouts: usize,
    /// Raise the installed CRD to this operator's revision at start-up (else only check it).
    pub manage_crd: bool,
}

/// Why the operator stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The admin address could not be bound.
    #[error("cannot listen on {addr}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// No usable kubeconfig or in-cluster configuration.
    #[error("cannot configure the Kubernetes client")]
    Client(#[source] kube::Error),
    /// The installed CRD cannot be used (older and not to be raised, or unreadable).
    #[error(transparent)]
    Crd(#[from] CrdError),
    /// Another replica took the lease; the process exits so it restarts as a candidate.
    #[error("lost the leader lease")]
    LostLease,
}

/// Runs the operator until `shutdown` is cancelled.
pub async fn run(config: RunConfig, shutdown: CancellationToken) -> Result<(), RunError> {
    let state = AdminState {
        metrics: Arc::new(Metrics::new()),
        ..Default::default()
    };
    let listener = tokio::net::TcpListener::bind(config.admin_listen)
        .await
        .map_err(|source| RunError::Listen {
            addr: config.admin_listen,
            source,
        })?;
    let admin_addr = listener.local_addr().unwrap_or(config.admin_listen);
    let admin_stop = CancellationToken::new();
    let admin = tokio::spawn(admin::serve(listener, state.clone(), admin_stop.clone()));
    tracing::info!(addr = %admin_addr, "admin endpoints listening");
    let registry = match &config.registry {
        Some(registry) => {
            let bound =
                Registry::bind(registry.clone())
                    .await
                    .map_err(|source| RunError::Listen {
                        addr: registry.listen,
                        source,
                    })?;
            if let Ok(addr) = bound.local_addr() {
                tracing::info!(addr = %addr, "registry listening");
            }
            Some(bound)
        }
        None => None,
    };

    let result = run_connected(&config, &state, &shutdown, registry).await;
    admin_stop.cancel();
    if let Ok(Err(error)) = admin.await {
        tracing::warn!(error = %error, "admin server failed");
    }
    result
}

async fn run_connected(
    config: &RunConfig,
    state: &AdminState,
    shutdown: &CancellationToken,
    registry: Option<Registry>,
) -> Result<(), RunError> {
    let client: Client = crate::api_metrics::client(state.metrics.clone())
        .await
        .map_err(RunError::Client)?;
    // Ready once the API server answers; until then the operator could do nothing useful.
    loop {
        match client.apiserver_version().await {
            Ok(version) => {
                tracing::info!(version = %version.git_version, "connected to the API server");
                break;
            }
            Err(error) => tracing::warn!(error = %error, "API server not reachable yet"),
        }
        tokio::select! {
            () = tokio::time::sleep(std::time::Duration::from_secs(2)) => {}
            () = shutdown.cancelled() => return Ok(()),
        }
    }
    // Before any watch or write: every replica, leader or not, so that a new replica raises the
    // CRD while an older one still leads (an older operator refuses fields it does not know).
    crd_upgrade::ensure(&client, config.manage_crd).await?;
    state.ready.store(true, Ordering::Relaxed);
    // The registry serves on every replica, leader or not: it only reads.
    if let Some(registry) = registry {
        let (client, namespaces, shutdown) =
            (client.clone(), config.namespaces.clone(), shutdown.clone());
        tokio::spawn(async move {
            if let Err(error) = registry.run(client, namespaces, shutdown).await {
                tracing::error!(error = %error, "registry server failed");
            }
        });
    }

    let elector = config
        .lease
        .clone()
        .map(|lease| Elector::new(client.clone(), lease));
    if let Some(elector) = &elector {
        if !elector.acquire(shutdown).await {
            return Ok(());
        }
        tracing::info!("leading");
    }
    state.metrics.set_leader(true);

    let lost = CancellationToken::new();
    let stop_holding = CancellationToken::new();
    let holder = elector
        .as_ref()
        .map(|elector| elector.hold(&stop_holding, &lost));
    let reporter = Reporter {
        controller: "mcp-operator".into(),
        instance: Some(config.instance.clone()),
    };
    let memory = Arc::new(Memory::default());
    let shape = PodShape {
        server_label: SERVER_LABEL,
        default_admin_port: u16::try_from(ADMIN_PORT).unwrap_or(9090),
    };
    let verifier = match config.verify {
        verifier::Mode::Off => None,
        verifier::Mode::Pods => Some(Prober::Pods),
        verifier::Mode::ApiServerProxy => Some(Prober::ApiServerProxy(client.clone())),
    }
    .map(|prober| Verifier::new(prober, shape, state.metrics.clone()));
    let parts = Parts {
        client: client.clone(),
        config: config.build.clone(),
        recorder: Recorder::new(client.clone(), reporter),
        metrics: state.metrics.clone(),
        memory: memory.clone(),
        verifier: verifier.clone(),
        verify_grace: config.verify_grace,
        max_concurrent_rollouts: config.max_concurrent_rollouts,
    };
    let context = move |stores| Arc::new(Context::new(parts, stores));
    let stop = {
        let (shutdown, lost) = (shutdown.clone(), lost.clone());
        async move {
            tokio::select! {
                () = shutdown.cancelled() => tracing::info!("shutting down: finishing reconciles in flight"),
                () = lost.cancelled() => {}
            }
        }
    };
    // On shutdown, in-flight reconciles get a grace period; past it (or when a watch never
    // listed anything, which holds kube's graceful shutdown forever) the controller is dropped,
    // aborting them. On a lost lease there is no grace: another replica may lead now, so every
    // reconcile stops at once, mid-flight, and no further write is sent.
    let controller = async {
        let deadline = {
            let shutdown = shutdown.clone();
            async move {
                shutdown.cancelled().await;
                tokio::time::sleep(SHUTDOWN_GRACE).await;
            }
        };
        tokio::select! {
            () = controller::run(client.clone(), &config.namespaces, memory, verifier, context, stop) => {}
            () = deadline => tracing::warn!(grace = ?SHUTDOWN_GRACE, "reconciles did not finish in time; stopping anyway"),
            () = lost.cancelled() => tracing::error!("lost the lease: reconciles stopped"),
        }
    };
    match holder {
        Some(holder) => {
            let (_, ()) = tokio::join!(holder, async {
                controller.await;
                stop_holding.cancel();
            });
        }
        None => controller.await,
    }
    state.metrics.set_leader(false);
    if lost.is_cancelled() {
        return Err(RunError::LostLease);
    }
    if let Some(elector) = &elector {
        elector.release().await;
    }
    Ok(())
}
