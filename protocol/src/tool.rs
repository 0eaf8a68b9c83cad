//! Tools and tool calls as clients see them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One entry of `tool.list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolInfo {
    /// The name the model and `tool.call` use.
    pub name: String,
    pub display_name: String,
    pub description: String,
    /// `read`, `edit`, `delete`, `move`, `search`, `execute`, `think`, `fetch` or `other`.
    pub kind: String,
    /// Where the tool comes from: `builtin`, `discovered` or `mcp`.
    pub source: String,
    /// The MCP server, for MCP tools.
    pub server: Option<String>,
    /// JSON schema of the arguments.
    pub parameters: Value,
    /// JSON schema of the structured result (an MCP tool's `outputSchema`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
}

/// The state of a tool call (seed 000 section 3.4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallState {
    /// The arguments are being checked.
    Validating,
    /// Checked and allowed; waiting for a free execution slot.
    Scheduled,
    /// Waiting for a person to answer `tool.confirm`.
    AwaitingApproval,
    /// Running.
    Executing,
    /// Finished with a result.
    Success,
    /// Finished with an error (invalid arguments, denied, failed).
    Error,
    /// Cancelled by a person, a client or shutdown.
    Cancelled,
    /// Was executing when the daemon stopped unexpectedly; the outcome is unknown.
    Interrupted,
}

impl CallState {
    /// Whether the call has finished for good.
    pub fn is_terminal(self) -> bool {
        match self {
            CallState::Success
            | CallState::Error
            | CallState::Cancelled
            | CallState::Interrupted => true,
            CallState::Validating
            | CallState::Scheduled
            | CallState::AwaitingApproval
            | CallState::Executing => false,
        }
    }
}

/// An answer to a confirmation request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfirmationOutcome {
    /// Run this call.
    ProceedOnce,
    /// Run this call and, for the rest of the session, this tool without asking.
    ProceedAlways,
    /// Run this call and, for the rest of the session, every tool of this MCP server.
    ProceedAlwaysServer,
    /// Run this call and, for the rest of the session, this MCP tool.
    ProceedAlwaysTool,
    /// Run this call and save an allow rule to the user's policy.
    ProceedAlwaysAndSave,
    /// Run the call with `modifiedArgs` instead (validated again first).
    ModifyWithEditor,
    /// Do not run the call.
    Cancel,
}

/// A unified diff of one file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileDiff {
    pub file_name: String,
    pub file_path: String,
    /// Unified diff text.
    pub file_diff: String,
    /// `null` when the file is new (or when `contentsOmitted`).
    pub original_content: Option<String>,
    /// Empty when `contentsOmitted`.
    pub new_content: String,
    /// True when the file is too large to send whole
    /// ([`crate::framing::MAX_DIFF_CONTENT_BYTES`]): only the diff is sent.
    #[serde(default)]
    pub contents_omitted: bool,
}

/// What a person is asked before a call runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ConfirmationRequest {
    /// A file edit.
    #[serde(rename_all = "camelCase")]
    Edit {
        title: String,
        #[serde(flatten)]
        diff: FileDiff,
    },
    /// A command to execute.
    #[serde(rename_all = "camelCase")]
    Exec {
        title: String,
        command: String,
        root_commands: Vec<String>,
    },
    /// A tool on an MCP server.
    #[serde(rename_all = "camelCase")]
    Mcp {
        title: String,
        server_name: String,
        tool_name: String,
    },
    /// Anything else.
    #[serde(rename_all = "camelCase")]
    Info {
        title: String,
        prompt: String,
        urls: Vec<String>,
    },
    /// A plan to approve before the session leaves plan mode
    /// (`exit_plan_mode`): approve with `proceed_once` and the
    /// `approvalMode` to switch to, or reject with `cancel` and `feedback`.
    #[serde(rename_all = "camelCase")]
    Plan {
        title: String,
        /// Where the plan file is.
        plan_path: String,
        /// The plan's text.
        plan: String,
    },
}

/// One part of the content a tool returns to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ContentPart {
    Text {
        text: String,
    },
    /// Base64 data with its MIME type (images, PDF, audio).
    #[serde(rename_all = "camelCase")]
    InlineData {
        mime_type: String,
        data: String,
    },
}

/// What people see of a result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ToolDisplay {
    Text { text: String },
    Markdown { text: String },
    FileDiff(FileDiff),
}

/// A file location a call touches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolLocation {
    pub path: String,
    pub line: Option<u64>,
}

/// A successful result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallResult {
    pub llm_content: Vec<ContentPart>,
    pub display: ToolDisplay,
    pub summary: Option<String>,
    /// An MCP tool's `structuredContent`, as the server sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
}

/// Why a call ended without a result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallError {
    /// `invalid_params`, `path_not_allowed`, `not_found`, `execution`,
    /// `timeout`, `cancelled`, `unavailable`, `denied`, `unknown_tool`,
    /// `interrupted`.
    pub kind: String,
    pub message: String,
}

/// A snapshot of one tool call, sent on every change of the call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallSnapshot {
    pub call_id: String,
    pub name: String,
    pub args: Value,
    pub state: CallState,
    /// A one-line description (`Read src/main.rs`), once validated.
    pub description: Option<String>,
    #[serde(default)]
    pub locations: Vec<ToolLocation>,
    /// Present while the call awaits approval.
    pub confirmation: Option<ConfirmationRequest>,
    /// New output since the previous snapshot, while executing.
    pub output_delta: Option<String>,
    /// Present in state `success`.
    pub result: Option<ToolCallResult>,
    /// Present in states `error`, `cancelled` and `interrupted`.
    pub error: Option<ToolCallError>,
    /// How the call was decided (`policy: allow (default rule)`, `approved by a client`).
    pub decided_by: Option<String>,
}

