//! Rules from a workspace's own `.gemini/settings.json`: its `tools.exclude`
//! and `tools.core` (0.61 merges them into the settings of every session
//! in that folder) become deny rules for that workspace's sessions only,
//! at the same place as the user's settings rules (User tier, see
//! `settings.rs`), so no user rule can lift them.
//!
//! Only what makes things stricter is read: a workspace's `tools.allowed`
//! and `tools.core` shell prefixes allow nothing here (a cloned repository
//! must not approve its own commands). A value that cannot be read fails
//! closed: a floor makes every tool ask (deny when non-interactive) until
//! it is fixed, and the problem names file, line and field. Pure: the
//! caller reads the file.

use crate::policy::rule::{Decision, PolicyRule, RuleSource, SHELL_TOOL_NAME, Tier};
use crate::policy::settings::{CORE_PRIORITY, CORE_SHELL_PRIORITY, EXCLUDE_PRIORITY};
use crate::problems::ConfigProblem;

/// What one workspace settings file says about tools.
#[derive(Debug, Clone, Default)]
pub struct WorkspaceToolRules {
    /// The deny rules (and the floor, when something could not be read).
    pub rules: Vec<PolicyRule>,
    /// What could not be read.
    pub problems: Vec<ConfigProblem>,
    /// The file is not JSON at all: the caller keeps the last good rules
    /// besides the floor.
    pub unreadable: bool,
}

/// What a floor keeps, in words for `daemon status`.
pub const FLOOR_KEPT: &str =
    "every tool asks (denied when non-interactive) in this workspace until it is fixed";

/// Reads `text`, the content of `file` (a workspace's settings.json).
pub fn workspace_tool_rules(file: &str, text: &str) -> WorkspaceToolRules {
    let mut out = WorkspaceToolRules::default();
    let value = match crate::jsonc::parse(text) {
        Ok(value) => value,
        Err(e) => {
            out.unreadable = true;
            out.problems.push(
                ConfigProblem::new(file, format!("not valid JSON: {}", e.message))
                    .at_line(Some(e.line))
                    .kept(format!(
                        "its last readable tools.exclude/tools.core, and {FLOOR_KEPT}"
                    )),
            );
            out.rules.push(floor(file, "settings"));
            return out;
        }
    };
    let mut broken = false;
    let mut list = |field: &str, nested: &str, legacy: &str| -> Option<Vec<String>> {
        let found = value
            .pointer(&format!("/tools/{nested}"))
            .map(|v| (field.to_owned(), v))
            .or_else(|| value.get(legacy).map(|v| (legacy.to_owned(), v)));
        let (name, value) = found?;
        let Some(items) = value.as_array() else {
            broken = true;
            out.problems.push(
                ConfigProblem::new(file, format!("{name} is not a list of tool names"))
                    .kept(FLOOR_KEPT),
            );
            return None;
        };
        let mut names = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match item.as_str() {
                Some(s) if !s.trim().is_empty() => names.push(s.to_owned()),
                _ => {
                    broken = true;
                    out.problems.push(
                        ConfigProblem::new(file, format!("{name}[{i}] is {item}, not a tool name"))
                            .kept(format!("the other entries, and {FLOOR_KEPT}")),
                    );
                }
            }
        }
        Some(names)
    };
    let exclude = list("tools.exclude", "exclude", "excludeTools");
    let core = list("tools.core", "core", "coreTools");
    if let Some(exclude) = exclude {
        for (i, entry) in exclude.iter().enumerate() {
            let (name, prefix) = crate::policy::settings::parse_tool_entry(entry);
            let mut rule = PolicyRule::new(
                Decision::Deny,
                EXCLUDE_PRIORITY,
                source(file, "tools.exclude", i + 1),
            );
            rule.tool_names = vec![name];
            rule.command_prefix = prefix.into_iter().collect();
            out.rules.push(rule);
        }
    }
    if let Some(core) = core {
        let mut except = Vec::new();
        let mut bare_shell = false;
        let mut shell_prefixes = false;
        for entry in &core {
            let (name, prefix) = crate::policy::settings::parse_tool_entry(entry);
            if name == SHELL_TOOL_NAME {
                match prefix {
                    Some(_) => shell_prefixes = true,
                    None => bare_shell = true,
                }
            }
            except.push(name);
        }
        let mut deny_others =
            PolicyRule::new(Decision::Deny, CORE_PRIORITY, source(file, "tools.core", 0));
        deny_others.except_tools = except;
        out.rules.push(deny_others);
        // Shell prefixes in a workspace's core allow nothing: the other
        // shell commands are denied and the listed ones ask as before.
        if shell_prefixes && !bare_shell {
            let mut deny_shell = PolicyRule::new(
                Decision::Deny,
                CORE_SHELL_PRIORITY,
                source(file, "tools.core", 0),
            );
            deny_shell.tool_names = vec![SHELL_TOOL_NAME.to_owned()];
            out.rules.push(deny_shell);
        }
    }
    if broken {
        out.rules.push(floor(file, "tools"));
    }
    out
}

