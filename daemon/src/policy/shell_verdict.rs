//! The verdict on a shell command: each part `shell/` found is decided on
//! its own, then any deny wins and any ask_user downgrades an allow (see
//! the module documentation of `engine`).

use crate::policy::engine::{
    Entry, PolicyEngine, PolicyInput, PolicyVerdict, SubcommandVerdict, describe, view,
};
use crate::policy::matcher::CommandText;
use crate::policy::rule::{ApprovalMode, Decision, MatchedRule, PolicyRule, Tier};
use crate::policy::session::SessionAllowlist;
use crate::policy::shell::{PartKind, ShellPart, split_command};

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

impl PolicyEngine {
    pub(super) fn check_shell(
        &self,
        input: &PolicyInput<'_>,
        qualified: &str,
        candidates: &[u32],
        command: &str,
        session: &SessionAllowlist,
    ) -> PolicyVerdict {
        let split = split_command(command);
        let mut entries: Vec<Entry<'_>> = Vec::new();
        let has_part = split.parts.iter().any(|p| p.kind != PartKind::Wrapper);
        let whole = view(input, qualified, Some(CommandText::Whole(command)));
        let whole_rule = self.first_match(candidates, &whole);
        if !has_part || whole_rule.is_some_and(PolicyRule::is_command_specific) {
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
        for part in &split.parts {
            let entry = match part.kind {
                PartKind::Command => self.check_sub(input, qualified, candidates, part, session),
                PartKind::Wrapper => {
                    let entry = self.check_sub(input, qualified, candidates, part, session);
                    if !entry.rule.is_some_and(PolicyRule::is_command_specific) {
                        continue;
                    }
                    entry
                }
                PartKind::Evaluated(hazard) => {
                    self.check_evaluated(input, qualified, candidates, part, hazard.explain())
                }
                PartKind::BareRedirection => self.check_unallowable(
                    input,
                    qualified,
                    candidates,
                    &part.text,
                    "an output redirection without a command creates or truncates a file",
                ),
            };
            entries.push(entry);
        }
        if split.parse_error {
            entries.push(self.check_unallowable(
                input,
                qualified,
                candidates,
                command,
                "the command could not be parsed completely",
            ));
        }
        let decision = entries
            .iter()
            .map(|e| e.decision)
            .max_by_key(|d| d.severity())
            .unwrap_or(Decision::AskUser);
        let deciding = entries.iter().find(|e| e.decision == decision);
        let reason = match deciding {
            Some(e) => describe(decision, e.rule, Some(&e.command), e.note),
            None => describe(decision, None, None, None),
        };
        let rule = deciding.and_then(|e| e.rule).map(MatchedRule::of);
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
            deny_message: None,
        }
    }

    /// A part bash evaluates that is not a command (an assignment,
    /// arithmetic, a dynamic name...): a rule about particular commands
    /// cannot allow it, but it can deny it or ask; otherwise the rules for
    /// every shell command decide (yolo's, or a rule allowing the tool).
    /// Session answers do not allow it either.
    fn check_evaluated<'s>(
        &'s self,
        input: &PolicyInput<'_>,
        qualified: &str,
        candidates: &[u32],
        part: &ShellPart,
        why: &'static str,
    ) -> Entry<'s> {
        let call = view(
            input,
            qualified,
            Some(CommandText::Sub {
                words: &part.words,
                text: &part.text,
            }),
        );
        let rule = self.first_match_where(candidates, &call, |r| {
            !(r.decision == Decision::Allow && r.is_command_specific())
        });
        let decision = rule.map_or(Decision::AskUser, |r| r.decision);
        Entry {
            command: part.text.clone(),
            decision,
            rule,
            note: (decision == Decision::AskUser).then_some(why),
        }
    }

    /// What no rule can allow (a bare output redirection, a command that
    /// does not parse): a deny rule denies it; otherwise it needs approval,
    /// and in yolo, where nobody is asked, it is denied.
    fn check_unallowable<'s>(
        &'s self,
        input: &PolicyInput<'_>,
        qualified: &str,
        candidates: &[u32],
        text: &str,
        why: &'static str,
    ) -> Entry<'s> {
        let words = [text.to_owned()];
        let call = view(
            input,
            qualified,
            Some(CommandText::Sub {
                words: &words,
                text,
            }),
        );
        let deny = self.first_match_where(candidates, &call, |r| r.decision == Decision::Deny);
        let decision = match (deny, input.mode) {
            (Some(_), _) | (None, ApprovalMode::Yolo) => Decision::Deny,
            (None, _) => Decision::AskUser,
        };
        Entry {
            command: text.to_owned(),
            decision,
            rule: deny,
            note: deny.is_none().then_some(why),
        }
    }

    fn check_sub<'s>(
        &'s self,
        input: &PolicyInput<'_>,
        qualified: &str,
        candidates: &[u32],
        sub: &ShellPart,
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
        if decision == Decision::Allow
            && input.mode != ApprovalMode::Yolo
            && rule.is_some_and(|r| !r.is_command_specific())
            && crate::policy::dangerous::is_dangerous(&sub.words)
        {
            // 0.61 asks about these under a rule for every shell command.
            decision = Decision::AskUser;
            note = Some(
                "a rule for every shell command does not allow a command that deletes, links or writes this way",
            );
        }
        if decision == Decision::Allow && input.mode != ApprovalMode::Yolo {
            let redirect_ok = rule.is_some_and(|r| r.allow_redirection);
            note =
                (sub.output_redirect && !redirect_ok).then_some("output is redirected to a file");
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
