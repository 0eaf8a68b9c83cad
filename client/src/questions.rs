//! Questions a session asks its people (`questionAsked` events: an MCP
//! server's elicitation, the model's `ask_user`), for every front end
//! that answers them at a terminal: which are open (`QuestionBook`:
//! asked, then closed, or gone with their call), and one being filled in
//! a field at a time (`Filling`: the default on Enter, `d` declines).

use std::collections::BTreeMap;

use geminid_protocol::event::EventPayload;
use geminid_protocol::question::{AnswerAction, QuestionAsker, QuestionField};
use serde_json::{Map, Value};

/// One open question.
#[derive(Debug, Clone)]
pub(crate) struct Open {
    pub question_id: String,
    pub call_id: Option<String>,
    pub asked_by: QuestionAsker,
    pub message: String,
    pub fields: Vec<QuestionField>,
    /// A URL-mode question's link (no fields).
    pub url: Option<String>,
}

/// The open questions of a session, oldest first.
#[derive(Default)]
pub(crate) struct QuestionBook {
    open: BTreeMap<u64, Open>,
}

fn order(question_id: &str) -> u64 {
    question_id
        .strip_prefix("q-")
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX)
}

/// How a question left the book.
pub(crate) struct Closed {
    pub question_id: String,
    pub how: String,
}

impl QuestionBook {
    /// Follows one event; returns the question it closed, if any.
    pub fn observe(&mut self, payload: &EventPayload) -> Option<Closed> {
        match payload {
            EventPayload::QuestionAsked {
                question_id,
                call_id,
                asked_by,
                message,
                fields,
                url,
                ..
            } => {
                self.open.insert(
                    order(question_id),
                    Open {
                        question_id: question_id.clone(),
                        call_id: call_id.clone(),
                        asked_by: asked_by.clone(),
                        message: message.clone(),
                        fields: fields.clone(),
                        url: url.clone(),
                    },
                );
                None
            }
            EventPayload::QuestionClosed {
                question_id,
                action,
                by,
                reason,
            } => {
                self.open.remove(&order(question_id))?;
                Some(Closed {
                    question_id: question_id.clone(),
                    how: closed_words(*action, by.as_deref(), reason.as_deref()),
                })
            }
            // A question of a call that ended is over (also when the
            // daemon restarted and the call was marked interrupted).
            EventPayload::ToolCall(call)
                if call.state.is_terminal() && call.output_delta.is_none() =>
            {
                let key = self
                    .open
                    .iter()
                    .find(|(_, q)| q.call_id.as_deref() == Some(call.call_id.as_str()))
                    .map(|(k, _)| *k)?;
                let q = self.open.remove(&key)?;
                Some(Closed {
                    question_id: q.question_id,
                    how: "its call ended".into(),
                })
            }
            _ => None,
        }
    }

    pub fn first(&self) -> Option<&Open> {
        self.open.values().next()
    }

    /// Every open question, oldest first.
    pub fn all(&self) -> impl Iterator<Item = &Open> {
        self.open.values()
    }

    pub fn get(&self, question_id: &str) -> Option<&Open> {
        self.open.get(&order(question_id))
    }

    /// An answer given here was taken: the question is over for this
    /// client at once, not only when its `questionClosed` arrives (a
    /// front end asking its next question meanwhile would ask it again).
    pub fn answered(&mut self, question_id: &str) {
        self.open.remove(&order(question_id));
    }
}

/// "accepted by gemctl (connection 3)", "declined: nobody can answer".
pub(crate) fn closed_words(action: AnswerAction, by: Option<&str>, reason: Option<&str>) -> String {
    let verb = match action {
        AnswerAction::Accept => "accepted",
        AnswerAction::Decline => "declined",
        AnswerAction::Cancel => "cancelled",
    };
    match (by, reason) {
        (Some(by), _) => format!("{verb} by {by}"),
        (None, Some(reason)) => format!("{verb}: {reason}"),
        (None, None) => verb.to_owned(),
    }
}

/// Who asks, in words.
pub(crate) fn asker_words(asked_by: &QuestionAsker) -> String {
    match asked_by {
        QuestionAsker::Mcp { server } => format!("MCP server {server}"),
        QuestionAsker::Model => "the model".into(),
    }
}

