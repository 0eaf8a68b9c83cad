//! The JSON-RPC method handlers. The only place (with `wire.rs`) that knows
//! the protocol types; handlers translate, call into sessions, translate back.

mod answer;
mod error;
mod hooks;
mod mcp;
mod mcp_resources;
mod outbound;
mod policy;
mod subscribe;
mod turn;
mod undo;

use std::collections::BTreeMap;
use std::sync::Arc;

use geminid_protocol::PROTOCOL_VERSION;
use geminid_protocol::api::GeminidApiServer;
use geminid_protocol::error as code;
use geminid_protocol::mcp::{
    CommandDiscoveryInfo, McpList, McpLogin, McpProbeResult, McpServerInfo,
};
use geminid_protocol::policy::{PolicyCheckResult, PolicyList};
use geminid_protocol::session::{
    Ack, ApprovalMode, ClientInfo, DaemonStatus, InitializeResult, SandboxCheck, SessionInfo,
};
use geminid_protocol::tool::{ConfirmResult, ConfirmationOutcome, ToolCallStarted, ToolInfo};
use geminid_protocol::turn::{CompressResult, HistoryPage, MemoryInfo, PromptAccepted};
use jsonrpsee::core::{RpcResult, SubscriptionResult, async_trait};
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::{Extensions, Methods, PendingSubscriptionSink};
use serde_json::Value;

pub use answer::{AnswerSlot, SplitResult};
pub use error::rpc_error;
pub use outbound::{DEFAULT_OUTBOUND_BUDGET, Meter, OutboundBudget};
pub use subscribe::ConnectionContext;

use crate::daemon::{Daemon, rss_bytes};
use crate::session::{NewSession, SessionHandle};
use crate::wire;

/// Every method of the API, ready for the connection loop.
pub fn methods(daemon: Arc<Daemon>) -> Methods {
    RpcHandler { daemon }.into_rpc().into()
}

struct RpcHandler {
    daemon: Arc<Daemon>,
}

impl RpcHandler {
    fn session(&self, id: &str) -> Result<SessionHandle, ErrorObjectOwned> {
        Ok(self.daemon.sessions.get(id)?)
    }

    async fn info(&self, handle: &SessionHandle) -> RpcResult<SessionInfo> {
        let (record, last_seq) = handle.info().await?;
        let updated = self.updated_at(&record.id, last_seq);
        Ok(wire::session_info(&record, last_seq, updated, true))
    }

    /// When the session's newest event was recorded.
    fn updated_at(&self, id: &str, last_seq: u64) -> Option<u64> {
        self.daemon
            .sessions
            .store()
            .event_time(id, last_seq)
            .ok()
            .flatten()
    }
}

#[async_trait]
impl GeminidApiServer for RpcHandler {
    async fn initialize(
        &self,
        ext: &Extensions,
        client: Option<ClientInfo>,
    ) -> RpcResult<InitializeResult> {
        if let Some(name) = client.as_ref().and_then(|c| c.name.as_deref())
            && let Some(connection) = ext.get::<ConnectionContext>()
        {
            let _ = connection.client_name.set(name.to_owned());
        }
        if let Some(version) = client.as_ref().and_then(|c| c.protocol_version)
            && version > PROTOCOL_VERSION
        {
            return Err(rpc_error(
                code::INVALID_PARAMS,
                format!(
                    "client speaks protocol version {version}; this daemon speaks {PROTOCOL_VERSION}"
                ),
            ));
        }
        Ok(InitializeResult {
            protocol_version: PROTOCOL_VERSION,
            daemon_version: env!("CARGO_PKG_VERSION").to_owned(),
            pid: std::process::id(),
        })
    }

