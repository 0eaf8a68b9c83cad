//! Policy: decides whether a tool call runs, is refused, or asks a person.
//!
//! Pure and synchronous: no IO here. Until the TOML policy engine lands this
//! is the fixed default of the foundation: read-only tools run, edits run in
//! autoEdit, everything runs in yolo, anything else asks; in a
//! non-interactive session "ask" becomes "deny".

use serde::{Deserialize, Serialize};

use crate::tools::ToolKind;

/// How much a session lets tools do without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum ApprovalMode {
    #[default]
    #[serde(rename = "default")]
    Default,
    #[serde(rename = "autoEdit")]
    AutoEdit,
    #[serde(rename = "yolo")]
    Yolo,
}

/// What the policy says about one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Allow,
    Deny,
    AskUser,
}

/// The decision and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub decision: Decision,
    pub reason: String,
}

/// The facts a decision depends on.
#[derive(Debug, Clone, Copy)]
pub struct PolicyInput<'a> {
    pub tool_name: &'a str,
    pub kind: ToolKind,
    pub mode: ApprovalMode,
    pub interactive: bool,
}

/// Decides one call.
pub fn decide(input: PolicyInput<'_>) -> Verdict {
    let (decision, why) = match input.mode {
        ApprovalMode::Yolo => (Decision::Allow, "yolo mode allows every tool"),
        ApprovalMode::AutoEdit if input.kind.is_edit() => {
            (Decision::Allow, "autoEdit mode allows edits")
        }
        ApprovalMode::AutoEdit | ApprovalMode::Default if input.kind.is_read_only() => {
            (Decision::Allow, "read-only tools are allowed")
        }
        ApprovalMode::AutoEdit | ApprovalMode::Default => {
            (Decision::AskUser, "tools that change things ask first")
        }
    };
    match (decision, input.interactive) {
        (Decision::AskUser, false) => Verdict {
            decision: Decision::Deny,
            reason: format!(
                "{} needs approval, and the session is non-interactive",
                input.tool_name
            ),
        },
        (decision, _) => Verdict {
            decision,
            reason: why.to_owned(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(kind: ToolKind, mode: ApprovalMode, interactive: bool) -> Decision {
        decide(PolicyInput {
            tool_name: "t",
            kind,
            mode,
            interactive,
        })
        .decision
    }

    #[test]
    fn fixed_default_table() {
        use ApprovalMode::*;
        use Decision::*;
        let cases = [
            (ToolKind::Read, Default, true, Allow),
            (ToolKind::Search, Default, false, Allow),
            (ToolKind::Edit, Default, true, AskUser),
            (ToolKind::Edit, Default, false, Deny),
            (ToolKind::Edit, AutoEdit, true, Allow),
            (ToolKind::Execute, AutoEdit, true, AskUser),
            (ToolKind::Execute, Yolo, false, Allow),
            (ToolKind::Other, Default, true, AskUser),
        ];
        for (kind, mode, interactive, want) in cases {
            assert_eq!(
                check(kind, mode, interactive),
                want,
                "{kind:?} {mode:?} {interactive}"
            );
        }
    }
}
