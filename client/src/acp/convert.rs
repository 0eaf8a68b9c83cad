//! The one place daemon wire types become ACP messages and back: stop
//! reasons, modes, prompts, tool kinds and statuses, tool-call updates and
//! permission requests.

use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::{
    CallState, ConfirmationOutcome, ConfirmationRequest, FileDiff, ToolCallSnapshot, ToolDisplay,
};
use geminid_protocol::turn::PromptPart;
use serde_json::{Value, json};

/// How much of a running call's output is shown (its tail).
const OUTPUT_SHOWN: usize = 64 * 1024;

/// The ACP `stopReason` for a daemon `turnFinished` reason, or the message
/// of the JSON-RPC error the prompt gets instead (a failed turn).
pub fn stop_reason(reason: &str, message: Option<&str>) -> Result<&'static str, String> {
    match reason {
        "completed" => Ok("end_turn"),
        "cancelled" | "interrupted" => Ok("cancelled"),
        "max_steps" => Ok("max_turn_requests"),
        // The agent itself stopped going round in circles.
        "loop_detected" => Ok("refusal"),
        // The model's safety filters ended the turn.
        "error" if message.is_some_and(|m| m.contains("was blocked by")) => Ok("refusal"),
        // A hook refused the prompt or the model's request (`decision:
        // deny`): the agent refuses to go on.
        "blocked" => Ok("refusal"),
        // A hook ended the turn (`continue: false`): it ended, as asked.
        "stopped" => Ok("end_turn"),
        _ => Err(message.unwrap_or(reason).to_owned()),
    }
}

/// What the editor is told of a turn a hook ended (its reason), shown as
/// the agent's message: a stop reason alone says nothing of why.
pub fn hook_note(reason: &str, message: Option<&str>) -> Option<String> {
    match reason {
        "blocked" | "stopped" => message.filter(|m| !m.is_empty()).map(str::to_owned),
        _ => None,
    }
}

/// Every mode, as ACP `SessionModeState` with `current` selected.
pub fn mode_state(current: ApprovalMode) -> Value {
    let mode = |id: ApprovalMode, name: &str, description: &str| json!({"id": id.as_str(), "name": name, "description": description});
    json!({
        "currentModeId": current.as_str(),
        "availableModes": [
            mode(ApprovalMode::Default, "Default", "Read-only tools run; everything else asks"),
            mode(ApprovalMode::AutoEdit, "Auto Edit", "File edits run without asking too"),
            mode(ApprovalMode::Yolo, "YOLO", "Everything runs without asking"),
            mode(ApprovalMode::Plan, "Plan", "Read-only tools only, for research and planning"),
        ],
    })
}

/// ACP's `models` state: the current model and those offered.
pub fn model_state(current: &str, available: &[String]) -> Value {
    let mut models: Vec<Value> = available
        .iter()
        .map(|m| json!({"modelId": m, "name": m}))
        .collect();
    if !available.iter().any(|m| m == current) {
        models.insert(0, json!({"modelId": current, "name": current}));
    }
    json!({"currentModelId": current, "availableModels": models})
}

/// The approval mode an ACP `modeId` names.
pub fn mode_from_id(id: &str) -> Option<ApprovalMode> {
    id.parse().ok()
}

