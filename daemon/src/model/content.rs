//! The conversation as the model sees it, in the Gemini API's own shape
//! (`Content` with `role` and `parts`). History is stored in this shape;
//! other providers convert from it at their edge (`openai.rs`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who said it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Model,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Content {
    pub role: Role,
    #[serde(default)]
    pub parts: Vec<Part>,
}

impl Content {
    pub fn user_text(text: impl Into<String>) -> Self {
        Content {
            role: Role::User,
            parts: vec![Part::text(text)],
        }
    }

    /// The function calls this content asks for, in order.
    pub fn function_calls(&self) -> impl Iterator<Item = &FunctionCall> {
        self.parts.iter().filter_map(|p| p.function_call.as_ref())
    }

    /// The visible text (thoughts excluded), concatenated.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter(|p| !p.thought)
            .filter_map(|p| p.text.as_deref())
            .collect()
    }
}

/// One part of a message: the Gemini API's union of optional fields. A
/// part normally has exactly one of `text`, `functionCall`,
/// `functionResponse` or `inlineData`; `thought` marks thought text and
/// `thoughtSignature` must be sent back with the part it came with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub thought: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_call: Option<FunctionCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_response: Option<FunctionResponse>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline_data: Option<InlineData>,
}

impl Part {
    pub fn text(text: impl Into<String>) -> Self {
        Part {
            text: Some(text.into()),
            ..Part::default()
        }
    }

    pub fn thought(text: impl Into<String>) -> Self {
        Part {
            text: Some(text.into()),
            thought: true,
            ..Part::default()
        }
    }

    pub fn call(call: FunctionCall) -> Self {
        Part {
            function_call: Some(call),
            ..Part::default()
        }
    }

    pub fn response(response: FunctionResponse) -> Self {
        Part {
            function_response: Some(response),
            ..Part::default()
        }
    }

    pub fn inline(mime_type: impl Into<String>, data: impl Into<String>) -> Self {
        Part {
            inline_data: Some(InlineData {
                mime_type: mime_type.into(),
                data: data.into(),
            }),
            ..Part::default()
        }
    }
}

/// The model asks for a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// Set by providers that name their calls (OpenAI-compatible servers,
    /// newer Gemini models); echoed in the response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    #[serde(default = "empty_object")]
    pub args: Value,
}

/// A tool call's result, sent back to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionResponse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    /// `{"output": ...}` on success, `{"error": ...}` otherwise.
    pub response: Value,
}

/// Bytes for the model (images, PDF), base64-encoded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InlineData {
    pub mime_type: String,
    pub data: String,
}

/// What is sent to the model in place of the history's first `upto`
/// entries after a compression: a summary the model wrote of them. The
/// stored history keeps every entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompressedPrefix {
    pub upto: u64,
    pub summary: String,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// Appends `part` to `parts`, merging it into the previous part when both
/// are plain text of the same kind (streamed deltas become one part).
pub fn push_merged(parts: &mut Vec<Part>, part: Part) {
    if let (Some(last), Some(text)) = (parts.last_mut(), part.text.as_deref()) {
        let plain = |p: &Part| {
            p.function_call.is_none()
                && p.function_response.is_none()
                && p.inline_data.is_none()
                && p.thought_signature.is_none()
        };
        if last.text.is_some() && last.thought == part.thought && plain(last) && plain(&part) {
            if let Some(prev) = last.text.as_mut() {
                prev.push_str(text);
            }
            return;
        }
    }
    parts.push(part);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_round_trip_in_the_gemini_shape() {
        let json = serde_json::json!({
            "role": "model",
            "parts": [
                {"text": "thinking", "thought": true},
                {"functionCall": {"name": "read_file", "args": {"absolute_path": "/x"}}, "thoughtSignature": "sig"},
                {"text": "done"}
            ]
        });
        let content: Content = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(content.function_calls().count(), 1);
        assert_eq!(content.text(), "done");
        assert_eq!(serde_json::to_value(&content).unwrap(), json);
    }

    #[test]
    fn deltas_merge_but_kinds_do_not() {
        let mut parts = Vec::new();
        push_merged(&mut parts, Part::thought("a"));
        push_merged(&mut parts, Part::thought("b"));
        push_merged(&mut parts, Part::text("c"));
        push_merged(&mut parts, Part::text("d"));
        push_merged(
            &mut parts,
            Part::call(FunctionCall {
                id: None,
                name: "x".into(),
                args: empty_object(),
            }),
        );
        push_merged(&mut parts, Part::text("e"));
        let texts: Vec<_> = parts.iter().map(|p| p.text.clone()).collect();
        assert_eq!(
            texts,
            vec![Some("ab".into()), Some("cd".into()), None, Some("e".into())]
        );
    }
}
