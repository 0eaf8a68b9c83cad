//! OpenAI-compatible chat completions (Ollama, llama.cpp's server, vLLM,
//! ...): streaming, with tools. The conversation is converted from the
//! Gemini shape here and nowhere else.

use std::collections::BTreeMap;

use futures::StreamExt;
use serde_json::{Value, json};

use super::retry::{self, RetryPolicy};
use super::{
    Chunk, ChunkStream, Content, FunctionCall, Model, ModelError, ModelErrorKind, ModelRequest,
    Part, RetryNotice, Role, ToolMode, Usage,
};

/// A client for one model behind an OpenAI-compatible server.
pub struct OpenAiModel {
    client: reqwest::Client,
    base_url: String,
    model: String,
    api_key: Option<String>,
    retry: RetryPolicy,
}

impl OpenAiModel {
    pub fn new(
        client: reqwest::Client,
        base_url: &str,
        model: &str,
        api_key: Option<&str>,
    ) -> Self {
        OpenAiModel {
            client,
            base_url: base_url.trim_end_matches('/').to_owned(),
            model: model.to_owned(),
            api_key: api_key.map(str::to_owned),
            retry: RetryPolicy::default(),
        }
    }

    /// `{base}/chat/completions` (the base usually ends in `/v1`).
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }
}

#[async_trait::async_trait]
impl Model for OpenAiModel {
    async fn stream(
        &self,
        request: &ModelRequest,
        on_retry: RetryNotice<'_>,
    ) -> Result<ChunkStream, ModelError> {
        let body = request_body(&self.model, request);
        let url = self.endpoint();
        let make = || {
            let builder = self.client.post(&url).json(&body);
            match &self.api_key {
                Some(key) => builder.bearer_auth(key),
                None => builder,
            }
        };
        let model = self.model.clone();
        let base = self.base_url.clone();
        let refuse = move |status: u16, body: &[u8]| http_error(&model, &base, status, body);
        let response = retry::send(self.retry, &make, &refuse, on_retry).await?;
        let state = (super::sse_data(response), Accumulator::default(), false);
        Ok(Box::pin(futures::stream::unfold(
            state,
            |(mut data, mut acc, mut done)| async move {
                loop {
                    if done {
                        return None;
                    }
                    let item = match data.next().await {
                        None => {
                            done = true;
                            acc.finish()
                        }
                        Some(Err(e)) => {
                            done = true;
                            Err(e)
                        }
                        Some(Ok(payload)) if payload.trim() == "[DONE]" => {
                            done = true;
                            acc.finish()
                        }
                        Some(Ok(payload)) => acc.push(&payload),
                    };
                    match item {
                        Ok(chunk) if chunk == Chunk::default() && !done => continue,
                        Ok(chunk) if chunk == Chunk::default() => return None,
                        other => return Some((other, (data, acc, done))),
                    }
                }
            },
        )))
    }
}

/// The chat-completions request for `request`.
pub fn request_body(model: &str, request: &ModelRequest) -> Value {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({ "role": "system", "content": request.system }));
    }
    let mut ids = CallIds::default();
    for content in &request.contents {
        messages.extend(messages_for(content, &mut ids));
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "stream_options": { "include_usage": true },
    });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|decl| {
                json!({
                    "type": "function",
                    "function": {
                        "name": decl["name"],
                        "description": decl.get("description").cloned().unwrap_or(json!("")),
                        "parameters": decl.get("parameters").cloned()
                            .unwrap_or(json!({"type": "object", "properties": {}})),
                    }
                })
            })
            .collect();
        body["tools"] = Value::Array(tools);
        if let Some(choice) = &request.tool_choice {
            body["tool_choice"] = match choice.mode {
                ToolMode::Auto => "auto",
                ToolMode::Any => "required",
                ToolMode::None => "none",
            }
            .into();
        }
    }
    let g = &request.generation;
    for (key, value) in [
        ("temperature", g.temperature.map(super::setting_value)),
        ("max_tokens", g.max_output_tokens.map(Value::from)),
        ("top_p", g.top_p.map(super::setting_value)),
    ] {
        if let Some(value) = value {
            body[key] = value;
        }
    }
    if !g.stop_sequences.is_empty() {
        body["stop"] = json!(g.stop_sequences);
    }
    body
}

