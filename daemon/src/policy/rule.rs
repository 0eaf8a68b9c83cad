//! Policy rule types: decisions, approval modes, tiers and the rule itself.

use regex::Regex;
use serde::{Deserialize, Serialize};

/// Name of the shell tool whose `command` argument is parsed and checked
/// sub-command by sub-command.
pub const SHELL_TOOL_NAME: &str = "run_shell_command";

pub use super::mode::ApprovalMode;

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

/// The tier a rule was loaded from; the base of its final priority. The
/// bases are 0.61's: Default 1, Extension 2, Workspace 3, User 4, Admin 5
/// (the seed's three tiers keep their order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Tier {
    /// Built-in rules shipped with the daemon.
    Default = 1,
    /// Rules from installed extensions (`~/.gemini/extensions/*/policies`);
    /// never `allow`, never for yolo.
    Extension = 2,
    /// Rules from the workspace's `.gemini/policies`.
    Workspace = 3,
    /// The user's own policy files and settings.
    User = 4,
    /// Administrator policy files.
    Admin = 5,
}

impl Tier {
    /// The numeric base of this tier (1 to 5).
    pub fn base(self) -> u32 {
        self as u32
    }

    /// The tier's name (`default`, `extension`, `workspace`, `user`, `admin`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::Extension => "extension",
            Self::Workspace => "workspace",
            Self::User => "user",
            Self::Admin => "admin",
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
    /// `interactive`: the rule applies only when a person can (true) or
    /// cannot (false) be asked; `None` in both.
    pub interactive: Option<bool>,
    /// `toolAnnotations`: every key must be present in the tool's
    /// annotations with the same value.
    pub tool_annotations: Option<serde_json::Map<String, serde_json::Value>>,
    /// `subagent`: only calls made by this subagent match (geminid runs
    /// none, so such a rule never matches, as in 0.61 for the main agent).
    pub subagent: Option<String>,
    /// `denyMessage`: shown to the model in the tool error and to people.
    pub deny_message: Option<String>,
    /// `name`: a label (0.61's shipped files use it).
    pub label: Option<String>,
    /// `sandboxNetwork` (geminid's own): a shell command this rule lets
    /// run gets the network inside the sandbox.
    pub sandbox_network: bool,
    /// A stand-in for a rule that could not be understood: it never
    /// decides alone, it only makes the decision for the tools it names
    /// stricter (see `engine::apply_floors`).
    pub floor: bool,
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
            interactive: None,
            tool_annotations: None,
            subagent: None,
            deny_message: None,
            label: None,
            sandbox_network: false,
            floor: false,
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
    /// The conditions that matched (`toolName = "*"`, `commandPrefix =
    /// "git"`, `modes`...), in the rule's own words.
    pub matched: Vec<String>,
    /// The rule's `denyMessage`, when it has one.
    pub deny_message: Option<String>,
    /// The rule's `sandboxNetwork`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sandbox_network: bool,
}

impl MatchedRule {
    /// Builds the reference for `rule`.
    pub fn of(rule: &PolicyRule) -> Self {
        Self {
            source: rule.source.clone(),
            final_priority: rule.final_priority(),
            matched: rule.conditions(),
            deny_message: rule.deny_message.clone(),
            sandbox_network: rule.sandbox_network,
        }
    }
}

impl PolicyRule {
    /// The rule's conditions in its own words, for explanations.
    pub fn conditions(&self) -> Vec<String> {
        let mut out = Vec::new();
        let list = |items: &[String]| match items {
            [one] => format!("{one:?}"),
            many => format!("{many:?}"),
        };
        if self.floor {
            out.push("unreadable rule (stands for ask_user at least)".to_owned());
        }
        if !self.tool_names.is_empty() {
            out.push(format!("toolName = {}", list(&self.tool_names)));
        }
        if let Some(server) = &self.mcp_name {
            out.push(format!("mcpName = {server:?}"));
        }
        if !self.command_prefix.is_empty() {
            out.push(format!("commandPrefix = {}", list(&self.command_prefix)));
        }
        if let Some(re) = &self.command_regex {
            out.push(format!("commandRegex = {:?}", re.as_str()));
        }
        if let Some(re) = &self.args_pattern {
            out.push(format!("argsPattern = {:?}", re.as_str()));
        }
        if !self.modes.is_empty() {
            let modes: Vec<String> = self
                .modes
                .iter()
                .map(|m| format!("{:?}", m.as_str()))
                .collect();
            out.push(format!("modes = [{}]", modes.join(", ")));
        }
        if let Some(interactive) = self.interactive {
            out.push(format!("interactive = {interactive}"));
        }
        if let Some(annotations) = &self.tool_annotations {
            out.push(format!(
                "toolAnnotations = {}",
                serde_json::Value::Object(annotations.clone())
            ));
        }
        if let Some(subagent) = &self.subagent {
            out.push(format!("subagent = {subagent:?}"));
        }
        if !self.kinds.is_empty() {
            let kinds: Vec<String> = self.kinds.iter().map(|k| format!("{k:?}")).collect();
            out.push(format!("tool kind in [{}]", kinds.join(", ")));
        }
        if !self.except_tools.is_empty() {
            out.push(format!("tool not in {}", list(&self.except_tools)));
        }
        if out.is_empty() {
            out.push("every tool".to_owned());
        }
        out
    }
}

impl std::fmt::Display for MatchedRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} rule #{} ({} tier, priority {:.3}; {})",
            self.source.file,
            self.source.index,
            self.source.tier.name(),
            self.final_priority,
            self.matched.join(", ")
        )
    }
}
