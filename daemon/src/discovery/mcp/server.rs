//! One configured MCP server: its live connection (kept warm and
//! reconnected with backoff), what it offers, and calls through it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientRequest, GetPromptRequestParams,
    PingRequest, ReadResourceRequestParams, Request, RequestId, ServerResult,
};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::{Peer, RoleClient, ServiceError};
use serde_json::Value;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use super::connect::{self, Handler, Hooks, ProcessGroup};
use super::content;
use super::listing;
pub use super::listing::{PromptInfo, RemoteTool};
use super::oauth::TokenStore;
use super::oauth::refusal::{self, Refusal};
use super::oauth::server_auth::{Refused, ServerAuth};
use crate::discovery::settings::ServerConfig;
use crate::tools::{OutputSink, ToolError, ToolErrorKind, ToolResult};

/// Longest wait between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// How long listing tools and prompts may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long closing a connection may wait for its transport to close.
const CLOSE_WAIT: Duration = Duration::from_secs(2);
/// How often a connected HTTP or SSE server is pinged: nothing else tells
/// that it went away (a stdio server's end is its closed output).
/// `GEMINID_MCP_PING_MS` overrides it (tests).
const PING_EVERY: Duration = Duration::from_secs(10);
/// How long a ping may take before the server counts as gone.
const PING_TIMEOUT: Duration = Duration::from_secs(5);

fn ping_every() -> Duration {
    std::env::var("GEMINID_MCP_PING_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|ms| *ms > 0)
        .map(Duration::from_millis)
        .unwrap_or(PING_EVERY)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Connecting,
    Connected,
    Disconnected,
    /// The server wants an OAuth login (`gemctl mcp auth NAME`); no
    /// reconnection is tried until then.
    NeedsAuth,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Connecting => "connecting",
            Status::Connected => "connected",
            Status::Disconnected => "disconnected",
            Status::NeedsAuth => "needs_auth",
        }
    }
}

/// A snapshot of a server for `mcp.list`.
#[derive(Debug, Clone)]
pub struct ServerSnapshot {
    pub config: ServerConfig,
    pub status: Status,
    pub message: Option<String>,
    pub registered: Vec<String>,
    pub prompts: Vec<PromptInfo>,
    pub pid: Option<u32>,
    pub attempted: bool,
}

struct State {
    status: Status,
    message: Option<String>,
    /// The live connection's peer and a token fired when it goes away.
    live: Option<(Peer<RoleClient>, CancellationToken)>,
    /// The server's answer to `initialize`, while connected.
    peer_info: Option<Value>,
    tools: Vec<RemoteTool>,
    prompts: Vec<PromptInfo>,
    /// `resources/list` and `resources/templates/list`, as the server
    /// sent them (empty when it offers no resources).
    resources: Vec<Value>,
    templates: Vec<Value>,
    /// The names the manager registered this server's tools under.
    registered: Vec<String>,
    pid: Option<u32>,
    attempted: bool,
    /// A request was refused for a scope only a login can grant: why (the
    /// connection then ends in `needs_auth`).
    needs_login: Option<String>,
}

pub struct Server {
    pub config: ServerConfig,
    pub hooks: Arc<Hooks>,
    /// Its OAuth tokens and login.
    pub auth: ServerAuth,
    state: Mutex<State>,
    pub restart: Notify,
    /// A call found the connection broken (a failed request): the
    /// connection ends and reconnects with backoff.
    lost: Notify,
    /// A request needs a wider scope that only a login grants (`step_up`).
    needs_login: Notify,
    /// Counts finished connection attempts (for `mcp.restart` to wait on).
    pub attempts: watch::Sender<u64>,
    /// The URIs some session subscribed to: subscribed again on each new
    /// connection.
    subscribed: Mutex<std::collections::BTreeSet<String>>,
    /// Held while a subscription changes (the set and the request), so a
    /// subscribe and an unsubscribe of one URI reach the server in the
    /// order the set changed.
    subscribing: tokio::sync::Mutex<()>,
}

