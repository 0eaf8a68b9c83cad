//! An MCP `sampling/createMessage` request (its params as JSON) in the
//! daemon's words: the model request it becomes (text and images; the
//! system prompt; `maxTokens`, `temperature`, `stopSequences`; no tools),
//! the model its hints may pick, the summary a person approves, and the
//! `CreateMessageResult` sent back. Pure.

use serde_json::{Value, json};

use crate::model::{Content, Generation, ModelRequest, Part, Role};

/// The request the model gets for `request`, or why it cannot be sent
/// (a message the model cannot read: audio, tool use and results).
pub fn model_request(request: &Value) -> Result<ModelRequest, String> {
    let messages = request
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("the request has no `messages`")?;
    let mut contents: Vec<Content> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let role = match message.get("role").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("assistant") => Role::Model,
            other => {
                return Err(format!(
                    "message {i}: role {other:?} is not user or assistant"
                ));
            }
        };
        let mut parts = Vec::new();
        for block in blocks(message.get("content")) {
            parts.push(part(block).map_err(|why| format!("message {i}: {why}"))?);
        }
        // Consecutive messages of one role are one turn for the model.
        match contents.last_mut() {
            Some(last) if last.role == role => last.parts.extend(parts),
            _ => contents.push(Content { role, parts }),
        }
    }
    if contents.is_empty() {
        return Err("the request has no messages".to_owned());
    }
    Ok(ModelRequest {
        system: request
            .get("systemPrompt")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        contents,
        tools: Vec::new(),
        tool_choice: None,
        generation: Generation {
            max_output_tokens: request
                .get("maxTokens")
                .and_then(Value::as_u64)
                .map(|n| n.min(u64::from(u32::MAX))),
            // rmcp reads it as an f32: send the number the server wrote
            // (0.7, not 0.699999988).
            temperature: request
                .get("temperature")
                .and_then(Value::as_f64)
                .map(|t| (t as f32).to_string().parse().unwrap_or(t)),
            stop_sequences: request
                .get("stopSequences")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            ..Generation::default()
        },
    })
}

/// A message's content: one block or a list of them.
fn blocks(content: Option<&Value>) -> Vec<&Value> {
    match content {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(one) => vec![one],
        None => Vec::new(),
    }
}

fn part(block: &Value) -> Result<Part, String> {
    match block.get("type").and_then(Value::as_str) {
        Some("text") => Ok(Part::text(
            block
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        )),
        Some("image") => {
            let (Some(data), Some(mime)) = (
                block.get("data").and_then(Value::as_str),
                block.get("mimeType").and_then(Value::as_str),
            ) else {
                return Err("an image without `data` or `mimeType`".to_owned());
            };
            Ok(Part::inline(mime, data))
        }
        other => Err(format!(
            "content of type {other:?} is not supported (text and images are)"
        )),
    }
}

/// The model a request's `modelPreferences.hints` pick among `available`
/// (the session's model first): the first hint that names one of them
/// exactly, else the session's model.
pub fn chosen_model<'a>(request: &Value, available: &[&'a str]) -> Option<&'a str> {
    let hints = request
        .pointer("/modelPreferences/hints")
        .and_then(Value::as_array);
    let named = hints
        .into_iter()
        .flatten()
        .filter_map(|h| h.get("name").and_then(Value::as_str))
        .find_map(|name| available.iter().find(|m| **m == name).copied());
    named.or_else(|| available.first().copied())
}

/// What a person approving the request reads: the server, each message
/// (long text cut), the system prompt and `maxTokens`.
pub fn summary(server: &str, request: &Value) -> String {
    let mut out = format!(
        "MCP server `{server}` asks to use this session's model (maxTokens {}).\n",
        request
            .get("maxTokens")
            .map(Value::to_string)
            .unwrap_or_else(|| "unset".to_owned())
    );
    if let Some(system) = request.get("systemPrompt").and_then(Value::as_str) {
        out.push_str(&format!("system: {}\n", clip(system)));
    }
    for message in request
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("?");
        for block in blocks(message.get("content")) {
            let shown = match block.get("type").and_then(Value::as_str) {
                Some("text") => clip(block.get("text").and_then(Value::as_str).unwrap_or("")),
                Some(kind) => format!(
                    "[{kind}{}]",
                    block
                        .get("mimeType")
                        .and_then(Value::as_str)
                        .map(|m| format!(" {m}"))
                        .unwrap_or_default()
                ),
                None => "[?]".to_owned(),
            };
            out.push_str(&format!("{role}: {shown}\n"));
        }
    }
    out
}

