//! The one place where the daemon's own types become protocol types and
//! back. rpc/ uses it for answers; session/ uses it because the event log
//! stores events in their wire form (the log is the record of what clients
//! were sent, byte for byte).

use geminid_protocol as proto;
use proto::tool as wt;

use crate::policy::{ApprovalMode, MatchedRule, PolicyRule, PolicyVerdict, Tier};
use crate::scheduler::{CallErrorKind, CallState, ToolCall};
use crate::store::SessionRecord;
use crate::tools::{
    ConfirmationDetails, ContentPart, FileDiff, Tool, ToolDisplay, ToolErrorKind, ToolLocation,
    ToolResult, ToolSource,
};
use proto::policy as wp;

pub fn approval_mode(mode: ApprovalMode) -> proto::ApprovalMode {
    match mode {
        ApprovalMode::Default => proto::ApprovalMode::Default,
        ApprovalMode::AutoEdit => proto::ApprovalMode::AutoEdit,
        ApprovalMode::Yolo => proto::ApprovalMode::Yolo,
        ApprovalMode::Plan => proto::ApprovalMode::Plan,
    }
}

pub fn approval_mode_from(mode: proto::ApprovalMode) -> ApprovalMode {
    match mode {
        proto::ApprovalMode::Default => ApprovalMode::Default,
        proto::ApprovalMode::AutoEdit => ApprovalMode::AutoEdit,
        proto::ApprovalMode::Yolo => ApprovalMode::Yolo,
        proto::ApprovalMode::Plan => ApprovalMode::Plan,
    }
}

pub fn session_info(
    record: &SessionRecord,
    last_seq: u64,
    updated_at: Option<u64>,
    loaded: bool,
) -> proto::SessionInfo {
    proto::SessionInfo {
        session_id: record.id.clone(),
        cwd: record.cwd.clone(),
        title: record.title.clone(),
        approval_mode: approval_mode(record.approval_mode),
        interactive: record.interactive,
        created_at: record.created_at,
        updated_at: updated_at.unwrap_or(record.created_at),
        origin: record.origin.clone(),
        last_seq,
        loaded,
        model: record.model.clone(),
        tokens: record.tokens.as_ref().map(session_tokens),
        todos: todo_items(&record.todos),
    }
}

/// The model's todo list.
pub fn todo_items(
    todos: &[crate::tools::builtin::write_todos::Todo],
) -> Vec<geminid_protocol::turn::TodoItem> {
    todos
        .iter()
        .map(|t| geminid_protocol::turn::TodoItem {
            description: t.description.clone(),
            status: t.status.clone(),
        })
        .collect()
}

/// One request's counts.
pub fn token_counts(usage: crate::model::Usage) -> geminid_protocol::turn::TokenCounts {
    geminid_protocol::turn::TokenCounts {
        input: usage.input_tokens,
        output: usage.output_tokens,
        cached: usage.cached_tokens,
        thoughts: usage.thought_tokens,
    }
}

/// A session's token account.
pub fn session_tokens(ledger: &crate::model::TokenLedger) -> geminid_protocol::turn::SessionTokens {
    geminid_protocol::turn::SessionTokens {
        total: token_counts(ledger.total),
        requests: ledger.requests,
        model: ledger.model.clone(),
        context_tokens: ledger.context_tokens,
        context_window: ledger.context_window,
        context_share: ledger.share(),
    }
}

pub fn tool_info(tool: &dyn Tool) -> wt::ToolInfo {
    let (source, server) = match tool.source() {
        ToolSource::Builtin => ("builtin", None),
        ToolSource::Discovered => ("discovered", None),
        ToolSource::Mcp { server } => ("mcp", Some(server)),
    };
    wt::ToolInfo {
        name: tool.name().to_owned(),
        display_name: tool.display_name().to_owned(),
        description: tool.description().to_owned(),
        kind: enum_name(&tool.kind()),
        source: source.to_owned(),
        server,
        parameters: tool.parameter_schema().clone(),
        output_schema: tool.output_schema().cloned(),
    }
}

