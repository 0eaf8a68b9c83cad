//! Opening one MCP connection: the transport for each kind of server and
//! the client-side handler (list changes, elicitation, sampling, roots;
//! whose a request is: `calls.rs`).

use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    Implementation, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::sink_stream::SinkStreamTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::sync::Notify;

use super::bearer::{BearerClient, LiveToken};
use super::oauth;
use super::ordered::InOrder;
use super::sse;
use super::stdio::ChildTransport;
use crate::discovery::settings::Transport;

/// How long connecting (spawn or HTTP, then `initialize`) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("bad header {0:?}")]
    Header(String),
    #[error("{0}")]
    Sse(#[from] sse::SseError),
    #[error("initialize failed: {0}")]
    Initialize(String),
    /// The server refused for want of authorization.
    #[error("initialize failed: HTTP {}: the server wants authorization", .0.status)]
    Refused(super::oauth::refusal::Refusal),
    #[error("no answer to initialize within {0:?}")]
    Timeout(Duration),
}

/// Receives the URI of a `notifications/resources/updated`.
pub type UriFn = Arc<dyn Fn(&str) + Send + Sync>;

/// What a connection's handler shares with the rest of the daemon.
#[derive(Default)]
pub struct Hooks {
    /// The calls in flight, and whose a request of the server is
    /// (`calls.rs`).
    pub calls: super::calls::Calls,
    /// Fired on `notifications/tools/list_changed` (and prompts).
    pub lists_changed: Notify,
    /// The server's configured name (who asks an elicitation's question).
    pub server: String,
    /// The last line a stdio server wrote that is not JSON (what was wrong
    /// with it); calls in flight watch it (see `stdio.rs`).
    pub invalid_json: tokio::sync::watch::Sender<Option<String>>,
    /// A stdio server's sandbox, put on each spawn (`discovery/jail.rs`).
    pub jail: Option<crate::discovery::jail::ServerJail>,
    /// The roots `roots/list` answers (none: the capability is not
    /// advertised, as for a probe).
    pub roots: Option<super::roots::RootsView>,
    /// Where `sampling/createMessage` goes (none: the capability is not
    /// advertised and requests are declined, as for a probe).
    pub sampling: Option<Arc<super::sampling::ServerSampling>>,
    /// Where `notifications/resources/updated` goes (the URI); set by
    /// the server's connection loop.
    pub resource_updated: Mutex<Option<UriFn>>,
    /// URL-mode elicitations not yet completed, by `elicitationId`:
    /// `notifications/elicitation/complete` notifies their question.
    pub url_elicitations: Mutex<HashMap<String, Arc<tokio::sync::Notify>>>,
}

impl Hooks {
    /// A stdio server wrote a line that is not JSON.
    pub fn report_invalid_json(&self, problem: String) {
        tracing::warn!(%problem, "an MCP server wrote a line that is not JSON");
        self.invalid_json.send_replace(Some(problem));
    }
}

/// Progress for [`InOrder`]: to the call that asked for it.
fn route_progress(hooks: &Arc<Hooks>) -> super::ordered::RouteProgress {
    let hooks = hooks.clone();
    Arc::new(move |params| hooks.calls.route_progress(params))
}