    async fn status(&self) -> RpcResult<DaemonStatus> {
        let d = &self.daemon;
        // Status always answers: a store that cannot be read now is
        // reported, and the sessions counted are the loaded ones.
        let mut store_error = d.store_problem();
        let sessions_total = match d.sessions.store().count_sessions() {
            Ok(n) => n as u64,
            Err(e) => {
                let read = format!("the session store cannot be read now: {e}");
                store_error = Some(match store_error {
                    Some(problem) => format!("{problem}; {read}"),
                    None => read,
                });
                d.sessions.loaded_count() as u64
            }
        };
        Ok(DaemonStatus {
            daemon_version: env!("CARGO_PKG_VERSION").to_owned(),
            pid: std::process::id(),
            socket: d.config.socket.display().to_string(),
            data_dir: d.config.data_dir.display().to_string(),
            uptime_ms: d.started.elapsed().as_millis() as u64,
            connections: d.connections(),
            sessions_total,
            sessions_loaded: d.sessions.loaded_count() as u64,
            tools: d.registry.len() as u64,
            rss_bytes: rss_bytes(),
            model: Some(model_status(&d.model)),
            store_error,
            outbound_bytes: Some(d.outbound.total() as u64),
            config_problems: d
                .problems
                .all()
                .iter()
                .map(|(area, p)| wire::config_problem(area, p))
                .collect(),
            unused_settings: d.unused_settings(),
            sandbox: Some(wire::sandbox_status(crate::sandbox::support())),
        })
    }

    async fn shutdown(&self) -> RpcResult<Ack> {
        tracing::info!("shutdown requested by a client");
        self.daemon.shutdown.cancel();
        Ok(Ack { ok: true })
    }

    async fn create_session(
        &self,
        ext: &Extensions,
        cwd: String,
        approval_mode: Option<ApprovalMode>,
        title: Option<String>,
        interactive: Option<bool>,
        force: Option<bool>,
        sandbox: Option<String>,
        model: Option<String>,
    ) -> RpcResult<SessionInfo> {
        let sandbox = match sandbox.as_deref() {
            None => None,
            Some(text) => Some(crate::sandbox::Mode::parse(text).ok_or_else(|| {
                jsonrpsee::types::ErrorObjectOwned::owned(
                    jsonrpsee::types::error::INVALID_PARAMS_CODE,
                    format!(
                        "`sandbox` must be \"off\", \"workspace-write\", \"read-only\" or \"required\", got {text:?}"
                    ),
                    None::<()>,
                )
            })?),
        };
        let handle = self
            .daemon
            .sessions
            .create(NewSession {
                cwd,
                // Without one: `general.defaultApprovalMode`.
                approval_mode: approval_mode
                    .map(wire::approval_mode_from)
                    .unwrap_or_else(|| self.daemon.default_approval_mode()),
                title,
                interactive: interactive.unwrap_or(true),
                force: force.unwrap_or(false),
                origin: ext
                    .get::<ConnectionContext>()
                    .and_then(|c| c.client_name.get())
                    .map(|name| origin_of(name)),
                sandbox,
                model: model.filter(|m| !m.trim().is_empty()),
            })
            .await?;
        let info = self.info(&handle).await?;
        // The workspace layer's MCP servers start with its first session
        // (when the folder is trusted).
        let daemon = self.daemon.clone();
        let root = std::path::PathBuf::from(&info.cwd);
        let opened = handle.clone();
        let _ = tokio::task::spawn_blocking(move || daemon.workspace_opened(&root, &opened)).await;
        Ok(info)
    }

    async fn list_sessions(&self) -> RpcResult<Vec<SessionInfo>> {
        Ok(self
            .daemon
            .sessions
            .list()?
            .iter()
            .map(|(record, last_seq, loaded)| {
                let updated = self.updated_at(&record.id, *last_seq);
                wire::session_info(record, *last_seq, updated, *loaded)
            })
            .collect())
    }

    async fn get_session(&self, session_id: String) -> RpcResult<SessionInfo> {
        let handle = self.session(&session_id)?;
        self.info(&handle).await
    }

    async fn delete_session(&self, session_id: String) -> RpcResult<Ack> {
        let root = self.session(&session_id)?.cwd.clone();
        self.daemon.sessions.delete(&session_id).await?;
        // Its resource subscriptions go with it.
        self.daemon.discovery.mcp.forget_session(&session_id);
        // Its workspace stays a root of the MCP servers (and keeps the
        // extensions' instances for it) while another session has it.
        if let Ok(sessions) = self.daemon.sessions.list()
            && !sessions.iter().any(|(record, _, _)| record.cwd == root)
        {
            self.daemon.workspace_closed(std::path::Path::new(&root));
        }
        Ok(Ack { ok: true })
    }

