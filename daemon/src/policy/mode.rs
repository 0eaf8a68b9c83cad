//! The approval mode a session runs in, on its own: the tools (which
//! switch it, `tools/builtin/plan_mode.rs`) and the policy (which decides
//! by it) both name it, and neither names the other for it.

use serde::{Deserialize, Serialize};

/// The approval mode the session runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum ApprovalMode {
    /// Normal mode: writes and commands ask the user.
    #[default]
    #[serde(rename = "default")]
    Default,
    /// File edits are allowed without asking.
    #[serde(rename = "autoEdit")]
    AutoEdit,
    /// Everything is allowed unless a rule denies it.
    #[serde(rename = "yolo")]
    Yolo,
    /// Read-only research (0.61's plan mode): only read-only tools run
    /// unless a rule says otherwise.
    #[serde(rename = "plan")]
    Plan,
}

impl ApprovalMode {
    /// Parses the TOML/JSON spelling (`default`, `autoEdit`, `yolo`, `plan`).
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "default" => Some(Self::Default),
            "autoEdit" => Some(Self::AutoEdit),
            "yolo" => Some(Self::Yolo),
            "plan" => Some(Self::Plan),
            _ => None,
        }
    }

    /// The TOML/JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::AutoEdit => "autoEdit",
            Self::Yolo => "yolo",
            Self::Plan => "plan",
        }
    }
}
