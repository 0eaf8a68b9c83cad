//! Questions a session asks its people: an MCP server's elicitation or
//! the model's `ask_user`. Asked as a `questionAsked` event to every
//! attached client, answered by `session.answer` (the first answer wins),
//! ended for everyone by a `questionClosed` event.

use serde::{Deserialize, Serialize};

/// Who asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum QuestionAsker {
    /// An MCP server, by elicitation (`elicitation/create`).
    Mcp { server: String },
    /// The model, through the `ask_user` tool.
    Model,
}

/// One field of a question's form (MCP elicitation's restricted schema).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuestionField {
    /// The key of the answer's `content`.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `string`, `number`, `integer`, `boolean`, `choice` (one of
    /// `options`) or `choices` (a list of `options`).
    #[serde(rename = "type")]
    pub kind: String,
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<serde_json::Value>,
    /// For `choice`/`choices`: the values and what to show for them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<QuestionOption>,
    /// For `choice`: any other text is accepted too (`ask_user`'s "Other").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub other: bool,
    /// `email`, `uri`, `date`, `date-time` for strings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<f64>,
}

/// One value a `choice` field offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuestionOption {
    pub value: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// How a question was answered (MCP elicitation's actions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AnswerAction {
    Accept,
    Decline,
    Cancel,
}

/// `session.answer`'s result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnswerResult {
    /// The content the asker got (defaults filled in), for `accept`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<serde_json::Value>,
}
