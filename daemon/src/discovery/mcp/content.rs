//! MCP tool results to the daemon's [`ToolResult`]: content for the model
//! converted block by block as 0.61's `mcp-tool.js` does (text wrapped as
//! untrusted, images, audio and blobs as inline data after a line naming
//! them), a display as 0.61 words it, and `structuredContent` kept apart,
//! as the server sent it, for clients.
//!
//! Works on the result's JSON rather than rmcp's Rust types, so content
//! types added by newer protocol versions degrade instead of failing to
//! convert.

use serde_json::Value;

use crate::tools::{ContentPart, ToolDisplay, ToolError, ToolErrorKind, ToolResult};

/// Converts a `tools/call` result of `tool` (its name on the server).
/// `isError: true` becomes an execution error carrying the result's text.
/// When the tool declares an output schema but the server left
/// `structuredContent` out, a first text block that is JSON stands in for
/// it (0.61's compliance transport).
pub fn convert(
    result: &Value,
    tool: &str,
    display_name: &str,
    has_output_schema: bool,
) -> Result<ToolResult, ToolError> {
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let text: Vec<&str> = blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        let message = if text.is_empty() {
            format!("{display_name} reported an error")
        } else {
            text.join("\n")
        };
        return Err(ToolError::new(ToolErrorKind::Execution, message));
    }
    let mut structured = result
        .get("structuredContent")
        .filter(|v| !v.is_null())
        .cloned();
    if structured.is_none() && has_output_schema {
        structured = blocks
            .first()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .and_then(|b| b.get("text").and_then(Value::as_str))
            .and_then(|t| serde_json::from_str(t).ok());
    }
    let mut parts: Vec<ContentPart> = blocks
        .iter()
        .flat_map(|block| for_model(block, tool))
        .collect();
    let mut shown: Vec<String> = blocks.iter().map(for_people).collect();
    if blocks.is_empty()
        && let Some(value) = &structured
    {
        // 0.61 would give the model nothing; the structured result is all
        // the server said, so the model gets it as JSON.
        let text = value.to_string();
        shown.push(format!("```json\n{text}\n```"));
        parts.push(ContentPart::Text {
            text: wrap_untrusted(&text),
        });
    }
    Ok(ToolResult {
        llm_content: parts,
        display: ToolDisplay::Markdown {
            text: shown.join("\n"),
        },
        summary: Some(format!("Called {display_name}")),
        structured,
        session_change: None,
    })
}

/// 0.61's `wrapUntrusted`: text from a server is marked as data, not
/// instructions.
pub fn wrap_untrusted(text: &str) -> String {
    let escaped = text.replace("</untrusted_context>", "&lt;/untrusted_context&gt;");
    format!("<untrusted_context>\n{escaped}\n</untrusted_context>")
}

fn for_model(block: &Value, tool: &str) -> Vec<ContentPart> {
    let field = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
    match field("type") {
        "text" => vec![ContentPart::Text {
            text: wrap_untrusted(field("text")),
        }],
        kind @ ("image" | "audio") => vec![
            ContentPart::Text {
                text: format!(
                    "[Tool '{tool}' provided the following {kind} data with mime-type: {}]",
                    field("mimeType")
                ),
            },
            ContentPart::InlineData {
                mime_type: field("mimeType").to_owned(),
                data: field("data").to_owned(),
            },
        ],
        "resource" => {
            let resource = block.get("resource").cloned().unwrap_or(Value::Null);
            let get = |key: &str| {
                resource
                    .get(key)
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
            };
            if let Some(text) = get("text") {
                vec![ContentPart::Text {
                    text: wrap_untrusted(text),
                }]
            } else if let Some(blob) = get("blob") {
                let mime = get("mimeType").unwrap_or("application/octet-stream");
                vec![
                    ContentPart::Text {
                        text: format!(
                            "[Tool '{tool}' provided the following embedded resource with mime-type: {mime}]"
                        ),
                    },
                    ContentPart::InlineData {
                        mime_type: mime.to_owned(),
                        data: blob.to_owned(),
                    },
                ]
            } else {
                Vec::new()
            }
        }
        "resource_link" => vec![ContentPart::Text {
            text: format!(
                "Resource Link: {} at {}",
                title_or_name(block),
                field("uri")
            ),
        }],
        other => {
            tracing::debug!(kind = other, "unknown MCP content type; left out");
            Vec::new()
        }
    }
}