    async fn cancel_session(&self, session_id: String) -> RpcResult<Ack> {
        let cancelled = self.session(&session_id)?.cancel_all().await?;
        Ok(Ack { ok: cancelled > 0 })
    }

    async fn set_approval_mode(
        &self,
        session_id: String,
        approval_mode: ApprovalMode,
    ) -> RpcResult<SessionInfo> {
        let handle = self.session(&session_id)?;
        handle
            .set_approval_mode(wire::approval_mode_from(approval_mode))
            .await?;
        self.info(&handle).await
    }

    async fn subscribe_session(
        &self,
        pending: PendingSubscriptionSink,
        ext: &Extensions,
        session_id: String,
        since_seq: Option<u64>,
    ) -> SubscriptionResult {
        let handle = match self.session(&session_id) {
            Ok(handle) => handle,
            Err(e) => {
                pending.reject(e).await;
                return Ok(());
            }
        };
        let subscription = match handle.subscribe().await {
            Ok(s) => s,
            Err(e) => {
                pending.reject(ErrorObjectOwned::from(e)).await;
                return Ok(());
            }
        };
        let Ok(sink) = pending.accept().await else {
            return Ok(());
        };
        let connection = ext.get::<ConnectionContext>().cloned();
        subscribe::forward(
            self.daemon.sessions.store().clone(),
            session_id,
            since_seq.unwrap_or(0),
            subscription,
            sink,
            connection,
        )
        .await;
        Ok(())
    }

    async fn list_tools(&self, session_id: Option<String>) -> RpcResult<Vec<ToolInfo>> {
        // A session sees the tools of its workspace (another workspace's
        // MCP servers left out) that its policy does not deny outright.
        let (tools, shown, engine) = match session_id {
            Some(id) => {
                let (record, _) = self.session(&id)?.info().await?;
                let root = std::path::Path::new(&record.cwd);
                let engine = self.daemon.policy.engine_for(root);
                (
                    self.daemon.registry.all_in(root),
                    Some((record.approval_mode, record.interactive)),
                    engine,
                )
            }
            None => (
                self.daemon.registry.all(),
                None,
                self.daemon.policy.engine(),
            ),
        };
        Ok(tools
            .iter()
            .filter(|t| {
                shown.is_none_or(|(mode, interactive)| {
                    crate::policy::shows_tool(&engine, t.tool.as_ref(), mode, interactive)
                })
            })
            .map(|t| wire::tool_info(t.tool.as_ref()))
            .collect())
    }

    async fn call_tool(
        &self,
        ext: &Extensions,
        session_id: String,
        name: String,
        args: Option<Value>,
        wait: Option<bool>,
    ) -> RpcResult<ToolCallStarted> {
        let handle = self.session(&session_id)?;
        let args = args.unwrap_or_else(|| Value::Object(Default::default()));
        if !wait.unwrap_or(false) {
            let call_id = handle.call(name, args).await?;
            return Ok(ToolCallStarted::accepted(call_id));
        }
        let done = handle
            .call_and_wait(name, args)
            .await
            .map_err(|e| match e {
                crate::session::SessionError::Stopped(_) => rpc_error(
                    code::SHUTTING_DOWN,
                    "the session stopped before the call finished",
                ),
                other => other.into(),
            })?;
        let started = wire::call_finished(done);
        if let Some(slot) = ext.get::<AnswerSlot>()
            && let Some((head, shared, tail)) = started.split_around_shared()
            && shared.get().len() >= answer::SPLIT_MIN
        {
            slot.put(SplitResult {
                head,
                shared: shared.clone(),
                tail,
            });
            // Dropped unsent: the connection writes the slot's result.
            return Ok(ToolCallStarted::accepted(started.call_id));
        }
        Ok(started)
    }

