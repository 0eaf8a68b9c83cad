//! The `geminid` JSON-RPC API, defined once for the server and the client.
//!
//! Params are passed by name (a JSON object). Optional params may be left
//! out. Errors use the codes in [`crate::error`].

// jsonrpsee generates a client and a server function per method, with a
// parameter per named param: `mcp.probe` has seven.
#![allow(clippy::too_many_arguments)]

use jsonrpsee::core::{RpcResult, SubscriptionResult};
use jsonrpsee::proc_macros::rpc;
use serde_json::Value;

use crate::event::SessionEvent;
use std::collections::BTreeMap;

use crate::mcp::{CommandDiscoveryInfo, McpList, McpLogin, McpProbeResult, McpServerInfo};
use crate::mcp::{McpPromptResult, McpReadResult, McpResources};
use crate::policy::{PolicyCheckResult, PolicyList};
use crate::session::{
    Ack, ApprovalMode, ClientInfo, DaemonStatus, InitializeResult, SandboxCheck, SessionInfo,
};
use crate::tool::{ConfirmResult, ConfirmationOutcome, ToolCallStarted, ToolInfo};
use crate::turn::{HistoryPage, MemoryInfo, PromptAccepted, PromptPart};

/// Every method the daemon serves.
#[rpc(server, client)]
pub trait GeminidApi {
    /// `daemon.initialize {client?}`: the handshake. Must be the first request
    /// on a connection; a second one is an error (-32003). Any other request
    /// before it gets -32002.
    ///
    /// The client's `name` is the `origin` of the sessions it creates,
    /// without a leading `gemctl ` (`gemctl chat` creates `chat` sessions).
    #[method(name = "daemon.initialize", param_kind = map, with_extensions)]
    async fn initialize(&self, client: Option<ClientInfo>) -> RpcResult<InitializeResult>;

    /// `daemon.status`: health and counters.
    #[method(name = "daemon.status", param_kind = map)]
    async fn status(&self) -> RpcResult<DaemonStatus>;

    /// `daemon.shutdown`: stop accepting connections, cancel running calls,
    /// flush the store and exit 0. Answers before the daemon exits.
    #[method(name = "daemon.shutdown", param_kind = map)]
    async fn shutdown(&self) -> RpcResult<Ack>;

    /// `session.create {cwd, approvalMode?, title?, interactive?, force?, sandbox?, model?}`:
    /// a new session rooted at `cwd` (an existing directory). The directory
    /// is pinned: the session keeps working in it whatever its path later
    /// names, and is not loaded again if the path comes to name another
    /// directory. Roots no one means (`/`, anything under `/proc`, `/sys`
    /// or `/dev`) are refused unless `force` is true. Returns the session's
    /// info, whose `sessionId` names it from then on. `sandbox` (`off`,
    /// `workspace-write`, `read-only`, `required`) sets the session's
    /// sandbox mode for commands over the user's settings.
    #[method(name = "session.create", param_kind = map, with_extensions)]
    async fn create_session(
        &self,
        cwd: String,
        #[argument(rename = "approvalMode")] approval_mode: Option<ApprovalMode>,
        title: Option<String>,
        interactive: Option<bool>,
        force: Option<bool>,
        sandbox: Option<String>,
        model: Option<String>,
    ) -> RpcResult<SessionInfo>;

    /// `session.setModel {sessionId, model?}`: the model this session's
    /// next requests go to (the provider and key stay the daemon's);
    /// without `model`, back to the daemon's. A `modelChanged` event
    /// says so. A running turn keeps the model it started with.
    #[method(name = "session.setModel", param_kind = map)]
    async fn set_model(
        &self,
        #[argument(rename = "sessionId")] session_id: String,
        model: Option<String>,
    ) -> RpcResult<SessionInfo>;

    /// `sandbox.check {cwd?}`: what the sandbox lets a command of a
    /// sandboxed session in `cwd` do on this machine, and a self-test
    /// (writes inside and outside, a hidden secret, the network).
    #[method(name = "sandbox.check", param_kind = map)]
    async fn sandbox_check(&self, cwd: Option<String>) -> RpcResult<SandboxCheck>;

