//! The session's questions (an MCP server's elicitation, the model's
//! `ask_user`) as ACP elicitations: what the editor advertised at
//! `initialize` (`clientCapabilities.elicitation`), the `elicitation/create`
//! request a question becomes, and what the editor's answer means for
//! `session.answer`. Pure; `follow.rs` sends and withdraws the requests.

use geminid_protocol::question::AnswerAction;
use serde_json::{Value, json};

use crate::questions::Open;

/// Which elicitation modes the editor said it can show.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EditorAsks {
    pub form: bool,
    /// URL mode: the editor shows the person a link to open.
    pub url: bool,
}

impl EditorAsks {
    /// From `initialize`'s params. An `elicitation` object without modes
    /// means form (as in MCP, where `{}` is form-only).
    pub fn from_initialize(params: &Value) -> EditorAsks {
        let elicitation = &params["clientCapabilities"]["elicitation"];
        let Some(modes) = elicitation.as_object() else {
            return EditorAsks::default();
        };
        let form = modes.is_empty() || modes.get("form").is_some_and(Value::is_object);
        let url = modes.get("url").is_some_and(Value::is_object);
        EditorAsks { form, url }
    }
}

/// The `elicitation/create` params for a form question, tied to the
/// session and to the call that asks (its ACP `toolCallId`).
pub fn form_request(session_id: &str, q: &Open) -> Value {
    let mut params = json!({
        "sessionId": session_id,
        "mode": "form",
        "message": format!("{} asks: {}", crate::questions::asker_words(&q.asked_by), q.message),
        "requestedSchema": crate::mcp_serve::elicit::schema_of(&q.fields),
    });
    if let Some(call_id) = &q.call_id {
        params["toolCallId"] = json!(call_id);
    }
    params
}

/// The `elicitation/create` params for a URL-mode question (a link, no
/// fields): the question's id names the elicitation, as `mcp serve` does.
pub fn url_request(session_id: &str, q: &Open, url: &str) -> Value {
    let mut params = json!({
        "sessionId": session_id,
        "mode": "url",
        "message": format!("{} asks: {}", crate::questions::asker_words(&q.asked_by), q.message),
        "url": url,
        "elicitationId": q.question_id,
    });
    if let Some(call_id) = &q.call_id {
        params["toolCallId"] = json!(call_id);
    }
    params
}

/// The editor's answer as `session.answer`'s action and content. Anything
/// but a well-formed `accept` or `decline` (an error, an unknown action)
/// is a `cancel`: the question is never taken as accepted by mistake.
pub fn answer_of(answer: &Result<Value, Value>) -> (AnswerAction, Option<Value>) {
    let Ok(result) = answer else {
        return (AnswerAction::Cancel, None);
    };
    match result["action"].as_str() {
        Some("accept") => {
            let content = result
                .get("content")
                .filter(|c| c.is_object())
                .cloned()
                .unwrap_or_else(|| json!({}));
            (AnswerAction::Accept, Some(content))
        }
        Some("decline") => (AnswerAction::Decline, None),
        _ => (AnswerAction::Cancel, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use geminid_protocol::question::{QuestionAsker, QuestionField};

    #[test]
    fn the_editor_asks_only_in_the_modes_it_advertised() {
        let caps = |v: Value| EditorAsks::from_initialize(&json!({"clientCapabilities": v}));
        assert!(!caps(json!({})).form);
        assert!(!caps(json!({"elicitation": null})).form);
        assert!(caps(json!({"elicitation": {}})).form);
        assert!(caps(json!({"elicitation": {"form": {}}})).form);
        assert!(!caps(json!({"elicitation": {"url": {}}})).form);
        assert!(caps(json!({"elicitation": {"url": {}}})).url);
        assert!(!caps(json!({"elicitation": {}})).url);
        assert!(!caps(json!({"elicitation": {"form": {}}})).url);
    }

    #[test]
    fn a_question_is_a_form_tied_to_its_call_and_odd_answers_cancel() {
        let field: QuestionField = serde_json::from_value(
            json!({"name": "name", "type": "string", "required": true, "default": "Ada",
                "minLength": 2, "maxLength": 40, "format": "email"}),
        )
        .unwrap();
        let q = Open {
            question_id: "q-3".into(),
            call_id: Some("call-2".into()),
            asked_by: QuestionAsker::Mcp {
                server: "everything".into(),
            },
            message: "Who?".into(),
            fields: vec![field],
            url: None,
        };
        let r = form_request("s1", &q);
        assert_eq!(r["toolCallId"], "call-2");
        assert_eq!(r["mode"], "form");
        assert_eq!(r["message"], "MCP server everything asks: Who?");
        assert_eq!(r["requestedSchema"]["required"], json!(["name"]));
        let name = &r["requestedSchema"]["properties"]["name"];
        assert_eq!(name["default"], "Ada");
        // The editor can tell the person the bounds before they answer.
        assert_eq!(
            (&name["minLength"], &name["maxLength"], &name["format"]),
            (&json!(2), &json!(40), &json!("email"))
        );

        let link = Open {
            url: Some("https://auth.example/x".into()),
            fields: Vec::new(),
            ..q.clone()
        };
        let r = url_request("s1", &link, "https://auth.example/x");
        assert_eq!(
            (&r["mode"], &r["url"], &r["elicitationId"], &r["toolCallId"]),
            (
                &json!("url"),
                &json!("https://auth.example/x"),
                &json!("q-3"),
                &json!("call-2")
            )
        );
        assert!(r.get("requestedSchema").is_none());

        let accept = answer_of(&Ok(json!({"action": "accept", "content": {"name": "Bo"}})));
        assert_eq!(accept, (AnswerAction::Accept, Some(json!({"name": "Bo"}))));
        assert_eq!(
            answer_of(&Ok(json!({"action": "decline"}))),
            (AnswerAction::Decline, None)
        );
        for odd in [
            Ok(json!({"action": "maybe"})),
            Ok(json!(null)),
            Err(json!({"code": -32601})),
        ] {
            assert_eq!(answer_of(&odd), (AnswerAction::Cancel, None));
        }
    }
}