fn source(file: &str, field: &str, index: usize) -> RuleSource {
    RuleSource {
        file: format!("{file} (settings:{field})"),
        index,
        tier: Tier::User,
    }
}

/// Every tool at least asks (no tool name: every tool).
fn floor(file: &str, field: &str) -> PolicyRule {
    let mut rule = PolicyRule::new(Decision::AskUser, 0, source(file, field, 0));
    rule.floor = true;
    rule
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclude_and_core_become_deny_rules_and_nothing_allows() {
        let got = workspace_tool_rules(
            "/w/.gemini/settings.json",
            r#"{ // comment
              "tools": {"exclude": ["web_fetch", "run_shell_command(rm)"],
                        "core": ["read_file", "run_shell_command(git)"],
                        "allowed": ["run_shell_command"]}}"#,
        );
        assert!(got.problems.is_empty(), "{:?}", got.problems);
        assert!(!got.unreadable);
        assert!(got.rules.iter().all(|r| r.decision == Decision::Deny));
        assert_eq!(got.rules.len(), 4);
        assert_eq!(got.rules[1].command_prefix, vec!["rm".to_owned()]);
        assert!(got.rules.iter().all(|r| r.source.tier == Tier::User));
        assert!(got.rules[0].source.file.contains("settings:tools.exclude"));
    }

    #[test]
    fn legacy_names_are_read() {
        let got = workspace_tool_rules("/f", r#"{"excludeTools": ["glob"]}"#);
        assert_eq!(got.rules.len(), 1);
        assert_eq!(got.rules[0].tool_names, vec!["glob".to_owned()]);
    }

    #[test]
    fn what_cannot_be_read_fails_closed_and_is_named() {
        let got = workspace_tool_rules("/f", r#"{"tools": {"exclude": "web_fetch"}}"#);
        assert!(got.rules.iter().any(|r| r.floor));
        assert!(got.problems[0].message.contains("tools.exclude"));
        let got = workspace_tool_rules("/f", r#"{"tools": {"exclude": ["glob", 3]}}"#);
        assert!(got.rules.iter().any(|r| r.floor));
        assert!(got.rules.iter().any(|r| r.tool_names == vec!["glob"]));
        assert!(got.problems[0].message.contains("tools.exclude[1]"));
        let got = workspace_tool_rules("/f", "{\n \"tools\": ");
        assert!(got.unreadable);
        assert!(got.rules.iter().any(|r| r.floor));
        assert!(got.problems[0].line.is_some());
    }

    #[test]
    fn no_tools_settings_no_rules() {
        let got = workspace_tool_rules("/f", r#"{"model": {"name": "x"}}"#);
        assert!(got.rules.is_empty() && got.problems.is_empty());
    }
}
