//! `ask_user`: the model asks the session's people one to four questions,
//! as Gemini CLI 0.61 declares and checks it (same name, parameters,
//! declaration and result text). The questions become one question of
//! the session (`questions/`, one field per question, keyed by its index
//! as 0.61 keys the answers): every attached client sees it, the first
//! answer wins. Not offered to non-interactive sessions (the policy's
//! built-in rule denies it there, as 0.61's does), and declined at once
//! when nobody is attached.

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::contract::{
    ConfirmationDetails, OutputSink, Tool, ToolContext, ToolDisplay, ToolError, ToolInvocation,
    ToolKind, ToolLocation, ToolResult,
};
use crate::questions::form::Choice;
use crate::questions::{Action, AskedBy, Field, FieldKind, Form, Question};

pub const ASK_USER: &str = "ask_user";

/// What the model reads when the person dismissed the questions (0.61).
pub const DISMISSED: &str = "User dismissed ask_user dialog without answering.";

pub struct AskUserTool {
    schema: Value,
}

impl Default for AskUserTool {
    fn default() -> Self {
        Self::new()
    }
}

impl AskUserTool {
    pub fn new() -> Self {
        let schema = json!({
            "type": "object",
            "required": ["questions"],
            "properties": {
                "questions": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 4,
                    "items": {
                        "type": "object",
                        "required": ["question", "header", "type"],
                        "properties": {
                            "question": {"type": "string", "description": "The complete question to ask the user. Should be clear, specific, and end with a question mark."},
                            "header": {"type": "string", "description": "Very short label displayed as a chip/tag. Use abbreviations: \"Auth\" not \"Authentication\", \"Config\" not \"Configuration\". Examples: \"Auth method\", \"Library\", \"Approach\", \"Database\"."},
                            "type": {"type": "string", "enum": ["choice", "text", "yesno"], "default": "choice", "description": "Question type: 'choice' (default) for multiple-choice with options, 'text' for free-form input, 'yesno' for Yes/No confirmation with optional 'Other' feedback."},
                            "options": {
                                "type": "array",
                                "description": "The selectable choices for 'choice' type questions. Provide 2-4 options. An 'Other' option is automatically added for 'choice' and 'yesno' types. Not needed for 'text' or 'yesno'.",
                                "items": {
                                    "type": "object",
                                    "required": ["label", "description"],
                                    "properties": {
                                        "label": {"type": "string", "description": "The display text for this option (1-5 words). Example: \"OAuth 2.0\""},
                                        "description": {"type": "string", "description": "Brief explanation of this option. Example: \"Industry standard, supports SSO\""}
                                    }
                                }
                            },
                            "multiSelect": {"type": "boolean", "description": "Only applies when type='choice'. Set to true to allow selecting multiple options."},
                            "placeholder": {"type": "string", "description": "Hint text shown in the input field. For type='text', shown in the main input. For type='choice' and 'yesno', shown in the 'Other' custom input."}
                        }
                    }
                }
            }
        });
        AskUserTool { schema }
    }
}

/// One question as the model asked it (escapes undone as 0.61 does).
#[derive(Debug, Clone, PartialEq)]
struct Asked {
    question: String,
    header: String,
    kind: String,
    options: Vec<(String, String)>,
    placeholder: Option<String>,
}

fn unescape(s: &str) -> String {
    s.replace("\\r\\n", "\n").replace("\\n", "\n")
}