/// The snapshot clients see of a call.
pub fn snapshot(call: &ToolCall, output_delta: Option<String>) -> wt::ToolCallSnapshot {
    into_snapshot(call.clone(), output_delta)
}

/// [`snapshot`] of a call that is done with: its result (which can be
/// megabytes) moves into the snapshot rather than being copied.
pub fn into_snapshot(call: ToolCall, output_delta: Option<String>) -> wt::ToolCallSnapshot {
    let (state, confirmation, result, error) = match call.state {
        CallState::Validating => (wt::CallState::Validating, None, None, None),
        CallState::Scheduled => (wt::CallState::Scheduled, None, None, None),
        CallState::AwaitingApproval(details) => (
            wt::CallState::AwaitingApproval,
            Some(confirmation(&details)),
            None,
            None,
        ),
        CallState::Executing => (wt::CallState::Executing, None, None, None),
        CallState::Success(r) => (wt::CallState::Success, None, Some(into_result(r)), None),
        CallState::Error(e) => (
            wt::CallState::Error,
            None,
            None,
            Some(wt::ToolCallError {
                kind: error_kind(e.kind),
                message: e.message,
            }),
        ),
        CallState::Cancelled(reason) => (
            wt::CallState::Cancelled,
            None,
            None,
            Some(wt::ToolCallError {
                kind: "cancelled".to_owned(),
                message: reason,
            }),
        ),
        CallState::Interrupted => (
            wt::CallState::Interrupted,
            None,
            None,
            Some(wt::ToolCallError {
                kind: "interrupted".to_owned(),
                message: "the daemon stopped before this call finished; its outcome is unknown"
                    .to_owned(),
            }),
        ),
    };
    wt::ToolCallSnapshot {
        call_id: call.id,
        name: call.name,
        args: call.args,
        state,
        description: call.description,
        locations: call.locations.iter().map(location).collect(),
        confirmation,
        output_delta,
        result,
        error,
        decided_by: call.decided_by,
    }
}

fn error_kind(kind: CallErrorKind) -> String {
    match kind {
        CallErrorKind::Tool(kind) => enum_name(&kind),
        CallErrorKind::UnknownTool => "unknown_tool".to_owned(),
        CallErrorKind::Denied => "denied".to_owned(),
        CallErrorKind::Cancelled => enum_name(&ToolErrorKind::Cancelled),
    }
}

fn location(loc: &ToolLocation) -> wt::ToolLocation {
    wt::ToolLocation {
        path: loc.path.display().to_string(),
        line: loc.line,
    }
}

/// A diff for clients. Whole contents of large files are left out: they
/// would be sent, stored in the event log and replayed for every
/// subscriber, while the unified diff already says what changed.
pub fn file_diff(diff: &FileDiff) -> wt::FileDiff {
    let limit = proto::framing::MAX_DIFF_CONTENT_BYTES;
    let omitted = diff.new_content.len() > limit
        || diff
            .original_content
            .as_ref()
            .is_some_and(|c| c.len() > limit);
    wt::FileDiff {
        file_name: diff.file_name.clone(),
        file_path: diff.file_path.display().to_string(),
        file_diff: diff.diff.clone(),
        original_content: if omitted {
            None
        } else {
            diff.original_content.clone()
        },
        new_content: if omitted {
            String::new()
        } else {
            diff.new_content.clone()
        },
        contents_omitted: omitted,
    }
}

pub fn confirmation(details: &ConfirmationDetails) -> wt::ConfirmationRequest {
    match details {
        ConfirmationDetails::Edit { title, diff } => wt::ConfirmationRequest::Edit {
            title: title.clone(),
            diff: file_diff(diff),
        },
        ConfirmationDetails::Exec {
            title,
            command,
            root_commands,
        } => wt::ConfirmationRequest::Exec {
            title: title.clone(),
            command: command.clone(),
            root_commands: root_commands.clone(),
        },
        ConfirmationDetails::Mcp {
            title,
            server_name,
            tool_name,
        } => wt::ConfirmationRequest::Mcp {
            title: title.clone(),
            server_name: server_name.clone(),
            tool_name: tool_name.clone(),
        },
        ConfirmationDetails::Info {
            title,
            prompt,
            urls,
        } => wt::ConfirmationRequest::Info {
            title: title.clone(),
            prompt: prompt.clone(),
            urls: urls.clone(),
        },
        ConfirmationDetails::Plan {
            title,
            plan_path,
            plan,
        } => wt::ConfirmationRequest::Plan {
            title: title.clone(),
            plan_path: plan_path.display().to_string(),
            plan: plan.clone(),
        },
    }
}