    async fn confirm_answer(
        &self,
        session_id: String,
        call_id: String,
        outcome: ConfirmationOutcome,
        modified_args: Option<Value>,
        feedback: Option<String>,
        approval_mode: Option<ApprovalMode>,
    ) -> RpcResult<ConfirmResult> {
        let accepted = self
            .session(&session_id)?
            .confirm(
                call_id,
                outcome,
                modified_args,
                feedback,
                approval_mode.map(wire::approval_mode_from),
            )
            .await?;
        Ok(ConfirmResult { accepted })
    }

    async fn cancel_tool(&self, session_id: String, call_id: String) -> RpcResult<Ack> {
        let ok = self.session(&session_id)?.cancel_call(call_id).await?;
        Ok(Ack { ok })
    }

    async fn check_policy(
        &self,
        session_id: Option<String>,
        cwd: Option<String>,
        tool_name: String,
        args: Option<Value>,
        approval_mode: Option<ApprovalMode>,
        interactive: Option<bool>,
    ) -> RpcResult<PolicyCheckResult> {
        policy::check(
            &self.daemon,
            policy::CheckRequest {
                session_id,
                cwd,
                tool_name,
                args,
                approval_mode,
                interactive,
            },
        )
        .await
    }

    async fn list_policy(&self) -> RpcResult<PolicyList> {
        Ok(policy::list(&self.daemon))
    }

    async fn list_extensions(
        &self,
        cwd: Option<String>,
    ) -> RpcResult<Vec<geminid_protocol::extension::ExtensionInfo>> {
        // Workspace-scoped setting values count for a trusted folder asked
        // about. Off the executor: the keychain may be a subprocess.
        let daemon = self.daemon.clone();
        let listed = tokio::task::spawn_blocking(move || {
            let trusted = cwd
                .as_deref()
                .is_some_and(|c| daemon.folder_trust(std::path::Path::new(c)).trusted);
            let dir = cwd
                .map(std::path::PathBuf::from)
                .unwrap_or_else(|| daemon.home());
            let mut keychain = crate::keychain::Keychain::new(
                &daemon.config.user_gemini_dir,
                crate::keychain::backend_from_env(),
            );
            daemon
                .extensions()
                .iter()
                .map(|e| {
                    let mut info = crate::wire::extension_info(e, &dir);
                    info.settings = crate::extension_settings::resolved(
                        e,
                        trusted.then_some(dir.as_path()),
                        &mut keychain,
                    )
                    .iter()
                    .map(crate::wire::extension_setting_info)
                    .collect();
                    info
                })
                .collect()
        })
        .await;
        listed.map_err(|e| {
            ErrorObjectOwned::owned(
                code::INTERNAL_ERROR,
                format!("extensions.list: {e}"),
                None::<()>,
            )
        })
    }

    async fn list_mcp(&self) -> RpcResult<McpList> {
        Ok(mcp::list(&self.daemon))
    }

    async fn list_hooks(
        &self,
        session_id: Option<String>,
        cwd: Option<String>,
    ) -> RpcResult<geminid_protocol::hooks::HookList> {
        hooks::list(&self.daemon, session_id, cwd).await
    }

    async fn answer_question(
        &self,
        ext: &Extensions,
        session_id: String,
        question_id: String,
        action: geminid_protocol::question::AnswerAction,
        content: Option<Value>,
    ) -> RpcResult<geminid_protocol::question::AnswerResult> {
        // "gemctl chat (connection 7)": who answered, for the event and
        // for the clients that answer later.
        let by = match ext.get::<ConnectionContext>() {
            Some(c) => format!(
                "{} (connection {})",
                c.client_name.get().map_or("a client", String::as_str),
                c.id
            ),
            None => "a client".to_owned(),
        };
        let content = self
            .session(&session_id)?
            .answer(question_id, wire::action_of(action), content, by)
            .await?;
        Ok(geminid_protocol::question::AnswerResult { content })
    }

    async fn restart_mcp(&self, name: String, scope: Option<String>) -> RpcResult<McpServerInfo> {
        mcp::restart(&self.daemon, &name, scope.as_deref()).await
    }

