//! Rendering events and results for people.

use geminid_protocol::event::{EventPayload, SessionEvent};
use geminid_protocol::tool::{
    CallState, ConfirmationRequest, ContentPart, ToolCallSnapshot, ToolDisplay,
};

use crate::command::exit;

/// One line describing a call's new state (`None` for output deltas).
pub fn state_line(call: &ToolCallSnapshot) -> Option<String> {
    if call.output_delta.is_some() {
        return None;
    }
    let what = call.description.as_deref().unwrap_or(&call.name);
    let line = match call.state {
        CallState::Validating => format!("[{}] {} validating", call.call_id, call.name),
        CallState::Scheduled => format!("[{}] {what}: scheduled", call.call_id),
        CallState::AwaitingApproval => format!("[{}] {what}: awaiting approval", call.call_id),
        CallState::Executing => format!("[{}] {what}: executing", call.call_id),
        CallState::Success => format!("[{}] {what}: success", call.call_id),
        CallState::Error | CallState::Cancelled | CallState::Interrupted => format!(
            "[{}] {what}: {} — {}",
            call.call_id,
            state_name(call.state),
            call.error
                .as_ref()
                .map(|e| e.message.as_str())
                .unwrap_or("")
        ),
    };
    Some(line)
}

pub fn state_name(state: CallState) -> &'static str {
    match state {
        CallState::Validating => "validating",
        CallState::Scheduled => "scheduled",
        CallState::AwaitingApproval => "awaiting approval",
        CallState::Executing => "executing",
        CallState::Success => "success",
        CallState::Error => "error",
        CallState::Cancelled => "cancelled",
        CallState::Interrupted => "interrupted",
    }
}

/// The result of a finished call, as text.
pub fn result_text(call: &ToolCallSnapshot) -> String {
    match (&call.result, &call.error) {
        (Some(result), _) => {
            let mut out = match &result.display {
                ToolDisplay::Text { text } | ToolDisplay::Markdown { text } => text.clone(),
                ToolDisplay::FileDiff(diff) => diff.file_diff.clone(),
            };
            for part in &result.llm_content {
                if let ContentPart::InlineData { mime_type, data } = part {
                    out.push_str(&format!(
                        "\n[inline {mime_type}, {} base64 bytes]",
                        data.len()
                    ));
                }
            }
            out
        }
        (None, Some(error)) => format!("{}: {}", error.kind, error.message),
        (None, None) => String::new(),
    }
}

/// What the tool returned for the model (its content), as text; inline
/// data is summarized. This is what `gemctl call` prints.
pub fn content_text(call: &ToolCallSnapshot) -> String {
    let Some(result) = &call.result else {
        return result_text(call);
    };
    let mut out = String::new();
    for part in &result.llm_content {
        match part {
            ContentPart::Text { text } => out.push_str(text),
            ContentPart::InlineData { mime_type, data } => out.push_str(&format!(
                "[inline {mime_type}, {} base64 bytes]",
                data.len()
            )),
        }
    }
    out
}

/// The exit status a finished call maps to.
pub fn exit_status(call: &ToolCallSnapshot) -> u8 {
    match call.state {
        CallState::Success => exit::OK,
        CallState::Cancelled | CallState::Interrupted => exit::CANCELLED,
        CallState::Error if call.error.as_ref().is_some_and(|e| e.kind == "denied") => exit::DENIED,
        CallState::Error
        | CallState::Validating
        | CallState::Scheduled
        | CallState::AwaitingApproval
        | CallState::Executing => exit::FAILED,
    }
}