/// A tool's result as clients see it (the content moves, not copied).
pub fn into_result(result: ToolResult) -> wt::ToolCallResult {
    wt::ToolCallResult {
        llm_content: result
            .llm_content
            .into_iter()
            .map(|part| match part {
                ContentPart::Text { text } => wt::ContentPart::Text { text },
                ContentPart::InlineData { mime_type, data } => {
                    wt::ContentPart::InlineData { mime_type, data }
                }
            })
            .collect(),
        display: match result.display {
            ToolDisplay::Text { text } => wt::ToolDisplay::Text { text },
            ToolDisplay::Markdown { text } => wt::ToolDisplay::Markdown { text },
            ToolDisplay::FileDiff(diff) => wt::ToolDisplay::FileDiff(file_diff(&diff)),
        },
        summary: result.summary,
        structured_content: result.structured,
    }
}

/// The serde name of a unit enum variant (`ToolKind::Read` → `read`).
fn enum_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "unknown".to_owned(),
    }
}

fn rule_ref(rule: &MatchedRule) -> wp::RuleRef {
    wp::RuleRef {
        file: rule.source.file.clone(),
        index: rule.source.index,
        tier: tier_name(rule.source.tier).to_owned(),
        priority: rule.final_priority,
        matched: rule.matched.clone(),
        deny_message: rule.deny_message.clone(),
    }
}

fn tier_name(tier: Tier) -> &'static str {
    tier.name()
}

pub fn policy_check(
    verdict: &PolicyVerdict,
    mode: ApprovalMode,
    interactive: bool,
) -> wp::PolicyCheckResult {
    wp::PolicyCheckResult {
        decision: verdict.decision.as_str().to_owned(),
        rule: verdict.rule.as_ref().map(rule_ref),
        subcommands: verdict
            .subcommands
            .iter()
            .map(|sub| wp::SubcommandDecision {
                command: sub.command.clone(),
                decision: sub.decision.as_str().to_owned(),
                rule: sub.rule.as_ref().map(rule_ref),
            })
            .collect(),
        reason: verdict.reason.clone(),
        deny_message: verdict.deny_message.clone(),
        approval_mode: approval_mode(mode),
        interactive,
    }
}

pub fn policy_rule(rule: &PolicyRule) -> wp::PolicyRuleInfo {
    wp::PolicyRuleInfo {
        source: rule_ref(&MatchedRule::of(rule)),
        decision: rule.decision.as_str().to_owned(),
        tool_names: rule.tool_names.clone(),
        mcp_name: rule.mcp_name.clone(),
        args_pattern: rule.args_pattern.as_ref().map(|r| r.as_str().to_owned()),
        command_prefix: rule.command_prefix.clone(),
        command_regex: rule.command_regex.as_ref().map(|r| r.as_str().to_owned()),
        modes: rule.modes.iter().map(|m| approval_mode(*m)).collect(),
        allow_redirection: rule.allow_redirection,
        conditions: rule.conditions(),
        deny_message: rule.deny_message.clone(),
    }
}

/// A history entry as the wire's Gemini-shaped JSON.
pub fn history_entry(content: &crate::model::Content) -> serde_json::Value {
    serde_json::to_value(content).unwrap_or(serde_json::Value::Null)
}