/// The questions of `args`, checked as 0.61 checks them.
fn questions_of(args: &Value) -> Result<Vec<Asked>, String> {
    let items = args
        .get("questions")
        .and_then(Value::as_array)
        .filter(|q| !q.is_empty())
        .ok_or("At least one question is required.")?;
    let mut out = Vec::new();
    for (i, q) in items.iter().enumerate() {
        let n = i + 1;
        let kind = q.get("type").and_then(Value::as_str).unwrap_or("choice");
        let options = q.get("options").and_then(Value::as_array);
        if kind == "choice" {
            let count = options.map_or(0, Vec::len);
            if count < 2 {
                return Err(format!(
                    "Question {n}: type='choice' requires 'options' array with 2-4 items."
                ));
            }
            if count > 4 {
                return Err(format!(
                    "Question {n}: 'options' array must have at most 4 items."
                ));
            }
        }
        let mut opts = Vec::new();
        for (j, opt) in options.into_iter().flatten().enumerate() {
            let m = j + 1;
            let label = opt.get("label").and_then(Value::as_str).unwrap_or("");
            if label.trim().is_empty() {
                return Err(format!(
                    "Question {n}, option {m}: 'label' is required and must be a non-empty string."
                ));
            }
            let Some(description) = opt.get("description").and_then(Value::as_str) else {
                return Err(format!(
                    "Question {n}, option {m}: 'description' is required and must be a string."
                ));
            };
            opts.push((unescape(label), unescape(description.trim())));
        }
        let text = |key: &str| q.get(key).and_then(Value::as_str).map(unescape);
        out.push(Asked {
            question: text("question").unwrap_or_default(),
            header: text("header").unwrap_or_default(),
            kind: kind.to_owned(),
            options: opts,
            placeholder: text("placeholder"),
        });
    }
    Ok(out)
}

/// The session question: one text field per question, named by its index
/// (0.61's answer keys), offering the options (any other text is the
/// "Other" answer).
fn form_of(questions: &[Asked]) -> Form {
    let fields = questions
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let options: Vec<Choice> = match q.kind.as_str() {
                "yesno" => ["Yes", "No"]
                    .iter()
                    .map(|v| Choice {
                        value: (*v).to_owned(),
                        label: None,
                        description: None,
                    })
                    .collect(),
                "choice" => q
                    .options
                    .iter()
                    .map(|(label, description)| Choice {
                        value: label.clone(),
                        label: None,
                        description: Some(description.clone()).filter(|d| !d.is_empty()),
                    })
                    .collect(),
                _ => Vec::new(),
            };
            let kind = if options.is_empty() {
                FieldKind::Text {
                    min_length: None,
                    max_length: None,
                    format: None,
                }
            } else {
                FieldKind::Choice {
                    options,
                    other: true,
                }
            };
            Field {
                name: i.to_string(),
                title: Some(q.header.clone()).filter(|h| !h.is_empty()),
                description: Some(match &q.placeholder {
                    Some(p) => format!("{} ({p})", q.question),
                    None => q.question.clone(),
                }),
                kind,
                required: false,
                default: None,
            }
        })
        .collect();
    Form { fields }
}

impl Tool for AskUserTool {
    fn name(&self) -> &str {
        ASK_USER
    }
    fn display_name(&self) -> &str {
        "Ask User"
    }
    fn description(&self) -> &str {
        "Ask the user one or more questions to gather preferences, clarify requirements, or make decisions."
    }
    fn kind(&self) -> ToolKind {
        // It changes nothing: the question is the interaction.
        ToolKind::Think
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }

    fn build(
        &self,
        _ctx: &ToolContext,
        args: &Value,
    ) -> Result<Box<dyn ToolInvocation>, ToolError> {
        let questions = questions_of(args).map_err(ToolError::invalid)?;
        Ok(Box::new(AskUserInvocation { questions }))
    }
}

pub struct AskUserInvocation {
    questions: Vec<Asked>,
}

#[async_trait]
impl ToolInvocation for AskUserInvocation {
    fn description(&self) -> String {
        let asked: Vec<&str> = self.questions.iter().map(|q| q.question.as_str()).collect();
        format!("Asking user: {}", asked.join(", "))
    }

    fn locations(&self) -> Vec<ToolLocation> {
        Vec::new()
    }

    async fn confirmation(&self) -> Result<ConfirmationDetails, ToolError> {
        Ok(ConfirmationDetails::Info {
            title: "Ask User".to_owned(),
            prompt: self.description(),
            urls: Vec::new(),
        })
    }

    async fn execute(
        self: Box<Self>,
        cancel: CancellationToken,
        output: OutputSink,
    ) -> Result<ToolResult, ToolError> {
        let Some(asker) = output.asker() else {
            return Ok(dismissed());
        };
        let question = Question {
            asked_by: AskedBy::Model,
            message: self.description(),
            form: form_of(&self.questions),
            link: None,
        };
        let answer = tokio::select! {
            answer = asker.ask(question) => answer,
            () = cancel.cancelled() => {
                return Err(ToolError::new(
                    crate::tools::ToolErrorKind::Cancelled,
                    "the call was cancelled",
                ));
            }
        };
        if answer.action != Action::Accept {
            return Ok(dismissed());
        }
        let answers: serde_json::Map<String, Value> = answer
            .content
            .unwrap_or_default()
            .into_iter()
            .filter(|(_, v)| v.as_str().is_some_and(|s| !s.is_empty()))
            .collect();
        Ok(answered(&self.questions, answers))
    }
}

