//! MCP servers: one warm connection per configured server, shared by every
//! session, with its tools in the registry.
//!
//! Naming (seed 000 `asFullyQualifiedTool`): a tool is registered under its
//! bare name unless a non-MCP tool or a server earlier in name order already
//! has that name; then it is registered as `server__tool`. Every MCP tool is
//! always reachable as `server__tool` (a registry alias when registered
//! bare). A server that is disconnected keeps its tools registered; calls
//! fail at once with `unavailable` until it is back.

mod announce;
pub mod connect;
pub mod content;
pub mod listing;
pub mod oauth;
mod ordered;
pub mod probe;
pub mod resource_tools;
pub mod resources;
pub mod roots;
pub mod server;
pub mod sse;
pub mod stdio;
mod subscriptions;
pub mod tool;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use self::server::{Events, Server, ServerSnapshot, Status};
use self::tool::{McpTool, qualified_name};
use super::settings::ServerConfig;
use crate::tools::{Tool, ToolRegistry, ToolSource};

/// Receives `(server, scope, status, message)` on each status change that
/// is news for sessions (`announce.rs`); `scope` is the server's settings
/// layer (`user`, `workspace:<root>`).
pub type StatusFn = Arc<dyn Fn(&str, &str, &str, Option<&str>) + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("no MCP server named {0:?}")]
    UnknownServer(String),
    #[error("{0}")]
    OAuth(#[from] oauth::OAuthError),
    #[error("{0}")]
    Call(#[from] crate::tools::ToolError),
}

pub struct McpManager {
    registry: Arc<ToolRegistry>,
    servers: Mutex<BTreeMap<String, Arc<Server>>>,
    /// Each server's own stop: a changed or removed entry stops only it.
    stops: Mutex<BTreeMap<String, CancellationToken>>,
    on_status: StatusFn,
    announcements: announce::Announcements,
    stop: CancellationToken,
    tasks: TaskTracker,
    /// Serializes registry rebuilds.
    sync: Mutex<()>,
    /// OAuth tokens of every server, shared by every session.
    tokens: Arc<oauth::TokenStore>,
    /// The workspace roots sessions opened (what servers' `roots/list`
    /// answers, `roots.rs`).
    open_roots: tokio::sync::watch::Sender<Arc<roots::Opened>>,
    /// Which sessions subscribed to which resources.
    subscribers: subscriptions::Subscribers,
    /// Receives `(session, server, uri)` for each update a session
    /// subscribed to (set once the sessions exist).
    on_resource_updated: Mutex<Option<ResourceUpdatedFn>>,
}

/// Receives `(session, server, uri)`: a resource the session subscribed
/// to changed.
pub type ResourceUpdatedFn = Arc<dyn Fn(&str, &str, &str) + Send + Sync>;

/// Forwards a server's events to the manager without a reference cycle.
struct Relay(std::sync::Weak<McpManager>);

impl Events for Relay {
    fn status(&self, server: &str, scope: &str, status: Status, message: Option<&str>) {
        if let Some(m) = self.0.upgrade() {
            tracing::info!(server, status = status.as_str(), message, "mcp server");
            if !m.announcements.is_news(server, status.as_str()) {
                return;
            }
            (m.on_status)(server, scope, status.as_str(), message);
        }
    }

    fn tools_changed(&self) {
        if let Some(m) = self.0.upgrade() {
            m.sync_registry();
        }
    }

    fn resource_updated(&self, server: &str, uri: &str) {
        if let Some(m) = self.0.upgrade() {
            let sessions = m.subscribers.subscribers(server, uri);
            let to = m
                .on_resource_updated
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            if let Some(to) = to {
                for session in sessions {
                    to(&session, server, uri);
                }
            }
        }
    }
}

impl McpManager {
    pub fn new(
        registry: Arc<ToolRegistry>,
        on_status: StatusFn,
        tokens: Arc<oauth::TokenStore>,
    ) -> Arc<McpManager> {
        let manager = Arc::new(McpManager {
            tokens,
            registry: registry.clone(),
            servers: Mutex::new(BTreeMap::new()),
            stops: Mutex::new(BTreeMap::new()),
            on_status,
            announcements: announce::Announcements::default(),
            stop: CancellationToken::new(),
            tasks: TaskTracker::new(),
            sync: Mutex::new(()),
            open_roots: tokio::sync::watch::Sender::new(Arc::default()),
            subscribers: subscriptions::Subscribers::default(),
            on_resource_updated: Mutex::new(None),
        });
        for tool in resource_tools::tools(&manager) {
            if let Err(problem) = registry.register(tool) {
                tracing::warn!(%problem, "MCP resource tool not registered");
            }
        }
        manager
    }

    fn server(&self, name: &str) -> Result<Arc<Server>, McpError> {
        self.servers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
            .ok_or_else(|| McpError::UnknownServer(name.to_owned()))
    }

    /// The resources of every server (or of `server`), in server order.
    pub fn resources(&self, server: Option<&str>) -> Vec<resources::Listed> {
        self.servers()
            .iter()
            .filter(|s| server.is_none_or(|name| s.name() == name))
            .flat_map(|s| {
                s.resources().into_iter().map(|resource| resources::Listed {
                    server: s.name().to_owned(),
                    resource,
                })
            })
            .collect()
    }

    /// The resource templates of every server (or of `server`).
    pub fn resource_templates(&self, server: Option<&str>) -> Vec<resources::Listed> {
        self.servers()
            .iter()
            .filter(|s| server.is_none_or(|name| s.name() == name))
            .flat_map(|s| {
                s.resource_templates()
                    .into_iter()
                    .map(|resource| resources::Listed {
                        server: s.name().to_owned(),
                        resource,
                    })
            })
            .collect()
    }

    /// A listed resource by `server:uri` first, then by its bare URI (as
    /// 0.61 finds them).
    pub fn find_resource(&self, uri: &str) -> Option<resources::Listed> {
        let all = self.resources(None);
        all.iter()
            .find(|r| {
                uri.strip_prefix(r.server.as_str())
                    .and_then(|rest| rest.strip_prefix(':'))
                    == Some(r.uri())
            })
            .or_else(|| all.iter().find(|r| r.uri() == uri))
            .cloned()
    }

    /// `resources/read` of `uri` on `server`: the answer as the server
    /// sent it.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<serde_json::Value, McpError> {
        Ok(self.server(server)?.read_resource(uri).await?)
    }

    /// Where resource updates go: `(session, server, uri)`.
    pub fn set_on_resource_updated(&self, to: ResourceUpdatedFn) {
        *self
            .on_resource_updated
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(to);
    }

    /// Subscribes `session` to `uri` on `server`: the server is asked
    /// (`resources/subscribe`) the first time any session wants it, and
    /// each update becomes a `mcpResourceUpdated` event of the sessions
    /// that subscribed.
    pub async fn subscribe(&self, session: &str, server: &str, uri: &str) -> Result<(), McpError> {
        self.server(server)?.subscribe(uri).await?;
        self.subscribers.add(session, server, uri);
        Ok(())
    }

    /// Forgets a session's subscriptions (it was deleted).
    pub fn forget_session(&self, session: &str) {
        self.subscribers.forget(session);
    }

    /// `prompts/get` of `name` on `server` with `arguments`: the answer as
    /// the server sent it.
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<serde_json::Value, McpError> {
        Ok(self.server(server)?.get_prompt(name, arguments).await?)
    }

    /// `resources/read` of `uri` on `server` as parts for a prompt (what an
    /// `@server:uri` reference brings in).
    pub async fn resource_parts(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<Vec<crate::tools::ContentPart>, McpError> {
        let result = self.read_resource(server, uri).await?;
        Ok(resources::read_parts(&result))
    }

    fn servers(&self) -> Vec<Arc<Server>> {
        self.servers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }

    /// Starts a connection task for each server not configured yet (a name
    /// already taken keeps its first configuration). Needs a runtime.
    pub fn add(self: &Arc<Self>, configs: Vec<ServerConfig>) -> Vec<String> {
        let mut ignored = Vec::new();
        for config in configs {
            let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
            if servers.contains_key(&config.name) {
                ignored.push(format!(
                    "MCP server {} ({}) ignored: the name is already configured",
                    config.name, config.scope
                ));
                continue;
            }
            let server = Server::new(config, self.tokens.clone(), self.open_roots.subscribe());
            servers.insert(server.name().to_owned(), server.clone());
            drop(servers);
            let stop = self.stop.child_token();
            self.stops
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(server.name().to_owned(), stop.clone());
            let relay: Arc<dyn Events> = Arc::new(Relay(Arc::downgrade(self)));
            self.tasks.spawn(server.run(relay, stop));
        }
        ignored
    }

    /// Makes the servers of `scope` (`user`, `workspace:<root>`) exactly
    /// `configs`: a server whose entry is unchanged is left alone (its
    /// running calls go on), one whose entry changed is stopped and started
    /// again, one no longer listed is stopped and its tools leave the
    /// registry, a new one is started. Returns the problems of `add`.
    pub fn reconcile(self: &Arc<Self>, scope: &str, configs: Vec<ServerConfig>) -> Vec<String> {
        let mut wanted: BTreeMap<String, ServerConfig> =
            configs.into_iter().map(|c| (c.name.clone(), c)).collect();
        let mut stopped = Vec::new();
        {
            let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
            let mut stops = self.stops.lock().unwrap_or_else(|e| e.into_inner());
            let ours: Vec<String> = servers
                .iter()
                .filter(|(_, s)| s.config.scope == scope)
                .map(|(name, _)| name.clone())
                .collect();
            for name in ours {
                let unchanged = servers
                    .get(&name)
                    .is_some_and(|s| wanted.get(&name) == Some(&s.config));
                if unchanged {
                    wanted.remove(&name);
                    continue;
                }
                servers.remove(&name);
                if let Some(stop) = stops.remove(&name) {
                    stop.cancel();
                }
                stopped.push(name);
            }
        }
        for name in &stopped {
            tracing::info!(server = %name, scope, "mcp server stopped: its settings entry changed or went away");
            // Told to the sessions that saw it; a removed server is then
            // forgotten (a restarted one keeps its workspace).
            (self.on_status)(
                name,
                scope,
                "disconnected",
                Some("its settings entry changed or was removed"),
            );
            if !wanted.contains_key(name) {
                self.registry.set_server_scope(name, None);
            }
        }
        if !stopped.is_empty() {
            self.sync_registry();
        }
        self.add(wanted.into_values().collect())
    }

    /// A session opened a workspace at `root` with `includes` (its
    /// include directories): servers that follow the open roots are told
    /// when that is news to them.
    pub fn root_opened(&self, root: &std::path::Path, includes: Vec<std::path::PathBuf>) {
        self.open_roots.send_if_modified(|open| {
            if open.get(root) == Some(&includes) {
                return false;
            }
            let mut more = (**open).clone();
            more.insert(root.to_path_buf(), includes);
            *open = Arc::new(more);
            true
        });
    }

    /// The last session in `root` was deleted: it is no longer a root
    /// of the servers that followed it.
    pub fn root_closed(&self, root: &std::path::Path) {
        self.open_roots.send_if_modified(|open| {
            if !open.contains_key(root) {
                return false;
            }
            let mut fewer = (**open).clone();
            fewer.remove(root);
            *open = Arc::new(fewer);
            true
        });
    }

    /// `not_started`, `in_progress` or `completed`.
    pub fn discovery_state(&self) -> &'static str {
        let servers = self.servers();
        if servers.is_empty() {
            "not_started"
        } else if servers.iter().all(|s| s.snapshot().attempted) {
            "completed"
        } else {
            "in_progress"
        }
    }

    pub fn list(&self) -> Vec<ServerSnapshot> {
        self.servers().iter().map(|s| s.snapshot()).collect()
    }

    /// Starts an OAuth login for `name`; returns the URL to open.
    pub async fn begin_login(&self, name: &str) -> Result<String, McpError> {
        let server = self.server(name)?;
        Ok(server.auth.begin_login(&server.config).await?)
    }

    /// Waits for the login's redirect, stores the token and reconnects.
    pub async fn finish_login(&self, name: &str) -> Result<ServerSnapshot, McpError> {
        let server = self.server(name)?;
        server.auth.finish_login(&server.config).await?;
        self.restart(name).await
    }

    /// Forgets `name`'s stored OAuth token and reconnects without it: a
    /// server that wants a login is `needs_auth` again.
    pub async fn logout(&self, name: &str) -> Result<ServerSnapshot, McpError> {
        let server = self.server(name)?;
        server.auth.logout(&server.config)?;
        self.restart(name).await
    }

    /// Reconnects `name` now; returns its state after the new attempt (or
    /// after the connect timeout).
    pub async fn restart(&self, name: &str) -> Result<ServerSnapshot, McpError> {
        let server = self.server(name)?;
        let mut attempts = server.attempts.subscribe();
        attempts.mark_unchanged();
        server.restart.notify_one();
        let wait = connect::CONNECT_TIMEOUT + Duration::from_secs(5);
        let _ = tokio::time::timeout(wait, attempts.changed()).await;
        Ok(server.snapshot())
    }

    /// Rebuilds the registry's MCP tools from every server's current list.
    pub fn sync_registry(&self) {
        let _serial = self.sync.lock().unwrap_or_else(|e| e.into_inner());
        let taken: BTreeSet<String> = self
            .registry
            .all()
            .iter()
            .filter(|t| !matches!(t.tool.source(), ToolSource::Mcp { .. }))
            .map(|t| t.tool.name().to_owned())
            .collect();
        let mut used = taken.clone();
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        let mut aliases = Vec::new();
        for server in self.servers() {
            let mut names = Vec::new();
            for remote in server.tools() {
                let qualified = qualified_name(server.name(), &remote.name);
                let bare = tool::valid_name(&remote.name);
                let name = if used.contains(&bare) {
                    qualified.clone()
                } else {
                    bare
                };
                if used.contains(&name) {
                    continue;
                }
                used.insert(name.clone());
                if name != qualified {
                    aliases.push((qualified, name.clone()));
                }
                names.push(name.clone());
                tools.push(Arc::new(McpTool::new(server.clone(), &remote, name)));
            }
            server.set_registered(names);
        }
        let problems = self.registry.replace_by_source(
            |source| matches!(source, ToolSource::Mcp { .. }),
            tools,
            aliases,
        );
        for problem in problems {
            tracing::warn!(problem = %problem, "MCP tool not registered");
        }
    }

    /// Stops every connection and kills every stdio server's process group.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        self.tasks.close();
        if tokio::time::timeout(Duration::from_secs(5), self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("some MCP connections did not close in time");
        }
    }
}
