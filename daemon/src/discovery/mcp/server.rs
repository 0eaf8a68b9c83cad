//! One configured MCP server: its live connection (kept warm and
//! reconnected with backoff), what it offers, and calls through it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientRequest, Request, RequestId,
    ServerResult,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleClient, ServiceError};
use serde_json::Value;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use super::connect::{self, Hooks};
use super::content;
use super::listing;
pub use super::listing::{PromptInfo, RemoteTool};
use crate::discovery::settings::ServerConfig;
use crate::tools::{OutputSink, ToolError, ToolErrorKind, ToolResult};

/// Longest wait between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// How long listing tools and prompts may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Connecting,
    Connected,
    Disconnected,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Connecting => "connecting",
            Status::Connected => "connected",
            Status::Disconnected => "disconnected",
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
    tools: Vec<RemoteTool>,
    prompts: Vec<PromptInfo>,
    /// The names the manager registered this server's tools under.
    registered: Vec<String>,
    pid: Option<u32>,
    attempted: bool,
}

pub struct Server {
    pub config: ServerConfig,
    pub hooks: Arc<Hooks>,
    state: Mutex<State>,
    pub restart: Notify,
    /// Counts finished connection attempts (for `mcp.restart` to wait on).
    pub attempts: watch::Sender<u64>,
}

/// What the connection loop tells its owner.
pub trait Events: Send + Sync {
    fn status(&self, server: &str, status: Status, message: Option<&str>);
    /// The server's tools changed (connected, refreshed).
    fn tools_changed(&self);
}

impl Server {
    pub fn new(config: ServerConfig) -> Arc<Server> {
        Arc::new(Server {
            config,
            hooks: Arc::new(Hooks::default()),
            state: Mutex::new(State {
                status: Status::Disconnected,
                message: None,
                live: None,
                tools: Vec::new(),
                prompts: Vec::new(),
                registered: Vec::new(),
                pid: None,
                attempted: false,
            }),
            restart: Notify::new(),
            attempts: watch::channel(0).0,
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
            }
        }
        events.status(self.name(), status, message.as_deref());
    }

    /// Uses an already open connection (the probe's) for calls.
    pub fn adopt(&self, peer: Peer<RoleClient>, status: Status) {
        let mut s = self.lock();
        s.live = Some((peer, CancellationToken::new()));
        s.status = status;
    }

    fn attempt_done(&self) {
        self.lock().attempted = true;
        self.attempts.send_modify(|n| *n += 1);
    }

    /// Keeps the server connected until `stop` fires: connects, lists,
    /// waits for the connection to end (or a restart), reconnects with
    /// exponential backoff.
    pub async fn run(self: Arc<Self>, events: Arc<dyn Events>, stop: CancellationToken) {
        let mut backoff = Duration::from_secs(1);
        loop {
            self.set(events.as_ref(), Status::Connecting, None);
            let connected = tokio::select! {
                () = stop.cancelled() => return,
                c = connect::connect(&self.config.transport, &self.config.headers, self.hooks.clone()) => c,
            };
            let restart_now = match connected {
                Ok(conn) => {
                    backoff = Duration::from_secs(1);
                    self.serve(conn, events.as_ref(), &stop).await
                }
                Err(e) => {
                    self.set(events.as_ref(), Status::Disconnected, Some(e.to_string()));
                    self.attempt_done();
                    false
                }
            };
            if stop.is_cancelled() {
                return;
            }
            if restart_now {
                continue;
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = self.restart.notified() => backoff = Duration::from_secs(1),
                () = tokio::time::sleep(backoff) => backoff = (backoff * 2).min(MAX_BACKOFF),
            }
        }
    }

