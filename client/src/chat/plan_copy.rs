//! `/plan copy` (0.61: "Copy the currently approved plan to your
//! clipboard"): which plan is the approved one (the last `exit_plan_mode`
//! call of the session that ended approved, seen in its events), and the
//! terminal's way to a clipboard: the plan is printed and, on a terminal,
//! sent as an OSC 52 "set clipboard" sequence, which terminals (and tmux
//! with `set-clipboard on`) put on the system clipboard, over ssh too.

use base64::Engine;
use geminid_protocol::tool::{CallState, ToolCallSnapshot, ToolDisplay};

/// What `exit_plan_mode` shows when the plan was approved (0.61's
/// `returnDisplay`), followed by the plan's path.
const APPROVED: &str = "Plan approved: ";

/// The plan file a call approved, when `call` is an approved
/// `exit_plan_mode`.
pub fn approved_plan(call: &ToolCallSnapshot) -> Option<String> {
    if call.name != "exit_plan_mode" || call.state != CallState::Success {
        return None;
    }
    let ToolDisplay::Text { text } = &call.result.as_ref()?.display else {
        return None;
    };
    let shown = text.strip_prefix(APPROVED)?;
    // The located file is the resolved one; the display says the same.
    Some(
        call.locations
            .first()
            .map(|l| l.path.clone())
            .unwrap_or_else(|| shown.to_owned()),
    )
}

/// The OSC 52 sequence that puts `text` on the clipboard.
pub fn osc52(text: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    format!("\x1b]52;c;{encoded}\x07")
}

/// What `/plan copy` prints: the plan, then what was done (the OSC 52
/// sequence ahead of that line when `terminal`); or why there is nothing
/// to copy.
pub fn copy(approved: Option<&str>, terminal: bool) -> Result<String, String> {
    let Some(path) = approved else {
        return Err(
            "no approved plan to copy: no plan has been approved in this session yet".to_owned(),
        );
    };
    let plan = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the approved plan {path}: {e}"))?;
    let mut out = plan.trim_end().to_owned();
    out.push('\n');
    if terminal {
        out.push_str(&osc52(&plan));
        out.push_str(&format!(
            "copied the approved plan {path} to the clipboard (OSC 52)"
        ));
    } else {
        out.push_str(&format!(
            "the approved plan {path} (not a terminal: nothing copied)"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use geminid_protocol::tool::{ToolCallResult, ToolLocation};

    fn exit_call(state: CallState, display: &str) -> ToolCallSnapshot {
        ToolCallSnapshot {
            call_id: "c".into(),
            name: "exit_plan_mode".into(),
            args: serde_json::json!({"plan_filename": "p.md"}),
            state,
            description: None,
            locations: vec![ToolLocation {
                path: "/h/plans/p.md".into(),
                line: None,
            }],
            confirmation: None,
            output_delta: None,
            result: Some(ToolCallResult {
                llm_content: Vec::new(),
                display: ToolDisplay::Text {
                    text: display.into(),
                },
                summary: None,
                structured_content: None,
            }),
            error: None,
            decided_by: None,
        }
    }

    #[test]
    fn only_an_approved_exit_names_the_plan() {
        assert_eq!(
            approved_plan(&exit_call(
                CallState::Success,
                "Plan approved: /h/plans/p.md"
            )),
            Some("/h/plans/p.md".into())
        );
        for display in [
            "Feedback: more tests",
            "Rejected (no feedback)",
            "Error: Invalid plan",
        ] {
            assert_eq!(approved_plan(&exit_call(CallState::Success, display)), None);
        }
        assert_eq!(
            approved_plan(&exit_call(CallState::Executing, "Plan approved: /x")),
            None
        );
        let mut other = exit_call(CallState::Success, "Plan approved: /x");
        other.name = "write_file".into();
        assert_eq!(approved_plan(&other), None);
    }

    #[test]
    fn the_clipboard_gets_the_plan_in_base64() {
        assert_eq!(osc52("# Plan\n"), "\x1b]52;c;IyBQbGFuCg==\x07");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.md");
        std::fs::write(&path, "# Plan\n\n1. Do it.\n").unwrap();
        let path = path.display().to_string();
        let shown = copy(Some(&path), true).unwrap();
        assert!(
            shown.starts_with("# Plan\n\n1. Do it.\n\x1b]52;c;"),
            "{shown:?}"
        );
        assert!(shown.ends_with("to the clipboard (OSC 52)"));
        assert!(!copy(Some(&path), false).unwrap().contains('\x1b'));
        assert!(
            copy(None, true)
                .unwrap_err()
                .starts_with("no approved plan")
        );
        assert!(copy(Some("/nonexistent/p.md"), true).is_err());
    }
}