/// Where a URL leads: its host (and port), with any `user@` part kept
/// in view, since `https://bank.example@evil.example/` goes to
/// `evil.example`. What cannot be read is said so.
pub(crate) fn url_host(url: &str) -> String {
    let Some((_, rest)) = url.split_once("://") else {
        return "(no host: not a URL)".into();
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    match authority.rsplit_once('@') {
        Some((user, host)) => format!("{host} (after a `{user}@` part: the host is {host})"),
        None if authority.is_empty() => "(no host)".into(),
        None => authority.to_owned(),
    }
}

/// The question's head: who asks and what.
pub(crate) fn heading(q: &Open) -> String {
    if let Some(url) = &q.url {
        return format!(
            "? {} asks you to open a page ({}): {}\n  URL:  {url}\n  host: {}\n  (geminid does not open it: open it yourself if you trust that host; Enter or `y` accepts, `d` declines, `c` cancels)",
            asker_words(&q.asked_by),
            q.question_id,
            q.message,
            url_host(url),
        );
    }
    format!(
        "? {} asks ({}): {}\n  (Enter takes the default shown in [ ]; `d` declines, `c` cancels)",
        asker_words(&q.asked_by),
        q.question_id,
        q.message
    )
}

/// The prompt for one field: its title, description, choices, default.
pub(crate) fn field_prompt(field: &QuestionField) -> String {
    let mut out = String::new();
    let name = field.title.as_deref().unwrap_or(&field.name);
    out.push_str(&format!("  {name}"));
    if field.required {
        out.push_str(" (required)");
    }
    if let Some(d) = &field.description {
        out.push_str(&format!(" - {d}"));
    }
    for (i, o) in field.options.iter().enumerate() {
        let label = o.label.as_deref().unwrap_or(&o.value);
        match &o.description {
            Some(d) if !d.is_empty() => out.push_str(&format!("\n    {}. {label}: {d}", i + 1)),
            _ => out.push_str(&format!("\n    {}. {label}", i + 1)),
        }
    }
    let hint = match field.kind.as_str() {
        "boolean" => " y/n",
        "choice" if field.other => " number or text",
        "choice" => " number",
        "choices" => " numbers, comma-separated",
        "integer" | "number" => " number",
        _ => "",
    };
    let bounds = bounds_words(field)
        .map(|b| format!(" ({b})"))
        .unwrap_or_default();
    let default = field
        .default
        .as_ref()
        .map(|d| format!(" [{}]", shown(d)))
        .unwrap_or_default();
    out.push_str(&format!("\n  {}{hint}{bounds}{default}: ", field.name));
    out
}

/// What the daemon will hold an answer to, in words: "3-20 characters,
/// an email", "1 to 100", "pick 1-2"; `None` when the field says nothing.
pub(crate) fn bounds_words(field: &QuestionField) -> Option<String> {
    use geminid_protocol::question::length_words;
    let mut parts = Vec::new();
    match field.kind.as_str() {
        "string" => {
            parts.extend(length_words(
                field.min_length,
                field.max_length,
                "characters",
            ));
            if let Some(f) = &field.format {
                parts.push(format_words(f));
            }
        }
        "integer" | "number" => match (field.minimum, field.maximum) {
            (Some(a), Some(b)) => parts.push(format!("{a} to {b}")),
            (Some(a), None) => parts.push(format!("at least {a}")),
            (None, Some(b)) => parts.push(format!("at most {b}")),
            (None, None) => {}
        },
        "choices" => {
            parts.extend(
                length_words(field.min_items, field.max_items, "of them")
                    .map(|w| format!("pick {w}")),
            );
        }
        _ => {}
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

fn format_words(format: &str) -> String {
    match format {
        "email" => "an email address".into(),
        "uri" => "a URI".into(),
        "date" => "a date, YYYY-MM-DD".into(),
        "date-time" => "a date and time, YYYY-MM-DDThh:mm:ss".into(),
        other => format!("format {other}"),
    }
}

/// A parsed value checked against the field's bounds, as the daemon will
/// check it: a bad line is asked again here, not refused after sending.
fn within_bounds(field: &QuestionField, value: &Value) -> Result<(), String> {
    let outside = |n: u64, min: Option<u64>, max: Option<u64>| {
        min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m)
    };
    match value {
        Value::String(s) if field.kind == "string" => {
            let n = s.chars().count() as u64;
            if outside(n, field.min_length, field.max_length) {
                return Err(format!(
                    "{} must be {} (this is {n})",
                    field.name,
                    geminid_protocol::question::length_words(
                        field.min_length,
                        field.max_length,
                        "characters"
                    )
                    .unwrap_or_default()
                ));
            }
            if let Some(f) = &field.format
                && !geminid_protocol::question::format_fits(f, s)
            {
                return Err(format!("{} must be {}", field.name, format_words(f)));
            }
            Ok(())
        }
        Value::Number(n) => {
            let n = n.as_f64().unwrap_or(f64::NAN);
            if field.minimum.is_some_and(|m| n < m) || field.maximum.is_some_and(|m| n > m) {
                return Err(format!(
                    "{} must be {}",
                    field.name,
                    bounds_words(field).unwrap_or_default()
                ));
            }
            Ok(())
        }
        Value::Array(items) if outside(items.len() as u64, field.min_items, field.max_items) => {
            Err(format!(
                "{}: {}",
                field.name,
                bounds_words(field).unwrap_or_default()
            ))
        }
        _ => Ok(()),
    }
}

fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What one typed line did.
#[derive(Debug, PartialEq)]
pub(crate) enum Step {
    /// Ask the next field (its prompt).
    Next(String),
    /// The line does not fit the field: say why, ask it again.
    Again(String),
    /// Every field is filled, or the person declined/cancelled.
    Done(AnswerAction, Option<Value>),
}

/// One question being answered at a terminal.
pub(crate) struct Filling {
    pub question_id: String,
    fields: Vec<QuestionField>,
    at: usize,
    content: Map<String, Value>,
}

impl Filling {
    /// Starts with the first field; returns the first prompt, or the
    /// answer when the form has no fields (a plain confirmation: Enter
    /// accepts).
    pub fn start(q: &Open) -> (Filling, String) {
        let filling = Filling {
            question_id: q.question_id.clone(),
            fields: q.fields.clone(),
            at: 0,
            content: Map::new(),
        };
        let prompt = match q.fields.first() {
            Some(f) => field_prompt(f),
            None if q.url.is_some() => "  going there? [Y/d/c]: ".into(),
            None => "  accept? [Y/d/c]: ".into(),
        };
        (filling, prompt)
    }

    pub fn take(&mut self, line: &str) -> Step {
        let line = line.trim();
        match line {
            "d" | "decline" => return Step::Done(AnswerAction::Decline, None),
            "c" | "cancel" => return Step::Done(AnswerAction::Cancel, None),
            _ => {}
        }
        if self.fields.is_empty() && !matches!(line, "" | "y" | "yes") {
            // A link or a plain confirmation: only a clear yes accepts.
            return Step::Again("  answer y (or Enter), d or c: ".into());
        }
        if let Some(field) = self.fields.get(self.at) {
            match parse_line(field, line) {
                Ok(Some(value)) => {
                    self.content.insert(field.name.clone(), value);
                }
                Ok(None) => {}
                Err(why) => return Step::Again(format!("  {why}\n{}", field_prompt(field))),
            }
            self.at += 1;
        }
        match self.fields.get(self.at) {
            Some(next) => Step::Next(field_prompt(next)),
            None => Step::Done(
                AnswerAction::Accept,
                Some(Value::Object(std::mem::take(&mut self.content))),
            ),
        }
    }
}

/// One line as a field's value: empty takes the default (or leaves an
/// optional field out); a required field without default must be given.
pub(crate) fn parse_line(field: &QuestionField, line: &str) -> Result<Option<Value>, String> {
    let value = parse_value(field, line)?;
    if let Some(v) = &value
        && !line.is_empty()
    {
        within_bounds(field, v)?;
    }
    Ok(value)
}

fn parse_value(field: &QuestionField, line: &str) -> Result<Option<Value>, String> {
    if line.is_empty() {
        return match &field.default {
            Some(d) => Ok(Some(d.clone())),
            None if field.required => Err(format!("{} is required", field.name)),
            None => Ok(None),
        };
    }
    let option = |word: &str| -> Option<String> {
        let word = word.trim();
        if let Ok(n) = word.parse::<usize>()
            && n >= 1
            && n <= field.options.len()
        {
            return Some(field.options[n - 1].value.clone());
        }
        field
            .options
            .iter()
            .find(|o| o.value == word || o.label.as_deref() == Some(word))
            .map(|o| o.value.clone())
    };
    match field.kind.as_str() {
        "boolean" => match line.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Some(Value::Bool(true))),
            "n" | "no" | "false" => Ok(Some(Value::Bool(false))),
            _ => Err("answer y or n".into()),
        },
        "integer" => line
            .parse::<i64>()
            .map(|n| Some(Value::from(n)))
            .map_err(|_| "a whole number, please".into()),
        "number" => line
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(|n| Some(Value::Number(n)))
            .ok_or_else(|| "a number, please".into()),
        "choice" => match option(line) {
            Some(v) => Ok(Some(Value::String(v))),
            None if field.other => Ok(Some(Value::String(line.to_owned()))),
            None => Err(format!("pick 1..{}", field.options.len())),
        },
        "choices" => line
            .split(',')
            .map(|w| {
                option(w)
                    .map(Value::String)
                    .ok_or(format!("`{}` is not one of the choices", w.trim()))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|v| Some(Value::Array(v))),
        _ => Ok(Some(Value::String(line.to_owned()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(v: Value) -> QuestionField {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_form_is_filled_field_by_field_with_defaults_on_enter() {
        let q = Open {
            question_id: "q-4".into(),
            call_id: None,
            asked_by: QuestionAsker::Model,
            message: "who?".into(),
            url: None,
            fields: vec![
                field(json!({"name": "name", "type": "string", "required": true})),
                field(json!({"name": "n", "type": "integer", "required": false, "default": 42})),
                field(json!({"name": "pet", "type": "choice", "required": false,
                    "options": [{"value": "pet-1", "label": "Cats"}, {"value": "pet-2", "label": "Dogs"}]})),
                field(json!({"name": "ok", "type": "boolean", "required": false})),
            ],
        };
        let (mut f, first) = Filling::start(&q);
        assert!(first.contains("name (required)"), "{first}");
        assert!(matches!(f.take(""), Step::Again(w) if w.contains("name is required")));
        assert!(matches!(f.take("Ada"), Step::Next(p) if p.contains("[42]")));
        assert!(matches!(f.take(""), Step::Next(p) if p.contains("2. Dogs")));
        assert!(matches!(f.take("7"), Step::Again(_)));
        assert!(matches!(f.take("2"), Step::Next(_)));
        assert_eq!(
            f.take("y"),
            Step::Done(
                AnswerAction::Accept,
                Some(json!({"name": "Ada", "n": 42, "pet": "pet-2", "ok": true}))
            )
        );
        let (mut f, _) = Filling::start(&q);
        assert_eq!(f.take("d"), Step::Done(AnswerAction::Decline, None));
    }
}

#[cfg(test)]
mod bounds_tests {
    use super::*;
    use serde_json::json;

    fn field(v: Value) -> QuestionField {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_fields_bounds_are_shown_and_a_line_outside_them_is_asked_again() {
        let q = Open {
            question_id: "q-1".into(),
            call_id: None,
            asked_by: QuestionAsker::Model,
            message: "sign up".into(),
            url: None,
            fields: vec![
                field(json!({"name": "user", "type": "string", "required": true,
                    "minLength": 3, "maxLength": 8})),
                field(
                    json!({"name": "mail", "type": "string", "required": true, "format": "email"}),
                ),
                field(json!({"name": "age", "type": "integer", "required": true,
                    "minimum": 18.0, "maximum": 99.0})),
                field(
                    json!({"name": "tags", "type": "choices", "required": true, "maxItems": 1,
                    "options": [{"value": "a"}, {"value": "b"}]}),
                ),
            ],
        };
        let (mut f, first) = Filling::start(&q);
        assert!(first.contains("user (3-8 characters): "), "{first}");
        // Characters, not bytes.
        assert!(
            matches!(f.take("ab"), Step::Again(w) if w.contains("must be 3-8 characters (this is 2)"))
        );
        assert!(matches!(f.take("abcdefghi"), Step::Again(_)));
        let Step::Next(mail) = f.take("ééé") else {
            panic!()
        };
        assert!(mail.contains("(an email address)"), "{mail}");
        assert!(
            matches!(f.take("nobody"), Step::Again(w) if w.contains("must be an email address"))
        );
        let Step::Next(age) = f.take("a@b.example") else {
            panic!()
        };
        assert!(age.contains("(18 to 99)"), "{age}");
        assert!(matches!(f.take("7"), Step::Again(w) if w.contains("age must be 18 to 99")));
        let Step::Next(tags) = f.take("30") else {
            panic!()
        };
        assert!(tags.contains("(pick at most 1 of them)"), "{tags}");
        assert!(matches!(f.take("1,2"), Step::Again(_)));
        assert_eq!(
            f.take("2"),
            Step::Done(
                AnswerAction::Accept,
                Some(json!({"user": "ééé", "mail": "a@b.example", "age": 30, "tags": ["b"]}))
            )
        );
    }
}

#[cfg(test)]
mod url_tests {
    use super::*;

    #[test]
    fn a_links_host_is_shown_and_only_a_clear_yes_accepts() {
        assert_eq!(
            url_host("https://example.com:8443/a?b#c"),
            "example.com:8443"
        );
        assert!(url_host("https://bank.example@evil.example/login").starts_with("evil.example"));
        assert!(url_host("nonsense").contains("not a URL"));
        let q = Open {
            question_id: "q-1".into(),
            call_id: None,
            asked_by: QuestionAsker::Mcp { server: "s".into() },
            message: "Log in".into(),
            fields: Vec::new(),
            url: Some("https://auth.example/x".into()),
        };
        assert!(
            heading(&q).contains("host: auth.example"),
            "{}",
            heading(&q)
        );
        let (mut f, prompt) = Filling::start(&q);
        assert!(prompt.contains("going there?"));
        assert!(matches!(f.take("sure"), Step::Again(_)));
        assert_eq!(
            f.take("y"),
            Step::Done(AnswerAction::Accept, Some(Value::Object(Map::new())))
        );
        let (mut f, _) = Filling::start(&q);
        assert_eq!(f.take("d"), Step::Done(AnswerAction::Decline, None));
    }
}
