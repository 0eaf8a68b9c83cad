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
use crate::policy::matcher::{
    CallView, CommandText, looks_at_arguments, rule_matches, rule_targets,
};
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
    /// The tool's own name on its MCP server (for `mcp_<server>_<tool>`).
    pub remote_name: Option<&'a str>,
    /// The tool's annotations (an MCP tool's `annotations`), if any.
    pub annotations: Option<&'a serde_json::Map<String, Value>>,
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
    /// The deciding rule's `denyMessage`, when the decision is deny.
    pub deny_message: Option<String>,
}

impl PolicyVerdict {
    /// Whether the rules that let this call run grant it the network in
    /// the sandbox: the deciding rule, and for a shell command the rule of
    /// every one of its parts (a part no such rule matched keeps it off).
    pub fn grants_network(&self) -> bool {
        let grants = |rule: &Option<MatchedRule>| rule.as_ref().is_some_and(|r| r.sandbox_network);
        if self.subcommands.is_empty() {
            grants(&self.rule)
        } else {
            self.subcommands.iter().all(|s| grants(&s.rule))
        }
    }
}

/// An immutable, priority-sorted rule set.
#[derive(Debug, Clone, Default)]
pub struct PolicyEngine {
    rules: Vec<PolicyRule>,
    index: RuleIndex,
    /// Positions of the stand-ins for rules that could not be understood.
    floors: Vec<u32>,
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
        let floors = rules
            .iter()
            .enumerate()
            .filter(|(_, r)| r.floor)
            .map(|(i, _)| u32::try_from(i).unwrap_or(u32::MAX))
            .collect();
        Self {
            rules,
            index,
            floors,
        }
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
        self.apply_floors(input, &qualified, &mut verdict);
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
        verdict.deny_message = match verdict.decision {
            Decision::Deny => verdict.rule.as_ref().and_then(|r| r.deny_message.clone()),
            Decision::Allow | Decision::AskUser => None,
        };
        verdict
    }

    /// Whether the model is not told about a tool at all (0.61's
    /// `getExcludedTools`): the first rule that applies to the tool
    /// whatever its arguments denies it (rules about arguments that deny
    /// are passed over, ones that allow or ask keep it), or a rule that
    /// could not be read denies it. `tools.core` and `tools.exclude` hide
    /// tools this way.
    pub fn excludes(&self, input: &PolicyInput<'_>) -> bool {
        let qualified = qualified_name(input);
        let call = view(input, &qualified, None);
        let floor_denies = self.floors.iter().any(|&i| {
            self.rules
                .get(i as usize)
                .is_some_and(|rule| rule.decision == Decision::Deny && rule_targets(rule, &call))
        });
        if floor_denies {
            return true;
        }
        let candidates = self
            .index
            .candidates(input.tool_name, &qualified, input.server_name);
        for rule in candidates
            .iter()
            .filter_map(|&i| self.rules.get(i as usize))
        {
            if rule.floor || !rule_targets(rule, &call) {
                continue;
            }
            if looks_at_arguments(rule) {
                if rule.decision == Decision::Deny {
                    continue;
                }
                return false;
            }
            return rule.decision == Decision::Deny;
        }
        false
    }

    /// Rules that could not be understood stand for the tools they name:
    /// the decision for those tools is at least theirs (ask_user, or deny
    /// when the broken rule said deny), whatever else matched.
    fn apply_floors(&self, input: &PolicyInput<'_>, qualified: &str, verdict: &mut PolicyVerdict) {
        let call = view(input, qualified, None);
        for &i in &self.floors {
            let Some(rule) = self.rules.get(i as usize) else {
                continue;
            };
            let mut plain = rule.clone();
            plain.floor = false;
            if rule.decision.severity() <= verdict.decision.severity()
                || !rule_matches(&plain, &call)
            {
                continue;
            }
            verdict.decision = rule.decision;
            verdict.rule = Some(MatchedRule::of(rule));
            verdict.reason = describe(rule.decision, Some(rule), None, None);
        }
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
            .filter(|rule| !rule.floor && keep(rule))
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
            deny_message: None,
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
        remote: input.remote_name,
        annotations: input.annotations,
        interactive: input.interactive,
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
    let message = match (decision, rule.and_then(|r| r.deny_message.as_deref())) {
        (Decision::Deny, Some(message)) => format!(" — {message}"),
        _ => String::new(),
    };
    match (command, note) {
        (Some(cmd), Some(note)) => format!("`{cmd}` {what}: {note}"),
        (Some(cmd), None) => format!("`{cmd}` {what}: {by}{message}"),
        (None, _) => format!("{what}: {by}{message}"),
    }
}