/// What the connection loop tells its owner.
pub trait Events: Send + Sync {
    fn status(&self, server: &str, scope: &str, status: Status, message: Option<&str>);
    /// The server's tools changed (connected, refreshed).
    fn tools_changed(&self);
    /// The server (`server` of settings layer `scope`) sent
    /// `notifications/resources/updated` for `uri`.
    fn resource_updated(&self, _server: &str, _scope: &str, _uri: &str) {}
}

/// One open connection: the running client and a stdio server's process
/// group. Closing it (or dropping it) ends the server.
pub struct Open {
    service: RunningService<RoleClient, Handler>,
    group: Option<ProcessGroup>,
}

impl Open {
    /// Ends the connection (waiting at most [`CLOSE_WAIT`] for the
    /// transport to close), then kills a stdio server's process group.
    async fn close(self) {
        let Open { service, group } = self;
        service.cancellation_token().cancel();
        let _ = tokio::time::timeout(CLOSE_WAIT, service.waiting()).await;
        drop(group);
    }
}

impl Server {
    /// A server whose `roots/list` answers from `open` (the workspace
    /// roots the sessions opened, `roots.rs`) and whose sampling requests
    /// go to `sampling`.
    pub fn new(
        config: ServerConfig,
        tokens: Arc<TokenStore>,
        open: super::roots::OpenRoots,
        sampling: Arc<super::sampling::SamplingDesk>,
    ) -> Arc<Server> {
        let hooks = Hooks {
            roots: Some(super::roots::RootsView::new(open, &config.scope)),
            sampling: Some(super::sampling::ServerSampling::new(&config.name, sampling)),
            ..Hooks::default()
        };
        Self::with_hooks(config, hooks, ServerAuth::new(tokens, false))
    }