/// What a person is asked, in a few lines.
pub fn confirmation_text(call: &ToolCallSnapshot) -> String {
    let Some(request) = &call.confirmation else {
        return format!("Allow {}?", call.name);
    };
    match request {
        ConfirmationRequest::Edit { title, diff } => format!("{title}\n{}", diff.file_diff),
        ConfirmationRequest::Exec { title, command, .. } => format!("{title}\n  $ {command}"),
        ConfirmationRequest::Mcp {
            title,
            server_name,
            tool_name,
        } => format!("{title}\n  MCP server {server_name}, tool {tool_name}"),
        ConfirmationRequest::Info {
            title,
            prompt,
            urls,
        } => {
            let mut text = format!("{title}\n  {prompt}");
            for url in urls {
                text.push_str(&format!("\n  {url}"));
            }
            text
        }
        ConfirmationRequest::Plan {
            title,
            plan_path,
            plan,
        } => {
            let mut text = format!("{title}\n  {plan_path}");
            for line in plan.lines() {
                text.push_str(&format!("\n  │ {line}"));
            }
            text
        }
    }
}

/// One event, for `gemctl attach`.
pub fn event_line(event: &SessionEvent) -> Option<String> {
    let seq = event.seq;
    let text = match &event.payload {
        EventPayload::SessionCreated {
            cwd, approval_mode, ..
        } => {
            format!("session created in {cwd} (mode {approval_mode})")
        }
        EventPayload::PromptQueued { turn_id, text } => format!("queued {turn_id}: {text}"),
        EventPayload::TurnStarted { turn_id } => format!("turn {turn_id} started"),
        EventPayload::UserMessage { text, .. } => format!("> {text}"),
        EventPayload::ModelText { delta, .. } => return Some(delta.clone()),
        EventPayload::ModelThought { delta, .. } => format!("(thinking) {delta}"),
        EventPayload::ToolCall(call) => match &call.output_delta {
            Some(delta) => return Some(delta.clone()),
            None => {
                let mut line = state_line(call)?;
                if call.state.is_terminal() {
                    let result = result_text(call);
                    if !result.is_empty() {
                        line.push('\n');
                        line.push_str(&result);
                    }
                }
                line
            }
        },
        EventPayload::TurnFinished {
            turn_id,
            reason,
            message,
            ..
        } => match message {
            Some(message) => format!("turn {turn_id} finished: {reason} ({message})"),
            None => format!("turn {turn_id} finished: {reason}"),
        },
        EventPayload::ApprovalModeChanged { approval_mode } => {
            format!("approval mode is now {approval_mode}")
        }
        EventPayload::SessionRecovered { interrupted_calls } => format!(
            "daemon restarted; interrupted calls: {}",
            interrupted_calls.join(", ")
        ),
        EventPayload::Error { message } => format!("error: {message}"),
        EventPayload::TokenUsage {
            purpose,
            request,
            tokens,
            ..
        } => format!(
            "{purpose} request: {} in ({} cached), {} out, {} thoughts; {}",
            request.input,
            request.cached,
            request.output,
            request.thoughts,
            crate::command::context_line(tokens)
        ),
        EventPayload::Compressed {
            trigger,
            replaced_entries,
            kept_entries,
            tokens_before,
            tokens_after,
            ..
        } => format!(
            "compressed ({trigger}): history entries 0..{replaced_entries} replaced by a summary, {kept_entries} kept; about {tokens_before} → {tokens_after} tokens sent"
        ),
        EventPayload::ModelChanged { model } => match model {
            Some(model) => format!("model is now {model}"),
            None => "model is now the daemon's".to_owned(),
        },
        EventPayload::ModelFallback {
            from, to, reason, ..
        } => format!("model {from} refused ({reason}); going on with {to}"),
        EventPayload::CompressionFailed {
            trigger, message, ..
        } => format!("compression ({trigger}) failed: {message}; history sent unchanged"),
        EventPayload::McpServerStatus {
            server,
            status,
            message,
        } => match message {
            Some(message) => format!("mcp server {server}: {status} ({message})"),
            None => format!("mcp server {server}: {status}"),
        },
        EventPayload::CheckpointRestored {
            checkpoint,
            restored,
            removed,
            rewound_entries,
            forced,
        } => format!(
            "checkpoint {checkpoint} restored{}: {} file(s) put back, {} removed, {rewound_entries} history entries taken back",
            if *forced { " (forced)" } else { "" },
            restored.len(),
            removed.len()
        ),
        EventPayload::SessionForked {
            from_session,
            at_turn,
            history_entries,
        } => format!(
            "forked from {from_session}{}: {history_entries} history entries",
            at_turn
                .as_deref()
                .map(|t| format!(" at {t}"))
                .unwrap_or_default()
        ),
        EventPayload::PromptReferences { read, skipped, .. } => references_line(read, skipped),
        EventPayload::TodosUpdated { todos } => todos_text(todos),
        EventPayload::HookRun { .. } => crate::command::hook_run_line(&event.payload)?,
        EventPayload::QuestionAsked { .. }
        | EventPayload::QuestionClosed { .. }
        | EventPayload::ElicitationCompleted { .. } => question_line(&event.payload)?,
        EventPayload::McpSampling { .. } => crate::command::sampling_line(&event.payload),
        EventPayload::McpResourceUpdated { server, uri } => {
            format!("mcp resource updated: {server}:{uri}")
        }
        EventPayload::ToolsRediscovered { .. } => rediscovered_line(&event.payload),
    };
    Some(format!("#{seq} {text}"))
}