fn dismissed() -> ToolResult {
    let mut result = ToolResult::text(DISMISSED);
    result.display = ToolDisplay::Text {
        text: "User dismissed dialog".to_owned(),
    };
    result
}

/// 0.61's result: `{"answers": {...}}` for the model, the answers by
/// header for people.
fn answered(questions: &[Asked], answers: serde_json::Map<String, Value>) -> ToolResult {
    let display = if answers.is_empty() {
        "User submitted without answering questions.".to_owned()
    } else {
        let lines: Vec<String> = answers
            .iter()
            .map(|(index, answer)| {
                let category = index
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| questions.get(i))
                    .map_or_else(|| format!("Q{index}"), |q| q.header.clone());
                let prefix = format!("  {category} → ");
                let indent = " ".repeat(prefix.chars().count());
                let text = answer.as_str().unwrap_or_default();
                format!(
                    "{prefix}{}",
                    text.split('\n')
                        .collect::<Vec<_>>()
                        .join(&format!("\n{indent}"))
                )
            })
            .collect();
        format!("**User answered:**\n{}", lines.join("\n"))
    };
    let mut result = ToolResult::text(json!({ "answers": answers }).to_string());
    result.display = ToolDisplay::Markdown { text: display };
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_checked_as_0_61_checks_them() {
        for (bad, says) in [
            (
                json!({"questions": []}),
                "At least one question is required.",
            ),
            (
                json!({"questions": [{"question": "q?", "header": "H", "type": "choice", "options": [{"label": "a", "description": ""}]}]}),
                "Question 1: type='choice' requires 'options' array with 2-4 items.",
            ),
            (
                json!({"questions": [{"question": "q?", "header": "H", "type": "text", "options": [{"label": " ", "description": ""}]}]}),
                "Question 1, option 1: 'label' is required and must be a non-empty string.",
            ),
            (
                json!({"questions": [{"question": "q?", "header": "H", "type": "text", "options": [{"label": "a"}]}]}),
                "Question 1, option 1: 'description' is required and must be a string.",
            ),
        ] {
            assert_eq!(questions_of(&bad).unwrap_err(), says, "{bad}");
        }
        let asked = questions_of(&json!({"questions": [
            {"question": "Which db?\\nPick one", "header": "DB", "type": "choice",
             "options": [{"label": "Postgres", "description": " solid "}, {"label": "SQLite", "description": ""}]},
            {"question": "Name?", "header": "Name", "type": "text"}
        ]}))
        .unwrap();
        assert_eq!(asked[0].question, "Which db?\nPick one");
        let form = form_of(&asked);
        assert_eq!(form.fields[0].name, "0");
        assert!(
            matches!(&form.fields[0].kind, FieldKind::Choice { options, other: true } if options.len() == 2)
        );
        assert!(matches!(form.fields[1].kind, FieldKind::Text { .. }));
    }

    #[test]
    fn the_result_reads_as_0_61_writes_it() {
        let asked = questions_of(&json!({"questions": [
            {"question": "Name?", "header": "Name", "type": "text"}
        ]}))
        .unwrap();
        let mut answers = serde_json::Map::new();
        answers.insert("0".into(), json!("Ada\nLovelace"));
        let result = answered(&asked, answers);
        assert_eq!(
            result.llm_content,
            vec![crate::tools::ContentPart::Text {
                text: r#"{"answers":{"0":"Ada\nLovelace"}}"#.into()
            }]
        );
        let ToolDisplay::Markdown { text } = result.display else {
            panic!()
        };
        assert_eq!(text, "**User answered:**\n  Name → Ada\n         Lovelace");
        let none = answered(&asked, serde_json::Map::new());
        assert!(
            matches!(none.display, ToolDisplay::Markdown { text } if text == "User submitted without answering questions.")
        );
    }
}