    /// A server whose connections' handler uses `hooks` (roots, the sandbox).
    pub fn with_hooks(config: ServerConfig, mut hooks: Hooks, auth: ServerAuth) -> Arc<Server> {
        hooks.server = config.name.clone();
        if let super::super::settings::Transport::Stdio { cwd, .. } = &config.transport {
            hooks.jail = Some(crate::discovery::jail::ServerJail::new(
                config.sandbox,
                cwd.as_deref(),
                &config.scope,
            ));
        }
        Arc::new(Server {
            config,
            hooks: Arc::new(hooks),
            auth,
            state: Mutex::new(State {
                status: Status::Disconnected,
                message: None,
                live: None,
                peer_info: None,
                tools: Vec::new(),
                prompts: Vec::new(),
                resources: Vec::new(),
                templates: Vec::new(),
                registered: Vec::new(),
                pid: None,
                attempted: false,
                needs_login: None,
            }),
            restart: Notify::new(),
            lost: Notify::new(),
            needs_login: Notify::new(),
            attempts: watch::channel(0).0,
            subscribed: Mutex::default(),
            subscribing: tokio::sync::Mutex::new(()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    pub fn tools(&self) -> Vec<RemoteTool> {
        self.lock().tools.clone()
    }

    /// The server's resources, as `resources/list` answered.
    pub fn resources(&self) -> Vec<Value> {
        self.lock().resources.clone()
    }

    /// The server's resource templates, as `resources/templates/list`
    /// answered.
    pub fn resource_templates(&self) -> Vec<Value> {
        self.lock().templates.clone()
    }

    /// `resources/read` of `uri`: the server's answer as it sent it (a 403
    /// for want of scope stepped up once, as a call's).
    pub async fn read_resource(&self, uri: &str) -> Result<Value, ToolError> {
        let display = format!("reading {uri}");
        self.stepping_up(&display, || self.read_resource_once(uri))
            .await
    }

    async fn read_resource_once(&self, uri: &str) -> Result<Value, Attempt> {
        let live = self.lock().live.clone();
        let Some((peer, gone)) = live else {
            return Err(self.unavailable().into());
        };
        let read = peer.read_resource(ReadResourceRequestParams::new(uri));
        let answer = tokio::select! {
            answer = tokio::time::timeout(self.config.timeout, read) => answer,
            () = gone.cancelled() => return Err(self.ended(&format!("reading {uri}")).into()),
        };
        if let Ok(Err(e)) = &answer
            && let Some(refusal) = refusal::of_service(e)
        {
            return Err(Attempt::Refused(refusal));
        }
        let result = match answer {
            Err(_) => Err(ToolError::new(
                ToolErrorKind::Timeout,
                format!(
                    "MCP server {} did not answer resources/read of {uri}",
                    self.name()
                ),
            )),
            Ok(Err(e)) => Err(ToolError::execution(format!(
                "MCP server {} could not read {uri}: {e}",
                self.name()
            ))),
            Ok(Ok(result)) => serde_json::to_value(&result)
                .map_err(|e| ToolError::execution(format!("bad resources/read answer: {e}"))),
        };
        result.map_err(Attempt::Failed)
    }

    /// `resources/subscribe` of `uri` (once per connection; kept for the
    /// next ones). A server that does not offer subscriptions is refused
    /// here rather than asked.
    pub async fn subscribe(&self, uri: &str) -> Result<(), ToolError> {
        let (live, info) = {
            let s = self.lock();
            (s.live.clone(), s.peer_info.clone())
        };
        let Some((peer, _)) = live else {
            return Err(self.unavailable());
        };
        let offered = info
            .as_ref()
            .and_then(|i| i.pointer("/capabilities/resources/subscribe"))
            .and_then(Value::as_bool)
            == Some(true);
        if !offered {
            return Err(ToolError::execution(format!(
                "MCP server {} does not offer resource subscriptions",
                self.name()
            )));
        }
        let _changing = self.subscribing.lock().await;
        let newly = self
            .subscribed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(uri.to_owned());
        if !newly {
            return Ok(());
        }
        if let Err(e) = send_subscribe(&peer, uri, self.config.timeout).await {
            self.subscribed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(uri);
            return Err(ToolError::execution(format!(
                "MCP server {} could not subscribe to {uri}: {e}",
                self.name()
            )));
        }
        Ok(())
    }

    /// Whether the server was asked for updates of `uri` (and is asked
    /// again after a reconnect).
    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.subscribed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(uri)
    }

    /// Every URI the server was asked for updates of.
    pub fn subscribed_uris(&self) -> Vec<String> {
        self.subscribed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    /// `resources/unsubscribe` of `uri`, unless `wanted` says a session
    /// wants it again (checked while no subscription can change). The URI
    /// is forgotten for later connections even when the server cannot be
    /// told now (it is not connected, or refuses).
    pub async fn unsubscribe(&self, uri: &str, wanted: impl Fn() -> bool) -> Result<(), String> {
        let _changing = self.subscribing.lock().await;
        if wanted() {
            return Ok(());
        }
        let was = self
            .subscribed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(uri);
        let live = self.lock().live.clone();
        let (true, Some((peer, _))) = (was, live) else {
            return Ok(());
        };
        send_unsubscribe(&peer, uri, self.config.timeout).await
    }

    /// Subscribes the new connection to what the last ones were.
    async fn resubscribe(&self, peer: &Peer<RoleClient>) {
        let _changing = self.subscribing.lock().await;
        let uris: Vec<String> = self
            .subscribed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect();
        for uri in uris {
            if let Err(e) = send_subscribe(peer, &uri, self.config.timeout).await {
                tracing::warn!(server = self.name(), uri, error = %e, "resubscribing failed");
            }
        }
    }

    /// `prompts/get` of `name` with `arguments`: the server's answer as it
    /// sent it (`description`, `messages`).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: serde_json::Map<String, Value>,
    ) -> Result<Value, ToolError> {
        let display = format!("getting prompt {name}");
        self.stepping_up(&display, || self.get_prompt_once(name, arguments.clone()))
            .await
    }

    async fn get_prompt_once(
        &self,
        name: &str,
        arguments: serde_json::Map<String, Value>,
    ) -> Result<Value, Attempt> {
        let live = self.lock().live.clone();
        let Some((peer, gone)) = live else {
            return Err(self.unavailable().into());
        };
        let get = peer.get_prompt(GetPromptRequestParams::new(name).with_arguments(arguments));
        let answer = tokio::select! {
            answer = tokio::time::timeout(self.config.timeout, get) => answer,
            () = gone.cancelled() => return Err(self.ended(&format!("getting prompt {name}")).into()),
        };
        if let Ok(Err(e)) = &answer
            && let Some(refusal) = refusal::of_service(e)
        {
            return Err(Attempt::Refused(refusal));
        }
        let result = match answer {
            Err(_) => Err(ToolError::new(
                ToolErrorKind::Timeout,
                format!(
                    "MCP server {} did not answer prompts/get of {name}",
                    self.name()
                ),
            )),
            Ok(Err(e)) => Err(ToolError::execution(format!(
                "MCP server {} could not get prompt {name}: {e}",
                self.name()
            ))),
            Ok(Ok(result)) => serde_json::to_value(&result)
                .map_err(|e| ToolError::execution(format!("bad prompts/get answer: {e}"))),
        };
        result.map_err(Attempt::Failed)
    }

    /// The server's answer to `initialize`, while connected.
    pub fn peer_info(&self) -> Option<Value> {
        self.lock().peer_info.clone()
    }

    pub fn set_registered(&self, names: Vec<String>) {
        self.lock().registered = names;
    }

    pub fn snapshot(&self) -> ServerSnapshot {
        let s = self.lock();
        ServerSnapshot {
            config: self.config.clone(),
            status: s.status,
            message: s.message.clone(),
            registered: s.registered.clone(),
            prompts: s.prompts.clone(),
            pid: s.pid,
            attempted: s.attempted,
        }
    }

    fn set(&self, events: &dyn Events, status: Status, message: Option<String>) {
        {
            let mut s = self.lock();
            s.status = status;
            s.message = message.clone();
            if status != Status::Connected {
                if let Some((_, gone)) = s.live.take() {
                    gone.cancel();
                }
                s.pid = None;
                s.peer_info = None;
            }
        }
        events.status(self.name(), &self.config.scope, status, message.as_deref());
    }

    fn attempt_done(&self) {
        self.lock().attempted = true;
        self.attempts.send_modify(|n| *n += 1);
    }

    /// Keeps the server connected until `stop` fires: opens, waits for
    /// the connection to end (or a restart), opens again with exponential
    /// backoff.
    pub async fn run(self: Arc<Self>, events: Arc<dyn Events>, stop: CancellationToken) {
        let relay = events.clone();
        let name = self.name().to_owned();
        let scope = self.config.scope.clone();
        *self
            .hooks
            .resource_updated
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(move |uri: &str| {
            relay.resource_updated(&name, &scope, uri)
        }));
        let mut backoff = Duration::from_secs(1);
        loop {
            let opened = tokio::select! {
                () = stop.cancelled() => return,
                opened = self.open(events.as_ref()) => opened,
            };
            let restart_now = match opened {
                Ok(open) => {
                    backoff = Duration::from_secs(1);
                    self.serve(open, events.as_ref(), &stop).await
                }
                Err(_) => false,
            };
            if stop.is_cancelled() {
                return;
            }
            if restart_now {
                continue;
            }
            if self.lock().status == Status::NeedsAuth {
                // Only a login (which restarts it) helps.
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = self.restart.notified() => backoff = Duration::from_secs(1),
                }
                continue;
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = self.restart.notified() => backoff = Duration::from_secs(1),
                () = tokio::time::sleep(backoff) => backoff = (backoff * 2).min(MAX_BACKOFF),
            }
        }
    }

    /// One connection attempt: connects, runs `initialize` and lists the
    /// tools and prompts. On success the server is connected and calls go
    /// through it until the connection is closed; on failure it is
    /// disconnected, and the error says why.
    pub async fn open(&self, events: &dyn Events) -> Result<Open, String> {
        self.set(events, Status::Connecting, None);
        // One authorization per attempt: a server that refuses the new
        // token too is not asked again in a loop.
        let mut authorized = false;
        let (open, peer) = loop {
            let (problem, refusal) = match self.open_once().await {
                Ok(opened) => break opened,
                Err(failed) => failed,
            };
            let refused = if authorized {
                Ok(false)
            } else {
                self.auth.after_refusal(&self.config, refusal).await
            };
            let problem = match refused {
                Ok(true) => {
                    authorized = true;
                    continue;
                }
                Ok(false) => problem,
                Err(Refused::NeedsLogin(why)) => {
                    self.set(events, Status::NeedsAuth, Some(why.clone()));
                    self.attempt_done();
                    return Err(why);
                }
                Err(Refused::Failed(e)) => format!("{problem}; authorization failed: {e}"),
            };
            self.set(events, Status::Disconnected, Some(problem.clone()));
            self.attempt_done();
            return Err(problem);
        };
        {
            let mut s = self.lock();
            s.live = Some((peer.clone(), CancellationToken::new()));
            s.pid = open.group.as_ref().map(|g| g.0);
            s.peer_info = peer.peer_info().and_then(|i| serde_json::to_value(i).ok());
        }
        self.resubscribe(&peer).await;
        self.set(events, Status::Connected, None);
        events.tools_changed();
        self.attempt_done();
        Ok(open)
    }

    /// Connects with the current token and lists; on failure, why, and the
    /// server's refusal when it was one.
    async fn open_once(&self) -> Result<(Open, Peer<RoleClient>), (String, Option<Refusal>)> {
        self.auth.bearer(&self.config).await;
        let connected = connect::connect(
            &self.config.transport,
            &self.config.headers,
            self.auth.live.clone(),
            self.hooks.clone(),
        )
        .await;
        let connect::Connection { service, group } = match connected {
            Ok(connection) => connection,
            Err(connect::ConnectError::Refused(refusal)) => {
                return Err(("the server refused the connection".into(), Some(refusal)));
            }
            Err(e) => return Err((e.to_string(), None)),
        };
        let open = Open { service, group };
        let peer = open.service.peer().clone();
        if let Err(failed) = self.refresh(&peer).await {
            open.close().await;
            return Err(failed);
        }
        Ok((open, peer))
    }

    /// Ends a connection [`Server::open`] opened; the server is
    /// disconnected, for `reason`.
    pub async fn close(&self, open: Open, events: &dyn Events, reason: &str) {
        open.close().await;
        self.set(events, Status::Disconnected, Some(reason.to_owned()));
    }

    /// Runs one open connection to its end. Returns whether to reconnect
    /// at once.
    async fn serve(&self, open: Open, events: &dyn Events, stop: &CancellationToken) -> bool {
        let Open { service, group } = open;
        let peer = service.peer().clone();
        let closing = service.cancellation_token();
        let mut ended = std::pin::pin!(service.waiting());
        // Only a stdio server has a process group; an HTTP or SSE one
        // that went away is noticed by pinging it.
        let remote = group.is_none();
        // A failure told about an earlier connection is not this one's.
        let _ = tokio::time::timeout(Duration::ZERO, self.lost.notified()).await;
        let _ = tokio::time::timeout(Duration::ZERO, self.needs_login.notified()).await;
        self.lock().needs_login = None;
        let mut ping = tokio::time::interval(ping_every());
        ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ping.tick().await;
        // An OAuth token is refreshed before it expires: the connection
        // carries it, so the server is reconnected with the new one.
        // (A token already due could not be refreshed: the server's 401
        // will tell when it is really over.)
        let refresh_in = self.auth.refresh_in(&self.config).filter(|d| !d.is_zero());
        let token_due = tokio::time::sleep(refresh_in.unwrap_or(Duration::from_secs(86_400)));
        let mut token_due = std::pin::pin!(token_due);
        // The server is told when its roots change (`roots.rs`).
        let view = self.hooks.roots.clone();
        let mut open_roots = view.as_ref().map(|v| v.watch());
        let mut told = view.as_ref().map(|v| v.paths()).unwrap_or_default();
        let (restart, reason, over) = loop {
            tokio::select! {
                _ = &mut ended => break (false, "the server closed the connection (it exited or closed its output)", true),
                () = self.lost.notified() => break (false, "a request to the server failed", false),
                () = self.needs_login.notified() => break (false, "a request needs a wider OAuth scope", false),
                _ = ping.tick(), if remote => {
                    if let Err(problem) = alive(&peer).await {
                        tracing::warn!(server = %self.name(), %problem, "MCP server stopped answering");
                        break (false, "the server stopped answering (ping failed)", false);
                    }
                }
                () = self.hooks.lists_changed.notified() => {
                    if self.refresh(&peer).await.is_ok() {
                        events.tools_changed();
                    }
                }
                now = async { match (view.as_ref(), open_roots.as_mut()) {
                    (Some(v), Some(w)) => v.changed(w, &told).await,
                    _ => std::future::pending().await,
                } } => {
                    told = now;
                    if let Err(problem) = peer.notify_roots_list_changed().await {
                        tracing::warn!(server = %self.name(), %problem, "roots/list_changed not sent");
                    }
                }
                () = self.restart.notified() => break (true, "restarting", false),
                () = &mut token_due, if refresh_in.is_some() => {
                    break (true, "reconnecting with a refreshed OAuth token", false)
                }
                () = stop.cancelled() => break (false, "the daemon is stopping", false),
            }
        };
        if !over {
            // A finished future must not be polled again.
            closing.cancel();
            let _ = tokio::time::timeout(CLOSE_WAIT, &mut ended).await;
        }
        // Killing the group also ends anything the server spawned.
        drop(group);
        // Only a login helps a server that wants a wider scope.
        let needs_login = self.lock().needs_login.take();
        match needs_login {
            Some(why) => self.set(events, Status::NeedsAuth, Some(why)),
            None => self.set(events, Status::Disconnected, Some(reason.to_owned())),
        }
        restart
    }

    /// Lists tools and prompts (prompts are optional: errors mean none).
    async fn refresh(&self, peer: &Peer<RoleClient>) -> Result<(), (String, Option<Refusal>)> {
        let tools = tokio::time::timeout(LIST_TIMEOUT, peer.list_all_tools())
            .await
            .map_err(|_| ("tools/list timed out".to_owned(), None))?
            .map_err(|e| (format!("tools/list failed: {e}"), refusal::of_service(&e)))?;
        let prompts = match tokio::time::timeout(LIST_TIMEOUT, peer.list_all_prompts()).await {
            Ok(Ok(prompts)) => prompts,
            Ok(Err(_)) | Err(_) => Vec::new(),
        };
        let offers_resources = peer
            .peer_info()
            .is_some_and(|info| info.capabilities.resources.is_some());
        let (resources, templates) = if offers_resources {
            // Optional like prompts: a failed listing means none.
            let resources = tokio::time::timeout(LIST_TIMEOUT, peer.list_all_resources()).await;
            let templates =
                tokio::time::timeout(LIST_TIMEOUT, peer.list_all_resource_templates()).await;
            (
                listing::as_json(resources.ok().and_then(Result::ok).unwrap_or_default()),
                listing::as_json(templates.ok().and_then(Result::ok).unwrap_or_default()),
            )
        } else {
            (Vec::new(), Vec::new())
        };
        let tools = listing::tools(&tools, &self.config);
        let prompts = listing::prompts(&prompts);
        let mut s = self.lock();
        s.tools = tools;
        s.prompts = prompts;
        s.resources = resources;
        s.templates = templates;
        Ok(())
    }

    fn unavailable(&self) -> ToolError {
        let s = self.lock();
        let why = s
            .message
            .as_deref()
            .map(|m| format!(": {m}"))
            .unwrap_or_default();
        ToolError::new(
            ToolErrorKind::Unavailable,
            format!(
                "MCP server {} is unavailable ({}{why})",
                self.name(),
                s.status.as_str()
            ),
        )
    }

    /// The connection ended while `display` was running.
    fn ended(&self, display: &str) -> ToolError {
        let s = self.lock();
        let why = match (s.status, s.message.as_deref()) {
            (Status::Connected, _) | (_, None) => {
                "the server closed the connection (it exited or closed its output)"
            }
            (_, Some(message)) => message,
        };
        ToolError::new(
            ToolErrorKind::Unavailable,
            format!(
                "MCP server {} went away while {display} was running: {why}",
                self.name()
            ),
        )
    }

    /// Calls `tool` with the configured timeout. Cancellation and timeout
    /// tell the server (`notifications/cancelled`); progress goes to `output`.
    /// A 403 asking for more scope is stepped up once and the call sent
    /// again (`step_up`).
    pub async fn call(
        &self,
        tool: &str,
        display: &str,
        args: Value,
        cancel: CancellationToken,
        output: OutputSink,
    ) -> Result<ToolResult, ToolError> {
        let arguments = match args {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        self.stepping_up(display, || {
            self.call_once(
                tool,
                display,
                arguments.clone(),
                cancel.clone(),
                output.clone(),
            )
        })
        .await
    }

    /// Sends a request (`send`); when the server refuses it with 403 for
    /// want of scope, steps up once and sends it again.
    async fn stepping_up<T, F, Fut>(&self, display: &str, mut send: F) -> Result<T, ToolError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, Attempt>>,
    {
        let mut again = false;
        loop {
            match send().await {
                Ok(value) => return Ok(value),
                Err(Attempt::Failed(e)) => return Err(e),
                Err(Attempt::Refused(refusal)) => {
                    self.step_up(&refusal, display, again).await?;
                    again = true;
                }
            }
        }
    }

    /// After a request was refused with 403 (`refusal`): a new token with
    /// the wider scope (`Ok`: send the request again), or why the request
    /// fails. A second refusal for the same request fails it (no loop); a
    /// step-up only a person can grant puts the server in `needs_auth`.
    async fn step_up(
        &self,
        refusal: &Refusal,
        display: &str,
        again: bool,
    ) -> Result<(), ToolError> {
        let asked = refusal.challenge.scope.as_deref().unwrap_or("");
        if refusal.status != 403 || again {
            return Err(ToolError::execution(format!(
                "MCP server {} refused {display} (HTTP {}{}){}",
                self.name(),
                refusal.status,
                if asked.is_empty() {
                    String::new()
                } else {
                    format!(", scope `{asked}`")
                },
                if again {
                    " again after a new authorization"
                } else {
                    ""
                },
            )));
        }
        match self.auth.step_up(&self.config, &refusal.challenge).await {
            Ok(()) => Ok(()),
            Err(Refused::NeedsLogin(why)) => {
                self.lock().needs_login = Some(why.clone());
                self.needs_login.notify_one();
                Err(ToolError::new(
                    ToolErrorKind::Unavailable,
                    format!("MCP server {} refused {display}: {why}", self.name()),
                ))
            }
            Err(Refused::Failed(e)) => Err(ToolError::execution(format!(
                "MCP server {} refused {display} for want of scope: {e}",
                self.name()
            ))),
        }
    }

    async fn call_once(
        &self,
        tool: &str,
        display: &str,
        arguments: serde_json::Map<String, Value>,
        cancel: CancellationToken,
        output: OutputSink,
    ) -> Result<ToolResult, Attempt> {
        let live = self.lock().live.clone();
        let Some((peer, gone)) = live else {
            return Err(self.unavailable().into());
        };
        // Lines that are not JSON from here on fail this call (its answer
        // may be one of them; it cannot be told apart).
        let mut invalid = self.hooks.invalid_json.subscribe();
        let request = ClientRequest::CallToolRequest(Request::new(
            CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments),
        ));
        // In flight from before the request goes out: a request the
        // server makes at once finds the call (`calls.rs`).
        let in_flight = self.hooks.calls.enter(output);
        let handle = match peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(e) => {
                if let Some(refusal) = refusal::of_service(&e) {
                    return Err(Attempt::Refused(refusal));
                }
                if !gone.is_cancelled() {
                    self.lost.notify_one();
                }
                return Err(self.unavailable().into());
            }
        };
        let id = handle.id.clone();
        in_flight.set_token(&handle.progress_token);
        let timeout = self.config.timeout;
        let answer = tokio::select! {
            answer = handle.await_response() => answer,
            () = cancel.cancelled() => {
                tell_cancelled(&peer, id, "cancelled by the user").await;
                return Err(ToolError::new(ToolErrorKind::Cancelled, "the call was cancelled").into());
            }
            () = tokio::time::sleep(timeout) => {
                tell_cancelled(&peer, id, "timed out").await;
                return Err(ToolError::new(
                    ToolErrorKind::Timeout,
                    format!("MCP tool {display} timed out after {} ms", timeout.as_millis()),
                ).into());
            }
            () = gone.cancelled() => return Err(self.ended(display).into()),
            Ok(()) = invalid.changed() => {
                let problem = invalid.borrow().clone().unwrap_or_default();
                tell_cancelled(&peer, id, "the server wrote invalid JSON").await;
                return Err(ToolError::execution(format!(
                    "MCP server {} wrote invalid JSON while {display} was running: {problem}",
                    self.name()
                )).into());
            }
        };
        // rmcp runs notification handlers in tasks of their own but hands
        // the answer over directly, so the answer can overtake progress the
        // server sent before it. Let those tasks run before the guard
        // stops routing the call's progress.
        tokio::task::yield_now().await;
        // A refused request (rmcp's typed 401/403 from the transport).
        if let Err(e) = &answer
            && let Some(refusal) = refusal::of_service(e)
        {
            return Err(Attempt::Refused(refusal));
        }
        let result = match answer {
            Ok(ServerResult::CallToolResult(result)) => {
                let value = serde_json::to_value(&result)
                    .map_err(|e| ToolError::execution(format!("bad result: {e}")))?;
                let has_output_schema = self
                    .tools()
                    .iter()
                    .any(|t| t.name == tool && t.declared.get("outputSchema").is_some());
                content::convert(&value, tool, display, has_output_schema)
            }
            Ok(_) => Err(ToolError::execution(format!(
                "MCP server {} answered tools/call with something that is not a tool result",
                self.name()
            ))),
            Err(ServiceError::McpError(e)) => Err(ToolError::execution(e.message.to_string())),
            Err(ServiceError::TransportClosed | ServiceError::TransportSend(_)) => {
                // The connection is broken: reconnect rather than let the
                // next calls wait for their timeouts.
                if !gone.is_cancelled() {
                    self.lost.notify_one();
                }
                Err(self.ended(display))
            }
            Err(e) => Err(ToolError::execution(e.to_string())),
        };
        result.map_err(Attempt::Failed)
    }
}