    /// `session.list`: every stored session, newest first.
    #[method(name = "session.list", param_kind = map)]
    async fn list_sessions(&self) -> RpcResult<Vec<SessionInfo>>;

    /// `session.get {sessionId}`: one session.
    #[method(name = "session.get", param_kind = map)]
    async fn get_session(
        &self,
        #[argument(rename = "sessionId")] session_id: String,
    ) -> RpcResult<SessionInfo>;

    /// `session.delete {sessionId}`: cancels its calls, ends its
    /// subscriptions (`session.closed`) and removes it and its events.
    #[method(name = "session.delete", param_kind = map)]
    async fn delete_session(
        &self,
        #[argument(rename = "sessionId")] session_id: String,
    ) -> RpcResult<Ack>;

    /// `session.cancel {sessionId}`: cancels the running turn (its model
    /// stream ends, it finishes as `cancelled`) and every call of the
    /// session that has not finished (waiting, awaiting approval or
    /// executing). Queued prompts stay queued.
    #[method(name = "session.cancel", param_kind = map)]
    async fn cancel_session(
        &self,
        #[argument(rename = "sessionId")] session_id: String,
    ) -> RpcResult<Ack>;

    /// `session.prompt {sessionId, text?, parts?}`: queues a prompt (FIFO
    /// per session, from any client) and returns its turn id at once. The
    /// prompt is `text`, then `parts` (text, inline data, files, resources;
    /// at least one of the two). `@path` in the text is read from the
    /// workspace when the turn starts (`promptReferences` says what). The
    /// turn streams `turnStarted`, `userMessage`, `modelText`/`modelThought`
    /// deltas and `toolCall` snapshots, and ends with `turnFinished`. It
    /// keeps running when the client disconnects. Without a usable model
    /// the answer is error -32040, saying how to configure one. Rust
    /// callers with plain text use [`PromptText::prompt`].
    #[method(name = "session.prompt", param_kind = map)]
    async fn prompt_parts(
        &self,
        #[argument(rename = "sessionId")] session_id: String,
        text: Option<String>,
        parts: Option<Vec<PromptPart>>,
    ) -> RpcResult<PromptAccepted>;

    /// `session.history {sessionId, offset?, limit?}`: a page of the
    /// conversation with the model (default: everything from 0, at most
    /// 100 entries per page).
    #[method(name = "session.history", param_kind = map)]
    async fn history(
        &self,
        #[argument(rename = "sessionId")] session_id: String,
        offset: Option<u64>,
        limit: Option<u64>,
    ) -> RpcResult<HistoryPage>;

    /// `session.compress {sessionId}`: replaces the older part of what is
    /// sent to the model by a summary the model writes (a `compressed`
    /// event says what was replaced by what). The stored history is
    /// unchanged. Runs between turns: while a turn runs the answer is
    /// error -32041 (the turn compresses on its own when it must).
    #[method(name = "session.compress", param_kind = map)]
    async fn compress(
        &self,
        #[argument(rename = "sessionId")] session_id: String,
    ) -> RpcResult<crate::turn::CompressResult>;

    /// `memory.show {sessionId? | cwd?}`: the GEMINI.md memory the model
    /// gets for that workspace: the merged text and each file's imports.
    #[method(name = "memory.show", param_kind = map)]
    async fn show_memory(
        &self,
        #[argument(rename = "sessionId")] session_id: Option<String>,
        cwd: Option<String>,
    ) -> RpcResult<MemoryInfo>;

    /// `memory.reload {sessionId? | cwd?}`: reads the memory again (edits
    /// to loaded files are picked up by themselves; this also finds new
    /// files).
    #[method(name = "memory.reload", param_kind = map)]
    async fn reload_memory(
        &self,
        #[argument(rename = "sessionId")] session_id: Option<String>,
        cwd: Option<String>,
    ) -> RpcResult<MemoryInfo>;

    /// `session.setApprovalMode {sessionId, approvalMode}`. Emits
    /// `approvalModeChanged`.
    #[method(name = "session.setApprovalMode", param_kind = map)]
    async fn set_approval_mode(
        &self,
        #[argument(rename = "sessionId")] session_id: String,
        #[argument(rename = "approvalMode")] approval_mode: ApprovalMode,
    ) -> RpcResult<SessionInfo>;