/// The prompt's parts for the daemon from ACP content blocks: text as
/// is, images and audio as inline data, embedded resources with their
/// content, resource links as links (the daemon reads a `file://` link
/// beneath the workspace). A block of another kind is refused, never
/// dropped or sent as text.
pub fn prompt_parts(blocks: &[Value]) -> Result<Vec<PromptPart>, String> {
    let string = |v: &Value, field: &str, kind: &str| {
        v[field]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("a `{kind}` block without `{field}`"))
    };
    let optional = |v: &Value, field: &str| v[field].as_str().map(str::to_owned);
    blocks
        .iter()
        .map(|block| match block["type"].as_str() {
            Some("text") => Ok(PromptPart::Text {
                text: string(block, "text", "text")?,
            }),
            Some(kind @ ("image" | "audio")) => Ok(PromptPart::InlineData {
                mime_type: string(block, "mimeType", kind)?,
                data: string(block, "data", kind)?,
            }),
            Some("resource") => {
                let resource = &block["resource"];
                Ok(PromptPart::Resource {
                    uri: string(resource, "uri", "resource")?,
                    mime_type: optional(resource, "mimeType"),
                    text: optional(resource, "text"),
                    blob: optional(resource, "blob"),
                })
            }
            Some("resource_link") => Ok(PromptPart::ResourceLink {
                uri: string(block, "uri", "resource_link")?,
                name: optional(block, "name"),
                mime_type: optional(block, "mimeType"),
            }),
            other => Err(format!(
                "content blocks of type {} are not supported (text, image, audio, resource, resource_link are)",
                other.map_or_else(|| "(none)".to_owned(), |t| format!("`{t}`"))
            )),
        })
        .collect()
}

/// `agent_message_chunk`, `agent_thought_chunk` or `user_message_chunk`.
pub fn chunk(kind: &str, text: &str) -> Value {
    json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}})
}

/// The ACP tool kind for a daemon tool kind.
pub fn tool_kind(daemon_kind: Option<&str>) -> &'static str {
    match daemon_kind {
        Some("read") => "read",
        Some("edit") => "edit",
        Some("delete") => "delete",
        Some("move") => "move",
        Some("search") => "search",
        Some("execute") => "execute",
        Some("think") => "think",
        Some("fetch") => "fetch",
        _ => "other",
    }
}

/// The ACP status of a call state.
pub fn call_status(state: CallState) -> &'static str {
    match state {
        CallState::Validating | CallState::Scheduled | CallState::AwaitingApproval => "pending",
        CallState::Executing => "in_progress",
        CallState::Success => "completed",
        CallState::Error | CallState::Cancelled | CallState::Interrupted => "failed",
    }
}

fn title(call: &ToolCallSnapshot) -> String {
    call.description
        .clone()
        .unwrap_or_else(|| call.name.clone())
}

fn diff(d: &FileDiff) -> Value {
    json!({"type": "diff", "path": d.file_path, "oldText": d.original_content, "newText": d.new_content})
}

fn text(text: &str) -> Value {
    json!({"type": "content", "content": {"type": "text", "text": text}})
}

/// What a call shows now: a diff to approve or that was made, a command,
/// output so far, the result or the error.
fn content(call: &ToolCallSnapshot, output: &str) -> Vec<Value> {
    if let Some(error) = &call.error {
        return vec![text(&error.message)];
    }
    if let Some(result) = &call.result {
        return match &result.display {
            ToolDisplay::FileDiff(d) if !d.contents_omitted => vec![diff(d)],
            ToolDisplay::FileDiff(d) => vec![text(&d.file_diff)],
            ToolDisplay::Text { text: t } | ToolDisplay::Markdown { text: t } if !t.is_empty() => {
                vec![text(t)]
            }
            _ => Vec::new(),
        };
    }
    match &call.confirmation {
        Some(ConfirmationRequest::Edit { diff: d, .. }) if !d.contents_omitted => vec![diff(d)],
        Some(ConfirmationRequest::Edit { diff: d, .. }) => vec![text(&d.file_diff)],
        Some(ConfirmationRequest::Exec { command, .. }) => vec![text(&format!("`{command}`"))],
        Some(ConfirmationRequest::Info { prompt, urls, .. }) => {
            let mut lines = vec![prompt.clone()];
            lines.extend(urls.iter().cloned());
            vec![text(&lines.join("\n"))]
        }
        Some(ConfirmationRequest::Mcp { .. }) | None if !output.is_empty() => vec![text(output)],
        _ => Vec::new(),
    }
}