/// The model configuration, for `daemon.status`.
pub fn model_status(
    config: &crate::model::ModelConfig,
    available: Vec<String>,
    fallback: Option<String>,
) -> geminid_protocol::turn::ModelStatus {
    geminid_protocol::turn::ModelStatus {
        available,
        fallback,
        provider: config.provider.label().to_owned(),
        model: config.model.clone(),
        base_url: config.base_url.clone(),
        key_present: config.api_key.is_some()
            || matches!(
                config.vertex,
                Some((_, crate::model::config::VertexAuth::Adc { .. }))
            ),
        key_source: config.key_source.clone(),
        problem: config.problem(),
        notes: config.notes.clone(),
    }
}

/// A workspace's memory, for `memory.show`.
pub fn memory_info(
    workspace: &std::path::Path,
    memory: &crate::memory::Memory,
) -> geminid_protocol::turn::MemoryInfo {
    fn node(tree: &crate::memory::ImportTree) -> geminid_protocol::turn::ImportNode {
        geminid_protocol::turn::ImportNode {
            path: tree.path.display().to_string(),
            imports: tree.imports.iter().map(node).collect(),
        }
    }
    geminid_protocol::turn::MemoryInfo {
        workspace: workspace.display().to_string(),
        text: memory.text.clone(),
        files: memory
            .files
            .iter()
            .map(|file| geminid_protocol::turn::ImportNode {
                path: file.path.display().to_string(),
                imports: file.tree.imports.iter().map(node).collect(),
            })
            .collect(),
    }
}

/// The answer to `tool.call` with `wait: true`: the final event's JSON as
/// stored (a superset of the snapshot), not serialized a second time.
pub fn call_finished(done: crate::session::FinalCall) -> geminid_protocol::tool::ToolCallStarted {
    let mut started = geminid_protocol::tool::ToolCallStarted::accepted(done.call_id);
    match done.event {
        Some(event) => started.outcome_json = Some(geminid_protocol::tool::SharedJson::new(event)),
        None => started.outcome = done.snapshot,
    }
    started
}

/// What a subscriber gets in place of a stored event that cannot be read
/// (its bytes were damaged): an `error` event with the same seq, saying
/// so, so the stream stays gapless and the damage is reported.
pub fn damaged_event(
    session_id: &str,
    seq: u64,
    why: &str,
) -> Option<Box<serde_json::value::RawValue>> {
    let event = proto::SessionEvent {
        session_id: session_id.to_owned(),
        seq,
        time: 0,
        payload: proto::EventPayload::Error {
            message: format!("event {seq} cannot be replayed: {why}"),
        },
    };
    serde_json::value::to_raw_value(&event).ok()
}

/// One configuration problem for `daemon.status`.
pub fn config_problem(
    area: &str,
    problem: &crate::problems::ConfigProblem,
) -> geminid_protocol::session::ConfigProblemInfo {
    geminid_protocol::session::ConfigProblemInfo {
        area: area.to_owned(),
        file: problem.file.clone(),
        line: problem.line,
        message: problem.message.clone(),
        kept: problem.kept.clone(),
    }
}

/// The kernel's support for the sandbox.
pub fn sandbox_status(s: &crate::sandbox::Support) -> proto::session::SandboxStatus {
    proto::session::SandboxStatus {
        available: s.available(),
        landlock_abi: s.landlock_abi,
        missing: s.missing.clone(),
    }
}

/// `sandbox.check`'s answer.
pub fn sandbox_check(c: &crate::sandbox::SandboxCheck) -> proto::session::SandboxCheck {
    let strings = |v: &[std::path::PathBuf]| v.iter().map(|p| p.display().to_string()).collect();
    proto::session::SandboxCheck {
        status: sandbox_status(&c.status),
        workspace: c.workspace.display().to_string(),
        mode: c.mode.map(|m| m.as_str().to_owned()),
        network: c.plan.network,
        writable: strings(&c.plan.writable),
        hidden: strings(&c.plan.hidden),
        read_only: strings(&c.plan.read_only),
        problems: c.problems.clone(),
        probes: c
            .probes
            .iter()
            .map(|p| proto::session::SandboxProbe {
                name: p.name.clone(),
                passed: p.passed,
                detail: p.detail.clone(),
            })
            .collect(),
    }
}