/// Calls without an id (from a Gemini-made history) get one, the same for
/// the call and its response: the n-th call of a name is answered by the
/// n-th response of that name.
#[derive(Default)]
struct CallIds {
    made: BTreeMap<String, Vec<String>>,
    next: usize,
}

impl CallIds {
    fn for_call(&mut self, call: &FunctionCall) -> String {
        let id = call.id.clone().unwrap_or_else(|| {
            self.next += 1;
            format!("call_{}", self.next)
        });
        self.made
            .entry(call.name.clone())
            .or_default()
            .push(id.clone());
        id
    }

    fn for_response(&mut self, id: Option<&str>, name: &str) -> String {
        if let Some(id) = id {
            if let Some(ids) = self.made.get_mut(name) {
                ids.retain(|made| made != id);
            }
            return id.to_owned();
        }
        match self.made.get_mut(name) {
            Some(ids) if !ids.is_empty() => ids.remove(0),
            _ => format!("call_{name}"),
        }
    }
}

fn messages_for(content: &Content, ids: &mut CallIds) -> Vec<Value> {
    let mut out = Vec::new();
    match content.role {
        Role::Model => {
            let text = content.text();
            let calls: Vec<Value> = content
                .function_calls()
                .map(|call| {
                    json!({
                        "id": ids.for_call(call),
                        "type": "function",
                        "function": { "name": call.name, "arguments": call.args.to_string() },
                    })
                })
                .collect();
            let mut message = json!({
                "role": "assistant",
                "content": if text.is_empty() { Value::Null } else { Value::String(text) },
            });
            if !calls.is_empty() {
                message["tool_calls"] = Value::Array(calls);
            }
            out.push(message);
        }
        Role::User => {
            let mut user_parts = Vec::new();
            for part in &content.parts {
                if let Some(response) = &part.function_response {
                    out.push(json!({
                        "role": "tool",
                        "tool_call_id": ids.for_response(response.id.as_deref(), &response.name),
                        "content": tool_text(&response.response),
                    }));
                } else if let Some(text) = &part.text {
                    user_parts.push(json!({ "type": "text", "text": text }));
                } else if let Some(data) = &part.inline_data {
                    if data.mime_type.starts_with("image/") {
                        user_parts.push(json!({
                            "type": "image_url",
                            "image_url": { "url": format!("data:{};base64,{}", data.mime_type, data.data) },
                        }));
                    } else {
                        user_parts.push(json!({
                            "type": "text",
                            "text": format!("[{} content omitted: this model takes text and images only]", data.mime_type),
                        }));
                    }
                }
            }
            match user_parts.as_slice() {
                [] => {}
                [only] if only["type"] == "text" => {
                    out.push(json!({ "role": "user", "content": only["text"] }));
                }
                _ => out.push(json!({ "role": "user", "content": user_parts })),
            }
        }
    }
    out
}

/// A function response as the text of a `tool` message.
fn tool_text(response: &Value) -> String {
    match response.get("output").or_else(|| response.get("error")) {
        Some(Value::String(s)) => s.clone(),
        _ => response.to_string(),
    }
}

/// Collects tool-call deltas (they arrive in pieces, by index) until the
/// response ends; text and reasoning pass straight through.
#[derive(Default)]
pub struct Accumulator {
    calls: BTreeMap<u64, (Option<String>, String, String)>,
}

