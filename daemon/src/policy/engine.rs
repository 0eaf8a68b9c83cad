//! Evaluation: the highest-priority matching rule decides; shell commands are
//! decided part by part (`shell/`: a command line is allowed only when every
//! part bash would evaluate is provably inert or itself allowed).
//!
//! For `run_shell_command` the verdict combines:
//! * every command ([`PartKind::Command`]): the rule matching its words;
//!   outside yolo an allow becomes ask_user when it redirects output to a
//!   file and the rule does not set `allowRedirection`;
//! * the whole command line and every wrapper ([`PartKind::Wrapper`]), but
//!   only when the rule matching them looks at the command (`commandPrefix`,
//!   `commandRegex` or `argsPattern`), so that a deny such as
//!   `commandRegex = "curl.*\\| *sh"` on the whole line still wins;
//! * every evaluated part that is not a command ([`PartKind::Evaluated`]:
//!   assignments, arithmetic, dynamic names...): rules about particular
//!   commands may deny or ask but never allow it, so only a rule for every
//!   shell command (yolo's, or one allowing the tool outright) can;
//! * bare output redirections and parse errors: never allowed; ask_user,
//!   and deny in yolo (where nobody is asked);
//!
//! and then: any deny wins, any ask_user downgrades an allow. In
//! non-interactive use ask_user becomes deny.

use crate::policy::index::RuleIndex;
use crate::policy::matcher::{CallView, CommandText, rule_matches};
use crate::policy::rule::{
    ApprovalMode, Decision, MatchedRule, PolicyRule, SHELL_TOOL_NAME, Tier, ToolKind,
};
use crate::policy::session::SessionAllowlist;
use serde::Serialize;
use serde_json::Value;
use std::cell::OnceCell;

/// A tool call to check.
#[derive(Debug, Clone, Copy)]
pub struct PolicyInput<'a> {
    /// Tool name (for MCP tools either `tool` or `server__tool`).
    pub tool_name: &'a str,
    /// The call's arguments.
    pub args: &'a Value,
    /// MCP server the tool belongs to, if any.
    pub server_name: Option<&'a str>,
    /// Kind of the tool.
    pub tool_kind: ToolKind,
    /// Current approval mode.
    pub mode: ApprovalMode,
    /// Whether a user can be asked.
    pub interactive: bool,
}

/// The decision for one shell sub-command.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubcommandVerdict {
    /// The sub-command text (unquoted words joined by spaces), or the whole
    /// command line for the whole-line check.
    pub command: String,
    /// Its decision.
    pub decision: Decision,
    /// The rule that matched, if any.
    pub rule: Option<MatchedRule>,
}

/// The result of [`PolicyEngine::check`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyVerdict {
    /// Final decision.
    pub decision: Decision,
    /// The rule behind the final decision, if any.
    pub rule: Option<MatchedRule>,
    /// Per sub-command decisions (shell tool only), in the order found.
    pub subcommands: Vec<SubcommandVerdict>,
    /// Human-readable explanation.
    pub reason: String,
}

/// An immutable, priority-sorted rule set.
#[derive(Debug, Clone, Default)]
pub struct PolicyEngine {
    rules: Vec<PolicyRule>,
    index: RuleIndex,
}

/// One part's decision while a shell command is checked.
pub(super) struct Entry<'r> {
    pub(super) command: String,
    pub(super) decision: Decision,
    pub(super) rule: Option<&'r PolicyRule>,
    pub(super) note: Option<&'static str>,
}

impl PolicyEngine {
    /// Builds an engine. Rules are sorted once by final priority (highest
    /// first); ties put deny before ask_user before allow, then load order.
    pub fn new(mut rules: Vec<PolicyRule>) -> Self {
        rules.sort_by(|a, b| {
            b.scaled_priority()
                .cmp(&a.scaled_priority())
                .then(b.decision.severity().cmp(&a.decision.severity()))
        });
        let index = RuleIndex::build(&rules);
        Self { rules, index }
    }

    /// The rules in evaluation order.
    pub fn rules(&self) -> &[PolicyRule] {
        &self.rules
    }

    /// Checks a call against the rules only.
    pub fn check(&self, input: &PolicyInput<'_>) -> PolicyVerdict {
        self.check_with_session(input, &SessionAllowlist::default())
    }

