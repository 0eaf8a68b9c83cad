//! The daemon's shared state: what every connection and session reaches.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::config::DaemonConfig;
use crate::discovery::Discovery;
use crate::policy::{LivePolicy, PolicyWatcher};
use crate::session::{ActorDeps, SessionManager};
use crate::store::{Store, StoreError};
use crate::tools::{self, ToolRegistry};

pub struct Daemon {
    pub config: DaemonConfig,
    pub sessions: SessionManager,
    pub registry: Arc<ToolRegistry>,
    pub policy: Arc<LivePolicy>,
    /// MCP servers and the discovery command.
    pub discovery: Arc<Discovery>,
    /// The model prompts go to.
    pub model: Arc<crate::model::ModelSlot>,
    /// GEMINI.md memory per workspace.
    pub memory: Arc<crate::memory::MemoryCache>,
    /// The safety checks applied after the policy.
    pub guard: Arc<crate::safety::Guard>,
    policy_watcher: Mutex<Option<PolicyWatcher>>,
    /// Fired to stop the daemon (signal, `daemon.shutdown`).
    pub shutdown: CancellationToken,
    pub started: Instant,
    connections: AtomicU64,
    /// The memory all connections' outbound queues share.
    pub outbound: Arc<crate::rpc::OutboundBudget>,
}

impl Daemon {
    /// Opens the store and registers the built-in tools.
    /// `shutdown` stops the daemon when fired (signals, `daemon.shutdown`).
    pub fn open(
        config: DaemonConfig,
        shutdown: CancellationToken,
    ) -> Result<Arc<Daemon>, StoreError> {
        crate::config::ensure_private_dir(&config.data_dir)
            .map_err(|e| StoreError::Io(format!("{}: {e}", config.data_dir.display())))?;
        let store = Store::open(&config.data_dir)?;
        let registry = Arc::new(ToolRegistry::new());
        for tool in tools::builtin::all(&config) {
            if let Err(e) = registry.register(tool) {
                tracing::error!(error = %e, "built-in tool not registered");
            }
        }
        let policy = LivePolicy::load(config.policy_sources());
        let model = Arc::new(crate::model::ModelSlot::new(
            &config.user_gemini_dir.join("settings.json"),
            config
                .user_gemini_dir
                .parent()
                .unwrap_or(&config.user_gemini_dir),
        ));
        let memory = Arc::new(crate::memory::MemoryCache::new(&config.user_gemini_dir));
        let guard = Arc::new(crate::safety::Guard::new(
            crate::safety::ProtectedPaths::discover(&crate::safety::DaemonPaths::of(&config)),
        ));
        let sessions = SessionManager::new(ActorDeps {
            store,
            registry: registry.clone(),
            policy: policy.clone(),
            max_parallel: config.max_parallel_calls,
            model: model.clone(),
            memory: memory.clone(),
            turn_limits: config.turn_limits,
            guard: guard.clone(),
            user_settings: config.user_gemini_dir.join("settings.json"),
            shell_output: config.shell_output_dir(),
            sandbox_places: Arc::new(sandbox_places(&crate::safety::DaemonPaths::of(&config))),
        });
        // Status changes go to the daemon's sessions, which exist only once
        // the daemon does: the callback finds it through a late-set weak link.
        let status_sink: Arc<Mutex<Option<std::sync::Weak<Daemon>>>> = Arc::new(Mutex::new(None));
        let status_target = status_sink.clone();
        let discovery = Discovery::new(
            registry.clone(),
            config.user_gemini_dir.join("settings.json"),
            Arc::new(
                move |server: &str, scope: &str, status: &str, message: Option<&str>| {
                    let target = status_target
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .clone();
                    let Some(daemon) = target.and_then(|w| w.upgrade()) else {
                        return;
                    };
                    let payload = geminid_protocol::event::EventPayload::McpServerStatus {
                        server: server.to_owned(),
                        status: status.to_owned(),
                        message: message.map(str::to_owned),
                    };
                    // A workspace's server is news for the sessions of that
                    // workspace; a user-layer server serves every session.
                    match scope.strip_prefix("workspace:") {
                        Some(root) => daemon
                            .sessions
                            .announce_payload_where(payload, |cwd| cwd == root),
                        None => daemon.sessions.announce_payload_where(payload, |_| true),
                    }
                },
            ),
        );
        let outbound = crate::rpc::OutboundBudget::new(config.outbound_budget);
        let daemon = Arc::new(Daemon {
            config,
            sessions,
            registry,
            policy,
            discovery,
            model,
            memory,
            guard,
            policy_watcher: Mutex::new(None),
            shutdown,
            started: Instant::now(),
            connections: AtomicU64::new(0),
            outbound,
        });
        *status_sink.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::downgrade(&daemon));
        daemon.watch_policy();
        // In the background: the socket is never delayed by MCP servers.
        if tokio::runtime::Handle::try_current().is_ok() {
            daemon.discovery.start();
            daemon.sessions.resume_pending_prompts();
        }
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

