//! Tool discovery beyond the built-ins (seed 000 sections 3.3 and 3.6):
//! MCP servers (`mcp/`) and the project's discovery command (`command`).
//!
//! Settings layers:
//! * the user layer (`~/.gemini/settings.json`) is read at daemon start;
//!   its MCP servers are connected in the background and shared by every
//!   session; its discovery command runs in the daemon's working directory;
//! * a workspace layer (`<root>/.gemini/settings.json`) is read when a
//!   session is created in `root`, if the folder is trusted (`trust.rs`).
//!   Its MCP servers are started then (once per daemon) and their tools
//!   belong to the sessions in `root` only (`ToolRegistry::get_in`): other
//!   sessions neither see nor call them. A workspace server of a user
//!   server's name is the one its sessions see (0.61's merge), the user's
//!   stays for every other session; its `trust` is ignored: a cloned
//!   repository must not be able to grant itself unconfirmed calls.
//!
//! Trust: `trust: true` on a user-layer server becomes an allow rule for
//! `server__*` (mcpName = server) in the policy engine, derived from the
//! settings file when policy loads it ([`trust_rules`]), so it follows the
//! file's edits like `tools.allowed` does and still yields to deny rules.

pub mod command;
pub mod jail;
pub mod mcp;
pub mod process;
pub mod schema;
pub mod settings;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use self::mcp::{McpManager, StatusFn};
use crate::policy::{Decision, PolicyRule, RuleSource, Tier};
use crate::tools::{Tool, ToolRegistry, ToolSource};

/// The state of command-based discovery, for `mcp.list`.
#[derive(Debug, Clone, Default)]
pub struct CommandState {
    pub discovery_command: String,
    pub call_command: Option<String>,
    pub tools: Vec<String>,
    pub problems: Vec<String>,
}

/// The scope of the extensions' MCP servers.
pub const EXTENSION_SCOPE: &str = "extensions";

pub struct Discovery {
    pub mcp: Arc<McpManager>,
    registry: Arc<ToolRegistry>,
    user_settings: PathBuf,
    command: Mutex<Option<CommandState>>,
    /// Workspace roots whose settings were read already.
    workspaces: Mutex<BTreeSet<PathBuf>>,
    /// Serializes discovery-command runs.
    rediscovering: tokio::sync::Mutex<()>,
    /// Told of each discovery-command run (the daemon announces it).
    on_rediscovered: Mutex<Option<RediscoveredFn>>,
}

/// Receives the state after each discovery-command run.
pub type RediscoveredFn = Arc<dyn Fn(&CommandState) + Send + Sync>;

impl Discovery {
    pub fn new(
        registry: Arc<ToolRegistry>,
        user_settings: PathBuf,
        on_status: StatusFn,
        tokens: Arc<mcp::oauth::TokenStore>,
    ) -> Arc<Self> {
        Arc::new(Discovery {
            mcp: McpManager::new(registry.clone(), on_status, tokens),
            registry,
            user_settings,
            command: Mutex::new(None),
            workspaces: Mutex::new(BTreeSet::new()),
            rediscovering: tokio::sync::Mutex::new(()),
            on_rediscovered: Mutex::new(None),
        })
    }

    /// From now on, `hook` is told of every discovery-command run.
    pub fn on_rediscovered(&self, hook: RediscoveredFn) {
        *self
            .on_rediscovered
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(hook);
    }

    /// Starts the user layer in the background: never blocks the caller.
    pub fn start(self: &Arc<Self>) {
        let loaded = settings::load(&self.user_settings, "user");
        for problem in &loaded.problems {
            tracing::warn!(problem = %problem, "discovery settings");
        }
        let servers = admitted(loaded.servers.clone(), &[&loaded]);
        for problem in self.mcp.add(servers) {
            tracing::warn!(problem = %problem, "discovery settings");
        }
        if loaded.discovery_command.is_some() {
            let this = self.clone();
            tokio::spawn(async move {
                let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
                this.rediscover(&cwd).await;
            });
        }
    }

    /// Reads `<root>/.gemini/settings.json` when a session is created in
    /// `root` and starts (or, when their entries changed, restarts) its MCP
    /// servers (with `trust` forced off), which
    /// belong to the sessions in `root` only. The caller decided that the
    /// folder is trusted (an untrusted folder's settings are never read).
    /// Returns the problems found.
    pub fn workspace_opened(&self, root: &Path) -> Vec<String> {
        self.workspaces
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(root.to_owned());
        let path = root.join(".gemini/settings.json");
        if path == self.user_settings {
            return Vec::new();
        }
        let scope = format!("workspace:{}", root.display());
        let loaded = settings::load(&path, &scope);
        if loaded.broken {
            return loaded.problems;
        }
        let servers: Vec<_> = loaded
            .servers
            .clone()
            .into_iter()
            .map(|mut s| {
                s.trust = false;
                s
            })
            .collect();
        // `mcp.allowed` / `mcp.excluded` of the user and of the workspace
        // both apply (a workspace cannot widen the user's list).
        let user = settings::load(&self.user_settings, "user");
        let servers = admitted(servers, &[&user, &loaded]);
        let mut problems = loaded.problems;
        problems.extend(self.mcp.reconcile(&scope, servers));
        for problem in &problems {
            tracing::warn!(problem = %problem, "workspace discovery settings");
        }
        problems
    }

