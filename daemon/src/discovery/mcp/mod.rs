//! MCP servers: one warm connection per configured server, shared by every
//! session that sees it, with its tools in the registry.
//!
//! Servers are keyed by (scope, name): the user's and the extensions'
//! servers (one of each name: the user's wins) are seen by every session;
//! a workspace's servers by its own sessions, over a user or extension
//! server of the same name (0.61's merge of the workspace over the user
//! layer), so two workspaces may each have a server `db`. Each session's
//! view of the servers is named on its own (`sync_registry`).
//!
//! Naming (seed 000 `asFullyQualifiedTool`): a tool is registered under its
//! bare name unless a non-MCP tool or a server earlier in name order already
//! has that name; then it is registered as `server__tool`. Every MCP tool is
//! always reachable as `server__tool` (a registry alias when registered
//! bare). A server that is disconnected keeps its tools registered; calls
//! fail at once with `unavailable` until it is back.

mod announce;
pub mod bearer;
pub mod calls;
pub mod connect;
pub mod content;
pub mod listing;
pub mod oauth;
mod ordered;
pub mod probe;
pub mod progress;
pub mod resource_tools;
pub mod resources;
pub mod roots;
pub mod sampling;
pub mod sampling_convert;
pub mod server;
pub mod sse;
pub mod stdio;
mod subscriptions;
pub mod tool;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use self::server::{Events, Server, ServerSnapshot, Status};
use self::tool::{McpTool, qualified_name};
use super::settings::ServerConfig;
use crate::tools::{McpViewTools, Tool, ToolRegistry};

/// A server's key: its settings scope (`user`, `extensions`,
/// `workspace:<root>`, `extensions:<root>`) and its name.
pub type ServerKey = (String, String);

/// The scope prefix of an extension's server whose entry names
/// `${workspacePath}`: one instance per workspace, `extensions:<root>`.
pub const EXTENSION_WORKSPACE_PREFIX: &str = "extensions:";

/// The workspace root of a `workspace:<root>` scope (the workspace's own
/// settings).
pub fn scope_root(scope: &str) -> Option<&Path> {
    scope.strip_prefix("workspace:").map(Path::new)
}

/// The workspace a server belongs to: its own settings' (`workspace:<root>`)
/// or an extension's instance for it (`extensions:<root>`); `None` for a
/// shared server (`user`, `extensions`).
pub fn scope_workspace(scope: &str) -> Option<&Path> {
    scope_root(scope).or_else(|| {
        scope
            .strip_prefix(EXTENSION_WORKSPACE_PREFIX)
            .map(Path::new)
    })
}

/// The scope of an extension's instance for the workspace at `root`.
pub fn extension_workspace_scope(root: &Path) -> String {
    format!("{EXTENSION_WORKSPACE_PREFIX}{}", root.display())
}