    /// `session.subscribe {sessionId, sinceSeq?}`: replays the stored events
    /// with `seq > sinceSeq` (all of them when absent), then streams live
    /// events as `session.event` notifications, with no gap and no duplicate.
    /// When the daemon ends the stream itself it sends a final
    /// `session.closed` notification ([`crate::event::SubscriptionClosed`]).
    #[subscription(
        name = "session.subscribe" => "session.event",
        unsubscribe = "session.unsubscribe",
        item = SessionEvent,
        param_kind = map,
        with_extensions
    )]
    async fn subscribe_session(
        &self,
        #[argument(rename = "sessionId")] session_id: String,
        #[argument(rename = "sinceSeq")] since_seq: Option<u64>,
    ) -> SubscriptionResult;

    /// `tool.list {sessionId?}`: the registry, sorted by name.
    #[method(name = "tool.list", param_kind = map)]
    async fn list_tools(
        &self,
        #[argument(rename = "sessionId")] session_id: Option<String>,
    ) -> RpcResult<Vec<ToolInfo>>;

    /// `tool.call {sessionId, name, args, wait?}`: schedules a call through
    /// the session's scheduler and policy. Returns the call id at once; its
    /// progress arrives as `toolCall` events. With `wait: true` the answer
    /// comes when the call has finished and carries its final snapshot.
    #[method(name = "tool.call", param_kind = map, with_extensions)]
    async fn call_tool(
        &self,
        #[argument(rename = "sessionId")] session_id: String,
        name: String,
        args: Option<Value>,
        wait: Option<bool>,
    ) -> RpcResult<ToolCallStarted>;

    /// `tool.confirm {sessionId, callId, outcome, modifiedArgs?, feedback?,
    /// approvalMode?}`: answers a confirmation. The first answer wins
    /// (`accepted: true`); later ones get `accepted: false`. With
    /// `modify_with_editor`, `modifiedArgs` are validated again; invalid ones
    /// are an error (-32602) and the call keeps waiting. `feedback` is a
    /// person's words with a refusal (`cancel`): a plan's rejection
    /// (`exit_plan_mode`) reaches the model with them. `approvalMode`
    /// (`default` or `autoEdit`) is the mode an approved plan switches to.
    /// Callers without the last two use [`ConfirmPlain::confirm_tool`].
    #[method(name = "tool.confirm", param_kind = map)]
    async fn confirm_answer(
        &self,
        #[argument(rename = "sessionId")] session_id: String,
        #[argument(rename = "callId")] call_id: String,
        outcome: ConfirmationOutcome,
        #[argument(rename = "modifiedArgs")] modified_args: Option<Value>,
        feedback: Option<String>,
        #[argument(rename = "approvalMode")] approval_mode: Option<ApprovalMode>,
    ) -> RpcResult<ConfirmResult>;

    /// `tool.cancel {sessionId, callId}`: cancels one call, whatever state
    /// it is in (waiting, awaiting approval or executing). An executing
    /// call's work is stopped (a shell command's whole process group is
    /// killed) and the call ends as `cancelled` once nothing it started
    /// runs. `ok` is false when the call had already finished; an unknown
    /// call id is error -32011. Other calls and the running turn go on.
    #[method(name = "tool.cancel", param_kind = map)]
    async fn cancel_tool(
        &self,
        #[argument(rename = "sessionId")] session_id: String,
        #[argument(rename = "callId")] call_id: String,
    ) -> RpcResult<Ack>;

    /// `policy.check {sessionId? | cwd?, toolName, args?, approvalMode?,
    /// interactive?}`: what the policy would decide for this call, which rule
    /// decided, and for shell commands each sub-command's decision. With a
    /// session, its mode, interactivity and "always" answers are used unless
    /// overridden.
    #[method(name = "policy.check", param_kind = map)]
    async fn check_policy(
        &self,
        #[argument(rename = "sessionId")] session_id: Option<String>,
        cwd: Option<String>,
        #[argument(rename = "toolName")] tool_name: String,
        args: Option<Value>,
        #[argument(rename = "approvalMode")] approval_mode: Option<ApprovalMode>,
        interactive: Option<bool>,
    ) -> RpcResult<PolicyCheckResult>;

    /// `policy.list`: every loaded rule in priority order with its source,
    /// and the problems of the last load.
    #[method(name = "policy.list", param_kind = map)]
    async fn list_policy(&self) -> RpcResult<PolicyList>;

    /// `mcp.list`: every configured MCP server with its status, tools and
    /// prompts, and the state of command-based discovery.
    #[method(name = "mcp.list", param_kind = map)]
    async fn list_mcp(&self) -> RpcResult<McpList>;

    /// `mcp.restart {name, scope?}`: drops the server's connection (killing
    /// a stdio server) and connects again at once. Answers when the attempt
    /// ended. A name more than one scope has (two workspaces' `db`) needs
    /// `scope` (`user`, `extensions`, `workspace:<root>`, as `mcp.list`
    /// shows it); without it the error (-32602) lists them.
    #[method(name = "mcp.restart", param_kind = map)]
    async fn restart_mcp(&self, name: String, scope: Option<String>) -> RpcResult<McpServerInfo>;

    /// `mcp.probe {target, call?, args?, headers?, cwd?, env?,
    /// acceptElicitationDefaults?}`: one connection to a server that need
    /// not be configured, through the same client code as configured
    /// servers: connects, lists its tools, calls `call` with `args` (a JSON
    /// object, default `{}`) when given, closes, and answers with what it
    /// found.
    ///
    /// `target` is a URL (a path ending in `/sse` means legacy SSE, any
    /// other streamable HTTP), or a command line: its words, or one string
    /// split on whitespace. A command runs as the daemon's user in `cwd`
    /// (default: the daemon's directory) with the daemon's environment and
    /// `env` over it; its whole process group is killed when the probe
    /// ends. `headers` go with every HTTP request.
    ///
    /// The server's `elicitation/create` requests take the path a
    /// session's do (the call's question) and are answered by the probe:
    /// `acceptElicitationDefaults: true` answers `accept` with each
    /// field's `default` (declined when a required field has none);
    /// without it they are declined. `gemctl mcp probe` sets it.
    ///
    /// `oauth` is an `oauth` block as in a server entry (`clientId`,
    /// `clientSecret`, `scopes`, ...): a server that answers 401 is
    /// authorized as configured servers are, and a login's authorization
    /// URL is followed by the daemon itself (no user: for servers that
    /// approve at once, like the conformance suite's); the token lives as
    /// long as the probe.
    ///
    /// A call may take up to 120 s; the probe stops (and the server is
    /// told) when the client disconnects. A server that cannot be reached,
    /// listed or called is error -32050, saying which step failed.
    #[method(name = "mcp.probe", param_kind = map, with_extensions)]
    async fn probe_mcp(
        &self,
        target: Vec<String>,
        call: Option<String>,
        args: Option<Value>,
        headers: Option<BTreeMap<String, String>>,
        cwd: Option<String>,
        env: Option<BTreeMap<String, String>>,
        #[argument(rename = "acceptElicitationDefaults")] accept_elicitation_defaults: Option<bool>,
        oauth: Option<Value>,
    ) -> RpcResult<McpProbeResult>;

    /// `tool.rediscover {sessionId?}`: runs `tools.discoveryCommand` again
    /// (in the session's workspace root, else the daemon's directory) and
    /// replaces the previously discovered tools.
    #[method(name = "tool.rediscover", param_kind = map)]
    async fn rediscover_tools(
        &self,
        #[argument(rename = "sessionId")] session_id: Option<String>,
    ) -> RpcResult<CommandDiscoveryInfo>;

    /// `session.checkpoints {sessionId}`: the points the session can go
    /// back to, oldest first. Each edit call (kind edit, delete or move)
    /// records the prior bytes of the files it touches before it runs.
    #[method(name = "session.checkpoints", param_kind = map)]
    async fn checkpoints(
        &self,
        #[argument(rename = "sessionId")] session_id: String,
    ) -> RpcResult<crate::undo::CheckpointList>;

    /// `session.restore {sessionId, checkpoint, force?}`: puts every file
    /// the edits from `checkpoint` on touched back to its bytes before
    /// them, and rewinds the conversation to the start of that turn (a
    /// `checkpointRestored` event tells every subscriber). A file changed
    /// on disk since the session's last edit of it makes the restore
    /// refuse (error -32043, nothing written) unless `force`. Between
    /// turns only (-32041 otherwise).
    #[method(name = "session.restore", param_kind = map)]
    async fn restore(
        &self,
        #[argument(rename = "sessionId")] session_id: String,
        checkpoint: String,
        force: Option<bool>,
    ) -> RpcResult<crate::undo::RestoreResult>;

    /// `session.fork {sessionId, atTurn?}`: a new session in the same
    /// workspace, mode and model whose conversation is the source's up to
    /// the start of turn `atTurn` (default: all of it). The two go on
    /// independently; files are shared (they are the workspace's).
    #[method(name = "session.fork", param_kind = map, with_extensions)]
    async fn fork(
        &self,
        #[argument(rename = "sessionId")] session_id: String,
        #[argument(rename = "atTurn")] at_turn: Option<String>,
    ) -> RpcResult<SessionInfo>;
    /// `mcp.auth {name}`: starts an OAuth login for the HTTP or SSE server
    /// `name` (discovery, registration or the configured client, PKCE) and
    /// answers with the authorization URL. The daemon listens for the
    /// redirect on 127.0.0.1 (the `oauth.redirectUri` port, else a free
    /// one) for 5 minutes; `mcp.authWait` waits for it. A new `mcp.auth`
    /// replaces a login still waiting. Error -32051 when it cannot start.
    #[method(name = "mcp.auth", param_kind = map)]
    async fn auth_mcp(&self, name: String) -> RpcResult<McpLogin>;

    /// `mcp.authWait {name}`: waits for the redirect of the login
    /// `mcp.auth` started, exchanges the code, stores the token (0600, in
    /// the data directory, shared by every session, kept across restarts)
    /// and reconnects the server; answers with its state after that
    /// attempt. Error -32051 when the login failed or timed out.
    #[method(name = "mcp.authWait", param_kind = map)]
    async fn auth_wait_mcp(&self, name: String) -> RpcResult<McpServerInfo>;

    /// `mcp.resources {server?, sessionId? | cwd?, all?}`: the resources
    /// and resource templates of the connected servers (or of `server`),
    /// as they listed them: those the session's workspace sees (else
    /// `cwd`'s, else the shared servers only), the same view as the
    /// model's; `all`: every server of the daemon, each with its scope.
    #[method(name = "mcp.resources", param_kind = map)]
    async fn mcp_resources(
        &self,
        server: Option<String>,
        #[argument(rename = "sessionId")] session_id: Option<String>,
        cwd: Option<String>,
        all: Option<bool>,
    ) -> RpcResult<McpResources>;

    /// `mcp.read {server, uri, sessionId? | cwd?}`: `resources/read` of
    /// `uri` on `server`, the server of that name the session's workspace
    /// (else `cwd`'s) sees, as the model does; without either, the one
    /// server of that name. An unknown server is invalid params; a failed
    /// read is -32055.
    #[method(name = "mcp.read", param_kind = map)]
    async fn mcp_read(
        &self,
        server: String,
        uri: String,
        #[argument(rename = "sessionId")] session_id: Option<String>,
        cwd: Option<String>,
    ) -> RpcResult<McpReadResult>;

    /// `mcp.prompt {server, name, arguments?, sessionId? | cwd?}`:
    /// `prompts/get` of `name` on `server` (found as `mcp.read` finds it)
    /// with `arguments` (string values). An unknown server is invalid
    /// params; a failed get is -32055.
    #[method(name = "mcp.prompt", param_kind = map)]
    async fn mcp_prompt(
        &self,
        server: String,
        name: String,
        arguments: Option<BTreeMap<String, String>>,
        #[argument(rename = "sessionId")] session_id: Option<String>,
        cwd: Option<String>,
    ) -> RpcResult<McpPromptResult>;
    /// `extensions.list {cwd?}`: the extensions installed under
    /// `~/.gemini/extensions`, each with name, version, path, whether it
    /// is enabled (for `cwd`, else for the user's home), what it
    /// contributes and its problems.
    #[method(name = "extensions.list", param_kind = map)]
    async fn list_extensions(
        &self,
        cwd: Option<String>,
    ) -> RpcResult<Vec<crate::extension::ExtensionInfo>>;
    /// `hooks.list {sessionId? | cwd?}`: the hooks a workspace's sessions
    /// run (the session's workspace, else `cwd`, else the daemon's
    /// directory), in the order they run, with the settings file each came
    /// from, whether it is enabled, and what could not be read.
    #[method(name = "hooks.list", param_kind = map)]
    async fn list_hooks(
        &self,
        #[argument(rename = "sessionId")] session_id: Option<String>,
        cwd: Option<String>,
    ) -> RpcResult<crate::hooks::HookList>;

    /// `session.answer {sessionId, questionId, action, content?}`: answers
    /// a `questionAsked` question (`accept` with `content`, `decline`,
    /// `cancel`). The first answer wins: a later one is error -32046
    /// naming who answered; `content` that does not fit the question's
    /// fields is error -32602 and the question stays open.
    #[method(name = "session.answer", param_kind = map, with_extensions)]
    async fn answer_question(
        &self,
        #[argument(rename = "sessionId")] session_id: String,
        #[argument(rename = "questionId")] question_id: String,
        action: crate::question::AnswerAction,
        content: Option<Value>,
    ) -> RpcResult<crate::question::AnswerResult>;
    /// `mcp.subscribe {sessionId, server, uri}`: subscribes the session to
    /// `uri` on `server` (`resources/subscribe`, asked once per resource
    /// and again after a reconnect); each `notifications/resources/updated`
    /// for it becomes an `mcpResourceUpdated` event of the sessions that
    /// subscribed. A prompt's `@server:uri` reference subscribes too. An
    /// unknown server or session is invalid params; a server without
    /// subscriptions, or one that refuses, is -32055.
    #[method(name = "mcp.subscribe", param_kind = map)]
    async fn mcp_subscribe(
        &self,
        #[argument(rename = "sessionId")] session_id: String,
        server: String,
        uri: String,
    ) -> RpcResult<()>;

    /// `mcp.unsubscribe {sessionId, server, uri}`: the session no longer
    /// wants updates of `uri` on `server`; when no session does, the
    /// server is told (`resources/unsubscribe`) and is not subscribed
    /// again after a reconnect. Deleting a session, or its unload while
    /// idle, does the same for all its subscriptions. Answers `ok`:
    /// whether the session was subscribed. An unknown server or session
    /// is invalid params.
    #[method(name = "mcp.unsubscribe", param_kind = map)]
    async fn mcp_unsubscribe(
        &self,
        #[argument(rename = "sessionId")] session_id: String,
        server: String,
        uri: String,
    ) -> RpcResult<Ack>;

    /// `mcp.subscriptions`: every resource some session subscribed to,
    /// with its sessions and whether its server was asked for updates.
    #[method(name = "mcp.subscriptions")]
    async fn mcp_subscriptions(&self) -> RpcResult<crate::mcp::McpSubscriptions>;

    /// `mcp.logout {name}`: removes the stored OAuth token of the HTTP or
    /// SSE server `name` and reconnects it without one; answers with its
    /// state after that attempt (`needs_auth` for a server that wants a
    /// login). A server without a token is reconnected all the same.
    #[method(name = "mcp.logout", param_kind = map)]
    async fn logout_mcp(&self, name: String) -> RpcResult<McpServerInfo>;
}

/// `session.prompt` with plain text, the common case.
pub trait PromptText: GeminidApiClient + Sync {
    fn prompt(
        &self,
        session_id: String,
        text: String,
    ) -> impl std::future::Future<Output = Result<PromptAccepted, jsonrpsee::core::client::Error>> + Send
    {
        self.prompt_parts(session_id, Some(text), None)
    }
}

impl<T: GeminidApiClient + Sync> PromptText for T {}

/// `tool.confirm` without feedback or a plan's mode, the common case.
pub trait ConfirmPlain: GeminidApiClient + Sync {
    fn confirm_tool(
        &self,
        session_id: String,
        call_id: String,
        outcome: ConfirmationOutcome,
        modified_args: Option<Value>,
    ) -> impl std::future::Future<Output = Result<ConfirmResult, jsonrpsee::core::client::Error>> + Send
    {
        self.confirm_answer(session_id, call_id, outcome, modified_args, None, None)
    }
}

impl<T: GeminidApiClient + Sync> ConfirmPlain for T {}