    /// The user settings changed: MCP servers whose entry changed are
    /// started, stopped or restarted (the others are left alone) and the
    /// discovery command runs again if it changed. A file that cannot be
    /// read or parsed changes nothing (its last good servers stay).
    pub fn reload_user(self: &Arc<Self>) {
        let loaded = settings::load(&self.user_settings, "user");
        if loaded.broken {
            return;
        }
        let servers = admitted(loaded.servers.clone(), &[&loaded]);
        for problem in self.mcp.reconcile("user", servers) {
            tracing::warn!(problem = %problem, "discovery settings");
        }
        let before = self.command_state();
        let was = before
            .as_ref()
            .map(|c| (Some(c.discovery_command.clone()), c.call_command.clone()));
        let now = (
            loaded.discovery_command.clone(),
            loaded.call_command.clone(),
        );
        let changed = match was {
            Some(was) => was != now,
            None => now.0.is_some(),
        };
        if changed {
            let this = self.clone();
            tokio::spawn(async move {
                let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
                this.rediscover(&cwd).await;
            });
        }
    }

    /// The MCP servers of the enabled extensions, `trust` ignored: the
    /// shared ones (scope `extensions`) and, for each workspace, the
    /// instances of the entries naming `${workspacePath}` (scope
    /// `extensions:<root>`, seen by that workspace's sessions only).
    /// Started, stopped or restarted as their entries change; a workspace
    /// missing from `per_workspace` has its instances stopped. A user
    /// settings server of the same name wins (as in 0.61); the user's
    /// `mcp.allowed` / `mcp.excluded` apply. Returns problems.
    pub fn set_extension_servers(
        self: &Arc<Self>,
        shared: Vec<settings::ServerConfig>,
        per_workspace: std::collections::BTreeMap<PathBuf, Vec<settings::ServerConfig>>,
    ) -> Vec<String> {
        let user = settings::load(&self.user_settings, "user");
        let ours = |servers: Vec<settings::ServerConfig>, scope: &str| {
            let servers: Vec<_> = servers
                .into_iter()
                .filter(|s| !user.servers.iter().any(|u| u.name == s.name))
                .map(|mut s| {
                    s.trust = false;
                    s.scope = scope.to_owned();
                    s
                })
                .collect();
            admitted(servers, &[&user])
        };
        let mut problems = self
            .mcp
            .reconcile(EXTENSION_SCOPE, ours(shared, EXTENSION_SCOPE));
        let mut scopes: BTreeSet<String> = self
            .mcp
            .scopes()
            .into_iter()
            .filter(|s| s.starts_with(mcp::EXTENSION_WORKSPACE_PREFIX))
            .collect();
        for (root, servers) in per_workspace {
            let scope = mcp::extension_workspace_scope(&root);
            scopes.remove(&scope);
            problems.extend(self.mcp.reconcile(&scope, ours(servers, &scope)));
        }
        // Workspaces no session has open, or where no extension wants an
        // instance any more.
        for scope in scopes {
            problems.extend(self.mcp.reconcile(&scope, Vec::new()));
        }
        problems
    }