    async fn rediscover_tools(
        &self,
        session_id: Option<String>,
    ) -> RpcResult<CommandDiscoveryInfo> {
        mcp::rediscover(&self.daemon, session_id).await
    }

    async fn checkpoints(
        &self,
        session_id: String,
    ) -> RpcResult<geminid_protocol::undo::CheckpointList> {
        undo::checkpoints(&self.daemon, &session_id).await
    }

    async fn restore(
        &self,
        session_id: String,
        checkpoint: String,
        force: Option<bool>,
    ) -> RpcResult<geminid_protocol::undo::RestoreResult> {
        undo::restore(
            &self.daemon,
            &session_id,
            checkpoint,
            force.unwrap_or(false),
        )
        .await
    }

    async fn fork(
        &self,
        ext: &Extensions,
        session_id: String,
        at_turn: Option<String>,
    ) -> RpcResult<SessionInfo> {
        let origin = ext
            .get::<ConnectionContext>()
            .and_then(|c| c.client_name.get())
            .map(|name| origin_of(name));
        let handle = self
            .daemon
            .sessions
            .fork(&session_id, at_turn, origin)
            .await?;
        self.info(&handle).await
    }

    async fn auth_mcp(&self, name: String) -> RpcResult<McpLogin> {
        mcp::auth(&self.daemon, &name).await
    }

    async fn auth_wait_mcp(&self, name: String) -> RpcResult<McpServerInfo> {
        mcp::auth_wait(&self.daemon, &name).await
    }

    async fn logout_mcp(&self, name: String) -> RpcResult<McpServerInfo> {
        mcp::logout(&self.daemon, &name).await
    }

    async fn mcp_resources(
        &self,
        server: Option<String>,
        session_id: Option<String>,
        cwd: Option<String>,
        all: Option<bool>,
    ) -> RpcResult<geminid_protocol::mcp::McpResources> {
        mcp_resources::list(
            &self.daemon,
            mcp_resources::Asked {
                server,
                session_id,
                cwd,
                all: all.unwrap_or(false),
            },
        )
    }

    async fn mcp_read(
        &self,
        server: String,
        uri: String,
        session_id: Option<String>,
        cwd: Option<String>,
    ) -> RpcResult<geminid_protocol::mcp::McpReadResult> {
        let root = mcp_resources::root(&self.daemon, session_id, cwd)?;
        mcp_resources::read(&self.daemon, root, server, uri).await
    }

    async fn mcp_subscribe(
        &self,
        session_id: String,
        server: String,
        uri: String,
    ) -> RpcResult<()> {
        mcp_resources::subscribe(&self.daemon, session_id, server, uri).await
    }

    async fn mcp_unsubscribe(
        &self,
        session_id: String,
        server: String,
        uri: String,
    ) -> RpcResult<Ack> {
        mcp_resources::unsubscribe(&self.daemon, session_id, server, uri).await
    }

    async fn mcp_subscriptions(&self) -> RpcResult<geminid_protocol::mcp::McpSubscriptions> {
        Ok(crate::wire::mcp_subscriptions(
            self.daemon.discovery.mcp.subscriptions(),
        ))
    }

    async fn mcp_prompt(
        &self,
        server: String,
        name: String,
        arguments: Option<BTreeMap<String, String>>,
        session_id: Option<String>,
        cwd: Option<String>,
    ) -> RpcResult<geminid_protocol::mcp::McpPromptResult> {
        let root = mcp_resources::root(&self.daemon, session_id, cwd)?;
        let arguments = arguments.unwrap_or_default();
        mcp_resources::prompt(&self.daemon, root, server, name, arguments).await
    }

    async fn probe_mcp(
        &self,
        ext: &Extensions,
        target: Vec<String>,
        call: Option<String>,
        args: Option<Value>,
        headers: Option<BTreeMap<String, String>>,
        cwd: Option<String>,
        env: Option<BTreeMap<String, String>>,
        accept_elicitation_defaults: Option<bool>,
        oauth: Option<Value>,
    ) -> RpcResult<McpProbeResult> {
        let closed = ext
            .get::<ConnectionContext>()
            .map(|c| c.closed.clone())
            .unwrap_or_default();
        let params = mcp::ProbeParams {
            target,
            call,
            args,
            headers,
            cwd,
            env,
            accept_elicitation_defaults,
            oauth,
        };
        mcp::probe(params, closed).await
    }

