//! Explaining policy: `policy.check` and `policy.list`.

use serde::{Deserialize, Serialize};

/// Which rule decided, and where it lives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleRef {
    /// The policy file (or `<defaults>`, or a settings file).
    pub file: String,
    /// 1-based index of the `[[rule]]` in the file.
    pub index: usize,
    /// `default`, `user` or `admin`.
    pub tier: String,
    /// `tier + priority / 1000`.
    pub priority: f64,
}

/// One sub-command of a shell command and its own decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubcommandDecision {
    pub command: String,
    /// `allow`, `deny` or `ask_user`.
    pub decision: String,
    pub rule: Option<RuleRef>,
}

/// Result of `policy.check`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyCheckResult {
    /// `allow`, `deny` or `ask_user`.
    pub decision: String,
    /// The rule behind the decision, when one matched.
    pub rule: Option<RuleRef>,
    /// For `run_shell_command`: every sub-command found.
    pub subcommands: Vec<SubcommandDecision>,
    /// Why, in words.
    pub reason: String,
    /// The approval mode and interactivity the check used.
    pub approval_mode: crate::session::ApprovalMode,
    pub interactive: bool,
}

/// One loaded rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRuleInfo {
    pub source: RuleRef,
    pub decision: String,
    /// Empty: any tool.
    pub tool_names: Vec<String>,
    pub mcp_name: Option<String>,
    pub args_pattern: Option<String>,
    pub command_prefix: Vec<String>,
    pub command_regex: Option<String>,
    /// Empty: every mode.
    pub modes: Vec<crate::session::ApprovalMode>,
    pub allow_redirection: bool,
}

/// Result of `policy.list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyList {
    /// Every rule, highest priority first.
    pub rules: Vec<PolicyRuleInfo>,
    /// Problems of the last load (broken files, an ignored admin directory).
    pub problems: Vec<String>,
}
