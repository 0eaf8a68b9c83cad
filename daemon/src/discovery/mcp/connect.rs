//! Opening one MCP connection: the transport for each kind of server and
//! the client-side handler (progress, list changes, elicitation).

use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    Implementation, ProgressNotificationParam, ProgressToken, ProtocolVersion,
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
use crate::tools::OutputSink;

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

/// A call's progress goes out at most this often; what arrives in between
/// is batched into one output delta.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);
/// How much progress text one batch keeps (the newest lines; older ones
/// are counted as skipped).
const PROGRESS_KEEP_BYTES: usize = 16 * 1024;

/// Receives the URI of a `notifications/resources/updated`.
pub type UriFn = Arc<dyn Fn(&str) + Send + Sync>;

/// What a connection's handler shares with the rest of the daemon.
#[derive(Default)]
pub struct Hooks {
    /// Progress tokens of calls in flight, and where their progress goes.
    progress: Mutex<HashMap<String, Arc<Progress>>>,
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
}

impl Hooks {
    /// Where an elicitation's question goes: the call whose progress
    /// token the request names, else the one owner (session, or probe)
    /// of every call in flight on this connection. None: no call, or
    /// calls of several sessions (the request does not say whose).
    pub fn asker_for_elicitation(
        &self,
        token: Option<&ProgressToken>,
    ) -> Result<crate::questions::Asker, String> {
        let progress = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(asker) = token
            .and_then(|t| progress.get(&token_key(t)))
            .and_then(|p| p.sink.asker())
        {
            return Ok(asker.clone());
        }
        let askers: Vec<&crate::questions::Asker> =
            progress.values().filter_map(|p| p.sink.asker()).collect();
        match askers.as_slice() {
            [] => Err("no call that can ask is in flight on this connection".into()),
            [one] => Ok((*one).clone()),
            [first, rest @ ..] if rest.iter().all(|a| a.owner == first.owner) => {
                // Calls of one session: the question is the session's,
                // not tied to one of them.
                let mut asker = (*first).clone();
                asker.call_id = None;
                Ok(asker)
            }
            _ => Err(format!(
                "calls of {} sessions are in flight on this connection and the request names none",
                askers
                    .iter()
                    .map(|a| a.owner.as_str())
                    .collect::<std::collections::BTreeSet<_>>()
                    .len()
            )),
        }
    }

    /// A stdio server wrote a line that is not JSON.
    pub fn report_invalid_json(&self, problem: String) {
        tracing::warn!(%problem, "an MCP server wrote a line that is not JSON");
        self.invalid_json.send_replace(Some(problem));
    }

    /// Sends one progress notification to the call that asked for it
    /// (called in arrival order, see `ordered.rs`).
    pub fn route_progress(&self, params: &ProgressNotificationParam) {
        let progress = self
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&token_key(&params.progress_token))
            .cloned();
        let Some(progress) = progress else {
            return;
        };
        let amount = match params.total {
            Some(total) => format!("{}/{}", params.progress, total),
            None => params.progress.to_string(),
        };
        let line = match &params.message {
            Some(message) => format!("[{amount}] {message}\n"),
            None => format!("[{amount}]\n"),
        };
        progress.push(line);
    }

    pub fn watch_progress(&self, token: &ProgressToken, sink: OutputSink) -> ProgressGuard<'_> {
        let key = token_key(token);
        let progress = Arc::new(Progress {
            sink,
            pending: Mutex::new(Pending::default()),
        });
        self.progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.clone(), progress.clone());
        ProgressGuard {
            hooks: self,
            key,
            progress,
        }
    }
}

/// One call's progress on its way to the call's output. A server may send
/// thousands of notifications a second; each would be an event in the
/// session's log, so they go out in batches, at most one per
/// [`PROGRESS_EVERY`], of at most [`PROGRESS_KEEP_BYTES`].
pub struct Progress {
    sink: OutputSink,
    pending: Mutex<Pending>,
}

#[derive(Default)]
struct Pending {
    lines: std::collections::VecDeque<String>,
    bytes: usize,
    skipped: u64,
    last_sent: Option<tokio::time::Instant>,
    flush_scheduled: bool,
}

impl Progress {
    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(self: &Arc<Self>, line: String) {
        let mut p = self.lock();
        p.bytes += line.len();
        p.lines.push_back(line);
        while p.bytes > PROGRESS_KEEP_BYTES && p.lines.len() > 1 {
            if let Some(old) = p.lines.pop_front() {
                p.bytes -= old.len();
                p.skipped += 1;
            }
        }
        if p.flush_scheduled {
            return;
        }
        let now = tokio::time::Instant::now();
        match p.last_sent {
            Some(at) if now < at + PROGRESS_EVERY => {
                p.flush_scheduled = true;
                let this = self.clone();
                tokio::spawn(async move {
                    tokio::time::sleep_until(at + PROGRESS_EVERY).await;
                    this.flush(&mut this.lock());
                });
            }
            Some(_) | None => self.flush(&mut p),
        }
    }