/// A `toolsRediscovered` event in words; empty for other events.
pub fn rediscovered_line(payload: &EventPayload) -> String {
    let EventPayload::ToolsRediscovered { tools, problems } = payload else {
        return String::new();
    };
    let mut line = format!("tools rediscovered: {}", tools.len());
    if !problems.is_empty() {
        line.push_str(&format!(
            " ({} problems: {})",
            problems.len(),
            problems.join("; ")
        ));
    }
    line
}

/// What a prompt's references read and left out, in one line.
pub fn references_line(read: &[String], skipped: &[String]) -> String {
    let mut line = format!("read for the prompt: {}", read.len());
    if !read.is_empty() {
        line.push_str(&format!(" ({})", read.join(", ")));
    }
    for note in skipped {
        line.push_str(&format!("; {note}"));
    }
    line
}

/// The model's todo list: a heading, then one line per item.
pub fn todos_text(todos: &[geminid_protocol::turn::TodoItem]) -> String {
    if todos.is_empty() {
        return "todo list cleared".to_owned();
    }
    let mut text = "todo list:".to_owned();
    for todo in todos {
        let mark = match todo.status.as_str() {
            "completed" => "[x]",
            "in_progress" => "[>]",
            "cancelled" => "[-]",
            "blocked" => "[!]",
            _ => "[ ]",
        };
        text.push_str(&format!("\n  {mark} {}", todo.description));
    }
    text
}

/// A question asked or closed, in one line (the form is prompted apart).
pub fn question_line(payload: &EventPayload) -> Option<String> {
    use crate::questions::{asker_words, closed_words};
    match payload {
        EventPayload::QuestionAsked {
            question_id,
            asked_by,
            message,
            url: Some(url),
            ..
        } => Some(format!(
            "question {question_id} from {}: {message} (open {url} yourself, host {}; accept or decline with `session.answer`)",
            asker_words(asked_by),
            crate::questions::url_host(url)
        )),
        EventPayload::QuestionAsked {
            question_id,
            asked_by,
            message,
            fields,
            ..
        } => Some(format!(
            "question {question_id} from {}: {message} ({} field(s); answer with `session.answer`)",
            asker_words(asked_by),
            fields.len()
        )),
        EventPayload::QuestionClosed {
            question_id,
            action,
            by,
            reason,
        } => Some(format!(
            "question {question_id} {}",
            closed_words(*action, by.as_deref(), reason.as_deref())
        )),
        EventPayload::ElicitationCompleted {
            question_id,
            server,
        } => Some(format!(
            "question {question_id}: MCP server {server} says the interaction at its URL is complete"
        )),
        _ => None,
    }
}