/// One line for the call's description.
pub fn headline(server: &str, request: &Value) -> String {
    let messages = request
        .get("messages")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    format!(
        "sampling request of MCP server {server}: {messages} message(s), maxTokens {}",
        request
            .get("maxTokens")
            .map(Value::to_string)
            .unwrap_or_else(|| "unset".to_owned())
    )
}

fn clip(text: &str) -> String {
    const MAX: usize = 400;
    let line = text.replace('\n', " ");
    if line.len() <= MAX {
        return line;
    }
    let mut end = MAX;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &line[..end], text.len())
}

/// The `CreateMessageResult` for the model's answer `text`.
pub fn result(text: &str, model: &str, stop_reason: &str) -> Value {
    json!({
        "role": "assistant",
        "content": {"type": "text", "text": text},
        "model": model,
        "stopReason": stop_reason,
    })
}

/// Why the answer ended: `maxTokens` when it used every token it was
/// allowed, else `endTurn` (the stream does not say whether a stop
/// sequence ended it).
pub fn stop_reason(request: &Value, output_tokens: u64) -> &'static str {
    match request.get("maxTokens").and_then(Value::as_u64) {
        Some(max) if output_tokens >= max => "maxTokens",
        _ => "endTurn",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> Value {
        json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "What is in it?"}},
                {"role": "user", "content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]},
                {"role": "assistant", "content": {"type": "text", "text": "A cat."}},
                {"role": "user", "content": {"type": "text", "text": "Sure?"}}
            ],
            "systemPrompt": "Be brief.",
            "maxTokens": 100,
            "temperature": 0.7,
            "stopSequences": ["END"],
            "modelPreferences": {"hints": [{"name": "claude-3"}, {"name": "gemini-2.5-pro"}]}
        })
    }

    #[test]
    fn messages_become_turns_with_text_images_and_the_generation_settings() {
        let request = model_request(&request()).unwrap();
        assert_eq!(request.system, "Be brief.");
        assert!(request.tools.is_empty());
        let roles: Vec<Role> = request.contents.iter().map(|c| c.role).collect();
        assert_eq!(roles, vec![Role::User, Role::Model, Role::User]);
        assert_eq!(request.contents[0].parts.len(), 2);
        assert_eq!(
            request.contents[0].parts[0].text.as_deref(),
            Some("What is in it?")
        );
        assert!(request.contents[0].parts[1].inline_data.is_some());
        assert_eq!(request.generation.max_output_tokens, Some(100));
        assert_eq!(request.generation.temperature, Some(0.7));
        let f32_read = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "x"}}], "maxTokens": 5, "temperature": 0.699999988079071});
        assert_eq!(
            model_request(&f32_read).unwrap().generation.temperature,
            Some(0.7)
        );
        assert_eq!(request.generation.stop_sequences, vec!["END".to_owned()]);
    }

    #[test]
    fn what_the_model_cannot_read_is_refused_by_name() {
        let audio = json!({"messages": [{"role": "user", "content": {"type": "audio", "data": "x", "mimeType": "audio/wav"}}], "maxTokens": 5});
        assert!(model_request(&audio).unwrap_err().contains("\"audio\""));
        let none = json!({"messages": [], "maxTokens": 5});
        assert!(model_request(&none).is_err());
    }

    #[test]
    fn a_hint_picks_an_available_model_else_the_session_s() {
        let available = ["gemini-2.5-flash", "gemini-2.5-pro"];
        assert_eq!(chosen_model(&request(), &available), Some("gemini-2.5-pro"));
        let unknown = json!({"modelPreferences": {"hints": [{"name": "claude"}]}});
        assert_eq!(chosen_model(&unknown, &available), Some("gemini-2.5-flash"));
        assert_eq!(
            chosen_model(&json!({}), &available),
            Some("gemini-2.5-flash")
        );
    }

    #[test]
    fn the_summary_names_the_server_each_message_and_max_tokens() {
        let text = summary("everything", &request());
        assert!(text.starts_with("MCP server `everything`"), "{text}");
        assert!(text.contains("maxTokens 100"), "{text}");
        assert!(text.contains("system: Be brief.\n"), "{text}");
        assert!(text.contains("user: What is in it?\n"), "{text}");
        assert!(text.contains("user: [image image/png]\n"), "{text}");
        assert!(text.contains("assistant: A cat.\n"), "{text}");
        assert_eq!(stop_reason(&request(), 100), "maxTokens");
        assert_eq!(stop_reason(&request(), 3), "endTurn");
    }
}