    /// Runs one connection to its end. Returns whether to reconnect at once.
    async fn serve(
        &self,
        conn: connect::Connection,
        events: &dyn Events,
        stop: &CancellationToken,
    ) -> bool {
        let connect::Connection { service, group } = conn;
        let peer = service.peer().clone();
        let closing = service.cancellation_token();
        let mut ended = std::pin::pin!(service.waiting());
        if let Err(problem) = self.refresh(&peer).await {
            closing.cancel();
            let _ = tokio::time::timeout(Duration::from_secs(2), &mut ended).await;
            drop(group);
            self.set(events, Status::Disconnected, Some(problem));
            self.attempt_done();
            return false;
        }
        {
            let mut s = self.lock();
            s.live = Some((peer.clone(), CancellationToken::new()));
            s.pid = group.as_ref().map(|g| g.0);
        }
        self.set(events, Status::Connected, None);
        events.tools_changed();
        self.attempt_done();
        let (restart, reason, over) = loop {
            tokio::select! {
                _ = &mut ended => break (false, "the server closed the connection (it exited or closed its output)", true),
                () = self.hooks.lists_changed.notified() => {
                    if self.refresh(&peer).await.is_ok() {
                        events.tools_changed();
                    }
                }
                () = self.restart.notified() => break (true, "restarting", false),
                () = stop.cancelled() => break (false, "the daemon is stopping", false),
            }
        };
        if !over {
            // A finished future must not be polled again.
            closing.cancel();
            let _ = tokio::time::timeout(Duration::from_secs(2), &mut ended).await;
        }
        // Killing the group also ends anything the server spawned.
        drop(group);
        self.set(events, Status::Disconnected, Some(reason.to_owned()));
        restart
    }

    /// Lists tools and prompts (prompts are optional: errors mean none).
    async fn refresh(&self, peer: &Peer<RoleClient>) -> Result<(), String> {
        let tools = tokio::time::timeout(LIST_TIMEOUT, peer.list_all_tools())
            .await
            .map_err(|_| "tools/list timed out".to_owned())?
            .map_err(|e| format!("tools/list failed: {e}"))?;
        let prompts = match tokio::time::timeout(LIST_TIMEOUT, peer.list_all_prompts()).await {
            Ok(Ok(prompts)) => prompts,
            Ok(Err(_)) | Err(_) => Vec::new(),
        };
        let tools = listing::tools(&tools, &self.config);
        let prompts = listing::prompts(&prompts);
        let mut s = self.lock();
        s.tools = tools;
        s.prompts = prompts;
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
    pub async fn call(
        &self,
        tool: &str,
        display: &str,
        args: Value,
        cancel: CancellationToken,
        output: OutputSink,
    ) -> Result<ToolResult, ToolError> {
        let live = self.lock().live.clone();
        let Some((peer, gone)) = live else {
            return Err(self.unavailable());
        };
        let arguments = match args {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        // Lines that are not JSON from here on fail this call (its answer
        // may be one of them; it cannot be told apart).
        let mut invalid = self.hooks.invalid_json.subscribe();
        let request = ClientRequest::CallToolRequest(Request::new(
            CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments),
        ));
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|_| self.unavailable())?;
        let id = handle.id.clone();
        let _progress = self.hooks.watch_progress(&handle.progress_token, output);
        let timeout = self.config.timeout;
        let answer = tokio::select! {
            answer = handle.await_response() => answer,
            () = cancel.cancelled() => {
                tell_cancelled(&peer, id, "cancelled by the user").await;
                return Err(ToolError::new(ToolErrorKind::Cancelled, "the call was cancelled"));
            }
            () = tokio::time::sleep(timeout) => {
                tell_cancelled(&peer, id, "timed out").await;
                return Err(ToolError::new(
                    ToolErrorKind::Timeout,
                    format!("MCP tool {display} timed out after {} ms", timeout.as_millis()),
                ));
            }
            () = gone.cancelled() => return Err(self.ended(display)),
            Ok(()) = invalid.changed() => {
                let problem = invalid.borrow().clone().unwrap_or_default();
                tell_cancelled(&peer, id, "the server wrote invalid JSON").await;
                return Err(ToolError::execution(format!(
                    "MCP server {} wrote invalid JSON while {display} was running: {problem}",
                    self.name()
                )));
            }
        };
        match answer {
            Ok(ServerResult::CallToolResult(result)) => {
                let value = serde_json::to_value(&result)
                    .map_err(|e| ToolError::execution(format!("bad result: {e}")))?;
                content::convert(&value, display)
            }
            Ok(_) => Err(ToolError::execution(format!(
                "MCP server {} answered tools/call with something that is not a tool result",
                self.name()
            ))),
            Err(ServiceError::McpError(e)) => Err(ToolError::execution(e.message.to_string())),
            Err(ServiceError::TransportClosed | ServiceError::TransportSend(_)) => {
                Err(self.ended(display))
            }
            Err(e) => Err(ToolError::execution(e.to_string())),
        }
    }
}

async fn tell_cancelled(peer: &Peer<RoleClient>, id: RequestId, reason: &str) {
    let params = CancelledNotificationParam::new(Some(id), Some(reason.to_owned()));
    // Best effort: the server may already be gone.
    let _ = tokio::time::timeout(Duration::from_secs(2), peer.notify_cancelled(params)).await;
}
