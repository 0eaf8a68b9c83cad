//! The answers a person can give to a call awaiting approval, for every
//! front end that asks at a terminal (`gemctl call`, `attach`, `prompt
//! --interactive`, `chat`): which of the daemon's outcomes fit the call,
//! the key that picks each, and the words that explain it.

use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::{ConfirmationOutcome, ConfirmationRequest, ToolCallSnapshot};

/// What a typed answer asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// One of the daemon's outcomes, as it is.
    Outcome(ConfirmationOutcome),
    /// Edit the arguments in `$EDITOR`, then `modify_with_editor`.
    Edit,
    /// Approve a plan (`exit_plan_mode`) and switch to this mode.
    ApprovePlan(ApprovalMode),
    /// Reject a plan; the next line is the feedback the model gets.
    RejectPlan,
}

/// Asked after a plan's `n`: the next line is the feedback.
pub(crate) const FEEDBACK_QUESTION: &str =
    "  what should change in the plan? (Enter alone: no feedback): ";

/// One answer offered for a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Choice {
    pub key: &'static str,
    pub words: String,
    pub answer: Answer,
}

/// The answers offered for `call`, in the order they are shown: once,
/// for the session (the tool, the command, or for MCP tools the tool and
/// the whole server), always (saved to the user's policy), edit, no.
pub(crate) fn choices(call: &ToolCallSnapshot) -> Vec<Choice> {
    let choice = |key, words: String, answer| Choice { key, words, answer };
    if let Some(ConfirmationRequest::Plan { .. }) = &call.confirmation {
        // 0.61's plan approval: which mode the implementation runs in, or
        // no with words for the model.
        return vec![
            choice(
                "y",
                "yes, and ask before each edit (default mode)".to_owned(),
                Answer::ApprovePlan(ApprovalMode::Default),
            ),
            choice(
                "a",
                "yes, and accept edits automatically (autoEdit mode)".to_owned(),
                Answer::ApprovePlan(ApprovalMode::AutoEdit),
            ),
            choice(
                "n",
                "no: say what should change (the model revises the plan)".to_owned(),
                Answer::RejectPlan,
            ),
        ];
    }
    let mut out = vec![choice(
        "y",
        "yes, once".to_owned(),
        Answer::Outcome(ConfirmationOutcome::ProceedOnce),
    )];
    match &call.confirmation {
        Some(ConfirmationRequest::Mcp {
            server_name,
            tool_name,
            ..
        }) => {
            out.push(choice(
                "a",
                format!("yes, and {tool_name} from now on in this session"),
                Answer::Outcome(ConfirmationOutcome::ProceedAlwaysTool),
            ));
            out.push(choice(
                "s",
                format!("yes, and every tool of server {server_name} in this session"),
                Answer::Outcome(ConfirmationOutcome::ProceedAlwaysServer),
            ));
        }
        Some(ConfirmationRequest::Exec { root_commands, .. }) if !root_commands.is_empty() => {
            out.push(choice(
                "a",
                format!(
                    "yes, and `{}` from now on in this session",
                    root_commands.join("`, `")
                ),
                Answer::Outcome(ConfirmationOutcome::ProceedAlways),
            ));
        }
        _ => out.push(choice(
            "a",
            format!("yes, and {} from now on in this session", call.name),
            Answer::Outcome(ConfirmationOutcome::ProceedAlways),
        )),
    }
    out.push(choice(
        "p",
        "yes, always: saved to ~/.gemini/policies".to_owned(),
        Answer::Outcome(ConfirmationOutcome::ProceedAlwaysAndSave),
    ));
    out.push(choice(
        "e",
        "edit the arguments in $EDITOR first".to_owned(),
        Answer::Edit,
    ));
    out.push(choice(
        "n",
        "no, do not run it".to_owned(),
        Answer::Outcome(ConfirmationOutcome::Cancel),
    ));
    out
}

/// The answer a typed line picks for `call`: its key, or the first word
/// of its words (`yes`, `no`, `edit`, `always`).
pub(crate) fn parse(call: &ToolCallSnapshot, line: &str) -> Option<Answer> {
    let typed = line.trim().to_ascii_lowercase();
    let answer = match typed.as_str() {
        "yes" | "once" => Some("y"),
        "always" | "session" => Some("a"),
        "server" => Some("s"),
        "save" | "policy" => Some("p"),
        "edit" => Some("e"),
        "no" | "cancel" => Some("n"),
        key => Some(key),
    }?;
    choices(call)
        .into_iter()
        .find(|c| c.key == answer)
        .map(|c| c.answer)
}

/// The question's options, one per line (`  y  yes, once`).
pub(crate) fn menu(call: &ToolCallSnapshot) -> String {
    choices(call)
        .iter()
        .map(|c| format!("  {}  {}", c.key, c.words))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The keys, for the line the answer is typed on (`y/a/s/p/e/n`).
pub(crate) fn keys(call: &ToolCallSnapshot) -> String {
    choices(call)
        .iter()
        .map(|c| c.key)
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(confirmation: serde_json::Value) -> ToolCallSnapshot {
        serde_json::from_value(json!({
            "callId": "call-3", "name": "srv__echo", "args": {}, "state": "awaiting_approval",
            "description": null, "confirmation": confirmation, "outputDelta": null,
            "result": null, "error": null, "decidedBy": null
        }))
        .unwrap()
    }

    #[test]
    fn an_mcp_call_offers_the_tool_and_the_server() {
        let c = call(json!({"type": "mcp", "title": "t", "serverName": "srv", "toolName": "echo"}));
        assert_eq!(keys(&c), "y/a/s/p/e/n");
        assert_eq!(
            parse(&c, "s"),
            Some(Answer::Outcome(ConfirmationOutcome::ProceedAlwaysServer))
        );
        assert_eq!(
            parse(&c, "a"),
            Some(Answer::Outcome(ConfirmationOutcome::ProceedAlwaysTool))
        );
        assert!(menu(&c).contains("every tool of server srv"));
    }

    #[test]
    fn a_command_names_its_root_commands_and_has_no_server_answer() {
        let c = call(
            json!({"type": "exec", "title": "t", "command": "git status && ls", "rootCommands": ["git", "ls"]}),
        );
        assert_eq!(keys(&c), "y/a/p/e/n");
        assert!(menu(&c).contains("`git`, `ls` from now on"));
        assert_eq!(parse(&c, "s"), None);
        assert_eq!(
            parse(&c, " P "),
            Some(Answer::Outcome(ConfirmationOutcome::ProceedAlwaysAndSave))
        );
        assert_eq!(parse(&c, "edit"), Some(Answer::Edit));
        assert_eq!(
            parse(&c, "no"),
            Some(Answer::Outcome(ConfirmationOutcome::Cancel))
        );
        assert_eq!(parse(&c, "maybe"), None);
    }
}
