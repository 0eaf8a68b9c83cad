//! The one place daemon wire types become MCP types: tool listings and
//! call results.

use std::sync::Arc;

use geminid_protocol::tool::{CallState, ContentPart, ToolCallSnapshot, ToolDisplay, ToolInfo};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde_json::Value;

/// A daemon tool as an MCP tool: its name, description and parameters
/// schema, with hints from its kind.
pub fn tool(info: ToolInfo) -> Tool {
    let mut schema: JsonObject = match info.parameters {
        Value::Object(schema) => schema,
        _ => JsonObject::new(),
    };
    schema
        .entry("type")
        .or_insert_with(|| Value::String("object".to_owned()));
    let mut tool = Tool::new(info.name, info.description, Arc::new(schema));
    tool.title = Some(info.display_name);
    // An MCP tool's own output schema is passed on as it was listed.
    if let Some(Value::Object(output)) = info.output_schema {
        tool.output_schema = Some(Arc::new(output));
    }
    let mut hints = ToolAnnotations::new();
    hints.read_only_hint = Some(matches!(info.kind.as_str(), "read" | "search" | "think"));
    hints.destructive_hint = Some(matches!(
        info.kind.as_str(),
        "edit" | "delete" | "move" | "execute"
    ));
    hints.open_world_hint = Some(info.kind == "fetch" || info.source == "mcp");
    tool.annotations = Some(hints);
    tool
}

/// A call's final snapshot as an MCP result: the content the model would
/// get, or `isError` with the reason it did not run or failed.
pub fn call_result(call: &ToolCallSnapshot) -> CallToolResult {
    if call.state == CallState::Success
        && let Some(result) = &call.result
    {
        let mut content: Vec<ContentBlock> = result.llm_content.iter().map(part).collect();
        if content.is_empty() {
            content.push(ContentBlock::text(display_text(&result.display)));
        }
        let mut answer = CallToolResult::success(content);
        // Kept as the server sent it, never folded into the text.
        answer.structured_content = result.structured_content.clone();
        return answer;
    }
    let message = match &call.error {
        Some(error) => format!("{} ({})", error.message, error.kind),
        None => format!("the call ended in state {:?}", call.state),
    };
    CallToolResult::error(vec![ContentBlock::text(message)])
}

fn part(part: &ContentPart) -> ContentBlock {
    match part {
        ContentPart::Text { text } => ContentBlock::text(text.clone()),
        ContentPart::InlineData { mime_type, data } if mime_type.starts_with("image/") => {
            ContentBlock::image(data.clone(), mime_type.clone())
        }
        ContentPart::InlineData { mime_type, data } if mime_type.starts_with("audio/") => {
            ContentBlock::audio(data.clone(), mime_type.clone())
        }
        ContentPart::InlineData { mime_type, data } => {
            ContentBlock::resource(rmcp::model::ResourceContents::BlobResourceContents {
                uri: format!("data:{mime_type};base64"),
                mime_type: Some(mime_type.clone()),
                blob: data.clone(),
                meta: None,
            })
        }
    }
}

fn display_text(display: &ToolDisplay) -> String {
    match display {
        ToolDisplay::Text { text } | ToolDisplay::Markdown { text } => text.clone(),
        ToolDisplay::FileDiff(diff) => diff.file_diff.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use geminid_protocol::tool::{ToolCallError, ToolCallResult};
    use serde_json::json;

    fn snapshot(state: CallState) -> ToolCallSnapshot {
        ToolCallSnapshot {
            call_id: "call-3".into(),
            name: "read_file".into(),
            args: json!({}),
            state,
            description: None,
            locations: Vec::new(),
            confirmation: None,
            output_delta: None,
            result: None,
            error: None,
            decided_by: None,
        }
    }

    #[test]
    fn results_become_content() {
        let mut call = snapshot(CallState::Success);
        call.result = Some(ToolCallResult {
            llm_content: vec![
                ContentPart::Text { text: "hi".into() },
                ContentPart::InlineData {
                    mime_type: "image/png".into(),
                    data: "AA==".into(),
                },
            ],
            display: ToolDisplay::Text {
                text: "shown".into(),
            },
            summary: None,
            structured_content: None,
        });
        let out = serde_json::to_value(call_result(&call)).unwrap();
        assert_eq!(out["content"][0], json!({"type": "text", "text": "hi"}));
        assert_eq!(out["content"][1]["type"], "image");
        assert_eq!(out["content"][1]["mimeType"], "image/png");
        assert_ne!(out["isError"], json!(true));
    }

    #[test]
    fn structured_content_and_output_schemas_pass_through() {
        let mut call = snapshot(CallState::Success);
        call.result = Some(ToolCallResult {
            llm_content: vec![ContentPart::Text { text: "5".into() }],
            display: ToolDisplay::Text { text: "5".into() },
            summary: None,
            structured_content: Some(json!({"result": 5})),
        });
        let out = serde_json::to_value(call_result(&call)).unwrap();
        assert_eq!(out["structuredContent"], json!({"result": 5}));
        assert_eq!(out["content"][0]["text"], "5");
    }

    #[test]
    fn failures_are_errors() {
        let mut call = snapshot(CallState::Error);
        call.error = Some(ToolCallError {
            kind: "denied".into(),
            message: "denied by policy".into(),
        });
        let out = serde_json::to_value(call_result(&call)).unwrap();
        assert_eq!(out["isError"], true);
        assert_eq!(out["content"][0]["text"], "denied by policy (denied)");
    }
}
