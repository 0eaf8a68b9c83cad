//! The Gemini API: `streamGenerateContent` over server-sent events, at
//! the Gemini API (an API key) or at Vertex AI (`vertex.rs`: the same
//! request and response shape, another URL, an API key or a Google
//! access token).

use std::sync::Arc;

use futures::StreamExt;
use serde_json::{Value, json};

use super::google_auth::TokenSource;

use super::retry::{self, RetryPolicy};
use super::{
    Chunk, ChunkStream, Generation, Model, ModelError, ModelErrorKind, ModelRequest, Part,
    RetryNotice, ToolMode, Usage,
};

/// How a request proves who sends it.
#[derive(Clone)]
pub enum Credential {
    /// `x-goog-api-key`.
    ApiKey(String),
    /// `Authorization: Bearer`, a Google access token.
    Bearer(Arc<TokenSource>),
}

/// A client for one Gemini model.
pub struct GeminiModel {
    client: reqwest::Client,
    base_url: String,
    model: String,
    url: String,
    credential: Credential,
    /// What an HTTP error means at this endpoint.
    refusal: fn(&str, &str, u16, &[u8]) -> ModelError,
    retry: RetryPolicy,
}

impl GeminiModel {
    /// The Gemini API with an API key.
    pub fn new(client: reqwest::Client, base_url: &str, model: &str, api_key: &str) -> Self {
        let base_url = base_url.trim_end_matches('/').to_owned();
        let bare = model.strip_prefix("models/").unwrap_or(model);
        GeminiModel {
            client,
            url: format!("{base_url}/v1beta/models/{bare}:streamGenerateContent?alt=sse"),
            base_url,
            model: model.to_owned(),
            credential: Credential::ApiKey(api_key.to_owned()),
            refusal: http_error,
            retry: RetryPolicy::default(),
        }
    }

    /// Another endpoint speaking the same API (Vertex AI).
    pub fn at(
        client: reqwest::Client,
        base_url: &str,
        url: String,
        model: &str,
        credential: Credential,
        refusal: fn(&str, &str, u16, &[u8]) -> ModelError,
    ) -> Self {
        GeminiModel {
            client,
            base_url: base_url.to_owned(),
            model: model.to_owned(),
            url,
            credential,
            refusal,
            retry: RetryPolicy::default(),
        }
    }

    /// The streaming URL requests go to.
    pub fn endpoint(&self) -> &str {
        &self.url
    }

    fn refuse(&self, status: u16, body: &[u8]) -> ModelError {
        (self.refusal)(&self.model, &self.base_url, status, body)
    }

    /// The header that carries the credential now.
    async fn auth_header(&self) -> Result<(&'static str, String), ModelError> {
        match &self.credential {
            Credential::ApiKey(key) => Ok(("x-goog-api-key", key.clone())),
            Credential::Bearer(source) => {
                Ok(("authorization", format!("Bearer {}", source.token().await?)))
            }
        }
    }
}

/// The request body.
pub fn request_body(model: &str, request: &ModelRequest) -> Value {
    let mut body = json!({ "contents": request.contents });
    if !request.system.is_empty() {
        body["systemInstruction"] = json!({ "parts": [{ "text": request.system }] });
    }
    if !request.tools.is_empty() {
        body["tools"] = json!([{ "functionDeclarations": request.tools }]);
        if let Some(choice) = &request.tool_choice {
            let mut calling = json!({ "mode": choice.mode.as_str() });
            // The API takes names only with mode ANY.
            if choice.mode == ToolMode::Any && !choice.allowed.is_empty() {
                calling["allowedFunctionNames"] = json!(choice.allowed);
            }
            body["toolConfig"] = json!({ "functionCallingConfig": calling });
        }
    }
    let mut config = generation_config(model);
    let g = &request.generation;
    for (key, value) in [
        ("temperature", g.temperature.map(super::setting_value)),
        ("maxOutputTokens", g.max_output_tokens.map(Value::from)),
        ("topP", g.top_p.map(super::setting_value)),
        ("topK", g.top_k.map(super::setting_value)),
    ] {
        if let Some(value) = value {
            config[key] = value;
        }
    }
    if g.max_output_tokens.is_some() {
        // Thoughts would spend the few tokens a caller allowed.
        if let Some(thinking) = config.get_mut("thinkingConfig") {
            thinking["includeThoughts"] = json!(false);
        }
    }
    if !g.stop_sequences.is_empty() {
        config["stopSequences"] = json!(g.stop_sequences);
    }
    body["generationConfig"] = config;
    body
}