    /// Checks a call, letting the session allowlist turn ask_user into allow.
    pub fn check_with_session(
        &self,
        input: &PolicyInput<'_>,
        session: &SessionAllowlist,
    ) -> PolicyVerdict {
        let qualified = qualified_name(input);
        let command = match input.args.get("command") {
            Some(Value::String(cmd))
                if input.tool_name == SHELL_TOOL_NAME && input.server_name.is_none() =>
            {
                Some(cmd.as_str())
            }
            _ => None,
        };
        let candidates = self
            .index
            .candidates(input.tool_name, &qualified, input.server_name);
        let mut verdict = match command {
            Some(cmd) => self.check_shell(input, &qualified, &candidates, cmd, session),
            None => self.check_plain(input, &qualified, &candidates, session),
        };
        if !input.interactive {
            for sub in &mut verdict.subcommands {
                if sub.decision == Decision::AskUser {
                    sub.decision = Decision::Deny;
                }
            }
            if verdict.decision == Decision::AskUser {
                verdict.decision = Decision::Deny;
                verdict.reason = format!(
                    "{} (non-interactive: ask_user becomes deny)",
                    verdict.reason
                );
            }
        }
        verdict
    }

    pub(super) fn first_match<'s>(
        &'s self,
        candidates: &[u32],
        call: &CallView<'_>,
    ) -> Option<&'s PolicyRule> {
        self.first_match_where(candidates, call, |_| true)
    }

    /// The first rule that `keep` accepts and that matches `call`.
    pub(super) fn first_match_where<'s>(
        &'s self,
        candidates: &[u32],
        call: &CallView<'_>,
        keep: impl Fn(&PolicyRule) -> bool,
    ) -> Option<&'s PolicyRule> {
        candidates
            .iter()
            .filter_map(|&i| self.rules.get(i as usize))
            .filter(|rule| keep(rule))
            .find(|rule| rule_matches(rule, call))
    }

    fn check_plain(
        &self,
        input: &PolicyInput<'_>,
        qualified: &str,
        candidates: &[u32],
        session: &SessionAllowlist,
    ) -> PolicyVerdict {
        let call = view(input, qualified, None);
        let rule = self.first_match(candidates, &call);
        let mut decision = rule.map_or(Decision::AskUser, |r| r.decision);
        let mut reason = describe(decision, rule, None, None);
        let mut matched = rule.map(MatchedRule::of);
        if decision == Decision::AskUser
            && rule.is_none_or(|r| r.source.tier != Tier::Admin)
            && session.allows_tool(qualified, input.server_name)
        {
            decision = Decision::Allow;
            matched = None;
            reason = "allowed for this session".to_owned();
        }
        PolicyVerdict {
            decision,
            rule: matched,
            subcommands: Vec::new(),
            reason,
        }
    }
}

fn qualified_name(input: &PolicyInput<'_>) -> String {
    match input.server_name {
        Some(server) if !input.tool_name.starts_with(&format!("{server}__")) => {
            format!("{server}__{}", input.tool_name)
        }
        _ => input.tool_name.to_owned(),
    }
}

pub(super) fn view<'a>(
    input: &PolicyInput<'a>,
    qualified: &'a str,
    command: Option<CommandText<'a>>,
) -> CallView<'a> {
    CallView {
        tool_name: input.tool_name,
        qualified,
        server: input.server_name,
        kind: input.tool_kind,
        mode: input.mode,
        args: input.args,
        command,
        json: OnceCell::new(),
    }
}

pub(super) fn describe(
    decision: Decision,
    rule: Option<&PolicyRule>,
    command: Option<&str>,
    note: Option<&str>,
) -> String {
    let what = match decision {
        Decision::Allow => "allowed",
        Decision::Deny => "denied",
        Decision::AskUser => "needs approval",
    };
    let by = match (rule, decision) {
        (Some(r), _) => format!("{}", MatchedRule::of(r)),
        // Without a rule only the session allowlist can allow.
        (None, Decision::Allow) => "session allowlist".to_owned(),
        (None, Decision::Deny | Decision::AskUser) => "no matching rule".to_owned(),
    };
    match (command, note) {
        (Some(cmd), Some(note)) => format!("`{cmd}` {what}: {note}"),
        (Some(cmd), None) => format!("`{cmd}` {what}: {by}"),
        (None, _) => format!("{what}: {by}"),
    }
}