/// Params of `tool.call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallParams {
    pub session_id: String,
    pub name: String,
    #[serde(default = "empty_object")]
    pub args: Value,
    /// Wait for the call to finish and return its final snapshot.
    #[serde(default)]
    pub wait: bool,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// Result of `tool.call`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallStarted {
    pub call_id: String,
    /// The final snapshot, when `wait` was true.
    pub outcome: Option<ToolCallSnapshot>,
    /// Server side only: the final snapshot already serialized (the stored
    /// `toolCall` event, whose extra fields a reader ignores); sent in
    /// place of `outcome`.
    #[serde(skip)]
    pub outcome_json: Option<SharedJson>,
}

/// JSON serialized once and shared, sent as it is: a large tool result is
/// neither copied nor serialized again to answer `wait: true`.
#[derive(Clone)]
pub struct SharedJson(std::sync::Arc<dyn AsRef<serde_json::value::RawValue> + Send + Sync>);

impl SharedJson {
    pub fn new(json: std::sync::Arc<dyn AsRef<serde_json::value::RawValue> + Send + Sync>) -> Self {
        SharedJson(json)
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        (*self.0).as_ref().get()
    }
}

impl std::fmt::Debug for SharedJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedJson({} bytes)", self.get().len())
    }
}

impl Serialize for SharedJson {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (*self.0).as_ref().serialize(serializer)
    }
}

impl ToolCallStarted {
    /// A call accepted, not waited for.
    pub fn accepted(call_id: String) -> Self {
        ToolCallStarted {
            call_id,
            outcome: None,
            outcome_json: None,
        }
    }

    /// This result's JSON split around its shared part, for a writer that
    /// sends the shared JSON from where it is instead of copying it into
    /// one string: `head`, then the shared JSON, then `tail` is exactly the
    /// text serializing `self` gives. None without shared JSON.
    pub fn split_around_shared(&self) -> Option<(String, &SharedJson, &'static str)> {
        let shared = self.outcome_json.as_ref()?;
        let call_id = serde_json::to_string(&self.call_id).ok()?;
        Some((format!("{{\"callId\":{call_id},\"outcome\":"), shared, "}"))
    }
}

impl PartialEq for ToolCallStarted {
    fn eq(&self, other: &Self) -> bool {
        self.call_id == other.call_id
            && self.outcome == other.outcome
            && self.outcome_json.as_ref().map(SharedJson::get)
                == other.outcome_json.as_ref().map(SharedJson::get)
    }
}

impl Serialize for ToolCallStarted {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = serializer.serialize_struct("ToolCallStarted", 2)?;
        out.serialize_field("callId", &self.call_id)?;
        match &self.outcome_json {
            Some(json) => out.serialize_field("outcome", json)?,
            None => out.serialize_field("outcome", &self.outcome)?,
        }
        out.end()
    }
}

/// Params of `tool.confirm`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfirmParams {
    pub session_id: String,
    pub call_id: String,
    pub outcome: ConfirmationOutcome,
    /// With `modify_with_editor`: the arguments to run instead.
    #[serde(default)]
    pub modified_args: Option<Value>,
    /// A person's words with a refusal (a rejected plan's feedback).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    /// The mode an approved plan switches to (`default`, `autoEdit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_mode: Option<crate::session::ApprovalMode>,
}

/// Result of `tool.confirm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfirmResult {
    /// True for the answer that decided the call; false when another
    /// client answered first or the call is no longer waiting.
    pub accepted: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preserialized_outcome_reads_back_as_the_snapshot() {
        let event = r#"{"sessionId":"s","seq":7,"time":1,"type":"toolCall","callId":"call-3","name":"glob","args":{},"state":"success","description":null,"locations":[],"confirmation":null,"outputDelta":null,"result":null,"error":null,"decidedBy":"policy"}"#;
        let started = ToolCallStarted {
            call_id: "call-3".into(),
            outcome: None,
            outcome_json: Some(SharedJson::new(std::sync::Arc::new(
                serde_json::value::RawValue::from_string(event.into()).unwrap(),
            ))),
        };
        let wire = serde_json::to_string(&started).unwrap();
        let back: ToolCallStarted = serde_json::from_str(&wire).unwrap();
        let outcome = back.outcome.unwrap();
        assert_eq!(
            (outcome.call_id.as_str(), outcome.state),
            ("call-3", CallState::Success)
        );
        assert_eq!(outcome.decided_by.as_deref(), Some("policy"));
    }

    #[test]
    fn the_split_answer_is_the_serialized_answer() {
        let event = r#"{"type":"toolCall","callId":"call-\"9\"","result":"a\nb"}"#;
        let started = ToolCallStarted {
            call_id: "call-\"9\"".into(),
            outcome: None,
            outcome_json: Some(SharedJson::new(std::sync::Arc::new(
                serde_json::value::RawValue::from_string(event.into()).unwrap(),
            ))),
        };
        let (head, shared, tail) = started.split_around_shared().unwrap();
        assert_eq!(
            format!("{head}{}{tail}", shared.get()),
            serde_json::to_string(&started).unwrap()
        );
        assert!(
            ToolCallStarted::accepted("call-1".into())
                .split_around_shared()
                .is_none()
        );
    }
}
