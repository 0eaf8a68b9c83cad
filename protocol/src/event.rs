//! Session events: everything that happens in a session, in order.
//!
//! Every event carries a per-session `seq` that starts at 1 and has no gaps,
//! and the time it happened. `session.subscribe {sinceSeq}` replays stored
//! events with `seq > sinceSeq`, then streams live ones, with no gap and no
//! duplicate. Events arrive as `session.event` notifications.

use serde::{Deserialize, Serialize};

use crate::session::ApprovalMode;
use crate::tool::ToolCallSnapshot;

/// One event of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEvent {
    pub session_id: String,
    /// Per-session, gapless, starting at 1.
    pub seq: u64,
    /// Milliseconds since the Unix epoch.
    pub time: u64,
    #[serde(flatten)]
    pub payload: EventPayload,
}

/// What happened. Tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum EventPayload {
    /// The session was created.
    #[serde(rename_all = "camelCase")]
    SessionCreated {
        cwd: String,
        approval_mode: ApprovalMode,
        interactive: bool,
        title: Option<String>,
    },
    /// A prompt was submitted; its turn starts when the turns before it
    /// have finished.
    #[serde(rename_all = "camelCase")]
    PromptQueued { turn_id: String, text: String },
    /// A turn began (a prompt was taken up).
    #[serde(rename_all = "camelCase")]
    TurnStarted { turn_id: String },
    /// The text a person submitted.
    #[serde(rename_all = "camelCase")]
    UserMessage { turn_id: String, text: String },
    /// A delta of the model's answer.
    #[serde(rename_all = "camelCase")]
    ModelText { turn_id: String, delta: String },
    /// A delta of the model's thoughts.
    #[serde(rename_all = "camelCase")]
    ModelThought { turn_id: String, delta: String },
    /// A tool call changed.
    ToolCall(Box<ToolCallSnapshot>),
    /// A turn ended.
    #[serde(rename_all = "camelCase")]
    TurnFinished {
        turn_id: String,
        /// `completed`, `cancelled`, `error`, `max_steps`, `loop_detected`,
        /// `interrupted` (the daemon stopped during the turn).
        reason: String,
        input_tokens: Option<u64>,
        output_tokens: Option<u64>,
        /// What went wrong, for `error`, `max_steps`, `loop_detected`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// The approval mode changed.
    #[serde(rename_all = "camelCase")]
    ApprovalModeChanged { approval_mode: ApprovalMode },
    /// The daemon restarted while this session had work in flight.
    #[serde(rename_all = "camelCase")]
    SessionRecovered { interrupted_calls: Vec<String> },
    /// Something went wrong that is not tied to one call.
    #[serde(rename_all = "camelCase")]
    Error { message: String },
    /// A model request finished: its token counts, the session's totals,
    /// and how much of the model's context window the request filled.
    #[serde(rename_all = "camelCase")]
    TokenUsage {
        turn_id: Option<String>,
        /// `turn` (a step of a turn), `compression` (the summary request)
        /// or `sampling` (an MCP server's sampling request).
        purpose: String,
        request: crate::turn::TokenCounts,
        tokens: crate::turn::SessionTokens,
    },
    /// Old history was replaced by a summary in what is sent to the model.
    /// The stored history is unchanged (`session.history` still returns
    /// every entry); entries `[0, replacedEntries)` are sent as `summary`.
    #[serde(rename_all = "camelCase")]
    Compressed {
        turn_id: Option<String>,
        /// `auto` (the history passed the threshold) or `manual`.
        trigger: String,
        replaced_entries: u64,
        /// Entries sent verbatim after the summary.
        kept_entries: u64,
        summary: String,
        /// Estimated tokens of what is sent, before and after.
        tokens_before: u64,
        tokens_after: u64,
    },
    /// A compression was tried and failed; the history sent is unchanged.
    #[serde(rename_all = "camelCase")]
    CompressionFailed {
        turn_id: Option<String>,
        trigger: String,
        message: String,
    },
    /// The session's model was chosen (`session.setModel`); `None`: the
    /// daemon's model again.
    #[serde(rename_all = "camelCase")]
    ModelChanged { model: Option<String> },
    /// The model refused (quota, overload) and the turn goes on with the
    /// configured fallback model.
    #[serde(rename_all = "camelCase")]
    ModelFallback {
        turn_id: String,
        from: String,
        to: String,
        reason: String,
    },
    /// An MCP server's connection changed (`connecting`, `connected`,
    /// `disconnected`). Announced to every loaded session.
    #[serde(rename_all = "camelCase")]
    McpServerStatus {
        server: String,
        status: String,
        message: Option<String>,
    },
    /// A client restored a checkpoint (`session.restore`): the files it
    /// names are back as they were, and the conversation sent to the model
    /// goes on from before that turn (`rewoundEntries` entries taken back).
    #[serde(rename_all = "camelCase")]
    CheckpointRestored {
        checkpoint: String,
        restored: Vec<String>,
        removed: Vec<String>,
        rewound_entries: u64,
        /// Files changed by someone else were overwritten (`force`).
        forced: bool,
    },
    /// This session was forked from another (`session.fork`).
    #[serde(rename_all = "camelCase")]
    SessionForked {
        from_session: String,
        at_turn: Option<String>,
        history_entries: u64,
    },
    /// What a prompt's references (`@path`, file parts, resource links)
    /// brought in before the turn went to the model: the files read (paths
    /// under the workspace) and what was left out, with why.
    #[serde(rename_all = "camelCase")]
    PromptReferences {
        turn_id: String,
        read: Vec<String>,
        skipped: Vec<String>,
    },
    /// The model set its todo list (`write_todos`): the whole list.
    #[serde(rename_all = "camelCase")]
    TodosUpdated { todos: Vec<crate::turn::TodoItem> },
    /// A hook ran (settings `hooks`, Gemini CLI's contract): which one,
    /// for which event, how long, and what it decided (`allow`, `deny`,
    /// `ask`, `stop`, `error`).
    #[serde(rename_all = "camelCase")]
    HookRun {
        /// `BeforeTool`, `AfterTool`, `Notification`, ...
        event: String,
        /// The hook's `name`, else its command.
        hook: String,
        command: String,
        /// The settings file it came from.
        source: String,
        /// The call it ran for, for tool events and approval notices.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        duration_ms: u64,
        decision: String,
        /// Why it failed (timeout, crash, not JSON, exit status).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The hook's `systemMessage`, for people.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        system_message: Option<String>,
    },
    /// A question for the session's people (an MCP server's elicitation,
    /// the model's `ask_user`): answer it with `session.answer`. It stays
    /// open until a `questionClosed` event with its id, or until its call
    /// (`callId`) ends; questions do not survive a daemon restart.
    #[serde(rename_all = "camelCase")]
    QuestionAsked {
        question_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        asked_by: crate::question::QuestionAsker,
        message: String,
        fields: Vec<crate::question::QuestionField>,
        /// Seconds until it ends as `cancel` unanswered.
        timeout_secs: u64,
        /// A URL-mode elicitation: the page the server wants the person
        /// to open themselves (no `fields`; `accept` means they agree to go
        /// there). Shown verbatim; geminid never opens it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
    },
    /// A question ended: answered (`by` names the client), declined at
    /// once (nobody to ask), timed out or cancelled with its call.
    #[serde(rename_all = "camelCase")]
    QuestionClosed {
        question_id: String,
        action: crate::question::AnswerAction,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
        /// Why, when no client answered it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// An MCP server's sampling request (`sampling/createMessage`) was
    /// answered by the session's model: the server, the call that carried
    /// it (`<server>__mcp_sampling`), the model and the tokens it cost
    /// (also booked in the session's account: a `tokenUsage` event with
    /// purpose `sampling` follows).
    #[serde(rename_all = "camelCase")]
    McpSampling {
        server: String,
        call_id: String,
        model: String,
        request: crate::turn::TokenCounts,
        stop_reason: String,
    },
    /// A resource this session subscribed to changed on its server
    /// (`notifications/resources/updated`); read it again for what is new.
    /// A session subscribes by referencing it (`@server:uri`) or with
    /// `mcp.subscribe`.
    #[serde(rename_all = "camelCase")]
    McpResourceUpdated { server: String, uri: String },
    /// The server of a URL-mode question said the interaction at its URL
    /// is finished (`notifications/elicitation/complete`): the call that
    /// waited on it may go on.
    #[serde(rename_all = "camelCase")]
    ElicitationCompleted { question_id: String, server: String },
    /// The discovery command (`tools.discoveryCommand`) ran again
    /// (`tool.rediscover`, or its settings changed): the discovered tools
    /// are now `tools`; `problems` says what went wrong. Announced to
    /// every loaded session (list the tools again for what is new).
    #[serde(rename_all = "camelCase")]
    ToolsRediscovered {
        tools: Vec<String>,
        problems: Vec<String>,
    },
}

/// The final notification of a subscription the daemon ends itself (the
/// session was deleted, the daemon is stopping, the client was too slow).
/// Sent as `session.closed` with this as params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionClosed {
    pub session_id: String,
    /// Why the stream ended.
    pub reason: String,
    /// The last seq delivered; resubscribe with `sinceSeq` set to it.
    pub last_seq: u64,
}