    /// Why the data directory cannot take writes now, if it cannot: a
    /// read-only or full file system, or a store write that failed and
    /// waits to be retried. Cheap (one `statvfs`): `daemon.status` is a
    /// health check clients may call often.
    pub fn store_problem(&self) -> Option<String> {
        let dir = &self.config.data_dir;
        match rustix::fs::statvfs(dir) {
            Ok(st) if st.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY) => {
                return Some(format!(
                    "the data directory {} is on a read-only file system",
                    dir.display()
                ));
            }
            Ok(st) if st.f_bavail == 0 => {
                return Some(format!(
                    "no space left on the file system of the data directory {}",
                    dir.display()
                ));
            }
            Ok(_) => {}
            Err(e) => {
                return Some(format!(
                    "cannot stat the data directory {}: {e}",
                    dir.display()
                ));
            }
        }
        let store = self.sessions.store();
        (store.is_broken() || store.log_failing()).then(|| {
            format!(
                "a write to the session store in {} failed; it is retried every second",
                dir.display()
            )
        })
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

/// The daemon's places as the sandbox sees them: its data and socket
/// directories hidden, the files it takes instructions from held
/// read-only wherever a command may write.
fn sandbox_places(paths: &crate::safety::DaemonPaths) -> crate::sandbox::DaemonPlaces {
    let mut hidden = vec![paths.data_dir.clone()];
    // The socket's directory when it is the daemon's own; else the socket
    // and its lock (as the protected places do).
    match paths.socket.parent().filter(|dir| {
        dir.file_name()
            .is_some_and(|n| n.to_string_lossy().contains("geminid"))
    }) {
        Some(dir) => hidden.push(dir.to_path_buf()),
        None => {
            hidden.push(paths.socket.clone());
            let mut lock = paths.socket.as_os_str().to_owned();
            lock.push(".lock");
            hidden.push(lock.into());
        }
    }
    let mut instructions = vec![
        paths.user_gemini_dir.clone(),
        paths.admin_policy_dir.clone(),
        paths.system_settings.clone(),
        paths.home.join(".gitconfig"),
        paths.config_home.join("git"),
    ];
    if let Some(dir) = paths.system_settings.parent() {
        instructions.push(dir.join("system-defaults.json"));
    }
    instructions.extend(paths.trusted_folders.iter().cloned());
    let canonical = |v: Vec<std::path::PathBuf>| -> Vec<std::path::PathBuf> {
        v.into_iter()
            .filter(|p| p.is_absolute())
            .map(|p| p.canonicalize().unwrap_or(p))
            .collect()
    };
    // The temp dir: `$TMPDIR`, else `/tmp`.
    let temp = canonical(vec![std::env::temp_dir()]);
    crate::sandbox::DaemonPlaces {
        home: paths.home.clone(),
        hidden: canonical(hidden),
        instructions: canonical(instructions),
        temp,
    }
}
