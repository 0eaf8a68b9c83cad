//! The daemon's shared state: what every connection and session reaches.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::config::DaemonConfig;
use crate::session::{ActorDeps, SessionManager, Store, StoreError};
use crate::tools::{self, ToolRegistry};

pub struct Daemon {
    pub config: DaemonConfig,
    pub sessions: SessionManager,
    pub registry: Arc<ToolRegistry>,
    /// Fired to stop the daemon (signal, `daemon.shutdown`).
    pub shutdown: CancellationToken,
    pub started: Instant,
    connections: AtomicU64,
}

impl Daemon {
    /// Opens the store and registers the built-in tools.
    pub fn open(config: DaemonConfig) -> Result<Arc<Daemon>, StoreError> {
        let store = Store::open(&config.data_dir)?;
        let registry = Arc::new(ToolRegistry::new());
        for tool in tools::builtin::all(&config) {
            if let Err(e) = registry.register(tool) {
                tracing::error!(error = %e, "built-in tool not registered");
            }
        }
        let sessions = SessionManager::new(ActorDeps {
            store,
            registry: registry.clone(),
            max_parallel: config.max_parallel_calls,
        });
        Ok(Arc::new(Daemon {
            config,
            sessions,
            registry,
            shutdown: CancellationToken::new(),
            started: Instant::now(),
            connections: AtomicU64::new(0),
        }))
    }

    pub fn connection_opened(&self) {
        self.connections.fetch_add(1, Ordering::Relaxed);
    }

    pub fn connection_closed(&self) {
        self.connections.fetch_sub(1, Ordering::Relaxed);
    }

    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }
}

/// Resident memory of this process in bytes (Linux).
pub fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * rustix::param::page_size() as u64)
}