/// Appends a running call's output delta, keeping the tail.
pub fn add_output(output: &mut String, delta: &str) {
    output.push_str(delta);
    if output.len() > OUTPUT_SHOWN {
        let mut cut = output.len() - OUTPUT_SHOWN;
        while !output.is_char_boundary(cut) {
            cut += 1;
        }
        output.drain(..cut);
    }
}

/// The `tool_call` (first sight of a call) or `tool_call_update` for a
/// snapshot; `kind` is the daemon tool kind, `output` what the call has
/// printed so far.
pub fn tool_call(call: &ToolCallSnapshot, kind: Option<&str>, first: bool, output: &str) -> Value {
    let locations: Vec<Value> = call
        .locations
        .iter()
        .map(|l| json!({"path": l.path, "line": l.line}))
        .collect();
    let mut update = json!({
        "sessionUpdate": if first { "tool_call" } else { "tool_call_update" },
        "toolCallId": call.call_id,
        "title": title(call),
        "kind": tool_kind(kind),
        "status": call_status(call.state),
        "locations": locations,
        "rawInput": call.args,
    });
    let content = content(call, output);
    if first || !content.is_empty() {
        update["content"] = Value::Array(content);
    }
    if let Some(result) = &call.result {
        update["rawOutput"] = json!(result.llm_content);
    }
    update
}

/// Params of `session/request_permission` for a call awaiting approval. The
/// option ids are the daemon's outcomes.
pub fn permission_request(session_id: &str, call: &ToolCallSnapshot, kind: Option<&str>) -> Value {
    let mut tool_call = tool_call(call, kind, false, "");
    if let Some(map) = tool_call.as_object_mut() {
        map.remove("sessionUpdate");
    }
    let option = |outcome: ConfirmationOutcome, name: &str, kind: &str| json!({"optionId": outcome_id(outcome), "name": name, "kind": kind});
    if let Some(ConfirmationRequest::Plan { plan, .. }) = &call.confirmation {
        // 0.61's plan approval: the plan shown, approved into default or
        // autoEdit mode, or rejected (the model then asks for feedback).
        tool_call["content"] =
            json!([{"type": "content", "content": {"type": "text", "text": plan}}]);
        return json!({
            "sessionId": session_id,
            "toolCall": tool_call,
            "options": [
                option(ConfirmationOutcome::ProceedOnce, "Yes, manually accept edits", "allow_once"),
                {"optionId": PLAN_AUTO_EDIT, "name": "Yes, automatically accept edits", "kind": "allow_once"},
                option(ConfirmationOutcome::Cancel, "No, keep planning", "reject_once"),
            ],
        });
    }
    json!({
        "sessionId": session_id,
        "toolCall": tool_call,
        "options": [
            option(ConfirmationOutcome::ProceedOnce, "Allow once", "allow_once"),
            option(ConfirmationOutcome::ProceedAlways, "Always allow", "allow_always"),
            option(ConfirmationOutcome::Cancel, "Reject", "reject_once"),
        ],
    })
}

fn outcome_id(outcome: ConfirmationOutcome) -> &'static str {
    match outcome {
        ConfirmationOutcome::ProceedOnce => "proceed_once",
        ConfirmationOutcome::ProceedAlways => "proceed_always",
        _ => "cancel",
    }
}

/// The option approving a plan into autoEdit mode.
const PLAN_AUTO_EDIT: &str = "proceed_auto_edit";

/// The mode an approved plan switches to, when the editor chose one.
pub fn plan_mode_of(answer: &Value) -> Option<ApprovalMode> {
    let outcome = &answer["outcome"];
    match (outcome["outcome"].as_str(), outcome["optionId"].as_str()) {
        (Some("selected"), Some(PLAN_AUTO_EDIT)) => Some(ApprovalMode::AutoEdit),
        _ => None,
    }
}