    /// The workspaces whose settings were read.
    pub fn opened_workspaces(&self) -> Vec<PathBuf> {
        self.workspaces
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    /// A workspace that is no longer trusted: its servers stop.
    pub fn workspace_closed(self: &Arc<Self>, root: &Path) {
        let scope = format!("workspace:{}", root.display());
        self.mcp.reconcile(&scope, Vec::new());
    }

    /// The MCP servers a session rooted at `root` will see whose first
    /// connection attempt has not finished yet.
    pub fn connecting_for(&self, root: &Path) -> Vec<String> {
        self.mcp
            .view(Some(root))
            .iter()
            .filter(|s| !s.snapshot().attempted)
            .map(|s| s.name().to_owned())
            .collect()
    }

    /// Waits until every one of `names`, as a session rooted at `root`
    /// sees them, has finished a connection attempt (connected or failed),
    /// at most `bound`.
    pub async fn wait_attempted(&self, root: &Path, names: &[String], bound: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + bound;
        while tokio::time::Instant::now() < deadline {
            let pending = self
                .mcp
                .view(Some(root))
                .iter()
                .any(|s| names.iter().any(|n| n == s.name()) && !s.snapshot().attempted);
            if !pending {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
    }

    pub fn command_state(&self) -> Option<CommandState> {
        self.command
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Runs the discovery command (from the user settings, read again) in
    /// `cwd` and replaces the discovered tools. A failed run removes none of
    /// the previous tools (the old set stays usable) and is reported.
    /// Whoever set `on_rediscovered` is told (clients then list the tools
    /// again: `mcp serve` sends `notifications/tools/list_changed`).
    pub async fn rediscover(&self, cwd: &Path) -> CommandState {
        let _one_at_a_time = self.rediscovering.lock().await;
        let state = self.run_discovery(cwd).await;
        let hook = self
            .on_rediscovered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(hook) = hook {
            hook(&state);
        }
        state
    }

    async fn run_discovery(&self, cwd: &Path) -> CommandState {
        let loaded = settings::load(&self.user_settings, "user");
        let Some(discovery) = loaded.discovery_command else {
            let state = CommandState {
                problems: vec!["no `tools.discoveryCommand` in the user settings".into()],
                ..Default::default()
            };
            self.registry.replace_by_source(
                |s| matches!(s, ToolSource::Discovered),
                Vec::new(),
                Vec::new(),
            );
            *self.command.lock().unwrap_or_else(|e| e.into_inner()) = None;
            return state;
        };
        let mut state = CommandState {
            discovery_command: discovery.clone(),
            call_command: loaded.call_command.clone(),
            ..Default::default()
        };
        let timeout = loaded
            .discovery_timeout
            .unwrap_or(command::DISCOVERY_TIMEOUT);
        match command::discover(&discovery, cwd, timeout).await {
            Ok((decls, problems)) => {
                state.problems = problems;
                let builtin: BTreeSet<String> = self
                    .registry
                    .all()
                    .iter()
                    .filter(|t| !matches!(t.tool.source(), ToolSource::Discovered))
                    .map(|t| t.tool.name().to_owned())
                    .collect();
                let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
                for decl in decls {
                    if builtin.contains(&decl.name) {
                        state.problems.push(format!(
                            "declaration {:?}: a tool of that name exists already; skipped",
                            decl.name
                        ));
                        continue;
                    }
                    state.tools.push(decl.name.clone());
                    tools.push(command::DiscoveredTool::new(
                        decl,
                        &discovery,
                        loaded.call_command.as_deref(),
                        cwd,
                    ));
                }
                let problems = self.registry.replace_by_source(
                    |s| matches!(s, ToolSource::Discovered),
                    tools,
                    Vec::new(),
                );
                for problem in problems {
                    state
                        .tools
                        .retain(|t| !problem.starts_with(&format!("{t}:")));
                    state
                        .problems
                        .push(format!("declaration {problem}; skipped"));
                }
            }
            Err(e) => {
                state.tools = self
                    .registry
                    .all()
                    .iter()
                    .filter(|t| matches!(t.tool.source(), ToolSource::Discovered))
                    .map(|t| t.tool.name().to_owned())
                    .collect();
                state.problems.push(e.to_string());
            }
        }
        for problem in &state.problems {
            tracing::warn!(problem = %problem, "tool discovery");
        }
        // MCP tools named like a newly discovered tool move to `server__tool`.
        self.mcp.sync_registry();
        *self.command.lock().unwrap_or_else(|e| e.into_inner()) = Some(state.clone());
        state
    }

    /// Stops every MCP connection (killing stdio servers).
    pub async fn shutdown(&self) {
        self.mcp.shutdown().await;
    }
}

/// The servers every one of `lists` admits (`mcp.allowed`, `mcp.excluded`).
fn admitted(
    servers: Vec<settings::ServerConfig>,
    lists: &[&settings::DiscoverySettings],
) -> Vec<settings::ServerConfig> {
    servers
        .into_iter()
        .filter(|s| {
            let ok = lists.iter().all(|l| l.admits(&s.name));
            if !ok {
                tracing::info!(server = %s.name, "MCP server left out by mcp.allowed / mcp.excluded");
            }
            ok
        })
        .collect()
}

/// Allow rules for the `trust: true` servers of a settings document.
pub fn trust_rules(settings: &Value, file: &str) -> Vec<PolicyRule> {
    let Some(servers) = settings.get("mcpServers").and_then(Value::as_object) else {
        return Vec::new();
    };
    servers
        .iter()
        .filter(|(_, s)| s.get("trust").and_then(Value::as_bool) == Some(true))
        .enumerate()
        .map(|(i, (name, _))| {
            let source = RuleSource {
                file: format!("{file} (mcpServers.{name}.trust)"),
                index: i + 1,
                tier: Tier::User,
            };
            let mut rule = PolicyRule::new(
                Decision::Allow,
                crate::policy::settings::ALLOWED_PRIORITY,
                source,
            );
            rule.tool_names = vec![format!("{name}__*")];
            rule.mcp_name = Some(name.clone());
            // Trusting a server's tools is not letting it use the model:
            // its sampling requests are decided on their own.
            rule.except_tools = vec![format!("{name}__{}", mcp::sampling::SAMPLING_TOOL)];
            rule
        })
        .collect()
}
