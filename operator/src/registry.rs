//! The operator's MCP Registry: a read-only Registry API `v0.1` and a catalog page listing the
//! cluster's published MCPServers, answered from memory (a watch of MCPServers, no database).
//! Off unless `mcp-operator run --registry-listen ADDR`; it runs on every replica, leader or
//! not. I/O: it listens and watches.
//!
//! `settings` decides what is published and how it is named, `entry` maps one MCPServer to its
//! `server.json` and `_meta`, `catalog` holds entries and tombstones, `query` parses list
//! parameters, `state` is what handlers share, `routes` answers HTTP, `page` renders the catalog page,
//! `watch` feeds the catalog, `ai_catalog` lists each host's server cards.

mod ai_catalog;
mod catalog;
mod entry;
mod page;
mod query;
mod routes;
mod settings;
mod state;
mod watch;

pub use catalog::Catalog;
pub use entry::{KUBE_MCP_META, NAME_ANNOTATION, OFFICIAL_META, SERVER_SCHEMA};
pub use routes::router;
pub use settings::{
    DEFAULT_PAGE, DEFAULT_TOMBSTONES, MAX_PAGE, RegistryConfig, Settings, SettingsError,
    parse_label, parse_prefix,
};
pub use state::{MAX_IN_FLIGHT, RegistryState};

use kube::Client;
use std::net::SocketAddr;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// A registry with its socket bound, ready to run once the API server is reachable.
pub struct Registry {
    listener: TcpListener,
    settings: Settings,
}

impl Registry {
    /// Binds `config.listen` (so a bad address stops the operator at start-up).
    pub async fn bind(config: RegistryConfig) -> std::io::Result<Self> {
        let listener = TcpListener::bind(config.listen).await?;
        Ok(Self {
            listener,
            settings: config.settings,
        })
    }

    /// Where it listens.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Watches the MCPServers of `namespaces` (all when empty) and serves until `shutdown`.
    pub async fn run(
        self,
        client: Client,
        namespaces: Vec<String>,
        shutdown: CancellationToken,
    ) -> std::io::Result<()> {
        let state = RegistryState::new(Catalog::new(self.settings, watch::scopes(&namespaces)));
        let watch = {
            let (catalog, shutdown) = (state.catalog.clone(), shutdown.clone());
            tokio::spawn(async move { watch::run(client, &namespaces, &catalog, shutdown).await })
        };
        let served = serve(self.listener, state, shutdown).await;
        watch.abort();
        served
    }
}

/// Serves the registry routes on `listener` until `shutdown` is cancelled.
pub async fn serve(
    listener: TcpListener,
    state: RegistryState,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}