/// The daemon's outcome for the editor's answer to a permission request;
/// anything but a selected allow option is a cancel.
pub fn permission_outcome(answer: &Value) -> ConfirmationOutcome {
    let outcome = &answer["outcome"];
    match (outcome["outcome"].as_str(), outcome["optionId"].as_str()) {
        (Some("selected"), Some("proceed_once" | PLAN_AUTO_EDIT)) => {
            ConfirmationOutcome::ProceedOnce
        }
        (Some("selected"), Some("proceed_always")) => ConfirmationOutcome::ProceedAlways,
        _ => ConfirmationOutcome::Cancel,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_reasons() {
        assert_eq!(stop_reason("completed", None), Ok("end_turn"));
        assert_eq!(stop_reason("cancelled", None), Ok("cancelled"));
        assert_eq!(stop_reason("max_steps", Some("x")), Ok("max_turn_requests"));
        assert_eq!(stop_reason("loop_detected", Some("x")), Ok("refusal"));
        let blocked = "the response was blocked by the Gemini API (finishReason SAFETY)";
        assert_eq!(stop_reason("error", Some(blocked)), Ok("refusal"));
        assert_eq!(stop_reason("error", Some("boom")), Err("boom".to_owned()));
        assert_eq!(stop_reason("blocked", Some("no")), Ok("refusal"));
        assert_eq!(stop_reason("stopped", Some("done")), Ok("end_turn"));
        assert_eq!(
            hook_note("blocked", Some("no secrets")).as_deref(),
            Some("no secrets")
        );
        assert_eq!(hook_note("completed", Some("x")), None);
    }

    #[test]
    fn prompt_blocks_become_parts() {
        let blocks = [
            json!({"type": "text", "text": "look at"}),
            json!({"type": "resource_link", "uri": "file:///a.rs", "name": "a.rs"}),
            json!({"type": "resource", "resource": {"uri": "file:///b.rs", "text": "fn b() {}"}}),
            json!({"type": "image", "data": "AA==", "mimeType": "image/png"}),
        ];
        let parts = prompt_parts(&blocks).unwrap();
        assert_eq!(
            parts,
            vec![
                PromptPart::Text {
                    text: "look at".into()
                },
                PromptPart::ResourceLink {
                    uri: "file:///a.rs".into(),
                    name: Some("a.rs".into()),
                    mime_type: None
                },
                PromptPart::Resource {
                    uri: "file:///b.rs".into(),
                    mime_type: None,
                    text: Some("fn b() {}".into()),
                    blob: None
                },
                PromptPart::InlineData {
                    mime_type: "image/png".into(),
                    data: "AA==".into()
                },
            ]
        );
        assert!(prompt_parts(&[json!({"type": "video"})]).is_err());
        assert!(prompt_parts(&[json!({"type": "image", "data": "AA=="})]).is_err());
    }

    #[test]
    fn permission_answers() {
        let pick = |id: &str| json!({"outcome": {"outcome": "selected", "optionId": id}});
        assert_eq!(
            permission_outcome(&pick("proceed_once")),
            ConfirmationOutcome::ProceedOnce
        );
        assert_eq!(
            permission_outcome(&pick("proceed_always")),
            ConfirmationOutcome::ProceedAlways
        );
        assert_eq!(
            permission_outcome(&pick("cancel")),
            ConfirmationOutcome::Cancel
        );
        assert_eq!(
            permission_outcome(&json!({"outcome": {"outcome": "cancelled"}})),
            ConfirmationOutcome::Cancel
        );
        let auto = pick("proceed_auto_edit");
        assert_eq!(permission_outcome(&auto), ConfirmationOutcome::ProceedOnce);
        assert_eq!(plan_mode_of(&auto), Some(ApprovalMode::AutoEdit));
        assert_eq!(plan_mode_of(&pick("proceed_once")), None);
    }

    #[test]
    fn output_keeps_its_tail() {
        let mut out = String::new();
        add_output(&mut out, &"é".repeat(OUTPUT_SHOWN));
        add_output(&mut out, "end");
        assert!(out.len() <= OUTPUT_SHOWN && out.ends_with("end"));
    }
}
