//! What BeforeModel, AfterModel and BeforeToolSelection mean for a model
//! request (0.61's `hookTranslator.js`, `hookSystem.js` and
//! `geminiChat.js`): the stable `llm_request` / `llm_response` shapes hooks
//! read (text only: `messages` of `{role, content}`, `candidates` of text
//! parts), and their outputs read back into our request: new messages
//! merged into the contents in place (calls, responses and data kept), new
//! generation settings or model, a synthetic response instead of the call,
//! a replaced response chunk, the tools the model may call. Pure.

use serde_json::{Map, Value, json};

use super::output::Merged;
use crate::model::{Chunk, Content, Generation, Part, Role, ToolChoice, ToolMode, setting_value};

/// The request as hooks see it (0.61's `LLMRequest`).
pub fn llm_request(model: &str, contents: &[Content], config: Generation) -> Value {
    let messages: Vec<Value> = contents
        .iter()
        .filter_map(|c| {
            message_text(c).map(|text| json!({"role": role_name(c.role), "content": text}))
        })
        .collect();
    let mut view = Map::new();
    for (key, value) in [
        ("temperature", config.temperature.map(setting_value)),
        ("maxOutputTokens", config.max_output_tokens.map(Value::from)),
        ("topP", config.top_p.map(setting_value)),
        ("topK", config.top_k.map(setting_value)),
    ] {
        if let Some(value) = value {
            view.insert(key.into(), value);
        }
    }
    json!({"model": model, "messages": messages, "config": view})
}

/// A content's message text: its text parts joined, when not empty (the
/// contents without text are not shown to hooks, and kept as they are).
fn message_text(content: &Content) -> Option<String> {
    let text: String = content
        .parts
        .iter()
        .filter_map(|p| p.text.as_deref())
        .collect();
    (!text.is_empty()).then_some(text)
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Model => "model",
    }
}

/// BeforeModel's and BeforeToolSelection's own stdin field.
pub fn request_input(request: &Value) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("llm_request".into(), request.clone());
    fields
}

/// AfterModel's own stdin fields: the request as sent and one chunk of the
/// response (0.61's `LLMResponse`).
pub fn after_input(request: &Value, chunk: &Chunk) -> Map<String, Value> {
    let texts: Vec<&str> = chunk
        .parts
        .iter()
        .filter_map(|p| p.text.as_deref())
        .collect();
    let mut response = Map::new();
    if !chunk.parts.is_empty() {
        let visible: String = chunk
            .parts
            .iter()
            .filter(|p| !p.thought)
            .filter_map(|p| p.text.as_deref())
            .collect();
        response.insert("text".into(), visible.into());
    }
    let mut candidate = json!({"content": {"role": "model", "parts": texts}, "index": 0});
    if let Some(reason) = &chunk.finish_reason {
        candidate["finishReason"] = reason.as_str().into();
    }
    response.insert("candidates".into(), json!([candidate]));
    if let Some(usage) = chunk.usage {
        response.insert(
            "usageMetadata".into(),
            json!({
                "promptTokenCount": usage.input_tokens,
                "candidatesTokenCount": usage.output_tokens,
                "totalTokenCount": usage.input_tokens + usage.output_tokens + usage.thought_tokens,
            }),
        );
    }
    let mut fields = request_input(request);
    fields.insert("llm_response".into(), Value::Object(response));
    fields
}

/// What a BeforeModel hook changed in the request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestChange {
    /// Another model for this request.
    pub model: Option<String>,
    /// Settings over the request's.
    pub generation: Option<Generation>,
    pub contents: Option<Vec<Content>>,
}

/// What BeforeModel hooks decided.
#[derive(Debug, Clone, PartialEq)]
pub enum BeforeModel {
    Proceed(RequestChange),
    /// `hookSpecificOutput.llm_response`: the model is not called, these
    /// parts are its answer.
    Respond(Vec<Part>),
    /// `decision: deny`/`block` (or exit status 2): not sent, the turn ends.
    Blocked(String),
    /// `continue: false`: the turn ends.
    Stopped(String),
}