fn for_people(block: &Value) -> String {
    let field = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
    match field("type") {
        "text" => field("text").to_owned(),
        "image" => format!("[Image: {}]", field("mimeType")),
        "audio" => format!("[Audio: {}]", field("mimeType")),
        "resource_link" => format!("[Link to {}: {}]", title_or_name(block), field("uri")),
        "resource" => {
            let resource = block.get("resource");
            let get = |key: &str| resource.and_then(|r| r.get(key)).and_then(Value::as_str);
            match get("text").filter(|t| !t.is_empty()) {
                Some(text) => text.to_owned(),
                None => format!(
                    "[Embedded Resource: {}]",
                    get("mimeType").unwrap_or("unknown type")
                ),
            }
        }
        other => format!("[Unknown content type: {other}]"),
    }
}

fn title_or_name(block: &Value) -> &str {
    block
        .get("title")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .or_else(|| block.get("name").and_then(Value::as_str))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn texts(r: &ToolResult) -> Vec<&str> {
        r.llm_content
            .iter()
            .filter_map(|p| match p {
                ContentPart::Text { text } => Some(text.as_str()),
                ContentPart::InlineData { .. } => None,
            })
            .collect()
    }

    #[test]
    fn converts_each_kind_as_the_reference() {
        let r = convert(
            &json!({"content": [
                {"type": "text", "text": "hi"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "u", "text": "body"}},
                {"type": "resource", "resource": {"uri": "b", "blob": "AAAA", "mimeType": "x/y"}},
                {"type": "resource_link", "uri": "file:///a", "name": "a"},
                {"type": "future", "x": 1}
            ]}),
            "t",
            "t (s)",
            false,
        )
        .expect("ok");
        assert_eq!(r.llm_content.len(), 9);
        assert!(
            matches!(&r.llm_content[2], ContentPart::InlineData { mime_type, .. } if mime_type == "image/png")
        );
        assert_eq!(
            texts(&r),
            [
                "<untrusted_context>\nhi\n</untrusted_context>",
                "[Tool 't' provided the following image data with mime-type: image/png]",
                "[Tool 't' provided the following audio data with mime-type: audio/wav]",
                "<untrusted_context>\nbody\n</untrusted_context>",
                "[Tool 't' provided the following embedded resource with mime-type: x/y]",
                "Resource Link: a at file:///a",
            ]
        );
        let ToolDisplay::Markdown { text } = &r.display else {
            panic!("markdown display")
        };
        assert_eq!(
            text,
            "hi\n[Image: image/png]\n[Audio: audio/wav]\nbody\n[Embedded Resource: x/y]\n[Link to a: file:///a]\n[Unknown content type: future]"
        );
        assert_eq!(r.structured, None);
    }

    /// The bug class: structured content glued to the text (`5{"result":5}`).
    #[test]
    fn structured_content_is_kept_apart_from_the_text() {
        let r = convert(
            &json!({"content": [{"type": "text", "text": "5"}],
                    "structuredContent": {"result": 5}}),
            "add",
            "add",
            true,
        )
        .expect("ok");
        assert_eq!(texts(&r), ["<untrusted_context>\n5\n</untrusted_context>"]);
        assert_eq!(r.structured, Some(json!({"result": 5})));
    }

    #[test]
    fn a_json_first_text_stands_in_only_for_tools_with_an_output_schema() {
        let result = json!({"content": [{"type": "text", "text": "{\"n\": 1}"}]});
        let with = convert(&result, "t", "t", true).expect("ok");
        assert_eq!(with.structured, Some(json!({"n": 1})));
        let without = convert(&result, "t", "t", false).expect("ok");
        assert_eq!(without.structured, None);
    }

    #[test]
    fn structured_content_alone_reaches_the_model_as_json() {
        let r = convert(
            &json!({"content": [], "structuredContent": {"a": [1, 2]}}),
            "t",
            "t",
            true,
        )
        .expect("ok");
        assert_eq!(
            texts(&r),
            ["<untrusted_context>\n{\"a\":[1,2]}\n</untrusted_context>"]
        );
    }

    #[test]
    fn untrusted_text_cannot_close_its_wrapper() {
        assert_eq!(
            wrap_untrusted("a</untrusted_context>b"),
            "<untrusted_context>\na&lt;/untrusted_context&gt;b\n</untrusted_context>"
        );
    }

    #[test]
    fn is_error_is_an_execution_error() {
        let e = convert(
            &json!({"content": [{"type": "text", "text": "boom"}], "isError": true}),
            "t",
            "t",
            false,
        )
        .expect_err("error");
        assert_eq!(e.kind, ToolErrorKind::Execution);
        assert_eq!(e.message, "boom");
    }
}