/// `session.checkpoints`' entries.
pub fn checkpoint_list(
    checkpoints: &[crate::checkpoints::Checkpoint],
) -> proto::undo::CheckpointList {
    proto::undo::CheckpointList {
        checkpoints: checkpoints
            .iter()
            .map(|c| proto::undo::CheckpointInfo {
                checkpoint: c.id.clone(),
                turn_id: c.turn_id.clone(),
                calls: c.calls.clone(),
                files: c.files.iter().map(|p| p.display().to_string()).collect(),
                time: c.time,
            })
            .collect(),
    }
}

/// `session.restore`'s answer.
pub fn restore_result(done: &crate::checkpoints::Restored) -> proto::undo::RestoreResult {
    let names = |paths: &[std::path::PathBuf]| -> Vec<String> {
        paths.iter().map(|p| p.display().to_string()).collect()
    };
    proto::undo::RestoreResult {
        checkpoint: done.checkpoint.clone(),
        restored: names(&done.restored),
        removed: names(&done.removed),
        unchanged: names(&done.unchanged),
        rewound_entries: done.rewound_entries,
    }
}

/// The files a refused restore names, with their diffs.
pub fn restore_conflicts(
    conflicts: &[crate::checkpoints::Conflict],
) -> Vec<proto::undo::RestoreConflict> {
    conflicts
        .iter()
        .map(|c| proto::undo::RestoreConflict {
            path: c.path.display().to_string(),
            diff: c.diff.clone(),
        })
        .collect()
}
/// An installed extension on the wire (`extensions.list`), its
/// enablement decided for `dir`.
pub fn extension_info(
    ext: &crate::extensions::Extension,
    dir: &std::path::Path,
) -> proto::extension::ExtensionInfo {
    let shown = |p: &std::path::Path| p.display().to_string();
    proto::extension::ExtensionInfo {
        name: ext.name.clone(),
        version: ext.version.clone(),
        description: ext.description.clone(),
        path: shown(&ext.path),
        enabled: ext.loaded && ext.enabled_for(dir),
        mcp_servers: ext.mcp_servers.keys().cloned().collect(),
        context_files: ext.context_files.iter().map(|p| shown(p)).collect(),
        exclude_tools: ext.exclude_tools.clone(),
        policies: ext.policy_dir.as_deref().map(shown),
        problems: ext.problems.iter().map(ToString::to_string).collect(),
        settings: Vec::new(),
    }
}

/// One resolved extension setting (never a sensitive value).
pub fn extension_setting_info(
    r: &crate::extension_settings::Resolved,
) -> proto::extension::ExtensionSettingInfo {
    proto::extension::ExtensionSettingInfo {
        name: r.name.clone(),
        env_var: r.env_var.clone(),
        sensitive: r.sensitive,
        scope: r.scope.map(str::to_owned),
        source: r.source.clone(),
        value: if r.sensitive { None } else { r.value.clone() },
    }
}

/// One hook run as the session's `hookRun` event.
pub fn hook_run(run: &crate::hooks::HookRun, call_id: Option<&str>) -> proto::event::EventPayload {
    proto::event::EventPayload::HookRun {
        event: run.event.name().to_owned(),
        hook: run.name.clone(),
        command: run.command.clone(),
        source: run.source.clone(),
        call_id: call_id.map(str::to_owned),
        duration_ms: run.duration_ms,
        decision: run.result.decision().to_owned(),
        error: run.result.error.clone(),
        system_message: run
            .result
            .output
            .as_ref()
            .and_then(|o| o.get("systemMessage"))
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned),
    }
}

/// A workspace's hooks as `hooks.list` answers them.
pub fn hook_list(
    root: &std::path::Path,
    set: &crate::hooks::HookSet,
) -> geminid_protocol::hooks::HookList {
    geminid_protocol::hooks::HookList {
        cwd: root.display().to_string(),
        enabled: set.enabled,
        workspace_trusted: set.workspace_trusted,
        hooks: set
            .entries
            .iter()
            .map(|h| geminid_protocol::hooks::HookInfo {
                event: h.event.name().to_owned(),
                name: h.display_name().to_owned(),
                command: h.command.clone(),
                matcher: h.matcher.clone(),
                sequential: h.sequential,
                timeout_ms: h.timeout_ms,
                description: h.description.clone(),
                layer: h.source.layer.to_owned(),
                source: h.source.file.clone(),
                enabled: h.enabled,
            })
            .collect(),
        problems: set.problems.clone(),
    }
}

