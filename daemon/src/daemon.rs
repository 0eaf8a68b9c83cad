//! The daemon's shared state: what every connection and session reaches.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::config::DaemonConfig;
use crate::policy::{LivePolicy, PolicyWatcher};
use crate::session::{ActorDeps, SessionManager, Store, StoreError};
use crate::tools::{self, ToolRegistry};

pub struct Daemon {
    pub config: DaemonConfig,
    pub sessions: SessionManager,
    pub registry: Arc<ToolRegistry>,
    pub policy: Arc<LivePolicy>,
    policy_watcher: Mutex<Option<PolicyWatcher>>,
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
        let policy = LivePolicy::load(config.policy_sources());
        let sessions = SessionManager::new(ActorDeps {
            store,
            registry: registry.clone(),
            policy: policy.clone(),
            max_parallel: config.max_parallel_calls,
        });
        let daemon = Arc::new(Daemon {
            config,
            sessions,
            registry,
            policy,
            policy_watcher: Mutex::new(None),
            shutdown: CancellationToken::new(),
            started: Instant::now(),
            connections: AtomicU64::new(0),
        });
        daemon.watch_policy();
        Ok(daemon)
    }

    /// Reloads policy when its files change; a broken file is reported to
    /// every loaded session as an `error` event (and logged).
    fn watch_policy(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        let watcher = self.policy.watch(move |problems| {
            if let Some(daemon) = weak.upgrade() {
                for problem in problems {
                    daemon.sessions.announce(format!("policy: {problem}"));
                }
            }
        });
        match watcher {
            Ok(w) => {
                *self
                    .policy_watcher
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = Some(w)
            }
            Err(e) => {
                tracing::warn!(error = %e, "policy files are not watched; edits need a restart")
            }
        }
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