/// What [`generation_config`] sets, as hooks see it.
pub fn generation_defaults(model: &str) -> Generation {
    let config = generation_config(model);
    Generation {
        temperature: config["temperature"].as_f64(),
        max_output_tokens: config["maxOutputTokens"].as_u64(),
        top_p: config["topP"].as_f64(),
        top_k: config["topK"].as_f64(),
        stop_sequences: Vec::new(),
    }
}

/// Generation settings as 0.61 sends them for chat, per model family:
/// temperature 1, topP 0.95, topK 64; thoughts included, with a budget of
/// 8,192 tokens on 2.5 models and the `HIGH` level on 3 models; no
/// `thinkingConfig` for models that do not think.
fn generation_config(model: &str) -> Value {
    let model = model.strip_prefix("models/").unwrap_or(model);
    let mut config = json!({ "temperature": 1, "topP": 0.95, "topK": 64 });
    if model.starts_with("gemini-2.5") {
        config["thinkingConfig"] = json!({ "includeThoughts": true, "thinkingBudget": 8192 });
    } else if model.starts_with("gemini-3") {
        config["thinkingConfig"] = json!({ "includeThoughts": true, "thinkingLevel": "HIGH" });
    }
    config
}

#[async_trait::async_trait]
impl Model for GeminiModel {
    fn generation(&self) -> Generation {
        generation_defaults(&self.model)
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        on_retry: RetryNotice<'_>,
    ) -> Result<ChunkStream, ModelError> {
        let body = request_body(&self.model, request);
        let refuse = |status: u16, body: &[u8]| self.refuse(status, body);
        let mut refreshed = false;
        let response = loop {
            let (name, value) = self.auth_header().await?;
            let make = || self.client.post(&self.url).header(name, &value).json(&body);
            match retry::send(self.retry, &make, &refuse, on_retry).await {
                // A token the server no longer takes (revoked, or its
                // clock disagrees with ours): fetch a new one, once.
                Err(e) if e.kind == ModelErrorKind::Auth && !refreshed => {
                    let Credential::Bearer(source) = &self.credential else {
                        return Err(e);
                    };
                    source.invalidate().await;
                    refreshed = true;
                }
                other => break other?,
            }
        };
        let model = self.model.clone();
        Ok(Box::pin(super::sse_data(response).map(move |data| {
            data.and_then(|data| parse_chunk(&model, &data))
        })))
    }
}

/// One SSE payload as a chunk, or the error it reports.
pub fn parse_chunk(model: &str, data: &str) -> Result<Chunk, ModelError> {
    let value: Value = serde_json::from_str(data).map_err(|e| {
        ModelError::new(
            ModelErrorKind::Server,
            format!(
                "the Gemini API sent a chunk that is not JSON ({e}): {}",
                clip(data)
            ),
        )
    })?;
    if let Some(error) = value.get("error") {
        let status = error["code"].as_u64().unwrap_or(500) as u16;
        return Err(http_error(model, "", status, data.as_bytes()));
    }
    if let Some(reason) = value["promptFeedback"]["blockReason"].as_str() {
        return Err(ModelError::new(
            ModelErrorKind::Blocked,
            format!("the prompt was blocked by the Gemini API ({reason})"),
        ));
    }
    let mut chunk = Chunk::default();
    if let Some(candidate) = value["candidates"].get(0) {
        if let Some(parts) = candidate["content"]["parts"].as_array() {
            for part in parts {
                let part: Part = serde_json::from_value(part.clone()).map_err(|e| {
                    ModelError::new(
                        ModelErrorKind::Server,
                        format!(
                            "the Gemini API sent a part we cannot read ({e}): {}",
                            clip(&part.to_string())
                        ),
                    )
                })?;
                chunk.parts.push(part);
            }
        }
        if let Some(reason) = candidate["finishReason"].as_str() {
            if is_blocking(reason) {
                return Err(ModelError::new(
                    ModelErrorKind::Blocked,
                    format!("the response was blocked by the Gemini API (finishReason {reason})"),
                ));
            }
            if reason == "MALFORMED_FUNCTION_CALL" {
                return Err(ModelError::new(
                    ModelErrorKind::Server,
                    "the model produced a malformed function call (finishReason MALFORMED_FUNCTION_CALL)",
                ));
            }
            chunk.finish_reason = Some(reason.to_owned());
        }
    }
    if let Some(usage) = value.get("usageMetadata") {
        let count = |k: &str| usage[k].as_u64().unwrap_or(0);
        chunk.usage = Some(Usage {
            input_tokens: count("promptTokenCount"),
            output_tokens: count("candidatesTokenCount"),
            cached_tokens: count("cachedContentTokenCount"),
            thought_tokens: count("thoughtsTokenCount"),
        });
    }
    Ok(chunk)
}