/// Reads BeforeModel's merged output against the request's `contents` and
/// `model`.
pub fn before_model(merged: Option<&Merged>, model: &str, contents: &[Content]) -> BeforeModel {
    let Some(merged) = merged else {
        return BeforeModel::Proceed(RequestChange::default());
    };
    if merged.should_stop() {
        return BeforeModel::Stopped(merged.effective_reason());
    }
    if let Some(parts) = merged
        .specific_value("llm_response")
        .and_then(response_parts)
    {
        return BeforeModel::Respond(parts.into_iter().map(Part::text).collect());
    }
    if merged.is_blocking() {
        return BeforeModel::Blocked(match merged.effective_reason().as_str() {
            "No reason provided" => "Model call blocked by hook".to_owned(),
            reason => reason.to_owned(),
        });
    }
    let Some(Value::Object(request)) = merged.specific_value("llm_request") else {
        return BeforeModel::Proceed(RequestChange::default());
    };
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty() && *m != model)
        .map(str::to_owned);
    let generation = request.get("config").and_then(Value::as_object).map(|c| {
        let number = |k: &str| c.get(k).and_then(Value::as_f64);
        Generation {
            temperature: number("temperature"),
            max_output_tokens: c.get("maxOutputTokens").and_then(Value::as_u64),
            top_p: number("topP"),
            top_k: number("topK"),
            stop_sequences: Vec::new(),
        }
    });
    let contents = request
        .get("messages")
        .and_then(Value::as_array)
        .map(|messages| merged_contents(messages, contents));
    BeforeModel::Proceed(RequestChange {
        model,
        generation,
        contents,
    })
}

/// 0.61's `fromHookLLMRequest`: each content that was shown as a message
/// takes the next message's text (its other parts kept after it, in
/// order); contents without text stay as they were; extra messages are
/// appended.
pub fn merged_contents(messages: &[Value], base: &[Content]) -> Vec<Content> {
    let mut messages = messages.iter();
    let mut out = Vec::with_capacity(base.len());
    for content in base {
        if message_text(content).is_none() {
            out.push(content.clone());
            continue;
        }
        let Some(message) = messages.next() else {
            out.push(content.clone());
            continue;
        };
        let (role, text) = read_message(message);
        let mut parts = vec![Part::text(text)];
        parts.extend(content.parts.iter().filter(|p| p.text.is_none()).cloned());
        out.push(Content { role, parts });
    }
    for message in messages {
        let (role, text) = read_message(message);
        out.push(Content {
            role,
            parts: vec![Part::text(text)],
        });
    }
    out
}

/// A message's role (anything but `model` is the user's: the API has no
/// other role in contents) and text.
fn read_message(message: &Value) -> (Role, String) {
    let role = match message.get("role").and_then(Value::as_str) {
        Some("model") => Role::Model,
        _ => Role::User,
    };
    let text = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    (role, text)
}

/// The text parts of an `LLMResponse`'s first candidate, when it has any.
fn response_parts(response: &Value) -> Option<Vec<String>> {
    let parts = response
        .get("candidates")?
        .get(0)?
        .get("content")?
        .get("parts")?
        .as_array()?;
    let texts: Vec<String> = parts
        .iter()
        .map(|p| match p {
            Value::String(s) => s.clone(),
            other => other
                .get("text")
                .and_then(Value::as_str)
                .map_or_else(|| other.to_string(), str::to_owned),
        })
        .collect();
    (!texts.is_empty()).then_some(texts)
}

/// What AfterModel hooks decided about one chunk.
#[derive(Debug, Clone, PartialEq)]
pub enum AfterModel {
    Keep,
    /// The chunk's text becomes these parts.
    Replace(Vec<String>),
    /// The chunk is dropped and the turn ends.
    Blocked(String),
    /// The turn ends.
    Stopped(String),
}

pub fn after_model(merged: Option<&Merged>) -> AfterModel {
    let Some(merged) = merged else {
        return AfterModel::Keep;
    };
    if merged.should_stop() {
        return AfterModel::Stopped(merged.effective_reason());
    }
    if merged.is_blocking() {
        return AfterModel::Blocked(match merged.effective_reason().as_str() {
            "No reason provided" => "Agent execution blocked by hook".to_owned(),
            reason => reason.to_owned(),
        });
    }
    match merged
        .specific_value("llm_response")
        .and_then(response_parts)
    {
        Some(texts) => AfterModel::Replace(texts),
        None => AfterModel::Keep,
    }
}

