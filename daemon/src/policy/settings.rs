//! Rules derived from the settings lists `tools.core`, `tools.exclude` and
//! `tools.allowed`, all in the User tier:
//!
//! | setting          | decision | priority | final |
//! | :--------------- | :------- | :------- | :---- |
//! | `mcp.excluded`   | deny the server's tools | 990 | 4.990 |
//! | `tools.exclude`  | deny     | 950      | 4.950 |
//! | `tools.core`     | deny everything not listed | 900 | 4.900 |
//! | `tools.confirmationRequired` | ask_user | 350 | 4.350 |
//! | `tools.allowed`  | allow    | 300      | 4.300 |
//! | `tools.core` shell prefixes | allow | 300 | 4.300 |
//! | `tools.core` with only shell prefixes | deny other shell commands | 250 | 4.250 |
//!
//! An entry `run_shell_command(git status)` (or `ShellTool(...)`) means the
//! shell tool restricted to the command prefix `git status`. Tools may be
//! named by 0.61's names (`grep_search`) and MCP tools by either naming
//! (`server__tool`, `mcp_server_tool`, `mcp_server_*`). `tools.core`
//! also denies MCP tools unless they are listed (`server__*` works).

use crate::policy::rule::{Decision, PolicyRule, RuleSource, SHELL_TOOL_NAME, Tier};

/// Priority of `tools.exclude` deny rules.
pub const EXCLUDE_PRIORITY: u16 = 950;
/// Priority of the `tools.core` catch-all deny rule.
pub const CORE_PRIORITY: u16 = 900;
/// Priority of `tools.allowed` (and `tools.core` shell prefix) allow rules.
pub const ALLOWED_PRIORITY: u16 = 300;
/// Priority of `mcp.excluded` deny rules (above every other settings rule).
pub const MCP_EXCLUDED_PRIORITY: u16 = 990;
/// Priority of `tools.confirmationRequired` ask_user rules (above
/// `tools.allowed`, as in 0.61).
pub const CONFIRMATION_REQUIRED_PRIORITY: u16 = 350;
/// Priority of the deny for shell commands outside `tools.core` prefixes.
pub const CORE_SHELL_PRIORITY: u16 = 250;

/// Splits `tool(arg)` into the tool name and the command prefix.
pub fn parse_tool_entry(entry: &str) -> (String, Option<String>) {
    let entry = entry.trim();
    let (name, prefix) = match entry.split_once('(') {
        Some((name, rest)) if rest.ends_with(')') => {
            let inner = rest[..rest.len() - 1].trim();
            (name.trim(), (!inner.is_empty()).then(|| inner.to_owned()))
        }
        _ => (entry, None),
    };
    // 0.61's names (`grep_search`, `ShellTool`) are the seed's tools.
    (crate::policy::names::canonical(name).to_owned(), prefix)
}

fn rule_for(
    entry: &str,
    decision: Decision,
    priority: u16,
    file: &str,
    index: usize,
) -> PolicyRule {
    let (name, prefix) = parse_tool_entry(entry);
    let source = RuleSource {
        file: file.to_owned(),
        index,
        tier: Tier::User,
    };
    let mut rule = PolicyRule::new(decision, priority, source);
    rule.tool_names = vec![name];
    rule.command_prefix = prefix.into_iter().collect();
    rule
}

/// Builds the rules for the three settings lists.
pub fn settings_rules(core: &[String], exclude: &[String], allowed: &[String]) -> Vec<PolicyRule> {
    let mut rules = Vec::new();
    for (i, entry) in exclude.iter().enumerate() {
        rules.push(rule_for(
            entry,
            Decision::Deny,
            EXCLUDE_PRIORITY,
            "settings:tools.exclude",
            i + 1,
        ));
    }
    for (i, entry) in allowed.iter().enumerate() {
        rules.push(rule_for(
            entry,
            Decision::Allow,
            ALLOWED_PRIORITY,
            "settings:tools.allowed",
            i + 1,
        ));
    }
    if core.is_empty() {
        return rules;
    }
    let file = "settings:tools.core";
    let mut except = Vec::new();
    let mut bare_shell = false;
    let mut shell_prefixes = false;
    for (i, entry) in core.iter().enumerate() {
        let (name, prefix) = parse_tool_entry(entry);
        if name == SHELL_TOOL_NAME {
            match prefix {
                Some(_) => {
                    shell_prefixes = true;
                    rules.push(rule_for(
                        entry,
                        Decision::Allow,
                        ALLOWED_PRIORITY,
                        file,
                        i + 1,
                    ));
                }
                None => bare_shell = true,
            }
        }
        except.push(name);
    }
    let source = |index| RuleSource {
        file: file.to_owned(),
        index,
        tier: Tier::User,
    };
    let mut deny_others = PolicyRule::new(Decision::Deny, CORE_PRIORITY, source(0));
    deny_others.except_tools = except;
    rules.push(deny_others);
    if shell_prefixes && !bare_shell {
        let mut deny_shell = PolicyRule::new(Decision::Deny, CORE_SHELL_PRIORITY, source(0));
        deny_shell.tool_names = vec![SHELL_TOOL_NAME.to_owned()];
        rules.push(deny_shell);
    }
    rules
}

/// Rules for 0.61's `mcp.excluded` (servers whose tools are denied, `*`
/// for all) and `tools.confirmationRequired` (tools that always ask).
pub fn stricter_settings_rules(mcp_excluded: &[String], confirm: &[String]) -> Vec<PolicyRule> {
    let mut rules = Vec::new();
    for (i, server) in mcp_excluded.iter().enumerate() {
        let source = RuleSource {
            file: "settings:mcp.excluded".to_owned(),
            index: i + 1,
            tier: Tier::User,
        };
        let mut rule = PolicyRule::new(Decision::Deny, MCP_EXCLUDED_PRIORITY, source);
        rule.tool_names = vec![if server == "*" {
            "mcp_*".to_owned()
        } else {
            format!("{server}__*")
        }];
        rules.push(rule);
    }
    for (i, entry) in confirm.iter().enumerate() {
        rules.push(rule_for(
            entry,
            Decision::AskUser,
            CONFIRMATION_REQUIRED_PRIORITY,
            "settings:tools.confirmationRequired",
            i + 1,
        ));
    }
    rules
}
