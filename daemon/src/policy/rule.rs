//! Policy rule types: decisions, approval modes, tiers and the rule itself.

use regex::Regex;
use serde::{Deserialize, Serialize};

/// Name of the shell tool whose `command` argument is parsed and checked
/// sub-command by sub-command.
pub const SHELL_TOOL_NAME: &str = "run_shell_command";

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
}

impl ApprovalMode {
    /// Parses the TOML/JSON spelling (`default`, `autoEdit`, `yolo`).
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "default" => Some(Self::Default),
            "autoEdit" => Some(Self::AutoEdit),
            "yolo" => Some(Self::Yolo),
            _ => None,
        }
    }
}

/// The outcome of a policy check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Decision {
    /// Run the tool without asking.
    #[serde(rename = "allow")]
    Allow,
    /// Refuse to run the tool.
    #[serde(rename = "deny")]
    Deny,
    /// Ask the user for confirmation.
    #[serde(rename = "ask_user")]
    AskUser,
}

impl Decision {
    /// Parses the TOML spelling (`allow`, `deny`, `ask_user`).
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "allow" => Some(Self::Allow),
            "deny" => Some(Self::Deny),
            "ask_user" => Some(Self::AskUser),
            _ => None,
        }
    }

    /// Severity used when combining decisions: deny > ask_user > allow.
    pub fn severity(self) -> u8 {
        match self {
            Self::Allow => 0,
            Self::AskUser => 1,
            Self::Deny => 2,
        }
    }

    /// The TOML spelling of this decision.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
            Self::AskUser => "ask_user",
        }
    }
}

/// The tier a rule was loaded from; the base of its final priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Tier {
    /// Built-in rules shipped with the daemon.
    Default = 1,
    /// The user's own policy files and settings.
    User = 2,
    /// Administrator policy files.
    Admin = 3,
}

impl Tier {
    /// The numeric base of this tier (1, 2 or 3).
    pub fn base(self) -> u32 {
        match self {
            Self::Default => 1,
            Self::User => 2,
            Self::Admin => 3,
        }
    }
}

/// Tool kinds are the tools' own (`read`, `edit`, ...).
pub use crate::tools::ToolKind;

/// Where a rule came from: file (or pseudo-file such as `<defaults>`),
/// 1-based rule index within it, and tier.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct RuleSource {
    /// File path or pseudo-file name.
    pub file: String,
    /// 1-based index of the `[[rule]]` table in the file.
    pub index: usize,
    /// Tier the rule belongs to.
    pub tier: Tier,
}

/// One policy rule. All present conditions must hold for the rule to match.
#[derive(Debug, Clone)]
pub struct PolicyRule {
    /// Tool names; empty matches any tool. `server__*` matches every tool of
    /// the MCP server `server` (the call must come from that server).
    pub tool_names: Vec<String>,
    /// Only calls from this MCP server match.
    pub mcp_name: Option<String>,
    /// Regex tested against the key-sorted compact JSON of the arguments.
    pub args_pattern: Option<Regex>,
    /// Shell command prefixes (word-wise match); empty means no prefix condition.
    pub command_prefix: Vec<String>,
    /// Regex tested against the (sub-)command text.
    pub command_regex: Option<Regex>,
    /// Tool kinds; empty matches any kind. Only the built-in rules set this,
    /// and it never matches MCP tools.
    pub kinds: Vec<ToolKind>,
    /// Tool names this rule never matches (used by the `tools.core` rule).
    pub except_tools: Vec<String>,
    /// The decision when the rule matches.
    pub decision: Decision,
    /// Priority within the tier, 0..=999.
    pub priority: u16,
    /// Approval modes the rule is active in; empty means all modes.
    pub modes: Vec<ApprovalMode>,
    /// Whether output redirection keeps an `allow` from this rule.
    pub allow_redirection: bool,
    /// Where the rule came from.
    pub source: RuleSource,
}

impl PolicyRule {
    /// A rule with no conditions and the given decision, priority and source.
    pub fn new(decision: Decision, priority: u16, source: RuleSource) -> Self {
        Self {
            tool_names: Vec::new(),
            mcp_name: None,
            args_pattern: None,
            command_prefix: Vec::new(),
            command_regex: None,
            kinds: Vec::new(),
            except_tools: Vec::new(),
            decision,
            priority,
            modes: Vec::new(),
            allow_redirection: false,
            source,
        }
    }

    /// Final priority scaled by 1000: `tier * 1000 + priority`.
    pub fn scaled_priority(&self) -> u32 {
        self.source.tier.base() * 1000 + u32::from(self.priority)
    }

    /// Final priority `tier + priority / 1000`.
    pub fn final_priority(&self) -> f64 {
        f64::from(self.scaled_priority()) / 1000.0
    }

    /// Whether the rule looks at the command or arguments (as opposed to
    /// matching every call of a tool).
    pub fn is_command_specific(&self) -> bool {
        self.args_pattern.is_some()
            || !self.command_prefix.is_empty()
            || self.command_regex.is_some()
    }
}

/// A reference to the rule that produced a decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatchedRule {
    /// Where the rule came from.
    pub source: RuleSource,
    /// Its final priority (`tier + priority / 1000`).
    pub final_priority: f64,
}

impl MatchedRule {
    /// Builds the reference for `rule`.
    pub fn of(rule: &PolicyRule) -> Self {
        Self {
            source: rule.source.clone(),
            final_priority: rule.final_priority(),
        }
    }
}

impl std::fmt::Display for MatchedRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} rule #{} (priority {:.3})",
            self.source.file, self.source.index, self.final_priority
        )
    }
}
