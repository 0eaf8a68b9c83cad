//! MCP tool results to the daemon's [`ToolResult`]: content for the model
//! (text, and images, audio and blobs as inline data) and a display.
//!
//! Works on the result's JSON rather than rmcp's Rust types, so content
//! types added by newer protocol versions degrade to their JSON text instead
//! of failing to convert.

use serde_json::Value;

use crate::tools::{ContentPart, ToolDisplay, ToolError, ToolErrorKind, ToolResult};

/// Converts a `tools/call` result. `isError: true` becomes an execution
/// error carrying the result's text.
pub fn convert(result: &Value, display_name: &str) -> Result<ToolResult, ToolError> {
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut parts = Vec::new();
    let mut shown = Vec::new();
    for block in &blocks {
        convert_block(block, &mut parts, &mut shown);
    }
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
        // Servers usually repeat structured content as text; add it only
        // when no text block already carries the same JSON.
        let repeated = parts.iter().any(|p| match p {
            ContentPart::Text { text } => {
                serde_json::from_str::<Value>(text).is_ok_and(|v| &v == structured)
            }
            ContentPart::InlineData { .. } => false,
        });
        if !repeated {
            let text = structured.to_string();
            shown.push(format!("```json\n{text}\n```"));
            parts.push(ContentPart::Text { text });
        }
    }
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let text: Vec<&str> = parts
            .iter()
            .filter_map(|p| match p {
                ContentPart::Text { text } => Some(text.as_str()),
                ContentPart::InlineData { .. } => None,
            })
            .collect();
        let message = if text.is_empty() {
            format!("{display_name} reported an error")
        } else {
            text.join("\n")
        };
        return Err(ToolError::new(ToolErrorKind::Execution, message));
    }
    Ok(ToolResult {
        llm_content: parts,
        display: ToolDisplay::Markdown {
            text: shown.join("\n\n"),
        },
        summary: Some(format!("Called {display_name}")),
    })
}

fn convert_block(block: &Value, parts: &mut Vec<ContentPart>, shown: &mut Vec<String>) {
    let field = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
    match field("type") {
        "text" => {
            let text = field("text").to_owned();
            shown.push(text.clone());
            parts.push(ContentPart::Text { text });
        }
        "image" | "audio" => {
            let mime = field("mimeType").to_owned();
            shown.push(format!(
                "[{} {mime}, {} bytes]",
                field("type"),
                field("data").len() * 3 / 4
            ));
            parts.push(ContentPart::InlineData {
                mime_type: mime,
                data: field("data").to_owned(),
            });
        }
        "resource" => {
            let resource = block.get("resource").cloned().unwrap_or(Value::Null);
            let get = |key: &str| resource.get(key).and_then(Value::as_str);
            let uri = get("uri").unwrap_or_default();
            if let Some(text) = get("text") {
                shown.push(format!("Resource {uri}:\n{text}"));
                parts.push(ContentPart::Text {
                    text: text.to_owned(),
                });
            } else if let Some(blob) = get("blob") {
                let mime = get("mimeType").unwrap_or("application/octet-stream");
                shown.push(format!(
                    "[resource {uri} {mime}, {} bytes]",
                    blob.len() * 3 / 4
                ));
                parts.push(ContentPart::InlineData {
                    mime_type: mime.to_owned(),
                    data: blob.to_owned(),
                });
            }
        }
        "resource_link" => {
            let name = field("name");
            let uri = field("uri");
            let mut text = format!("Resource link: {name} ({uri})");
            if let Some(mime) = block.get("mimeType").and_then(Value::as_str) {
                text.push_str(&format!(" [{mime}]"));
            }
            if let Some(description) = block.get("description").and_then(Value::as_str) {
                text.push_str(&format!(": {description}"));
            }
            shown.push(text.clone());
            parts.push(ContentPart::Text { text });
        }
        other => {
            let text = block.to_string();
            tracing::debug!(kind = other, "unknown MCP content type; passed on as JSON");
            shown.push(text.clone());
            parts.push(ContentPart::Text { text });
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn converts_each_kind() {
        let r = convert(
            &json!({"content": [
                {"type": "text", "text": "hi"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "u", "text": "body"}},
                {"type": "resource", "resource": {"uri": "b", "blob": "AAAA", "mimeType": "x/y"}},
                {"type": "resource_link", "uri": "file:///a", "name": "a"}
            ], "structuredContent": {"n": 1}}),
            "t",
        )
        .expect("ok");
        assert_eq!(r.llm_content.len(), 7);
        assert!(
            matches!(&r.llm_content[1], ContentPart::InlineData { mime_type, .. } if mime_type == "image/png")
        );
        assert!(matches!(&r.llm_content[6], ContentPart::Text { text } if text == "{\"n\":1}"));
    }

    #[test]
    fn is_error_is_an_execution_error() {
        let e = convert(
            &json!({"content": [{"type": "text", "text": "boom"}], "isError": true}),
            "t",
        )
        .expect_err("error");
        assert_eq!(e.kind, ToolErrorKind::Execution);
        assert_eq!(e.message, "boom");
    }
}