/// A chunk's parts with its text replaced by `texts`: one for one when
/// the counts match (a thought stays a thought), else the texts as plain
/// text; calls and data are kept after them.
pub fn replaced(parts: Vec<Part>, texts: Vec<String>) -> Vec<Part> {
    let (text_parts, others): (Vec<Part>, Vec<Part>) =
        parts.into_iter().partition(|p| p.text.is_some());
    let mut out: Vec<Part> = if text_parts.len() == texts.len() {
        text_parts
            .into_iter()
            .zip(texts)
            .map(|(mut part, text)| {
                part.text = Some(text);
                part
            })
            .collect()
    } else {
        texts.into_iter().map(Part::text).collect()
    };
    out.extend(others);
    out
}

/// Reads BeforeToolSelection's merged output (0.61 merges it into one
/// `toolConfig`: NONE wins, then ANY, names the union).
pub fn tool_choice(merged: Option<&Merged>) -> Option<ToolChoice> {
    let config = merged?.specific_value("toolConfig")?;
    let mode = match config.get("mode").and_then(Value::as_str) {
        Some("NONE") => ToolMode::None,
        Some("ANY") => ToolMode::Any,
        _ => ToolMode::Auto,
    };
    let allowed = config
        .get("allowedFunctionNames")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    Some(ToolChoice { mode, allowed })
}

