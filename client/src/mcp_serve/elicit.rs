//! A question the session asks while `mcp serve` runs one of its calls
//! (an elicitation of a daemon-side MCP server, the model's `ask_user`):
//! forwarded to the MCP client as a form elicitation when the client
//! advertised `elicitation` (a URL-mode question as a URL elicitation,
//! when it advertised `url`), else declined at once; the client's answer
//! goes back with `session.answer`.

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::question::{AnswerAction, QuestionField};
use rmcp::model::{ElicitRequestParams, ElicitationAction};
use rmcp::{Peer, RoleServer};
use serde_json::{Map, Value, json};

use crate::Client;

/// The restricted schema a form elicitation carries, from the fields.
pub(crate) fn schema_of(fields: &[QuestionField]) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for f in fields {
        let mut p = Map::new();
        let consts = || {
            f.options
                .iter()
                .map(|o| json!({"const": o.value, "title": o.label.as_deref().unwrap_or(&o.value)}))
                .collect::<Vec<_>>()
        };
        match f.kind.as_str() {
            "integer" | "number" | "boolean" => {
                p.insert("type".into(), json!(f.kind));
            }
            "choice" if !f.other => {
                p.insert("type".into(), json!("string"));
                p.insert("oneOf".into(), Value::Array(consts()));
            }
            "choices" => {
                p.insert("type".into(), json!("array"));
                p.insert("items".into(), json!({"anyOf": consts()}));
            }
            _ => {
                p.insert("type".into(), json!("string"));
            }
        }
        if let Some(t) = &f.title {
            p.insert("title".into(), json!(t));
        }
        let mut description = f.description.clone().unwrap_or_default();
        if f.kind == "choice" && f.other {
            // Any text is taken; the options are suggestions.
            let offered: Vec<&str> = f.options.iter().map(|o| o.value.as_str()).collect();
            description = format!("{description} (e.g. {})", offered.join(", "));
        }
        if !description.is_empty() {
            p.insert("description".into(), json!(description.trim()));
        }
        for (key, value) in [
            ("format", f.format.as_ref().map(|v| json!(v))),
            ("minimum", f.minimum.map(|v| bound(&f.kind, v))),
            ("maximum", f.maximum.map(|v| bound(&f.kind, v))),
            ("minLength", f.min_length.map(|v| json!(v))),
            ("maxLength", f.max_length.map(|v| json!(v))),
            ("minItems", f.min_items.map(|v| json!(v))),
            ("maxItems", f.max_items.map(|v| json!(v))),
            ("default", f.default.clone()),
        ] {
            if let Some(value) = value {
                p.insert(key.into(), value);
            }
        }
        if f.required {
            required.push(f.name.clone());
        }
        properties.insert(f.name.clone(), Value::Object(p));
    }
    json!({"type": "object", "properties": properties, "required": required})
}

/// A number field's bound as its schema states it: an integer field's as
/// an integer (`1`, not `1.0`, which a client reading the restricted
/// schema strictly refuses).
fn bound(kind: &str, v: f64) -> Value {
    if kind == "integer" && v.fract() == 0.0 && v.abs() < 9.0e15 {
        json!(v as i64)
    } else {
        json!(v)
    }
}

/// Asks the MCP client (or declines) and answers the session's question.
pub(crate) async fn forward(
    client: std::sync::Arc<Client>,
    session_id: String,
    peer: Peer<RoleServer>,
    question_id: String,
    message: String,
    fields: Vec<QuestionField>,
    url: Option<String>,
) {
    let elicitation = peer
        .peer_info()
        .and_then(|info| info.capabilities.elicitation.clone());
    let supports = match (&elicitation, &url) {
        (None, _) => false,
        (Some(modes), Some(_)) => modes.url.is_some(),
        (Some(_), None) => true,
    };
    let (action, content) = if !supports {
        (AnswerAction::Decline, None)
    } else {
        // The question's id names the URL elicitation (for its client).
        let request = serde_json::from_value::<ElicitRequestParams>(match &url {
            Some(url) => json!({
                "mode": "url", "message": message, "url": url, "elicitationId": question_id
            }),
            None => json!({
                "mode": "form", "message": message, "requestedSchema": schema_of(&fields)
            }),
        });
        match request {
            Err(e) => {
                eprintln!("gemctl mcp serve: question {question_id} declined: its form: {e}");
                (AnswerAction::Decline, None)
            }
            Ok(request) => match peer.create_elicitation(request).await {
                Ok(result) => match result.action {
                    ElicitationAction::Accept => (AnswerAction::Accept, result.content),
                    ElicitationAction::Decline => (AnswerAction::Decline, None),
                    _ => (AnswerAction::Cancel, None),
                },
                Err(e) => {
                    eprintln!(
                        "gemctl mcp serve: the client did not answer question {question_id}: {e}"
                    );
                    (AnswerAction::Cancel, None)
                }
            },
        }
    };
    if let Err(e) = client
        .answer_question(session_id, question_id.clone(), action, content)
        .await
    {
        eprintln!("gemctl mcp serve: answering question {question_id}: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_kind_makes_a_schema_the_mcp_types_accept() {
        let fields: Vec<QuestionField> = serde_json::from_value(json!([
            {"name": "name", "type": "string", "required": true, "format": "email"},
            {"name": "user", "type": "string", "required": false, "minLength": 3, "maxLength": 20},
            {"name": "n", "type": "integer", "required": false, "minimum": 1.0, "maximum": 100.0, "default": 42},
            {"name": "x", "type": "number", "required": false, "minimum": 0.5},
            {"name": "ok", "type": "boolean", "required": false, "default": true},
            {"name": "pet", "type": "choice", "required": false,
             "options": [{"value": "cat", "label": "Cats"}, {"value": "dog"}]},
            {"name": "db", "type": "choice", "required": false, "other": true,
             "options": [{"value": "Postgres"}]},
            {"name": "many", "type": "choices", "required": false, "default": ["cat"],
             "options": [{"value": "cat", "label": "Cats"}, {"value": "dog"}]}
        ]))
        .unwrap();
        let schema = schema_of(&fields);
        assert_eq!(schema["properties"]["n"]["minimum"], json!(1));
        assert_eq!(schema["properties"]["user"]["minLength"], json!(3));
        let request = serde_json::from_value::<ElicitRequestParams>(
            json!({"mode": "form", "message": "m", "requestedSchema": schema}),
        );
        assert!(request.is_ok(), "{request:?}");
        // The bounds survive the MCP types, as the client receives them.
        let sent = serde_json::to_value(request.unwrap()).unwrap();
        let user = &sent["requestedSchema"]["properties"]["user"];
        assert_eq!(
            (user["minLength"].clone(), user["maxLength"].clone()),
            (json!(3), json!(20))
        );
        assert_eq!(
            sent["requestedSchema"]["properties"]["name"]["format"],
            "email"
        );
    }
}