impl Accumulator {
    /// One `data:` payload.
    pub fn push(&mut self, payload: &str) -> Result<Chunk, ModelError> {
        let value: Value = serde_json::from_str(payload).map_err(|e| {
            ModelError::new(
                ModelErrorKind::Server,
                format!("the model server sent a chunk that is not JSON ({e})"),
            )
        })?;
        if let Some(error) = value.get("error") {
            let message = error["message"]
                .as_str()
                .map_or_else(|| error.to_string(), str::to_owned);
            return Err(ModelError::new(
                ModelErrorKind::Server,
                format!("the model server reported an error: {message}"),
            ));
        }
        let mut chunk = Chunk::default();
        if let Some(choice) = value["choices"].get(0) {
            let delta = &choice["delta"];
            for key in ["reasoning_content", "reasoning"] {
                if let Some(text) = delta[key].as_str().filter(|t| !t.is_empty()) {
                    chunk.parts.push(Part::thought(text));
                }
            }
            if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
                chunk.parts.push(Part::text(text));
            }
            for call in delta["tool_calls"].as_array().into_iter().flatten() {
                let index = call["index"].as_u64().unwrap_or(0);
                let entry = self.calls.entry(index).or_default();
                if let Some(id) = call["id"].as_str() {
                    entry.0 = Some(id.to_owned());
                }
                if let Some(name) = call["function"]["name"].as_str() {
                    entry.1.push_str(name);
                }
                if let Some(args) = call["function"]["arguments"].as_str() {
                    entry.2.push_str(args);
                }
            }
            if choice["finish_reason"].as_str() == Some("content_filter") {
                return Err(ModelError::new(
                    ModelErrorKind::Blocked,
                    "the response was blocked by the server's content filter",
                ));
            }
            if let Some(reason) = choice["finish_reason"].as_str() {
                chunk.finish_reason = Some(gemini_finish_reason(reason).to_owned());
            }
        }
        if let Some(usage) = value.get("usage").filter(|u| u.is_object()) {
            chunk.usage = Some(Usage {
                input_tokens: usage["prompt_tokens"].as_u64().unwrap_or(0),
                output_tokens: usage["completion_tokens"].as_u64().unwrap_or(0),
                cached_tokens: usage["prompt_tokens_details"]["cached_tokens"]
                    .as_u64()
                    .unwrap_or(0),
                thought_tokens: usage["completion_tokens_details"]["reasoning_tokens"]
                    .as_u64()
                    .unwrap_or(0),
            });
        }
        Ok(chunk)
    }

    /// The end of the response: the collected calls, whole.
    pub fn finish(&mut self) -> Result<Chunk, ModelError> {
        let mut chunk = Chunk::default();
        for (_, (id, name, args)) in std::mem::take(&mut self.calls) {
            let args = if args.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str(&args).map_err(|e| {
                    ModelError::new(
                        ModelErrorKind::Server,
                        format!("the model's arguments for `{name}` are not JSON ({e}): {args}"),
                    )
                })?
            };
            chunk
                .parts
                .push(Part::call(FunctionCall { id, name, args }));
        }
        Ok(chunk)
    }
}

/// An OpenAI `finish_reason` in the Gemini API's words (what hooks read).
fn gemini_finish_reason(reason: &str) -> &'static str {
    match reason {
        "stop" | "tool_calls" | "function_call" => "STOP",
        "length" => "MAX_TOKENS",
        _ => "OTHER",
    }
}

