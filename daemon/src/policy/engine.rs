//! Evaluation: the highest-priority matching rule decides; shell commands are
//! decided sub-command by sub-command.
//!
//! For `run_shell_command` the verdict combines:
//! * every [`CommandRole::Leaf`] sub-command (always counts);
//! * the whole command line and every [`CommandRole::Context`] sub-command,
//!   but only when the rule matching them looks at the command
//!   (`commandPrefix`, `commandRegex` or `argsPattern`), so that a deny such
//!   as `commandRegex = "curl.*\\| *sh"` on the whole line still wins;
//!
//! and then: any deny wins, any ask_user downgrades an allow. Outside yolo,
//! an allow becomes ask_user when the sub-command redirects output to a file
//! (unless the rule sets `allowRedirection`), runs with `NAME=value`
//! assignments, or has an unknowable name or payload; a parse error caps the
//! result at ask_user. In non-interactive use ask_user becomes deny.

use crate::policy::index::RuleIndex;
use crate::policy::matcher::{CallView, CommandText, rule_matches};
use crate::policy::rule::{
    ApprovalMode, Decision, MatchedRule, PolicyRule, SHELL_TOOL_NAME, Tier, ToolKind,
};
use crate::policy::session::SessionAllowlist;
use crate::policy::shell::{CommandRole, ShellCommand, split_command};
use serde::Serialize;
use serde_json::Value;
use std::cell::OnceCell;

/// Directories whose binaries are matched by basename for `allow` rules too
/// (`/usr/bin/git status` is allowed by `git status`; `./git status` is not).
const SYSTEM_DIRS: &[&str] = &[
    "/bin",
    "/usr/bin",
    "/usr/local/bin",
    "/sbin",
    "/usr/sbin",
    "/opt/homebrew/bin",
];

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

struct Entry<'r> {
    command: String,
    decision: Decision,
    rule: Option<&'r PolicyRule>,
    note: Option<&'static str>,
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

    fn first_match<'s>(
        &'s self,
        candidates: &[u32],
        call: &CallView<'_>,
    ) -> Option<&'s PolicyRule> {
        candidates
            .iter()
            .filter_map(|&i| self.rules.get(i as usize))
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

    fn check_shell(
        &self,
        input: &PolicyInput<'_>,
        qualified: &str,
        candidates: &[u32],
        command: &str,
        session: &SessionAllowlist,
    ) -> PolicyVerdict {
        let split = split_command(command);
        let mut entries: Vec<Entry<'_>> = Vec::new();
        let has_leaf = split.commands.iter().any(|c| c.role == CommandRole::Leaf);
        let whole = view(input, qualified, Some(CommandText::Whole(command)));
        let whole_rule = self.first_match(candidates, &whole);
        if !has_leaf || whole_rule.is_some_and(PolicyRule::is_command_specific) {
            let mut decision = whole_rule.map_or(Decision::AskUser, |r| r.decision);
            let session_ok = session.allows_tool(qualified, None)
                || session.allows_command(
                    &command
                        .split_whitespace()
                        .map(str::to_owned)
                        .collect::<Vec<_>>(),
                );
            if decision == Decision::AskUser
                && whole_rule.is_none_or(|r| r.source.tier != Tier::Admin)
                && session_ok
            {
                decision = Decision::Allow;
            }
            entries.push(Entry {
                command: command.to_owned(),
                decision,
                rule: whole_rule,
                note: None,
            });
        }
        for sub in &split.commands {
            let entry = self.check_sub(input, qualified, candidates, sub, session);
            let counts = sub.role == CommandRole::Leaf
                || entry.rule.is_some_and(PolicyRule::is_command_specific);
            if counts {
                entries.push(entry);
            }
        }
        let mut decision = entries
            .iter()
            .map(|e| e.decision)
            .max_by_key(|d| d.severity())
            .unwrap_or(Decision::AskUser);
        let deciding = entries.iter().find(|e| e.decision == decision);
        let mut reason = match deciding {
            Some(e) => describe(decision, e.rule, Some(&e.command), e.note),
            None => describe(decision, None, None, None),
        };
        let rule = deciding.and_then(|e| e.rule).map(MatchedRule::of);
        if input.mode != ApprovalMode::Yolo && decision == Decision::Allow {
            if split.parse_error {
                decision = Decision::AskUser;
                reason = "the command could not be parsed completely".to_owned();
            } else if split.unverifiable {
                decision = Decision::AskUser;
                reason =
                    "the command evaluates arithmetic on text containing a command substitution"
                        .to_owned();
            }
        }
        PolicyVerdict {
            decision,
            rule,
            subcommands: entries
                .into_iter()
                .map(|e| SubcommandVerdict {
                    command: e.command,
                    decision: e.decision,
                    rule: e.rule.map(MatchedRule::of),
                })
                .collect(),
            reason,
        }
    }

    fn check_sub<'s>(
        &'s self,
        input: &PolicyInput<'_>,
        qualified: &str,
        candidates: &[u32],
        sub: &ShellCommand,
        session: &SessionAllowlist,
    ) -> Entry<'s> {
        let full = view(
            input,
            qualified,
            Some(CommandText::Sub {
                words: &sub.words,
                text: &sub.text,
            }),
        );
        let mut rule = self.first_match(candidates, &full);
        let mut session_ok =
            session.allows_tool(qualified, None) || session.allows_command(&sub.words);
        if let Some((dir, base)) = sub.words.first().and_then(|name| name.rsplit_once('/')) {
            let mut words = sub.words.clone();
            words[0] = base.to_owned();
            let text = words.join(" ");
            let base_view = view(
                input,
                qualified,
                Some(CommandText::Sub {
                    words: &words,
                    text: &text,
                }),
            );
            let base_rule = self.first_match(candidates, &base_view);
            let trusted_dir = SYSTEM_DIRS.contains(&dir);
            if let Some(candidate) = base_rule
                && (trusted_dir || candidate.decision != Decision::Allow)
            {
                let better = match rule {
                    None => true,
                    Some(current) => {
                        (candidate.scaled_priority(), candidate.decision.severity())
                            > (current.scaled_priority(), current.decision.severity())
                    }
                };
                if better {
                    rule = Some(candidate);
                }
            }
            session_ok |= trusted_dir && session.allows_command(&words);
        }
        let mut decision = rule.map_or(Decision::AskUser, |r| r.decision);
        if decision == Decision::AskUser
            && rule.is_none_or(|r| r.source.tier != Tier::Admin)
            && session_ok
        {
            // The session answer decides, not the rule that asked.
            decision = Decision::Allow;
            rule = None;
        }
        let mut note = None;
        if decision == Decision::Allow && input.mode != ApprovalMode::Yolo {
            let redirect_ok = rule.is_some_and(|r| r.allow_redirection);
            note = if sub.opaque {
                Some("the command name or payload is only known at run time")
            } else if sub.output_redirect && !redirect_ok {
                Some("output is redirected to a file")
            } else if sub.env_assignments {
                Some("it sets environment variables")
            } else {
                None
            };
            if note.is_some() {
                decision = Decision::AskUser;
            }
        }
        Entry {
            command: sub.text.clone(),
            decision,
            rule,
            note,
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

fn view<'a>(
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

fn describe(
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