fn is_blocking(reason: &str) -> bool {
    matches!(
        reason,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY"
    )
}

/// An error answer of the API, said for people.
pub fn http_error(model: &str, base_url: &str, status: u16, body: &[u8]) -> ModelError {
    let api: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let api_message = api["error"]["message"]
        .as_str()
        .unwrap_or("")
        .trim()
        .to_owned();
    let api_status = api["error"]["status"].as_str().unwrap_or("");
    let reason = api["error"]["details"]
        .as_array()
        .and_then(|d| d.iter().find_map(|d| d["reason"].as_str()))
        .unwrap_or("");
    let bad_key =
        reason == "API_KEY_INVALID" || api_message.contains("API key not valid") || status == 401;
    let (kind, meaning) = if bad_key {
        (
            ModelErrorKind::Auth,
            "the API key was refused; check GEMINI_API_KEY".to_owned(),
        )
    } else {
        match status {
            403 => (
                ModelErrorKind::Auth,
                "the API key may not use this model or API".to_owned(),
            ),
            404 => (
                ModelErrorKind::UnknownModel,
                format!(
                    "model `{model}` was not found; check GEMINI_MODEL or `model.name` in settings"
                ),
            ),
            429 => (
                ModelErrorKind::RateLimited,
                "rate limited (quota or too many requests)".to_owned(),
            ),
            400 => (
                ModelErrorKind::BadRequest,
                "the API refused the request".to_owned(),
            ),
            s if s >= 500 => (ModelErrorKind::Server, "the Gemini API failed".to_owned()),
            _ => (ModelErrorKind::Server, "unexpected answer".to_owned()),
        }
    };
    let mut message = format!("Gemini API: HTTP {status}: {meaning}");
    if !base_url.is_empty() && kind == ModelErrorKind::UnknownModel {
        message.push_str(&format!(" (at {base_url})"));
    }
    if !api_message.is_empty() {
        message.push_str(&format!(
            " ({}{}{api_message})",
            api_status,
            if api_status.is_empty() { "" } else { ": " }
        ));
    } else if api.is_null() && !body.is_empty() {
        message.push_str(&format!(" ({})", clip(&String::from_utf8_lossy(body))));
    }
    ModelError::new(kind, message)
}