fn http_error(model: &str, base_url: &str, status: u16, body: &[u8]) -> ModelError {
    let api: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let detail = api["error"]["message"]
        .as_str()
        .or_else(|| api["error"].as_str())
        .map(str::to_owned)
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned());
    let (kind, meaning) = match status {
        401 | 403 => (ModelErrorKind::Auth, "the API key was refused".to_owned()),
        404 => (
            ModelErrorKind::UnknownModel,
            format!("model `{model}` (or the endpoint) was not found at {base_url}"),
        ),
        429 => (ModelErrorKind::RateLimited, "rate limited".to_owned()),
        400 => (
            ModelErrorKind::BadRequest,
            "the server refused the request".to_owned(),
        ),
        _ => (ModelErrorKind::Server, "the model server failed".to_owned()),
    };
    let mut message = format!("model server: HTTP {status}: {meaning}");
    if !detail.trim().is_empty() {
        message.push_str(&format!(" ({})", detail.trim()));
    }
    ModelError::new(kind, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FunctionResponse;

    #[test]
    fn history_becomes_messages_with_matching_tool_ids() {
        let call = |name: &str| {
            Part::call(FunctionCall {
                id: None,
                name: name.into(),
                args: json!({"a": 1}),
            })
        };
        let response = |name: &str| {
            Part::response(FunctionResponse {
                id: None,
                name: name.into(),
                response: json!({"output": "ok"}),
            })
        };
        let request = ModelRequest {
            system: "sys".into(),
            contents: vec![
                Content::user_text("hi"),
                Content {
                    role: Role::Model,
                    parts: vec![Part::text("let me"), call("glob"), call("read_file")],
                },
                Content {
                    role: Role::User,
                    parts: vec![
                        response("glob"),
                        response("read_file"),
                        Part::inline("image/png", "AAAA"),
                    ],
                },
            ],
            tools: vec![
                json!({"name": "glob", "description": "d", "parameters": {"type": "object"}}),
            ],
            ..ModelRequest::default()
        };
        let body = request_body("llama", &request);
        let m = body["messages"].as_array().unwrap();
        assert_eq!(m[0], json!({"role": "system", "content": "sys"}));
        assert_eq!(m[1], json!({"role": "user", "content": "hi"}));
        assert_eq!(m[2]["content"], "let me");
        assert_eq!(m[2]["tool_calls"][0]["function"]["arguments"], "{\"a\":1}");
        let ids: Vec<_> = m[2]["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].clone())
            .collect();
        assert_eq!(m[3]["tool_call_id"], ids[0]);
        assert_eq!(m[4]["tool_call_id"], ids[1]);
        assert_eq!(m[3]["content"], "ok");
        assert_eq!(m[5]["content"][0]["type"], "image_url");
        assert_eq!(body["tools"][0]["function"]["name"], "glob");
        assert_eq!(body["stream"], true);
    }

    #[test]
    fn tool_call_deltas_are_assembled() {
        let mut acc = Accumulator::default();
        let chunks = [
            r#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#,
            r#"{"choices":[{"delta":{"content":"Hel"}}]}"#,
            r#"{"choices":[{"delta":{"content":"lo"}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"glob","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"c2","function":{"name":"read_file","arguments":"{\"absolute_"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pattern\":\"*\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"path\":\"/x\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#,
        ];
        let mut parts = Vec::new();
        let mut usage = None;
        let mut finish = None;
        for c in chunks {
            let chunk = acc.push(c).unwrap();
            parts.extend(chunk.parts);
            usage = chunk.usage.or(usage);
            finish = chunk.finish_reason.or(finish);
        }
        assert_eq!(finish.as_deref(), Some("STOP"), "in the Gemini API's words");
        parts.extend(acc.finish().unwrap().parts);
        assert!(parts[0].thought);
        assert_eq!(parts[1].text.as_deref(), Some("Hel"));
        let calls: Vec<_> = parts
            .iter()
            .filter_map(|p| p.function_call.clone())
            .collect();
        assert_eq!(
            calls[0],
            FunctionCall {
                id: Some("c1".into()),
                name: "glob".into(),
                args: json!({"pattern": "*"})
            }
        );
        assert_eq!(calls[1].args, json!({"absolute_path": "/x"}));
        assert_eq!(
            usage,
            Some(Usage {
                input_tokens: 3,
                output_tokens: 4,
                ..Usage::default()
            })
        );
    }

    #[test]
    fn broken_arguments_are_a_clear_error() {
        let mut acc = Accumulator::default();
        acc.push(r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"glob","arguments":"{oops"}}]}}]}"#).unwrap();
        let e = acc.finish().unwrap_err();
        assert!(e.message.contains("`glob`"), "{}", e.message);
    }
}