/// Receives `(server, scope, status, message)` on each status change that
/// is news for sessions (`announce.rs`); `scope` is the server's settings
/// layer (`user`, `workspace:<root>`).
pub type StatusFn = Arc<dyn Fn(&str, &str, &str, Option<&str>) + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// No such server, or a name more than one scope has (the message
    /// lists them).
    #[error("{0}")]
    UnknownServer(String),
    #[error("{0}")]
    OAuth(#[from] oauth::OAuthError),
    #[error("{0}")]
    Call(#[from] crate::tools::ToolError),
}

/// Where the extensions' servers are enabled: each server's extension's
/// overrides (`extensions::enabled_by`), and the user's home, which
/// decides for what no workspace decides (the shared view).
#[derive(Default, Clone)]
pub struct Enablement {
    pub home: PathBuf,
    /// Server name -> its extension's overrides.
    pub overrides: BTreeMap<String, Vec<String>>,
}

impl Enablement {
    /// Whether `server` (of scope `scope`) is seen from `dir` (`None`:
    /// the home).
    fn shows(&self, scope: &str, server: &str, dir: Option<&Path>) -> bool {
        if scope != crate::discovery::EXTENSION_SCOPE {
            return true;
        }
        let dir = dir.unwrap_or(&self.home);
        self.overrides
            .get(server)
            .is_none_or(|o| crate::extensions::enabled_by(o, dir))
    }

    /// Whether some extension server is enabled differently at `dir` than
    /// at home (a workspace that then needs a view of its own).
    fn differs(&self, dir: &Path) -> bool {
        self.overrides.values().any(|o| {
            crate::extensions::enabled_by(o, dir) != crate::extensions::enabled_by(o, &self.home)
        })
    }
}

pub struct McpManager {
    registry: Arc<ToolRegistry>,
    servers: Mutex<BTreeMap<ServerKey, Arc<Server>>>,
    /// Each server's own stop: a changed or removed entry stops only it.
    stops: Mutex<BTreeMap<ServerKey, CancellationToken>>,
    on_status: StatusFn,
    announcements: announce::Announcements,
    stop: CancellationToken,
    tasks: TaskTracker,
    /// Serializes registry rebuilds.
    sync: Mutex<()>,
    /// OAuth tokens of every server, shared by every session.
    tokens: Arc<oauth::TokenStore>,
    /// Where each extension server is enabled (0.61's enablement file, per
    /// directory): a session sees it only where it is.
    enablement: Mutex<Enablement>,
    /// The workspace roots sessions opened (what servers' `roots/list`
    /// answers, `roots.rs`).
    open_roots: tokio::sync::watch::Sender<Arc<roots::Opened>>,
    /// Where servers' sampling requests go (`sampling.rs`).
    sampling: Arc<sampling::SamplingDesk>,
    /// Which sessions subscribed to which resources.
    subscribers: subscriptions::Subscribers,
    /// Receives `(session, server, uri)` for each update a session
    /// subscribed to (set once the sessions exist).
    on_resource_updated: Mutex<Option<ResourceUpdatedFn>>,
}

/// One subscribed resource (`McpManager::subscriptions`).
#[derive(Debug, Clone, PartialEq)]
pub struct Subscription {
    pub scope: String,
    pub server: String,
    pub uri: String,
    /// The sessions that want its updates, in id order.
    pub sessions: Vec<String>,
    /// Whether the server was asked for them (and is again after a
    /// reconnect).
    pub asked: bool,
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
            if !m
                .announcements
                .is_news(&format!("{scope}/{server}"), status.as_str())
            {
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

    fn resource_updated(&self, server: &str, scope: &str, uri: &str) {
        if let Some(m) = self.0.upgrade() {
            let sessions = m.subscribers.subscribers(scope, server, uri);
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
            enablement: Mutex::new(Enablement::default()),
            sampling: Arc::default(),
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

    /// Where servers' `sampling/createMessage` requests go from now on.
    pub fn set_sampler(&self, sampler: Arc<dyn sampling::Sampler>) {
        self.sampling.set(sampler);
    }

    /// The server `name` (of `scope` when given). A name more than one
    /// scope has needs the scope: the error lists them.
    pub fn server(&self, name: &str, scope: Option<&str>) -> Result<Arc<Server>, McpError> {
        let servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(scope) = scope {
            return servers
                .get(&(scope.to_owned(), name.to_owned()))
                .cloned()
                .ok_or_else(|| {
                    McpError::UnknownServer(format!(
                        "no MCP server named {name:?} in scope {scope:?}"
                    ))
                });
        }
        let found: Vec<&Arc<Server>> = servers
            .iter()
            .filter(|((_, n), _)| n == name)
            .map(|(_, s)| s)
            .collect();
        match found.as_slice() {
            [] => Err(McpError::UnknownServer(format!(
                "no MCP server named {name:?}"
            ))),
            [one] => Ok((*one).clone()),
            many => Err(McpError::UnknownServer(format!(
                "more than one MCP server is named {name:?}; say which with its scope: {}",
                many.iter()
                    .map(|s| s.config.scope.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// The servers a session rooted at `root` sees, in name order: the
    /// shared ones (user, extensions) it does not override and its
    /// workspace's own. `None`: the shared ones only.
    pub fn view(&self, root: Option<&Path>) -> Vec<Arc<Server>> {
        view_of(&self.servers(), root, &self.enablement())
    }

    fn enablement(&self) -> Enablement {
        self.enablement
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Where the extensions' servers are enabled from now on; the views
    /// are named again.
    pub fn set_enablement(&self, enablement: Enablement) {
        *self.enablement.lock().unwrap_or_else(|e| e.into_inner()) = enablement;
        self.sync_registry();
    }

    /// Whether the workspace at `root` has a server `name` of its own
    /// (which its sessions see instead of a shared one of that name).
    pub fn overrides(&self, root: &Path, name: &str) -> bool {
        let servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        [
            format!("workspace:{}", root.display()),
            extension_workspace_scope(root),
        ]
        .into_iter()
        .any(|scope| servers.contains_key(&(scope, name.to_owned())))
    }

    /// Every scope some server has now.
    pub fn scopes(&self) -> std::collections::BTreeSet<String> {
        self.servers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .map(|(scope, _)| scope.clone())
            .collect()
    }

    /// The workspace roots sessions have open (until their last session
    /// is deleted).
    pub fn open_roots(&self) -> Vec<PathBuf> {
        self.open_roots.borrow().keys().cloned().collect()
    }

    /// `name` as a session rooted at `root` sees it (every server when
    /// `root` is `None`, where a name more than one scope has is an error).
    fn server_in(&self, name: &str, root: Option<&Path>) -> Result<Arc<Server>, McpError> {
        match root {
            None => self.server(name, None),
            Some(root) => self
                .view(Some(root))
                .into_iter()
                .find(|s| s.name() == name)
                .ok_or_else(|| {
                    McpError::UnknownServer(format!(
                        "no MCP server named {name:?} for {}",
                        root.display()
                    ))
                }),
        }
    }

    /// The resources of every server (or of `server`), in server order.
    pub fn resources(&self, server: Option<&str>) -> Vec<resources::Listed> {
        listed(&self.servers(), server, |s| s.resources())
    }

    /// The resources of the servers a session rooted at `root` sees.
    pub fn resources_in(&self, root: &Path, server: Option<&str>) -> Vec<resources::Listed> {
        listed(&self.view(Some(root)), server, |s| s.resources())
    }

    /// The resources and resource templates of the servers a session
    /// rooted at `root` sees (`None`: the shared ones), the same view as
    /// the model's.
    pub fn resources_seen(
        &self,
        root: Option<&Path>,
        server: Option<&str>,
    ) -> (Vec<resources::Listed>, Vec<resources::Listed>) {
        let view = self.view(root);
        (
            listed(&view, server, |s| s.resources()),
            listed(&view, server, |s| s.resource_templates()),
        )
    }

    /// The resource templates of every server (or of `server`).
    pub fn resource_templates(&self, server: Option<&str>) -> Vec<resources::Listed> {
        listed(&self.servers(), server, |s| s.resource_templates())
    }

    /// A listed resource by `server:uri` first, then by its bare URI (as
    /// 0.61 finds them), among the servers a session rooted at `root`
    /// sees (every server when `None`).
    pub fn find_resource(&self, uri: &str, root: Option<&Path>) -> Option<resources::Listed> {
        let all = match root {
            Some(root) => self.resources_in(root, None),
            None => self.resources(None),
        };
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
    /// `root`: as a session rooted there sees `server`.
    pub async fn read_resource(
        &self,
        root: Option<&Path>,
        server: &str,
        uri: &str,
    ) -> Result<serde_json::Value, McpError> {
        Ok(self.server_in(server, root)?.read_resource(uri).await?)
    }

    /// `read_resource` on `server` as a session rooted at `root` sees it.
    pub async fn read_resource_in(
        &self,
        root: &Path,
        server: &str,
        uri: &str,
    ) -> Result<serde_json::Value, McpError> {
        Ok(self
            .server_in(server, Some(root))?
            .read_resource(uri)
            .await?)
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
    /// `root` is the session's workspace: the server is the one its
    /// sessions see (a workspace's own before a shared one of that name).
    pub async fn subscribe(
        &self,
        session: &str,
        root: &Path,
        server: &str,
        uri: &str,
    ) -> Result<(), McpError> {
        let found = self.server_in(server, Some(root))?;
        let scope = found.config.scope.clone();
        // In the table before the server is asked: an unsubscribe of
        // another session meanwhile sees the resource still wanted.
        self.subscribers.add(session, &scope, server, uri);
        if let Err(e) = found.subscribe(uri).await {
            if self.subscribers.remove(session, &scope, server, uri) == Some(true) {
                self.tell_unsubscribed(&found, uri).await;
            }
            return Err(e.into());
        }
        Ok(())
    }

    /// Unsubscribes `session` from `uri` on `server` (the one a session
    /// rooted at `root` sees); the server is told
    /// (`resources/unsubscribe`) when no session wants the resource any
    /// more. Answers whether the session was subscribed.
    pub async fn unsubscribe(
        &self,
        session: &str,
        root: &Path,
        server: &str,
        uri: &str,
    ) -> Result<bool, McpError> {
        let found = self.server_in(server, Some(root))?;
        match self
            .subscribers
            .remove(session, &found.config.scope, server, uri)
        {
            None => Ok(false),
            Some(false) => Ok(true),
            Some(true) => {
                self.tell_unsubscribed(&found, uri).await;
                Ok(true)
            }
        }
    }

    /// Tells `server` nobody wants `uri` any more (unless a session
    /// subscribed again meanwhile); a failure is logged: the daemon has
    /// forgotten the resource either way and drops its updates.
    async fn tell_unsubscribed(&self, server: &Server, uri: &str) {
        let (scope, name) = (&server.config.scope, server.name());
        let wanted = || self.subscribers.wanted(scope, name, uri);
        if let Err(e) = server.unsubscribe(uri, wanted).await {
            tracing::warn!(server = name, uri, error = %e, "resources/unsubscribe failed");
        }
    }

    /// Forgets a session's subscriptions (it was deleted, or unloaded
    /// while idle): the servers are told of the resources nobody wants
    /// any more.
    pub fn forget_session(self: &Arc<Self>, session: &str) {
        let gone = self.subscribers.forget(session);
        if gone.is_empty() {
            return;
        }
        let this = self.clone();
        self.tasks.spawn(async move {
            for (scope, name, uri) in gone {
                let found = this
                    .servers
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(&(scope, name))
                    .cloned();
                if let Some(server) = found {
                    this.tell_unsubscribed(&server, &uri).await;
                }
            }
        });
    }

    /// Every resource some session subscribed to, with its sessions and
    /// whether its server was asked for its updates; and every resource a
    /// server was asked for that no session wants (none, unless an
    /// unsubscribe is on its way), so the table shows what the servers
    /// were told.
    pub fn subscriptions(&self) -> Vec<Subscription> {
        let servers = self
            .servers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut list: Vec<Subscription> = self
            .subscribers
            .list()
            .into_iter()
            .map(|((scope, server, uri), sessions)| {
                let asked = servers
                    .get(&(scope.clone(), server.clone()))
                    .is_some_and(|s| s.is_subscribed(&uri));
                Subscription {
                    scope,
                    server,
                    uri,
                    sessions,
                    asked,
                }
            })
            .collect();
        for ((scope, name), server) in &servers {
            for uri in server.subscribed_uris() {
                if !self.subscribers.wanted(scope, name, &uri) {
                    list.push(Subscription {
                        scope: scope.clone(),
                        server: name.clone(),
                        uri,
                        sessions: Vec::new(),
                        asked: true,
                    });
                }
            }
        }
        list.sort_by(|a, b| (&a.scope, &a.server, &a.uri).cmp(&(&b.scope, &b.server, &b.uri)));
        list
    }

    /// `prompts/get` of `name` on `server` with `arguments`: the answer as
    /// the server sent it.
    pub async fn get_prompt(
        &self,
        root: Option<&Path>,
        server: &str,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<serde_json::Value, McpError> {
        Ok(self
            .server_in(server, root)?
            .get_prompt(name, arguments)
            .await?)
    }

    /// `resources/read` of `uri` on `server` as parts for a prompt (what an
    /// `@server:uri` reference brings in).
    pub async fn resource_parts(
        &self,
        root: &Path,
        server: &str,
        uri: &str,
    ) -> Result<Vec<crate::tools::ContentPart>, McpError> {
        let result = self.read_resource_in(root, server, uri).await?;
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

    /// Starts a connection task for each server not configured yet. A
    /// key already taken keeps its first configuration, and so does a
    /// shared name (a user or extension server): a workspace's server may
    /// have the name of a shared one, or of another workspace's. Needs a
    /// runtime.
    pub fn add(self: &Arc<Self>, configs: Vec<ServerConfig>) -> Vec<String> {
        let mut ignored = Vec::new();
        for config in configs {
            let key = (config.scope.clone(), config.name.clone());
            let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
            let shared = scope_workspace(&config.scope).is_none();
            let taken = servers.contains_key(&key)
                || (shared
                    && servers.keys().any(|(scope, name)| {
                        *name == config.name && scope_workspace(scope).is_none()
                    }));
            if taken {
                ignored.push(format!(
                    "MCP server {} ({}) ignored: the name is already configured",
                    config.name, config.scope
                ));
                continue;
            }
            let server = Server::new(
                config,
                self.tokens.clone(),
                self.open_roots.subscribe(),
                self.sampling.clone(),
            );
            servers.insert(key.clone(), server.clone());
            drop(servers);
            let stop = self.stop.child_token();
            self.stops
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key, stop.clone());
            let relay: Arc<dyn Events> = Arc::new(Relay(Arc::downgrade(self)));
            self.tasks.spawn(server.run(relay, stop));
        }
        ignored
    }

    /// Makes the servers of `scope` (`user`, `extensions`,
    /// `workspace:<root>`) exactly `configs`: a server whose entry is
    /// unchanged is left alone (its running calls go on), one whose entry
    /// changed is stopped and started again, one no longer listed is
    /// stopped and its tools leave the registry, a new one is started.
    /// Returns the problems of `add`.
    pub fn reconcile(self: &Arc<Self>, scope: &str, configs: Vec<ServerConfig>) -> Vec<String> {
        let mut wanted: BTreeMap<String, ServerConfig> =
            configs.into_iter().map(|c| (c.name.clone(), c)).collect();
        let mut stopped = Vec::new();
        {
            let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
            let mut stops = self.stops.lock().unwrap_or_else(|e| e.into_inner());
            let ours: Vec<ServerKey> = servers
                .keys()
                .filter(|(s, _)| s == scope)
                .cloned()
                .collect();
            for key in ours {
                let unchanged = servers
                    .get(&key)
                    .is_some_and(|s| wanted.get(&key.1) == Some(&s.config));
                if unchanged {
                    wanted.remove(&key.1);
                    continue;
                }
                servers.remove(&key);
                if let Some(stop) = stops.remove(&key) {
                    stop.cancel();
                }
                stopped.push(key.1);
            }
        }
        for name in &stopped {
            tracing::info!(server = %name, scope, "mcp server stopped: its settings entry changed or went away");
            // Told to the sessions that saw it.
            (self.on_status)(
                name,
                scope,
                "disconnected",
                Some("its settings entry changed or was removed"),
            );
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
        let news = self.open_roots.send_if_modified(|open| {
            if open.get(root) == Some(&includes) {
                return false;
            }
            let mut more = (**open).clone();
            more.insert(root.to_path_buf(), includes);
            *open = Arc::new(more);
            true
        });
        if news && self.enablement().differs(root) {
            self.sync_registry();
        }
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

    /// Every server, by scope then name.
    pub fn list(&self) -> Vec<ServerSnapshot> {
        self.servers().iter().map(|s| s.snapshot()).collect()
    }

    /// Starts an OAuth login for `name` (of `scope`); returns the URL to
    /// open.
    pub async fn begin_login(&self, name: &str, scope: Option<&str>) -> Result<String, McpError> {
        let server = self.server(name, scope)?;
        Ok(server.auth.begin_login(&server.config).await?)
    }

    /// Waits for the login's redirect, stores the token and reconnects.
    pub async fn finish_login(
        &self,
        name: &str,
        scope: Option<&str>,
    ) -> Result<ServerSnapshot, McpError> {
        let server = self.server(name, scope)?;
        server.auth.finish_login(&server.config).await?;
        self.restart(name, Some(&server.config.scope)).await
    }

    /// Forgets `name`'s stored OAuth token and reconnects without it: a
    /// server that wants a login is `needs_auth` again.
    pub async fn logout(&self, name: &str) -> Result<ServerSnapshot, McpError> {
        let server = self.server(name, None)?;
        server.auth.logout(&server.config)?;
        self.restart(name, Some(&server.config.scope)).await
    }

    /// Reconnects `name` (of `scope`) now; returns its state after the new
    /// attempt (or after the connect timeout).
    pub async fn restart(
        &self,
        name: &str,
        scope: Option<&str>,
    ) -> Result<ServerSnapshot, McpError> {
        let server = self.server(name, scope)?;
        let mut attempts = server.attempts.subscribe();
        attempts.mark_unchanged();
        server.restart.notify_one();
        let wait = connect::CONNECT_TIMEOUT + Duration::from_secs(5);
        let _ = tokio::time::timeout(wait, attempts.changed()).await;
        Ok(server.snapshot())
    }

    /// Rebuilds the registry's MCP tools from every server's current list:
    /// the shared view and one view per workspace with servers of its own,
    /// each named as 0.61 names one project's servers.
    pub fn sync_registry(&self) {
        let _serial = self.sync.lock().unwrap_or_else(|e| e.into_inner());
        let taken = self.registry.non_mcp_names();
        let all = self.servers();
        let enablement = self.enablement();
        // A view of its own for each workspace with servers of its own or
        // where an extension's server is enabled otherwise than at home.
        let mut roots: std::collections::BTreeSet<PathBuf> = all
            .iter()
            .filter_map(|s| scope_workspace(&s.config.scope).map(Path::to_path_buf))
            .collect();
        let open = self.open_roots.borrow().clone();
        roots.extend(open.keys().filter(|r| enablement.differs(r)).cloned());
        let (shared, names) = named_view(&view_of(&all, None, &enablement), &taken);
        // A shared server's names are those of the shared view.
        for server in all
            .iter()
            .filter(|s| scope_workspace(&s.config.scope).is_none())
        {
            server.set_registered(
                names
                    .get(&server.config.scope)
                    .and_then(|n| n.get(server.name()))
                    .cloned()
                    .unwrap_or_default(),
            );
        }
        let mut workspaces = BTreeMap::new();
        for root in roots {
            let (view, names) = named_view(&view_of(&all, Some(&root), &enablement), &taken);
            for server in all
                .iter()
                .filter(|s| scope_workspace(&s.config.scope) == Some(root.as_path()))
            {
                server.set_registered(
                    names
                        .get(&server.config.scope)
                        .and_then(|n| n.get(server.name()))
                        .cloned()
                        .unwrap_or_default(),
                );
            }
            workspaces.insert(root, view);
        }
        for problem in self.registry.replace_mcp(shared, workspaces) {
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

/// The servers of `all` a session rooted at `root` sees, in name order:
/// its workspace's own (from its settings), then the extensions'
/// instances for it (`${workspacePath}`), then the shared ones, each
/// only for a name not seen yet (`None`: the shared ones).
fn view_of(all: &[Arc<Server>], root: Option<&Path>, enablement: &Enablement) -> Vec<Arc<Server>> {
    let own = |s: &Arc<Server>| root.is_some_and(|root| scope_root(&s.config.scope) == Some(root));
    let mut view: Vec<Arc<Server>> = all.iter().filter(|s| own(s)).cloned().collect();
    let instance = |s: &Arc<Server>| {
        root.is_some_and(|root| {
            scope_root(&s.config.scope).is_none() && scope_workspace(&s.config.scope) == Some(root)
        })
    };
    for server in all.iter().filter(|s| instance(s)) {
        if !view.iter().any(|v| v.name() == server.name()) {
            view.push(server.clone());
        }
    }
    for server in all
        .iter()
        .filter(|s| scope_workspace(&s.config.scope).is_none())
    {
        if !enablement.shows(&server.config.scope, server.name(), root) {
            continue;
        }
        if !view.iter().any(|v| v.name() == server.name()) {
            view.push(server.clone());
        }
    }
    view.sort_by(|a, b| a.name().cmp(b.name()));
    view
}

/// Registered names per scope, then per server.
type ViewNames = BTreeMap<String, BTreeMap<String, Vec<String>>>;

/// One view's tools, named: bare unless a non-MCP tool (`taken`) or a
/// server earlier in name order has the name, then `server__tool`.
fn named_view(
    servers: &[Arc<Server>],
    taken: &std::collections::BTreeSet<String>,
) -> (McpViewTools, ViewNames) {
    let mut used = taken.clone();
    let mut out = McpViewTools::default();
    let mut registered = ViewNames::new();
    for server in servers {
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
                out.aliases.push((qualified, name.clone()));
            }
            names.push(name.clone());
            out.tools
                .push(Arc::new(McpTool::new(server.clone(), &remote, name)) as Arc<dyn Tool>);
        }
        registered
            .entry(server.config.scope.clone())
            .or_default()
            .insert(server.name().to_owned(), names);
    }
    (out, registered)
}

fn listed(
    servers: &[Arc<Server>],
    server: Option<&str>,
    of: impl Fn(&Server) -> Vec<serde_json::Value>,
) -> Vec<resources::Listed> {
    servers
        .iter()
        .filter(|s| server.is_none_or(|name| s.name() == name))
        .flat_map(|s| {
            of(s).into_iter().map(|resource| resources::Listed {
                server: s.name().to_owned(),
                scope: s.config.scope.clone(),
                resource,
            })
        })
        .collect()
}