/// Who asks a question, on the wire.
pub fn question_asker(
    asked_by: &crate::questions::AskedBy,
) -> geminid_protocol::question::QuestionAsker {
    use geminid_protocol::question::QuestionAsker;
    match asked_by {
        crate::questions::AskedBy::Mcp(server) => QuestionAsker::Mcp {
            server: server.clone(),
        },
        crate::questions::AskedBy::Model => QuestionAsker::Model,
    }
}

/// A question's form as the fields clients show.
pub fn question_fields(
    form: &crate::questions::Form,
) -> Vec<geminid_protocol::question::QuestionField> {
    use crate::questions::FieldKind;
    use geminid_protocol::question::{QuestionField, QuestionOption};
    let options = |choices: &[crate::questions::form::Choice]| {
        choices
            .iter()
            .map(|c| QuestionOption {
                value: c.value.clone(),
                label: c.label.clone(),
                description: c.description.clone(),
            })
            .collect::<Vec<_>>()
    };
    form.fields
        .iter()
        .map(|f| {
            let mut field = QuestionField {
                name: f.name.clone(),
                title: f.title.clone(),
                description: f.description.clone(),
                kind: String::new(),
                required: f.required,
                default: f.default.clone(),
                options: Vec::new(),
                other: false,
                format: None,
                minimum: None,
                maximum: None,
                min_length: None,
                max_length: None,
                min_items: None,
                max_items: None,
            };
            match &f.kind {
                FieldKind::Text {
                    format,
                    min_length,
                    max_length,
                } => {
                    field.kind = "string".into();
                    field.format = format.clone();
                    field.min_length = *min_length;
                    field.max_length = *max_length;
                }
                FieldKind::Number {
                    integer,
                    minimum,
                    maximum,
                } => {
                    field.kind = if *integer { "integer" } else { "number" }.into();
                    field.minimum = *minimum;
                    field.maximum = *maximum;
                }
                FieldKind::Boolean => field.kind = "boolean".into(),
                FieldKind::Choice { options: o, other } => {
                    field.kind = "choice".into();
                    field.options = options(o);
                    field.other = *other;
                }
                FieldKind::Choices {
                    options: o,
                    min_items,
                    max_items,
                } => {
                    field.kind = "choices".into();
                    field.options = options(o);
                    field.min_items = *min_items;
                    field.max_items = *max_items;
                }
            }
            field
        })
        .collect()
}

pub fn answer_action(action: crate::questions::Action) -> geminid_protocol::question::AnswerAction {
    use geminid_protocol::question::AnswerAction;
    match action {
        crate::questions::Action::Accept => AnswerAction::Accept,
        crate::questions::Action::Decline => AnswerAction::Decline,
        crate::questions::Action::Cancel => AnswerAction::Cancel,
    }
}

pub fn action_of(action: geminid_protocol::question::AnswerAction) -> crate::questions::Action {
    use geminid_protocol::question::AnswerAction;
    match action {
        AnswerAction::Accept => crate::questions::Action::Accept,
        AnswerAction::Decline => crate::questions::Action::Decline,
        AnswerAction::Cancel => crate::questions::Action::Cancel,
    }
}

/// `mcp.subscriptions`: the subscription table on the wire.
pub fn mcp_subscriptions(
    list: Vec<crate::discovery::mcp::Subscription>,
) -> geminid_protocol::mcp::McpSubscriptions {
    geminid_protocol::mcp::McpSubscriptions {
        subscriptions: list
            .into_iter()
            .map(|s| geminid_protocol::mcp::McpSubscription {
                server: s.server,
                scope: s.scope,
                uri: s.uri,
                sessions: s.sessions,
                asked: s.asked,
            })
            .collect(),
    }
}
