//! What the model gets back for its function calls, and the history as
//! sent: every call answered in order (the real result, or an error saying
//! why it did not run), and neighbours of one role merged.

use geminid_protocol::tool::{CallState, ContentPart, ToolCallSnapshot};
use serde_json::json;

use crate::model::{Content, FunctionCall, FunctionResponse, Part, Role};

/// The user content answering `calls`: one function response per call, in
/// order, then any inline data (images, PDF) the results carried.
pub fn function_responses(
    calls: &[FunctionCall],
    snapshots: &[Option<ToolCallSnapshot>],
) -> Content {
    let mut parts = Vec::new();
    let mut inline = Vec::new();
    for (call, snapshot) in calls.iter().zip(snapshots) {
        let Some(snapshot) = snapshot else {
            parts.push(not_run(
                call,
                "not run: the turn was cancelled or the session stopped",
            ));
            continue;
        };
        let response = match (&snapshot.state, &snapshot.result) {
            (CallState::Success, Some(result)) => {
                let mut text = String::new();
                for part in &result.llm_content {
                    match part {
                        ContentPart::Text { text: t } => {
                            if !text.is_empty() {
                                text.push('\n');
                            }
                            text.push_str(t);
                        }
                        ContentPart::InlineData { mime_type, data } => {
                            if !text.is_empty() {
                                text.push('\n');
                            }
                            text.push_str(&format!(
                                "Binary content of type {mime_type} was processed."
                            ));
                            inline.push(Part::inline(mime_type.clone(), data.clone()));
                        }
                    }
                }
                json!({ "output": text })
            }
            (state, _) => {
                let why = snapshot
                    .error
                    .as_ref()
                    .map(|e| e.message.clone())
                    .unwrap_or_else(|| format!("the call ended as {}", state_name(*state)));
                json!({ "error": why })
            }
        };
        parts.push(Part::response(FunctionResponse {
            id: call.id.clone(),
            name: call.name.clone(),
            response,
        }));
    }
    parts.extend(inline);
    Content {
        role: Role::User,
        parts,
    }
}

/// A response for a call that did not run.
pub fn not_run(call: &FunctionCall, why: &str) -> Part {
    Part::response(FunctionResponse {
        id: call.id.clone(),
        name: call.name.clone(),
        response: json!({ "error": why }),
    })
}

fn state_name(state: CallState) -> String {
    serde_json::to_value(state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{state:?}"))
}

/// Consecutive entries of one role merged into one (a failed turn can
/// leave two user entries in a row; providers want them alternating).
pub(super) fn normalized(contents: &[Content]) -> Vec<Content> {
    let mut out: Vec<Content> = Vec::with_capacity(contents.len());
    for content in contents {
        match out.last_mut() {
            Some(last) if last.role == content.role => {
                last.parts.extend(content.parts.iter().cloned());
            }
            _ => out.push(content.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use geminid_protocol::tool::{ToolCallError, ToolCallResult, ToolDisplay};
    use serde_json::Value;

    fn call(name: &str, args: Value) -> FunctionCall {
        FunctionCall {
            id: None,
            name: name.into(),
            args,
        }
    }

    fn snapshot(
        state: CallState,
        result: Option<Vec<ContentPart>>,
        error: Option<&str>,
    ) -> ToolCallSnapshot {
        ToolCallSnapshot {
            call_id: "call-1".into(),
            name: "x".into(),
            args: json!({}),
            state,
            description: None,
            locations: Vec::new(),
            confirmation: None,
            output_delta: None,
            result: result.map(|llm_content| ToolCallResult {
                llm_content,
                display: ToolDisplay::Text {
                    text: String::new(),
                },
                summary: None,
                structured_content: None,
            }),
            error: error.map(|m| ToolCallError {
                kind: "denied".into(),
                message: m.into(),
            }),
            decided_by: None,
        }
    }

    #[test]
    fn every_call_gets_a_response_in_order_with_inline_data_last() {
        let calls = [
            call("read_file", json!({"a": 1})),
            call("run_shell_command", json!({})),
            call("glob", json!({})),
        ];
        let snaps = [
            Some(snapshot(
                CallState::Success,
                Some(vec![ContentPart::InlineData {
                    mime_type: "image/png".into(),
                    data: "AAAA".into(),
                }]),
                None,
            )),
            Some(snapshot(CallState::Error, None, Some("denied by policy"))),
            None,
        ];
        let content = function_responses(&calls, &snaps);
        assert_eq!(content.role, Role::User);
        let names: Vec<_> = content
            .parts
            .iter()
            .filter_map(|p| p.function_response.as_ref().map(|r| r.name.clone()))
            .collect();
        assert_eq!(names, ["read_file", "run_shell_command", "glob"]);
        let r = |i: usize| content.parts[i].function_response.clone().unwrap().response;
        assert_eq!(
            r(0)["output"],
            "Binary content of type image/png was processed."
        );
        assert_eq!(r(1)["error"], "denied by policy");
        assert!(r(2)["error"].as_str().unwrap().contains("not run"));
        assert_eq!(
            content.parts[3].inline_data.as_ref().unwrap().mime_type,
            "image/png"
        );
    }

    #[test]
    fn same_role_neighbours_are_merged() {
        let contents = [
            Content::user_text("a"),
            Content::user_text("b"),
            Content {
                role: Role::Model,
                parts: vec![Part::text("c")],
            },
        ];
        let merged = normalized(&contents);
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].parts.len(), 2);
    }
}