/// The declarations the model is offered under `choice`: none with mode
/// NONE, only the allowed names when some are given.
pub fn offered(tools: &[Value], choice: &ToolChoice) -> Vec<Value> {
    if choice.mode == ToolMode::None {
        return Vec::new();
    }
    if choice.allowed.is_empty() {
        return tools.to_vec();
    }
    tools
        .iter()
        .filter(|t| {
            t["name"]
                .as_str()
                .is_some_and(|n| choice.allowed.iter().any(|a| a == n))
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::config::HookEvent;
    use super::super::output::merge;
    use super::*;
    use crate::model::FunctionCall;

    fn merged(event: HookEvent, v: Value) -> Option<Merged> {
        merge(event, &[v.as_object().cloned().unwrap_or_default()])
    }

    fn call_part() -> Part {
        Part::call(FunctionCall {
            id: None,
            name: "glob".into(),
            args: json!({}),
        })
    }

    fn history() -> Vec<Content> {
        vec![
            Content::user_text("context"),
            Content {
                role: Role::Model,
                parts: vec![Part::text("let me look"), call_part()],
            },
            Content {
                role: Role::User,
                parts: vec![Part::response(crate::model::FunctionResponse {
                    id: None,
                    name: "glob".into(),
                    response: json!({"output": "a"}),
                })],
            },
            Content::user_text("the secret is 42"),
        ]
    }

    #[test]
    fn the_request_shows_text_messages_and_the_config() {
        let view = llm_request(
            "gemini-2.5-flash",
            &history(),
            Generation {
                temperature: Some(1.0),
                top_k: Some(64.0),
                ..Generation::default()
            },
        );
        assert_eq!(
            view,
            json!({"model": "gemini-2.5-flash", "messages": [
                {"role": "user", "content": "context"},
                {"role": "model", "content": "let me look"},
                {"role": "user", "content": "the secret is 42"}
            ], "config": {"temperature": 1, "topK": 64}})
        );
    }

    #[test]
    fn new_messages_merge_in_place_keeping_calls_and_responses() {
        let out = before_model(
            merged(
                HookEvent::BeforeModel,
                json!({"hookSpecificOutput": {"llm_request": {
                "model": "gemini-2.5-pro",
                "config": {"temperature": 0.2},
                "messages": [
                    {"role": "user", "content": "context"},
                    {"role": "model", "content": "looking"},
                    {"role": "user", "content": "the secret is [redacted]"},
                    {"role": "user", "content": "extra"}
                ]}}}),
            )
            .as_ref(),
            "gemini-2.5-flash",
            &history(),
        );
        let BeforeModel::Proceed(change) = out else {
            panic!("{out:?}")
        };
        assert_eq!(change.model.as_deref(), Some("gemini-2.5-pro"));
        assert_eq!(change.generation.and_then(|g| g.temperature), Some(0.2));
        let contents = change.contents.unwrap_or_default();
        assert_eq!(contents.len(), 5);
        assert_eq!(contents[1].parts, vec![Part::text("looking"), call_part()]);
        assert_eq!(contents[2], history()[2]);
        assert_eq!(contents[3].text(), "the secret is [redacted]");
        assert_eq!(contents[4].text(), "extra");
    }

    #[test]
    fn block_stop_and_synthetic_response() {
        let read =
            |v: Value| before_model(merged(HookEvent::BeforeModel, v).as_ref(), "m", &history());
        assert_eq!(
            read(json!({"decision": "deny", "reason": "quota"})),
            BeforeModel::Blocked("quota".into())
        );
        assert_eq!(
            read(json!({"decision": "deny"})),
            BeforeModel::Blocked("Model call blocked by hook".into())
        );
        assert_eq!(
            read(json!({"continue": false, "stopReason": "enough"})),
            BeforeModel::Stopped("enough".into())
        );
        assert_eq!(
            read(
                json!({"decision": "deny", "hookSpecificOutput": {"llm_response":
                {"candidates": [{"content": {"role": "model", "parts": ["cached ", "answer"]}}]}}})
            ),
            BeforeModel::Respond(vec![Part::text("cached "), Part::text("answer")])
        );
        assert_eq!(
            read(json!({"hookSpecificOutput": {"llm_request": {"model": "m"}}})),
            BeforeModel::Proceed(RequestChange::default())
        );
    }

    #[test]
    fn after_model_replaces_text_and_keeps_calls() {
        let chunk = Chunk {
            parts: vec![Part::thought("hmm"), Part::text("secret 42"), call_part()],
            usage: None,
            finish_reason: Some("MAX_TOKENS".into()),
        };
        let input = after_input(&json!({}), &chunk);
        assert_eq!(
            input["llm_response"],
            json!({"text": "secret 42", "candidates": [{"content": {"role": "model", "parts": ["hmm", "secret 42"]}, "finishReason": "MAX_TOKENS", "index": 0}]})
        );
        let midway = after_input(&json!({}), &Chunk::default());
        assert!(
            midway["llm_response"]["candidates"][0]
                .get("finishReason")
                .is_none(),
            "a chunk that does not end the response has none, as 0.61"
        );
        let verdict = after_model(
            merged(
                HookEvent::AfterModel,
                json!({"hookSpecificOutput": {"llm_response": {"candidates": [
                    {"content": {"role": "model", "parts": ["hmm", "secret [x]"]}}]}}}),
            )
            .as_ref(),
        );
        let AfterModel::Replace(texts) = verdict else {
            panic!("{verdict:?}")
        };
        assert_eq!(
            replaced(chunk.parts.clone(), texts),
            vec![Part::thought("hmm"), Part::text("secret [x]"), call_part()]
        );
        assert_eq!(
            replaced(chunk.parts, vec!["all".into()]),
            vec![Part::text("all"), call_part()]
        );
        assert_eq!(
            after_model(merged(HookEvent::AfterModel, json!({"decision": "block"})).as_ref()),
            AfterModel::Blocked("Agent execution blocked by hook".into())
        );
        assert_eq!(
            after_model(
                merged(
                    HookEvent::AfterModel,
                    json!({"hookSpecificOutput": {"llm_response": {"candidates": []}}})
                )
                .as_ref()
            ),
            AfterModel::Keep
        );
    }

    #[test]
    fn tool_selection_filters_declarations() {
        let tools = vec![
            json!({"name": "glob"}),
            json!({"name": "read_file"}),
            json!({"name": "run_shell_command"}),
        ];
        let choice = tool_choice(
            merged(
                HookEvent::BeforeToolSelection,
                json!({"hookSpecificOutput": {"toolConfig": {"mode": "ANY", "allowedFunctionNames": ["read_file", "nope"]}}}),
            )
            .as_ref(),
        )
        .expect("a choice");
        assert_eq!(choice.mode, ToolMode::Any);
        assert_eq!(offered(&tools, &choice), vec![json!({"name": "read_file"})]);
        let none = tool_choice(
            merged(
                HookEvent::BeforeToolSelection,
                json!({"hookSpecificOutput": {"toolConfig": {"mode": "NONE", "allowedFunctionNames": ["glob"]}}}),
            )
            .as_ref(),
        )
        .expect("a choice");
        assert!(offered(&tools, &none).is_empty());
        let silent = tool_choice(merged(HookEvent::BeforeToolSelection, json!({})).as_ref())
            .expect("0.61 merges an empty AUTO config");
        assert_eq!(offered(&tools, &silent), tools);
    }
}