    async fn prompt_parts(
        &self,
        session_id: String,
        text: Option<String>,
        parts: Option<Vec<geminid_protocol::turn::PromptPart>>,
    ) -> RpcResult<PromptAccepted> {
        let (text, parts) = (text.unwrap_or_default(), parts.unwrap_or_default());
        turn::prompt(&self.daemon, &session_id, text, parts).await
    }

    async fn history(
        &self,
        session_id: String,
        offset: Option<u64>,
        limit: Option<u64>,
    ) -> RpcResult<HistoryPage> {
        turn::history(&self.daemon, &session_id, offset, limit).await
    }

    async fn sandbox_check(&self, cwd: Option<String>) -> RpcResult<SandboxCheck> {
        let workspace = match cwd {
            Some(c) => std::path::PathBuf::from(c),
            None => std::env::current_dir().map_err(|e| {
                rpc_error_invalid(format!("no workspace given and no current directory: {e}"))
            })?,
        };
        let workspace = workspace
            .canonicalize()
            .map_err(|e| rpc_error_invalid(format!("{}: {e}", workspace.display())))?;
        let (settings, problems) = crate::tools::ToolSettings::load(
            &self.daemon.config.user_gemini_dir.join("settings.json"),
        );
        let places = self.daemon.sessions.sandbox_places();
        let check = tokio::task::spawn_blocking(move || {
            crate::sandbox::check(&workspace, &settings.sandbox, problems, &places)
        })
        .await
        .map_err(|e| rpc_error_invalid(format!("the self-test failed: {e}")))?;
        Ok(wire::sandbox_check(&check))
    }

    async fn set_model(&self, session_id: String, model: Option<String>) -> RpcResult<SessionInfo> {
        let handle = self.session(&session_id)?;
        handle
            .set_model(model.filter(|m| !m.trim().is_empty()))
            .await?;
        self.info(&handle).await
    }

    async fn compress(&self, session_id: String) -> RpcResult<CompressResult> {
        turn::compress(&self.daemon, &session_id).await
    }

    async fn show_memory(
        &self,
        session_id: Option<String>,
        cwd: Option<String>,
    ) -> RpcResult<MemoryInfo> {
        turn::memory(&self.daemon, session_id, cwd, false).await
    }

    async fn reload_memory(
        &self,
        session_id: Option<String>,
        cwd: Option<String>,
    ) -> RpcResult<MemoryInfo> {
        turn::memory(&self.daemon, session_id, cwd, true).await
    }
}

fn rpc_error_invalid(message: String) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(code::INVALID_PARAMS, message, None::<()>)
}

/// A session's origin from the name its client gave: `gemctl chat` is a
/// `chat` session, `gemctl-acp` an `acp` one; other names are kept.
fn origin_of(client_name: &str) -> String {
    let name = client_name.trim();
    name.strip_prefix("gemctl ")
        .or_else(|| name.strip_prefix("gemctl-"))
        .unwrap_or(name)
        .replace('-', " ")
}

/// The daemon's model, with the models sessions may switch to.
fn model_status(slot: &crate::model::ModelSlot) -> geminid_protocol::turn::ModelStatus {
    use crate::model::choice;
    let config = slot.config(None);
    let settings = slot.settings();
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let fallback = choice::fallback_model(&env, &settings);
    let available = choice::listed_models(&config.model, fallback.as_deref(), &settings);
    wire::model_status(&config, available, fallback)
}

#[cfg(test)]
mod tests {
    #[test]
    fn origins_drop_the_gemctl_prefix() {
        assert_eq!(super::origin_of("gemctl chat"), "chat");
        assert_eq!(super::origin_of("gemctl-mcp-serve"), "mcp serve");
        assert_eq!(super::origin_of("zed"), "zed");
    }
}