/// How one attempt at a request ended when it did not succeed.
enum Attempt {
    /// The server refused it (401/403 with a challenge).
    Refused(Refusal),
    Failed(ToolError),
}

impl From<ToolError> for Attempt {
    fn from(e: ToolError) -> Attempt {
        Attempt::Failed(e)
    }
}

/// Whether the server answers a ping within [`PING_TIMEOUT`].
async fn alive(peer: &Peer<RoleClient>) -> Result<(), String> {
    let ping = ClientRequest::PingRequest(PingRequest {
        method: Default::default(),
        extensions: Default::default(),
    });
    match tokio::time::timeout(PING_TIMEOUT, peer.send_request(ping)).await {
        Ok(Ok(_)) => Ok(()),
        // A server that does not know ping still answers: it is there.
        Ok(Err(ServiceError::McpError(_))) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {} s", PING_TIMEOUT.as_secs())),
    }
}

async fn tell_cancelled(peer: &Peer<RoleClient>, id: RequestId, reason: &str) {
    let params = CancelledNotificationParam::new(Some(id), Some(reason.to_owned()));
    // Best effort: the server may already be gone.
    let _ = tokio::time::timeout(Duration::from_secs(2), peer.notify_cancelled(params)).await;
}

#[allow(deprecated)] // `resources/subscribe` is legacy in 2026-07-28; servers speak 2025-11-25.
async fn send_subscribe(
    peer: &Peer<RoleClient>,
    uri: &str,
    timeout: Duration,
) -> Result<(), String> {
    let sent = peer.subscribe(rmcp::model::SubscribeRequestParams::new(uri));
    match tokio::time::timeout(timeout, sent).await {
        Err(_) => Err("no answer".into()),
        Ok(Err(e)) => Err(e.to_string()),
        Ok(Ok(_)) => Ok(()),
    }
}

#[allow(deprecated)] // As `send_subscribe`.
async fn send_unsubscribe(
    peer: &Peer<RoleClient>,
    uri: &str,
    timeout: Duration,
) -> Result<(), String> {
    let sent = peer.unsubscribe(rmcp::model::UnsubscribeRequestParams::new(uri));
    match tokio::time::timeout(timeout, sent).await {
        Err(_) => Err("no answer".into()),
        Ok(Err(e)) => Err(e.to_string()),
        Ok(Ok(_)) => Ok(()),
    }
}