fn clip(s: &str) -> String {
    const MAX: usize = 200;
    if s.len() <= MAX {
        return s.to_owned();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Content, FunctionCall};

    #[test]
    fn the_body_has_contents_system_tools_and_thinking() {
        let request = ModelRequest {
            system: "be brief".into(),
            contents: vec![Content::user_text("hi")],
            tools: vec![json!({"name": "read_file", "parameters": {"type": "object"}})],
            ..ModelRequest::default()
        };
        let body = request_body("gemini-2.5-flash", &request);
        assert_eq!(body["contents"][0]["role"], "user");
        assert_eq!(body["systemInstruction"]["parts"][0]["text"], "be brief");
        assert_eq!(
            body["tools"][0]["functionDeclarations"][0]["name"],
            "read_file"
        );
        assert_eq!(
            body["generationConfig"]["thinkingConfig"],
            json!({"includeThoughts": true, "thinkingBudget": 8192})
        );
        assert_eq!(body["generationConfig"]["topK"], 64);
        let three = request_body("gemini-3-pro-preview", &request);
        assert_eq!(
            three["generationConfig"]["thinkingConfig"]["thinkingLevel"],
            "HIGH"
        );
        let old = request_body("gemini-1.5-pro", &request);
        assert!(old["generationConfig"].get("thinkingConfig").is_none());
        assert_eq!(old["generationConfig"]["temperature"], 1);
    }

    #[test]
    fn a_request_s_own_generation_settings_override_the_chat_defaults() {
        let request = ModelRequest {
            system: String::new(),
            contents: vec![Content::user_text("hi")],
            tools: Vec::new(),
            generation: crate::model::Generation {
                max_output_tokens: Some(100),
                temperature: Some(0.7),
                stop_sequences: vec!["END".into()],
                ..crate::model::Generation::default()
            },
            ..ModelRequest::default()
        };
        let config = &request_body("gemini-2.5-flash", &request)["generationConfig"];
        assert_eq!(config["maxOutputTokens"], 100);
        assert_eq!(config["temperature"], 0.7);
        assert_eq!(config["stopSequences"], json!(["END"]));
        assert_eq!(config["thinkingConfig"]["includeThoughts"], false);
        let openai = crate::model::openai::request_body("gpt-4o", &request);
        assert_eq!(openai["max_tokens"], 100);
        assert_eq!(openai["temperature"], 0.7);
        assert_eq!(openai["stop"], json!(["END"]));
    }

    #[test]
    fn chunks_carry_text_thoughts_calls_and_usage() {
        let data = r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"hm","thought":true},{"text":"Hi"},{"functionCall":{"name":"glob","args":{"pattern":"*"}},"thoughtSignature":"s1"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"thoughtsTokenCount":2}}"#;
        let chunk = parse_chunk("m", data).unwrap();
        assert_eq!(chunk.parts.len(), 3);
        assert!(chunk.parts[0].thought);
        assert_eq!(
            chunk.parts[2].function_call,
            Some(FunctionCall {
                id: None,
                name: "glob".into(),
                args: json!({"pattern": "*"})
            })
        );
        assert_eq!(chunk.parts[2].thought_signature.as_deref(), Some("s1"));
        assert_eq!(chunk.finish_reason.as_deref(), Some("STOP"));
        assert_eq!(
            chunk.usage,
            Some(Usage {
                input_tokens: 10,
                output_tokens: 5,
                cached_tokens: 0,
                thought_tokens: 2,
            })
        );
    }

    #[test]
    fn blocks_and_errors_say_what_happened() {
        let blocked =
            parse_chunk("m", r#"{"promptFeedback":{"blockReason":"SAFETY"}}"#).unwrap_err();
        assert_eq!(blocked.kind, ModelErrorKind::Blocked);
        assert!(blocked.message.contains("SAFETY"), "{}", blocked.message);
        let stopped = parse_chunk(
            "m",
            r#"{"candidates":[{"finishReason":"PROHIBITED_CONTENT"}]}"#,
        )
        .unwrap_err();
        assert_eq!(stopped.kind, ModelErrorKind::Blocked);
        let key = http_error(
            "m",
            "http://x",
            400,
            br#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"reason":"API_KEY_INVALID"}]}}"#,
        );
        assert_eq!(key.kind, ModelErrorKind::Auth);
        assert!(key.message.contains("GEMINI_API_KEY"), "{}", key.message);
        let model = http_error("gemini-nope", "http://x", 404, br#"{"error":{"code":404,"message":"models/gemini-nope is not found","status":"NOT_FOUND"}}"#);
        assert_eq!(model.kind, ModelErrorKind::UnknownModel);
        assert!(model.message.contains("`gemini-nope`"), "{}", model.message);
        let garbage = parse_chunk("m", "{not json").unwrap_err();
        assert_eq!(garbage.kind, ModelErrorKind::Server);
    }
}
