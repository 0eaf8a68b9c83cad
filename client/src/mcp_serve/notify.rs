//! What an MCP client hears while a call runs: the `notifications/progress`
//! of a call that carried a `progressToken` (one per snapshot of the call:
//! state changes and output), and the log messages (`notifications/message`)
//! a call's state changes are worth, filtered by the level the client set
//! with `logging/setLevel`. Pure: the handler sends what these return.
#![allow(deprecated)] // rmcp marks MCP logging deprecated (SEP-2577); the spec still has it.

use geminid_protocol::tool::{CallState, ToolCallSnapshot};
use rmcp::model::LoggingLevel;
use serde_json::{Value, json};

/// The level a connection logs at until the client sets one: warnings and
/// worse (a call waiting for a person is a warning).
pub const DEFAULT_LEVEL: LoggingLevel = LoggingLevel::Warning;

/// Output longer than this goes into a progress message cut, with a mark.
const MESSAGE_LIMIT: usize = 4096;

/// True when a message at `level` passes the client's `threshold`.
pub fn passes(level: LoggingLevel, threshold: LoggingLevel) -> bool {
    level as u8 >= threshold as u8
}

/// The progress message of one snapshot: its new output, else what its
/// state means; `None` when the snapshot says nothing new.
pub fn progress_message(call: &ToolCallSnapshot) -> Option<String> {
    if let Some(delta) = call.output_delta.as_deref().filter(|d| !d.is_empty()) {
        return Some(cut(delta));
    }
    Some(match call.state {
        CallState::Validating => "validating".to_owned(),
        CallState::Scheduled => "scheduled".to_owned(),
        CallState::AwaitingApproval => "waiting for approval".to_owned(),
        CallState::Executing => match &call.description {
            Some(d) => format!("running: {d}"),
            None => "running".to_owned(),
        },
        // The result itself ends the request.
        _ => return None,
    })
}

/// The log message a snapshot is worth, with its level; output deltas are
/// progress, not log lines.
pub fn log_entry(session_id: &str, call: &ToolCallSnapshot) -> Option<(LoggingLevel, Value)> {
    if call.output_delta.is_some() && call.state == CallState::Executing {
        return None;
    }
    let what = call.description.as_deref().unwrap_or(&call.name);
    let (level, message) = match call.state {
        CallState::Validating => return None,
        CallState::Scheduled => (LoggingLevel::Debug, format!("{what}: scheduled")),
        CallState::AwaitingApproval => (
            LoggingLevel::Warning,
            format!(
                "{what}: waiting for approval in geminid session {session_id} \
                 (answer with `gemctl attach {session_id}`)"
            ),
        ),
        CallState::Executing => (LoggingLevel::Info, format!("{what}: running")),
        CallState::Success => (LoggingLevel::Info, format!("{what}: done")),
        CallState::Cancelled => (LoggingLevel::Notice, format!("{what}: cancelled")),
        _ => {
            let why = call
                .error
                .as_ref()
                .map(|e| format!("{} ({})", e.message, e.kind))
                .unwrap_or_else(|| format!("{:?}", call.state));
            (LoggingLevel::Error, format!("{what}: {why}"))
        }
    };
    Some((
        level,
        json!({
            "message": message,
            "session": session_id,
            "callId": call.call_id,
            "tool": call.name,
            "state": call.state,
        }),
    ))
}

fn cut(text: &str) -> String {
    if text.len() <= MESSAGE_LIMIT {
        return text.to_owned();
    }
    let mut end = MESSAGE_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes more)", &text[..end], text.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use geminid_protocol::tool::ToolCallError;

    fn snapshot(state: CallState) -> ToolCallSnapshot {
        ToolCallSnapshot {
            call_id: "call-1".into(),
            name: "run_shell_command".into(),
            args: json!({}),
            state,
            description: Some("ls".into()),
            locations: Vec::new(),
            confirmation: None,
            output_delta: None,
            result: None,
            error: None,
            decided_by: None,
        }
    }

    #[test]
    fn levels_filter_in_spec_order() {
        assert!(passes(LoggingLevel::Error, LoggingLevel::Warning));
        assert!(passes(LoggingLevel::Warning, LoggingLevel::Warning));
        assert!(!passes(LoggingLevel::Info, LoggingLevel::Warning));
        assert!(passes(LoggingLevel::Debug, LoggingLevel::Debug));
        assert!(!passes(LoggingLevel::Critical, LoggingLevel::Emergency));
    }

    #[test]
    fn output_is_progress_and_states_are_logs() {
        let mut running = snapshot(CallState::Executing);
        running.output_delta = Some("line 1\n".into());
        assert_eq!(progress_message(&running).as_deref(), Some("line 1\n"));
        assert!(log_entry("s", &running).is_none());

        let waiting = snapshot(CallState::AwaitingApproval);
        let (level, data) = log_entry("s1", &waiting).unwrap();
        assert_eq!(level, LoggingLevel::Warning);
        assert!(
            data["message"]
                .as_str()
                .unwrap()
                .contains("gemctl attach s1")
        );
        assert_eq!(data["state"], "awaiting_approval");

        let mut failed = snapshot(CallState::Error);
        failed.error = Some(ToolCallError {
            kind: "execution".into(),
            message: "exit 2".into(),
        });
        let (level, data) = log_entry("s", &failed).unwrap();
        assert_eq!(level, LoggingLevel::Error);
        assert_eq!(data["message"], "ls: exit 2 (execution)");
        assert!(progress_message(&failed).is_none());
    }

    #[test]
    fn long_output_is_cut_on_a_char_boundary() {
        let mut running = snapshot(CallState::Executing);
        running.output_delta = Some("é".repeat(3000));
        let message = progress_message(&running).unwrap();
        assert!(
            message.ends_with("(1904 bytes more)"),
            "{}",
            &message[4000..]
        );
    }
}
