//! The daemon's shared state: what every connection and session reaches.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::config::DaemonConfig;
use crate::discovery::Discovery;
use crate::policy::LivePolicy;
use crate::problems::{ConfigProblem, Problems};
use crate::session::{ActorDeps, SessionManager};
use crate::store::{Store, StoreError};
use crate::tools::{self, ToolRegistry};
use crate::watch::ConfigWatch;

pub struct Daemon {
    pub config: DaemonConfig,
    pub sessions: SessionManager,
    pub registry: Arc<ToolRegistry>,
    pub policy: Arc<LivePolicy>,
    /// The hooks of each workspace's sessions (settings `hooks`).
    pub hooks: Arc<crate::hooks::HookBook>,
    /// MCP servers and the discovery command.
    pub discovery: Arc<Discovery>,
    /// The model prompts go to.
    pub model: Arc<crate::model::ModelSlot>,
    /// GEMINI.md memory per workspace.
    pub memory: Arc<crate::memory::MemoryCache>,
    /// The safety checks applied after the policy.
    pub guard: Arc<crate::safety::Guard>,
    /// What is wrong with the configuration now (`daemon.status`).
    pub problems: Arc<Problems>,
    config_watch: Mutex<Option<ConfigWatch>>,
    /// The runtime MCP connections run on (reloads come from a plain
    /// thread).
    runtime: Option<tokio::runtime::Handle>,
    unused_settings: Mutex<Vec<String>>,
    /// Every workspace a session was created in: its own tool settings
    /// and policy files are reported when they change.
    opened_roots: Mutex<std::collections::BTreeSet<std::path::PathBuf>>,
    /// The installed extensions as last read (`extensions.list`).
    extensions: Mutex<Vec<crate::extensions::Extension>>,
    /// Serializes setting the extensions' servers (a workspace opened and
    /// a reload may do it at once: the last one uses the latest list).
    extension_servers: Mutex<()>,
    /// `general.defaultApprovalMode`: the mode of sessions created
    /// without one.
    default_mode: Mutex<crate::policy::ApprovalMode>,
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
                    // A workspace's server (its own settings' or an
                    // extension's instance for it) is news for the sessions
                    // of that workspace; a user-layer server serves every
                    // session but those whose workspace has a server of its
                    // name.
                    match crate::discovery::mcp::scope_workspace(scope) {
                        Some(root) => daemon.sessions.announce_payload_where(payload, |cwd| {
                            std::path::Path::new(cwd) == root
                        }),
                        None => {
                            let mcp = &daemon.discovery.mcp;
                            daemon.sessions.announce_payload_where(payload, |cwd| {
                                !mcp.overrides(std::path::Path::new(cwd), server)
                            })
                        }
                    }
                },
            ),
            // MCP OAuth tokens: private, in the data directory, kept
            // across restarts.
            Arc::new(crate::discovery::mcp::oauth::TokenStore::open(
                config.data_dir.join("mcp-oauth-tokens.json"),
            )),
        );
        let places = Arc::new(sandbox_places(&crate::safety::DaemonPaths::of(&config)));
        // The discovery command and stdio MCP servers get the sandbox too.
        crate::discovery::jail::init(config.user_gemini_dir.join("settings.json"), places.clone());
        let hooks = Arc::new(crate::hooks::HookBook::new(
            &config.system_settings,
            &config.user_gemini_dir,
        ));
        let sessions = SessionManager::new(
            ActorDeps {
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
                checkpoints: Arc::new(crate::checkpoints::CheckpointStore::new(
                    config.checkpoints_dir(),
                )),
                discovery: discovery.clone(),
                sandbox_places: places.clone(),
                hooks: hooks.clone(),
                question_timeout: config.question_timeout,
            },
            config.session_idle,
        );
        let outbound = crate::rpc::OutboundBudget::new(config.outbound_budget);
        let daemon = Arc::new(Daemon {
            config,
            sessions,
            registry,
            policy,
            hooks,
            discovery,
            model,
            memory,
            guard,
            problems: Arc::new(Problems::default()),
            config_watch: Mutex::new(None),
            runtime: tokio::runtime::Handle::try_current().ok(),
            unused_settings: Mutex::new(Vec::new()),
            opened_roots: Mutex::new(Default::default()),
            extensions: Mutex::new(Vec::new()),
            extension_servers: Mutex::new(()),
            default_mode: Mutex::new(crate::policy::ApprovalMode::Default),
            shutdown,
            started: Instant::now(),
            connections: AtomicU64::new(0),
            outbound,
        });
        *status_sink.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::downgrade(&daemon));
        // MCP sampling requests go to the session whose call made them.
        let weak = Arc::downgrade(&daemon);
        daemon
            .discovery
            .mcp
            .set_sampler(Arc::new(crate::session::SessionSampler(Arc::new(
                move |id: &str| match weak.upgrade() {
                    Some(daemon) => daemon.sessions.get(id),
                    None => Err(crate::session::SessionError::ShuttingDown),
                },
            ))));
        // A resource a session subscribed to changed: an event of that
        // session (a session deleted or unloaded while idle has no
        // subscriptions left: see `on_unloaded` below and
        // `rpc::delete_session`).
        let weak = Arc::downgrade(&daemon);
        daemon.discovery.mcp.set_on_resource_updated(Arc::new(
            move |session: &str, server: &str, uri: &str| {
                let Some(daemon) = weak.upgrade() else {
                    return;
                };
                match daemon.sessions.get(session) {
                    Ok(handle) => {
                        handle.announce(geminid_protocol::event::EventPayload::McpResourceUpdated {
                            server: server.to_owned(),
                            uri: uri.to_owned(),
                        })
                    }
                    Err(_) => daemon.discovery.mcp.forget_session(session),
                }
            },
        ));
        // A discovery-command run is news for every loaded session (their
        // clients list the tools again).
        let weak = Arc::downgrade(&daemon);
        daemon.discovery.on_rediscovered(Arc::new(
            move |state: &crate::discovery::CommandState| {
                if let Some(daemon) = weak.upgrade() {
                    daemon.sessions.announce_payload_where(
                        geminid_protocol::event::EventPayload::ToolsRediscovered {
                            tools: state.tools.clone(),
                            problems: state.problems.clone(),
                        },
                        |_| true,
                    );
                }
            },
        ));
        // A session that leaves memory while idle wants no more resource
        // updates: the servers are told when it was the last to want one.
        let weak = Arc::downgrade(&daemon);
        daemon.sessions.on_unloaded(Arc::new(move |session: &str| {
            if let Some(daemon) = weak.upgrade() {
                daemon.discovery.mcp.forget_session(session);
            }
        }));
        let weak = Arc::downgrade(&daemon);
        daemon
            .memory
            .set_trust(Arc::new(move |root: &std::path::Path| {
                weak.upgrade().is_some_and(|d| d.folder_trust(root).trusted)
            }));
        let weak = Arc::downgrade(&daemon);
        daemon
            .memory
            .set_extension_files(Arc::new(move |root: &std::path::Path| {
                weak.upgrade()
                    .map(|d| d.extension_context_files(root))
                    .unwrap_or_default()
            }));
        // A stored session loaded again (after a restart) opens its
        // workspace as session.create does: its servers start now, not at
        // the next session.create there.
        let weak = Arc::downgrade(&daemon);
        daemon.sessions.on_loaded(Arc::new(move |handle| {
            let (Some(daemon), Ok(runtime)) =
                (weak.upgrade(), tokio::runtime::Handle::try_current())
            else {
                return;
            };
            let handle = handle.clone();
            runtime.spawn_blocking(move || {
                let root = std::path::PathBuf::from(&handle.cwd);
                daemon.workspace_opened(&root, &handle);
            });
        }));
        let weak = Arc::downgrade(&daemon);
        daemon.sessions.on_resuming(Arc::new(move |root| {
            if let Some(daemon) = weak.upgrade() {
                daemon.open_workspace_servers(root);
            }
        }));
        let weak = Arc::downgrade(&daemon);
        daemon
            .hooks
            .set_trust(Arc::new(move |root: &std::path::Path| {
                weak.upgrade().is_some_and(|d| d.folder_trust(root).trusted)
            }));
        daemon.note_policy_problems();
        daemon.apply_settings();
        daemon.watch_config();
        // In the background: the socket is never delayed by MCP servers.
        if tokio::runtime::Handle::try_current().is_ok() {
            daemon.discovery.start();
            daemon.apply_extensions();
            daemon.sessions.resume_pending_prompts();
        }
        Ok(daemon)
    }

    /// Watches every configuration file and reloads what changed. An idle
    /// daemon does no file IO: the watch thread blocks until the kernel
    /// reports a change (never for the daemon's own reads).
    fn watch_config(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        let mut set = self.policy.watch_set();
        for file in crate::settings_merge::layer_files(
            &self.config.system_settings,
            &self.config.user_gemini_dir,
            None,
        ) {
            set = set.file(file);
        }
        set = set.file(crate::trust::trust_file(&self.config.user_gemini_dir));
        let watch = ConfigWatch::spawn("config-reload", set, move || {
            if let Some(daemon) = weak.upgrade() {
                daemon.config_changed();
            }
        });
        match watch {
            Ok(w) => *self.config_watch.lock().unwrap_or_else(|e| e.into_inner()) = Some(w),
            Err(e) => {
                tracing::warn!(error = %e, "configuration files are not watched; edits need a restart or SIGHUP")
            }
        }
    }

    /// Reads the configuration again (a watched file changed, SIGHUP):
    /// only files whose content changed are parsed again.
    pub fn config_changed(&self) {
        if self.policy.reload() {
            tracing::info!("policy reloaded");
        }
        self.note_policy_problems();
        self.apply_settings();
        let roots: Vec<std::path::PathBuf> = self
            .opened_roots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect();
        for root in roots {
            self.note_workspace_tool_problems(&root);
        }
        // Hooks and the sandbox of servers' commands are read again at
        // their next use.
        self.hooks.invalidate();
        crate::discovery::jail::invalidate();
        if let Some(runtime) = &self.runtime {
            let _inside = runtime.enter();
            self.discovery.reload_user();
            self.apply_extensions();
            // The workspaces sessions opened: their servers follow their
            // settings (and their trust) too.
            for root in self.discovery.opened_workspaces() {
                if self.folder_trust(&root).trusted {
                    for problem in self.discovery.workspace_opened(&root) {
                        tracing::warn!(problem = %problem, "workspace discovery settings");
                    }
                } else {
                    self.discovery.workspace_closed(&root);
                }
            }
        }
    }

    /// What the system-defaults, user and system settings say beyond
    /// policy (in 0.61's precedence): the environment children get, and
    /// the keys geminid does not read. Read at start and on every change;
    /// a broken file keeps what was in force (and is reported).
    fn apply_settings(&self) {
        let mut merged = serde_json::Value::Null;
        let mut unused = Vec::new();
        let mut problems = Vec::new();
        let files = crate::settings_merge::layer_files(
            &self.config.system_settings,
            &self.config.user_gemini_dir,
            None,
        );
        for path in files {
            let text = match std::fs::read_to_string(&path) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    problems.push(
                        ConfigProblem::new(path.display().to_string(), format!("cannot read: {e}"))
                            .kept("the settings in force before"),
                    );
                    continue;
                }
            };
            match crate::jsonc::parse(&text) {
                Ok(value) => {
                    unused.extend(
                        crate::settings_merge::unused_keys(&value)
                            .into_iter()
                            .map(|key| format!("{}: {key}", path.display())),
                    );
                    crate::settings_merge::merge_into(&mut merged, value);
                }
                Err(e) => problems.push(
                    ConfigProblem::new(
                        path.display().to_string(),
                        format!("not valid JSON: {}", e.message),
                    )
                    .at_line(Some(e.line))
                    .kept("the settings in force before"),
                ),
            }
        }
        if problems.is_empty() {
            crate::child_env::set_redaction(crate::child_env::Redaction::from_settings(&merged));
            *self
                .unused_settings
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = unused;
            let (mode, problem) = default_approval_mode(&merged);
            *self.default_mode.lock().unwrap_or_else(|e| e.into_inner()) = mode;
            problems.extend(problem);
        }
        // The policy reports the same file's JSON errors; one report is
        // enough, so only problems the policy does not know are added.
        let known = self.policy.config_problems();
        problems.retain(|p| !known.iter().any(|k| k.file == p.file));
        let fresh = self.problems.set("settings", problems);
        self.announce_problems(&fresh);
    }

    /// The approval mode of a session created without one
    /// (`general.defaultApprovalMode` of the user and system settings).
    pub fn default_approval_mode(&self) -> crate::policy::ApprovalMode {
        *self.default_mode.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Settings keys geminid does not read, as `file: key.path`.
    pub fn unused_settings(&self) -> Vec<String> {
        self.unused_settings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Records the policy's problems; each new one is logged once and
    /// told once to the sessions it affects (policy: all of them).
    fn note_policy_problems(&self) {
        let fresh = self.problems.set("policy", self.policy.config_problems());
        self.announce_problems(&fresh);
    }

    fn announce_problems(&self, fresh: &[ConfigProblem]) {
        for problem in fresh {
            self.sessions.announce(format!("configuration: {problem}"));
        }
    }

    /// Whether `root` is a trusted folder now (settings and trust file
    /// read again: called when a session is created).
    pub fn folder_trust(&self, root: &std::path::Path) -> crate::trust::Verdict {
        let read = |path: &std::path::Path| {
            std::fs::read_to_string(path)
                .ok()
                .and_then(|t| crate::jsonc::parse(&t).ok())
                .unwrap_or(serde_json::Value::Null)
        };
        let user = read(&self.config.user_gemini_dir.join("settings.json"));
        let system = read(&self.config.system_settings);
        let trust = crate::trust::load(&self.config.user_gemini_dir, &[&user, &system]);
        let path = crate::trust::trust_file(&self.config.user_gemini_dir);
        let area = "trust";
        let problems = trust
            .broken
            .iter()
            .map(|b| {
                ConfigProblem::new(path.display().to_string(), b.clone())
                    .kept("every folder is untrusted until it is fixed")
            })
            .collect();
        let fresh = self.problems.set(area, problems);
        self.announce_problems(&fresh);
        trust.verdict(root, &crate::trust::real_path)
    }

    /// A session was created in `root`: a trusted folder's workspace
    /// settings are read and its MCP servers started; an untrusted one's
    /// are not, and the session is told why (once).
    pub fn workspace_opened(
        &self,
        root: &std::path::Path,
        session: &crate::session::SessionHandle,
    ) {
        let settings = root.join(".gemini/settings.json");
        // Its own tool exclusions and policy files apply whatever its
        // trust (they only make things stricter); edits are reported.
        self.opened_roots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(root.to_path_buf());
        // Every open workspace (with the include directories its
        // sessions get) is a root of the user's MCP servers. A session
        // loaded only to be deleted (this runs in the background) must not
        // bring its root back.
        if !session.is_stopped() {
            self.open_root(root);
        }
        if let Some(watch) = self
            .config_watch
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            watch.add_file(&settings);
            watch.add_dir(&root.join(".gemini/policies"));
        }
        self.note_workspace_tool_problems(root);
        self.note_plans_directory(root);
        // An extension enabled here but not at home, or with servers of
        // one instance per workspace, starts its servers.
        if !session.is_stopped() && self.extensions_differ_at(root) {
            self.set_extension_servers();
        }
        let verdict = self.folder_trust(root);
        let area = format!("workspace {}", root.display());
        if !verdict.trusted {
            if settings.exists() {
                let problem = ConfigProblem::new(
                    settings.display().to_string(),
                    format!("the folder is not trusted ({})", verdict.why),
                )
                .kept(
                    "its settings, MCP servers and discovery command are not loaded; trust it in ~/.gemini/trustedFolders.json",
                );
                self.problems.set(&area, vec![problem.clone()]);
                session.announce(geminid_protocol::event::EventPayload::Error {
                    message: format!("configuration: {problem}"),
                });
            }
            return;
        }
        let problems: Vec<ConfigProblem> = self
            .discovery
            .workspace_opened(root)
            .into_iter()
            .map(|p| ConfigProblem::new(settings.display().to_string(), p))
            .collect();
        for problem in self.problems.set(&area, problems) {
            session.announce(geminid_protocol::event::EventPayload::Error {
                message: format!("configuration: {problem}"),
            });
        }
    }

    /// Starts (or finds running) the MCP servers of a trusted `root`'s
    /// settings, at once: a stored session loaded again (after a restart)
    /// then waits for them on its next prompt like a new session does
    /// (`SessionManager::resuming`). A few small file reads; the rest of
    /// opening the workspace (`workspace_opened`) follows in the
    /// background. Needs a runtime.
    /// The extensions' servers it will see start too (those enabled only
    /// there, and its `${workspacePath}` instances), whatever its trust.
    pub fn open_workspace_servers(&self, root: &std::path::Path) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        self.open_root(root);
        if self.extensions_differ_at(root) {
            self.set_extension_servers();
        }
        if !self.folder_trust(root).trusted {
            return;
        }
        for problem in self.discovery.workspace_opened(root) {
            tracing::warn!(problem = %problem, "workspace discovery settings");
        }
    }

    /// `root` is a root of the shared MCP servers (with the include
    /// directories its sessions get) from now on.
    fn open_root(&self, root: &std::path::Path) {
        let (includes, _) = crate::tools::include_dirs::pin(
            &self.config.user_gemini_dir.join("settings.json"),
            root,
        );
        let includes = includes.iter().map(|r| r.path().to_path_buf()).collect();
        self.discovery.mcp.root_opened(root, includes);
    }

    /// The last session in `root` was deleted: it is no longer a root of
    /// the shared servers, and the extensions' instances for it stop.
    pub fn workspace_closed(&self, root: &std::path::Path) {
        self.discovery.mcp.root_closed(root);
        if self.extensions_differ_at(root) {
            self.set_extension_servers();
        }
    }

    /// Whether some extension's servers are not the same at `root` as at
    /// home: enabled otherwise, one instance per workspace
    /// (`${workspacePath}`), or settings that may have values of this
    /// workspace.
    fn extensions_differ_at(&self, root: &std::path::Path) -> bool {
        let home = self.home();
        self.extensions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|e| {
                e.loaded
                    && (e.enabled_for(root) != e.enabled_for(&home)
                        || (e.enabled_for(root)
                            && (e
                                .mcp_servers
                                .values()
                                .any(crate::extensions::names_workspace)
                                || (!e.setting_vars.is_empty() && !e.mcp_servers.is_empty()))))
            })
    }

    /// Reads the installed extensions again: their MCP servers follow
    /// their manifests, memory is reloaded when their context files
    /// changed, their files are watched, and their problems reported
    /// (area `extensions`). Their `excludeTools` and policies are the
    /// policy's (`policy/live.rs`).
    fn apply_extensions(&self) {
        let dir = self.config.user_gemini_dir.join("extensions");
        let (found, mut problems) = crate::extension_settings::load_installed(
            &self.config.system_settings,
            &self.config.user_gemini_dir,
        );
        if let Some(watch) = self
            .config_watch
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            watch.add_dir(&dir);
            for file in crate::extensions::watched_files(&dir, &found) {
                watch.add_file(&file);
            }
        }
        for ext in &found {
            problems.extend(ext.problems.iter().cloned());
            if ext.loaded {
                problems.extend(extension_server_problems(ext));
            }
        }
        let user_servers: Vec<String> = crate::discovery::settings::load(
            &self.config.user_gemini_dir.join("settings.json"),
            "user",
        )
        .servers
        .into_iter()
        .map(|s| s.name)
        .collect();
        problems.extend(crate::extensions::server_name_clashes(
            &found,
            &user_servers,
        ));
        let context = |list: &[crate::extensions::Extension]| -> Vec<_> {
            list.iter()
                .map(|e| (e.name.clone(), e.overrides.clone(), e.context_files.clone()))
                .collect()
        };
        let mut kept = self.extensions.lock().unwrap_or_else(|e| e.into_inner());
        let memory_changed = context(&kept) != context(&found);
        *kept = found;
        drop(kept);
        self.set_extension_servers();
        if memory_changed {
            self.memory.invalidate_all();
        }
        let fresh = self.problems.set("extensions", problems);
        self.announce_problems(&fresh);
    }

    /// Starts, stops or restarts the extensions' MCP servers as the
    /// extensions last read and the workspaces sessions have open want
    /// them: a server runs while its extension is enabled at home or in an
    /// open workspace, and each session sees it only where the extension
    /// is enabled (0.61's enablement, per directory); an entry naming
    /// `${workspacePath}` runs once per open trusted workspace where its
    /// extension is enabled, seen by that workspace's sessions only. The
    /// extension's settings (`extension_settings.rs`: `.env`, keychain)
    /// fill its entries and reach its stdio servers; where an open trusted
    /// workspace gives them other values (0.61's workspace scope), its
    /// servers get an instance of that workspace with those values.
    /// Problems reading the values are reported (area
    /// `extension settings`).
    fn set_extension_servers(&self) {
        use crate::extension_settings::{Scope, merged, needs_workspace_instance, scope_values};
        let _serial = self
            .extension_servers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let found = self.extensions();
        let home = self.home();
        let opened = self.discovery.mcp.open_roots();
        // Each folder's trust read once for the whole plan (it reads the
        // settings and the trust file).
        let trusted_roots: Vec<&std::path::PathBuf> = opened
            .iter()
            .filter(|root| self.folder_trust(root).trusted)
            .collect();
        let trusted = |root: &std::path::Path| trusted_roots.iter().any(|t| t.as_path() == root);
        let plan = crate::extensions::server_plan(&found, &home, &opened, &trusted);
        let mut keychain = crate::keychain::Keychain::new(
            &self.config.user_gemini_dir,
            crate::keychain::backend_from_env(),
        );
        let mut problems = Vec::new();
        let mut enablement = crate::discovery::mcp::Enablement {
            home,
            ..Default::default()
        };
        let mut shared = Vec::new();
        let mut per_workspace: std::collections::BTreeMap<_, Vec<_>> = Default::default();
        for (ext, entries) in plan.shared {
            let (user, read) = scope_values(ext, &Scope::User, &mut keychain);
            problems.extend(read);
            let servers = with_settings(&entries, &user, crate::discovery::EXTENSION_SCOPE);
            for server in &servers {
                enablement
                    .overrides
                    .entry(server.name.clone())
                    .or_insert_with(|| ext.overrides.clone());
            }
            shared.extend(servers);
            if ext.setting_vars.is_empty() {
                continue;
            }
            for root in opened.iter().filter(|r| ext.enabled_for(r) && trusted(r)) {
                let (own, read) = scope_values(ext, &Scope::Workspace(root), &mut keychain);
                problems.extend(read);
                let here = merged(user.clone(), own);
                if needs_workspace_instance(&user, &here) {
                    let scope = crate::discovery::mcp::extension_workspace_scope(root);
                    per_workspace
                        .entry(root.clone())
                        .or_default()
                        .extend(with_settings(&entries, &here, &scope));
                }
            }
        }
        for (root, ext, entries) in plan.per_workspace {
            let (values, read) =
                crate::extension_settings::values_for(ext, Some(&root), &mut keychain);
            problems.extend(read);
            let scope = crate::discovery::mcp::extension_workspace_scope(&root);
            per_workspace
                .entry(root)
                .or_default()
                .extend(with_settings(&entries, &values, &scope));
        }
        if let Some(watch) = self
            .config_watch
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            // A workspace's `.env` holds its values of the settings.
            if found.iter().any(|e| !e.setting_vars.is_empty()) {
                for root in &opened {
                    watch.add_file(&root.join(".env"));
                }
            }
        }
        problems.extend(keychain.problems());
        self.discovery.mcp.set_enablement(enablement);
        for problem in self.discovery.set_extension_servers(shared, per_workspace) {
            tracing::warn!(problem = %problem, "extension MCP servers");
        }
        let fresh = self.problems.set("extension settings", problems);
        self.announce_problems(&fresh);
    }

    /// The context files of the extensions enabled for `root`.
    fn extension_context_files(&self, root: &std::path::Path) -> Vec<std::path::PathBuf> {
        self.extensions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|e| e.loaded && e.enabled_for(root))
            .flat_map(|e| e.context_files.iter().cloned())
            .collect()
    }

    /// The installed extensions as last read.
    pub fn extensions(&self) -> Vec<crate::extensions::Extension> {
        self.extensions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The user's home (the parent of the user's Gemini directory).
    pub fn home(&self) -> std::path::PathBuf {
        self.config
            .user_gemini_dir
            .parent()
            .unwrap_or(&self.config.user_gemini_dir)
            .to_path_buf()
    }

    /// Reports what cannot be read in `root`'s own tool settings and
    /// policy files (`daemon.status`, once per change to its sessions).
    /// A `general.plan.directory` refused for `root` (`tools/plans.rs`) is
    /// a configuration problem: listed in `daemon.status`, told to the
    /// sessions there (their plans stay in the managed directory).
    fn note_plans_directory(&self, root: &std::path::Path) {
        let settings = self.config.user_gemini_dir.join("settings.json");
        let problems = match crate::tools::plans::configured_dir_in(&settings, root) {
            Some(Err(why)) => vec![ConfigProblem::new(settings.display().to_string(), why)],
            _ => Vec::new(),
        };
        let area = format!("plans directory {}", root.display());
        let root = root.display().to_string();
        for problem in self.problems.set(&area, problems) {
            self.sessions.announce_payload_where(
                geminid_protocol::event::EventPayload::Error {
                    message: format!("configuration: {problem}"),
                },
                |cwd| cwd == root,
            );
        }
    }

    fn note_workspace_tool_problems(&self, root: &std::path::Path) {
        let area = format!("workspace tools {}", root.display());
        let fresh = self
            .problems
            .set(&area, self.policy.workspace_problems(root));
        let root = root.display().to_string();
        for problem in fresh {
            self.sessions.announce_payload_where(
                geminid_protocol::event::EventPayload::Error {
                    message: format!("configuration: {problem}"),
                },
                |cwd| cwd == root,
            );
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

/// What is wrong with an extension's `mcpServers` entries (read as they
/// are written: an entry naming `${workspacePath}` has the same problems
/// in every workspace).
fn extension_server_problems(ext: &crate::extensions::Extension) -> Vec<ConfigProblem> {
    let doc = serde_json::json!({ "mcpServers": ext.mcp_servers });
    crate::discovery::settings::parse(&doc, crate::discovery::EXTENSION_SCOPE)
        .problems
        .into_iter()
        .map(|p| {
            ConfigProblem::new(ext.manifest().display().to_string(), p)
                .kept("that server does not start")
        })
        .collect()
}

/// `entries` (an extension's `mcpServers`) as servers of `scope`, with
/// its settings' `values` filling `$VAR` in them and under each stdio
/// entry's own `env` (0.61's order). Their problems are reported apart
/// (`extension_server_problems`).
fn with_settings(
    entries: &serde_json::Map<String, serde_json::Value>,
    values: &[(String, String)],
    scope: &str,
) -> Vec<crate::discovery::settings::ServerConfig> {
    let doc =
        crate::extension_settings::substitute(serde_json::json!({ "mcpServers": entries }), values);
    let mut servers = crate::discovery::settings::parse(&doc, scope).servers;
    for server in &mut servers {
        if let crate::discovery::settings::Transport::Stdio { env, .. } = &mut server.transport {
            for (key, value) in values {
                env.entry(key.clone()).or_insert_with(|| value.clone());
            }
        }
    }
    servers
}

/// Resident memory of this process in bytes (Linux).
pub fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * rustix::param::page_size() as u64)
}

/// `general.defaultApprovalMode` as 0.61 reads it: `default`, `auto_edit`
/// (`plan` is not a mode of geminid's: default, which asks before every
/// change, is used and the problem reported; `yolo` cannot be set by a
/// settings file in 0.61 either).
fn default_approval_mode(
    settings: &serde_json::Value,
) -> (crate::policy::ApprovalMode, Option<ConfigProblem>) {
    use crate::policy::ApprovalMode;
    let Some(value) = settings.pointer("/general/defaultApprovalMode") else {
        return (ApprovalMode::Default, None);
    };
    match value.as_str() {
        Some("default") => (ApprovalMode::Default, None),
        Some("auto_edit" | "autoEdit") => (ApprovalMode::AutoEdit, None),
        _ => (
            ApprovalMode::Default,
            Some(
                ConfigProblem::new(
                    "settings",
                    format!("general.defaultApprovalMode {value} is not one geminid can use"),
                )
                .kept("new sessions start in `default`"),
            ),
        ),
    }
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