    /// Sends what is pending (under the lock, so batches stay in order).
    fn flush(&self, p: &mut Pending) {
        p.flush_scheduled = false;
        if p.lines.is_empty() {
            return;
        }
        let mut text = String::with_capacity(p.bytes + 64);
        if p.skipped > 0 {
            text.push_str(&format!(
                "[... {} progress updates skipped ...]\n",
                p.skipped
            ));
        }
        text.extend(p.lines.drain(..));
        p.bytes = 0;
        p.skipped = 0;
        p.last_sent = Some(tokio::time::Instant::now());
        self.sink.send(text);
    }
}

/// Stops routing a call's progress when the call is over, after sending
/// what is still pending.
pub struct ProgressGuard<'a> {
    hooks: &'a Hooks,
    key: String,
    progress: Arc<Progress>,
}

impl Drop for ProgressGuard<'_> {
    fn drop(&mut self) {
        self.hooks
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.key);
        self.progress.flush(&mut self.progress.lock());
    }
}

/// Progress for [`InOrder`]: to the call that asked for it.
fn route_progress(hooks: &Arc<Hooks>) -> super::ordered::RouteProgress {
    let hooks = hooks.clone();
    Arc::new(move |params| hooks.route_progress(params))
}

fn token_key(token: &ProgressToken) -> String {
    serde_json::to_string(token).unwrap_or_default()
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

    /// A form elicitation becomes a question to the people of the call
    /// that made it (`questions/`, `session/questions.rs`); when no call
    /// can be found, it is declined and logged.
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        use crate::questions::{Action, AskedBy, Form, Question};
        let server = self.0.server.clone();
        let (message, schema, meta) = match &request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                meta,
            } => (
                message.clone(),
                serde_json::to_value(requested_schema).unwrap_or(Value::Null),
                meta.clone(),
            ),
            _ => {
                tracing::info!(%server, "declined a URL elicitation: only form mode is offered");
                return Ok(ElicitResult::new(ElicitationAction::Decline));
            }
        };
        let form = Form::from_schema(&schema)
            .map_err(|why| ErrorData::invalid_params(format!("requestedSchema: {why}"), None))?;
        let token = meta
            .as_ref()
            .and_then(|m| m.get_progress_token())
            .or_else(|| context.meta.get_progress_token());
        let asker = match self.0.asker_for_elicitation(token.as_ref()) {
            Ok(asker) => asker,
            Err(why) => {
                tracing::warn!(%server, "declined an elicitation: {why}");
                return Ok(ElicitResult::new(ElicitationAction::Decline));
            }
        };
        let question = Question {
            asked_by: AskedBy::Mcp(server),
            message,
            form,
        };
        let answer = tokio::select! {
            answer = asker.ask(question) => answer,
            // The server gave up on its request.
            () = context.ct.cancelled() => crate::questions::Answer::cancel(),
        };
        Ok(match answer.action {
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
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, ErrorData> {
        super::sampling::answer(self.0.sampling.as_deref(), params).await
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = serde_json::Map::new();
        // Form elicitation, for every server: a question to the people of
        // the call that asks (declined when nobody can answer).
        capabilities.insert("elicitation".into(), serde_json::json!({"form": {}}));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_progress_flood_is_batched_and_the_rest_flushed_at_the_end() {
        let sent = Arc::new(Mutex::new(Vec::<String>::new()));
        let hooks = Hooks::default();
        let sink = {
            let sent = sent.clone();
            OutputSink::new(move |text| sent.lock().unwrap().push(text))
        };
        let token = ProgressToken(rmcp::model::NumberOrString::Number(7));
        let guard = hooks.watch_progress(&token, sink);
        let progress = hooks.progress.lock().unwrap().get("7").cloned().unwrap();
        for i in 0..2000 {
            progress.push(format!("[{i}/2000] {}\n", "x".repeat(80)));
        }
        drop(guard);
        tokio::time::sleep(PROGRESS_EVERY * 2).await;
        let sent = sent.lock().unwrap();
        // The first line at once, everything else in one batch when the
        // call ended (the scheduled flush then finds nothing).
        assert_eq!(
            sent.len(),
            2,
            "{:?}",
            sent.iter().map(String::len).collect::<Vec<_>>()
        );
        assert!(sent[0].starts_with("[0/2000]"), "{}", sent[0]);
        assert!(sent[1].starts_with("[... "), "{}", &sent[1][..40]);
        assert!(sent[1].ends_with(&format!("[1999/2000] {}\n", "x".repeat(80))));
        assert!(
            sent[1].len() <= PROGRESS_KEEP_BYTES + 64,
            "{}",
            sent[1].len()
        );
    }
}
