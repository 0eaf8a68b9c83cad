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
    /// For `string`: how many characters the text may have (the daemon
    /// refuses an answer outside them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// For `choices`: how many values the list may have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
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

/// Whether `text` has the shape of a string `format` of the restricted
/// schema (`email`, `uri`, `date`, `date-time`), checked loosely: the
/// shape, not every rule of the RFCs. Other formats are not checked. The
/// daemon checks answers with it and terminals before they send one.
pub fn format_fits(format: &str, text: &str) -> bool {
    match format {
        "email" => text.split_once('@').is_some_and(|(user, host)| {
            !user.is_empty() && host.contains('.') && !text.contains(' ')
        }),
        "uri" => text.split_once(':').is_some_and(|(scheme, rest)| {
            !scheme.is_empty() && !rest.is_empty() && !text.contains(' ')
        }),
        "date" => is_date(text),
        "date-time" => text
            .split_once(['T', 't'])
            .is_some_and(|(date, time)| is_date(date) && time.len() >= 8),
        _ => true,
    }
}

fn is_date(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 3
        && [4, 2, 2]
            .iter()
            .zip(&parts)
            .all(|(n, p)| p.len() == *n && p.chars().all(|c| c.is_ascii_digit()))
}

/// A text length bound in words: "3-20 characters", "at least 3
/// characters", "at most 20 characters"; `None` without bounds.
pub fn length_words(min: Option<u64>, max: Option<u64>, unit: &str) -> Option<String> {
    match (min.filter(|m| *m > 0), max) {
        (None, None) => None,
        (Some(a), Some(b)) if a == b => Some(format!("exactly {a} {unit}")),
        (Some(a), Some(b)) => Some(format!("{a}-{b} {unit}")),
        (Some(a), None) => Some(format!("at least {a} {unit}")),
        (None, Some(b)) => Some(format!("at most {b} {unit}")),
    }
}