/// The client side of one connection.
#[derive(Clone)]
pub struct Handler(pub Arc<Hooks>);

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.0.lists_changed.notify_one();
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.0.lists_changed.notify_one();
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.0.lists_changed.notify_one();
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let to = self
            .0
            .resource_updated
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(to) = to {
            to(&params.uri);
        }
    }

    #[allow(deprecated)] // rmcp's roots types: see `roots.rs`.
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, ErrorData> {
        Ok(self.0.roots.as_ref().map(|r| r.roots()).unwrap_or_default())
    }

    /// `notifications/elicitation/complete`: the URL-mode question it
    /// names gets its `elicitationCompleted` event.
    async fn on_custom_notification(
        &self,
        notification: rmcp::model::CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        if notification.method != "notifications/elicitation/complete" {
            return;
        }
        let id = notification
            .params
            .as_ref()
            .and_then(|p| p.get("elicitationId"))
            .and_then(Value::as_str);
        let waiting = id.and_then(|id| {
            self.0
                .url_elicitations
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(id)
        });
        match waiting {
            Some(completed) => completed.notify_one(),
            None => {
                tracing::info!(server = %self.0.server, ?id, "an elicitation completion for no open URL elicitation")
            }
        }
    }

    /// An elicitation becomes a question to the people of the call that
    /// made it (`questions/`, `session/questions.rs`): a form's fields, or
    /// a URL-mode request's link (an http(s) URL, shown and never opened
    /// here); when no call can be found, it is declined and logged.
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        use crate::questions::{Action, AskedBy, Form, Link, Question};
        let server = self.0.server.clone();
        let (message, form, link, meta) = match &request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                meta,
            } => {
                let schema = serde_json::to_value(requested_schema).unwrap_or(Value::Null);
                let form = Form::from_schema(&schema).map_err(|why| {
                    ErrorData::invalid_params(format!("requestedSchema: {why}"), None)
                })?;
                (message.clone(), form, None, meta.clone())
            }
            ElicitRequestParams::UrlElicitationParams {
                message,
                url,
                elicitation_id,
                meta,
            } => {
                if !(url.starts_with("https://") || url.starts_with("http://")) {
                    tracing::warn!(%server, %url, "declined a URL elicitation: not an http(s) URL");
                    return Ok(ElicitResult::new(ElicitationAction::Decline));
                }
                let completed = Arc::new(tokio::sync::Notify::new());
                let mut waiting = self
                    .0
                    .url_elicitations
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                if waiting.len() >= 64
                    && let Some(old) = waiting.keys().next().cloned()
                {
                    waiting.remove(&old);
                }
                waiting.insert(elicitation_id.clone(), completed.clone());
                let link = Link {
                    url: url.clone(),
                    completed,
                };
                (
                    message.clone(),
                    Form::default(),
                    Some((link, elicitation_id.clone())),
                    meta.clone(),
                )
            }
            _ => {
                tracing::info!(%server, "declined an elicitation of a mode geminid does not know");
                return Ok(ElicitResult::new(ElicitationAction::Decline));
            }
        };
        let token = meta
            .as_ref()
            .and_then(|m| m.get_progress_token())
            .or_else(|| context.meta.get_progress_token());
        let asker = match self.0.calls.asker_for(token.as_ref()) {
            Ok(asker) => asker,
            Err(why) => {
                tracing::warn!(%server, "declined an elicitation: {why}");
                if let Some((_, id)) = &link {
                    self.0
                        .url_elicitations
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(id);
                }
                return Ok(ElicitResult::new(ElicitationAction::Decline));
            }
        };
        let url_id = link.as_ref().map(|(_, id)| id.clone());
        let question = Question {
            asked_by: AskedBy::Mcp(server),
            message,
            form,
            link: link.map(|(link, _)| link),
        };
        let answer = tokio::select! {
            answer = asker.ask(question) => answer,
            // The server gave up on its request.
            () = context.ct.cancelled() => crate::questions::Answer::cancel(),
        };
        if let Some(id) = &url_id
            && answer.action != Action::Accept
        {
            // Nobody goes there: no completion to wait for.
            self.0
                .url_elicitations
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(id);
        }
        Ok(match answer.action {
            // A URL-mode accept carries no content: the person agreed to go.
            Action::Accept if url_id.is_some() => ElicitResult::new(ElicitationAction::Accept),
            Action::Accept => ElicitResult::new(ElicitationAction::Accept)
                .with_content(Value::Object(answer.content.unwrap_or_default())),
            Action::Decline => ElicitResult::new(ElicitationAction::Decline),
            Action::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        })
    }

    #[allow(deprecated)] // rmcp's sampling types: see `sampling.rs`.
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, ErrorData> {
        let token = params
            .meta
            .as_ref()
            .and_then(|m| m.get_progress_token())
            .or_else(|| context.meta.get_progress_token());
        let whose = self.0.calls.asker_for(token.as_ref());
        super::sampling::answer(self.0.sampling.as_deref(), whose, params).await
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = serde_json::Map::new();
        // Form and URL elicitation, for every server: a question to the
        // people of the call that asks (declined when nobody can answer).
        capabilities.insert(
            "elicitation".into(),
            serde_json::json!({"form": {}, "url": {}}),
        );
        if self.0.roots.is_some() {
            capabilities.insert("roots".into(), serde_json::json!({"listChanged": true}));
        }
        if self.0.sampling.is_some() {
            capabilities.insert("sampling".into(), serde_json::json!({}));
        }
        let capabilities: ClientCapabilities =
            serde_json::from_value(Value::Object(capabilities)).unwrap_or_default();
        // The newest version that released servers (and the conformance
        // suite) speak; 2026-07-28 servers accept it too.
        ClientConfig::new(
            capabilities,
            Implementation::new("geminid", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }
}

/// A live connection, and the process group of a stdio server.
pub struct Connection {
    pub service: RunningService<RoleClient, Handler>,
    pub group: Option<ProcessGroup>,
}

/// Kills a stdio server's whole process group when dropped, synchronously,
/// so that no server (nor what it spawned, like `npx`'s node) outlives its
/// connection or the daemon.
#[derive(Debug)]
pub struct ProcessGroup(pub u32);

impl ProcessGroup {
    pub fn kill(&self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.0 as i32) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// rmcp's reqwest is built without a TLS crypto provider (to avoid a
/// second one, aws-lc, in the build); install ring, once, before the first
/// client is built. Installing twice is harmless (the first one stays).
fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Connects and runs `initialize`, within [`CONNECT_TIMEOUT`].
/// `bearer` is the server's OAuth access token (an HTTP connection reads
/// it at each request, an SSE one once).
pub async fn connect(
    transport: &Transport,
    headers: &BTreeMap<String, String>,
    bearer: LiveToken,
    hooks: Arc<Hooks>,
) -> Result<Connection, ConnectError> {
    let connecting = connect_inner(transport, headers, bearer, hooks);
    match tokio::time::timeout(CONNECT_TIMEOUT, connecting).await {
        Ok(result) => result,
        Err(_) => Err(ConnectError::Timeout(CONNECT_TIMEOUT)),
    }
}

async fn connect_inner(
    transport: &Transport,
    headers: &BTreeMap<String, String>,
    bearer: LiveToken,
    hooks: Arc<Hooks>,
) -> Result<Connection, ConnectError> {
    let handler = Handler(hooks);
    let init = |e: rmcp::service::ClientInitializeError| match oauth::refusal::of_initialize(&e) {
        Some(refusal) => ConnectError::Refused(refusal),
        None => ConnectError::Initialize(e.to_string()),
    };
    match transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut cmd = tokio::process::Command::new(command);
            // The daemon's environment and the `.env` of the server's
            // scope without secrets, then the server's own `env` (which
            // may name secrets on purpose).
            let base = match &handler.0.jail {
                Some(jail) => jail.child_env(),
                None => crate::child_env::for_user(),
            };
            cmd.args(args)
                .env_clear()
                .envs(base)
                .envs(env)
                .process_group(0)
                .kill_on_drop(true)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null());
            if let Some(cwd) = cwd {
                cmd.current_dir(cwd);
            }
            let spawn_error = |source| ConnectError::Spawn {
                command: command.clone(),
                source,
            };
            if let Some(jail) = &handler.0.jail {
                match jail.apply(&mut cmd) {
                    Ok(None) => {}
                    Ok(Some(note)) => tracing::warn!(command = %command, "MCP server: {note}"),
                    Err(why) => {
                        return Err(spawn_error(std::io::Error::other(format!(
                            "not started: {why}"
                        ))));
                    }
                }
            }
            let child = cmd.spawn().map_err(spawn_error)?;
            // The group exists from the spawn on; guard it before the
            // handshake so a failed handshake leaves nothing running.
            let group = child.id().map(ProcessGroup);
            let hooks = handler.0.clone();
            let report: super::stdio::ReportInvalid =
                Arc::new(move |problem| hooks.report_invalid_json(problem));
            let child = ChildTransport::new(child, report).map_err(spawn_error)?;
            let child = InOrder::new(child, route_progress(&handler.0));
            let service = handler.serve(child).await.map_err(init)?;
            Ok(Connection { service, group })
        }
        Transport::Http { url } => {
            install_crypto_provider();
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            for (name, value) in headers {
                let header = (
                    reqwest::header::HeaderName::from_bytes(name.as_bytes()),
                    reqwest::header::HeaderValue::from_str(value),
                );
                let (Ok(name), Ok(value)) = header else {
                    return Err(ConnectError::Header(name.clone()));
                };
                config.custom_headers.insert(name, value);
            }
            let client = BearerClient::new(bearer).map_err(ConnectError::Initialize)?;
            let transport = StreamableHttpClientTransport::with_client(client, config);
            let transport = InOrder::new(transport, route_progress(&handler.0));
            let service = handler.serve(transport).await.map_err(init)?;
            Ok(Connection {
                service,
                group: None,
            })
        }
        Transport::Sse { url } => {
            let mut headers = headers.clone();
            if let Some(token) = bearer.get() {
                headers.insert("Authorization".into(), format!("Bearer {token}"));
            }
            let (sink, stream) = sse::connect(url, &headers).await?;
            let transport = InOrder::new(
                SinkStreamTransport::new(sink, stream),
                route_progress(&handler.0),
            );
            let service = handler.serve(transport).await.map_err(init)?;
            Ok(Connection {
                service,
                group: None,
            })
        }
    }
}
