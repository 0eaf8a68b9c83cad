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
    /// `default`, `extension`, `workspace`, `user` or `admin`.
    pub tier: String,
    /// `tier + priority / 1000`.
    pub priority: f64,
    /// The rule's conditions that matched, in its own words
    /// (`toolName = "*"`, `commandPrefix = "rm"`, `modes = ["yolo"]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matched: Vec<String>,
    /// The rule's `denyMessage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny_message: Option<String>,
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
    /// For a deny: the deciding rule's `denyMessage` (what the model is told).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny_message: Option<String>,
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
    /// Every condition, in the rule's own words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny_message: Option<String>,
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
