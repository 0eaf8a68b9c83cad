//! Tool discovery beyond the built-ins (seed 000 sections 3.3 and 3.6):
//! MCP servers (`mcp/`) and the project's discovery command (`command`).
//!
//! Settings layers:
//! * the user layer (`~/.gemini/settings.json`) is read at daemon start;
//!   its MCP servers are connected in the background and shared by every
//!   session; its discovery command runs in the daemon's working directory;
//! * a workspace layer (`<root>/.gemini/settings.json`) is read when a
//!   session is created in `root`. Its MCP servers are started then (once
//!   per daemon) and, the registry being daemon-wide, their tools are
//!   visible to every session. A workspace server never replaces a user
//!   server of the same name and its `trust` is ignored: a cloned
//!   repository must not be able to grant itself unconfirmed calls.
//!
//! Trust: `trust: true` on a user-layer server becomes an allow rule for
//! `server__*` (mcpName = server) in the policy engine, derived from the
//! settings file when policy loads it ([`trust_rules`]), so it follows the
//! file's edits like `tools.allowed` does and still yields to deny rules.

pub mod command;
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

pub struct Discovery {
    pub mcp: Arc<McpManager>,
    registry: Arc<ToolRegistry>,
    user_settings: PathBuf,
    command: Mutex<Option<CommandState>>,
    /// Workspace roots whose settings were read already.
    workspaces: Mutex<BTreeSet<PathBuf>>,
    /// Serializes discovery-command runs.
    rediscovering: tokio::sync::Mutex<()>,
}

impl Discovery {
    pub fn new(
        registry: Arc<ToolRegistry>,
        user_settings: PathBuf,
        on_status: StatusFn,
    ) -> Arc<Self> {
        Arc::new(Discovery {
            mcp: McpManager::new(registry.clone(), on_status),
            registry,
            user_settings,
            command: Mutex::new(None),
            workspaces: Mutex::new(BTreeSet::new()),
            rediscovering: tokio::sync::Mutex::new(()),
        })
    }

    /// Starts the user layer in the background: never blocks the caller.
    pub fn start(self: &Arc<Self>) {
        let loaded = settings::load(&self.user_settings, "user");
        for problem in &loaded.problems {
            tracing::warn!(problem = %problem, "discovery settings");
        }
        for problem in self.mcp.add(loaded.servers) {
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

    /// Reads `<root>/.gemini/settings.json` the first time a session uses
    /// `root` and starts its MCP servers (with `trust` forced off).
    pub fn workspace_opened(&self, root: &Path) {
        if !self
            .workspaces
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(root.to_owned())
        {
            return;
        }
        let path = root.join(".gemini/settings.json");
        if path == self.user_settings {
            return;
        }
        let loaded = settings::load(&path, &format!("workspace:{}", root.display()));
        let servers = loaded
            .servers
            .into_iter()
            .map(|mut s| {
                s.trust = false;
                s
            })
            .collect();
        for problem in loaded.problems.iter().chain(&self.mcp.add(servers)) {
            tracing::warn!(problem = %problem, "workspace discovery settings");
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
    pub async fn rediscover(&self, cwd: &Path) -> CommandState {
        let _one_at_a_time = self.rediscovering.lock().await;
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
            rule
        })
        .collect()
}
