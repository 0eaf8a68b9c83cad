//! Rule loading errors: every message names file, rule and field.

use crate::policy::{Decision, PolicyLoadError, Tier, parse_policy};

fn rule(body: &str) -> String {
    format!("[[rule]]\n{body}\n")
}

/// Asserts the first error message equals (or, with a trailing `…`, starts
/// with) `expected`, and that the only rules are floors (stand-ins that
/// make the tools the broken rule names ask).
fn load_err(toml: &str, expected: &str) {
    let (rules, errors) = parse_policy(toml, "p.toml", Tier::User);
    assert!(
        rules.iter().all(|r| r.floor),
        "{toml}: unexpected rules {rules:?}"
    );
    assert!(
        errors.first().is_some_and(|e| !e.is_warning()),
        "{toml}: {errors:?}"
    );
    let message = errors.first().map(ToString::to_string).unwrap_or_default();
    match expected.strip_suffix('…') {
        Some(prefix) => assert!(message.starts_with(prefix), "{toml}: got {message:?}"),
        None => assert_eq!(message, expected, "{toml}"),
    }
    assert!(!message.ends_with('.'), "trailing period: {message}");
}

#[test]
fn error_table() {
    let cases: &[(&str, &str)] = &[
        (
            "decision = \"allow\"\ntoolName = 1",
            "p.toml: rule #1: field `toolName` must be a string or an array of strings, found an integer",
        ),
        (
            "decision = \"allow\"\ntoolName = [\"a\", 1]",
            "p.toml: rule #1: field `toolName` must be a string or an array of strings, found an integer",
        ),
        (
            "decision = \"allow\"\nmcpName = true",
            "p.toml: rule #1: field `mcpName` must be a string, found a boolean",
        ),
        (
            "decision = \"allow\"\ncommandPrefix = {a = 1}",
            "p.toml: rule #1: field `commandPrefix` must be a string or an array of strings, found a table",
        ),
        (
            "decision = \"allow\"\ncommandPrefix = \"git\"\ncommandRegex = \"^git\"",
            "p.toml: rule #1: field `commandRegex` cannot be combined with `commandPrefix`",
        ),
        (
            "decision = \"allow\"\nargsPattern = \"(\"",
            "p.toml: rule #1: field `argsPattern` is not a valid regex: …",
        ),
        (
            "decision = \"allow\"\ncommandRegex = \"[a-\"",
            "p.toml: rule #1: field `commandRegex` is not a valid regex: …",
        ),
        (
            "decision = \"allow\"\nargsPattern = 5",
            "p.toml: rule #1: field `argsPattern` must be a string, found an integer",
        ),
        (
            "decision = \"allow\"\npriority = 1000",
            "p.toml: rule #1: field `priority` is 1000, expected 0..=999",
        ),
        (
            "decision = \"allow\"\npriority = -1",
            "p.toml: rule #1: field `priority` is -1, expected 0..=999",
        ),
        (
            "decision = \"allow\"\npriority = 70000",
            "p.toml: rule #1: field `priority` is 70000, expected 0..=999",
        ),
        (
            "decision = \"allow\"\npriority = \"high\"",
            "p.toml: rule #1: field `priority` must be an integer, found a string",
        ),
        (
            "decision = \"allow\"\npriority = 1.5",
            "p.toml: rule #1: field `priority` must be an integer, found a float",
        ),
        (
            "toolName = \"x\"",
            "p.toml: rule #1: missing field `decision`",
        ),
        (
            "decision = \"maybe\"",
            "p.toml: rule #1: field `decision` has invalid value `maybe` (expected allow, deny or ask_user)",
        ),
        (
            "decision = 1",
            "p.toml: rule #1: field `decision` must be a string, found an integer",
        ),
        (
            "decision = \"allow\"\nmodes = [\"fast\"]",
            "p.toml: rule #1: field `modes` has invalid value `fast` (expected default, autoEdit, yolo or plan)",
        ),
        (
            "decision = \"allow\"\nmodes = \"yolo\"",
            "p.toml: rule #1: field `modes` must be an array of strings, found a string",
        ),
        (
            "decision = \"allow\"\nallowRedirection = \"yes\"",
            "p.toml: rule #1: field `allowRedirection` must be a boolean, found a string",
        ),
    ];
    for (body, expected) in cases {
        load_err(&rule(body), expected);
    }
}

#[test]
fn file_level_errors() {
    load_err(
        "[[rule]]\ndecision = \"allow\"\npriority = ",
        "p.toml: TOML syntax error: line 3: …",
    );
    load_err("[[rule]\n", "p.toml: TOML syntax error: line 1: …");
    load_err(
        "[[rule]]\ndecision = \"allow\"\n[[rule]]\ndecision = \"allow\"\ndecision = \"deny\"\n",
        "p.toml: TOML syntax error: …",
    );
    load_err("version = 1\n", "p.toml: unknown top-level key `version`");
    load_err(
        "rule = 5\n",
        "p.toml: rule #0: field `rule` must be an array of tables, found an integer",
    );
    load_err(
        "[rule]\ndecision = \"allow\"\n",
        "p.toml: rule #0: field `rule` must be an array of tables, found a table",
    );
    load_err(
        "rule = [1]\n",
        "p.toml: rule #1: field `rule` must be a table, found an integer",
    );
}

#[test]
fn bad_rule_is_skipped_and_numbered() {
    let toml = format!(
        "{}{}{}",
        rule("decision = \"allow\"\ntoolName = \"a\""),
        rule("decision = \"deny\"\ntoolName = \"b\""),
        rule("decision = \"allow\"\npriority = 1000"),
    );
    let (rules, errors) = parse_policy(&toml, "dir/user.toml", Tier::User);
    assert_eq!(rules.len(), 3);
    assert_eq!(rules[1].source.index, 2);
    assert_eq!(rules[1].decision, Decision::Deny);
    // The broken rule stands for its tools (every tool: it names none).
    assert!(rules[2].floor && rules[2].tool_names.is_empty());
    assert_eq!(rules[2].decision, Decision::AskUser);
    assert_eq!(
        errors,
        vec![PolicyLoadError::PriorityOutOfRange {
            file: "dir/user.toml".into(),
            rule: 3,
            value: 1000
        }]
    );
}

#[test]
fn fields_are_parsed() {
    let toml = rule(
        "toolName = [\"search\", \"get\"]\nmcpName = \"jira\"\nargsPattern = 'x'\ndecision = \"ask_user\"\npriority = 42\nmodes = [\"default\", \"autoEdit\", \"yolo\"]\nallowRedirection = true",
    );
    let (rules, errors) = parse_policy(&toml, "p.toml", Tier::Admin);
    assert!(errors.is_empty(), "{errors:?}");
    let r = &rules[0];
    assert_eq!(r.tool_names, vec!["jira__search", "jira__get"]);
    let (rules, _) = parse_policy(
        &rule("mcpName = \"s\"\ntoolName = [\"a__b\", \"s__c\", \"s__*\"]\ndecision = \"deny\""),
        "p.toml",
        Tier::User,
    );
    assert_eq!(rules[0].tool_names, vec!["s__a__b", "s__c", "s__*"]);
    assert_eq!(r.mcp_name.as_deref(), Some("jira"));
    assert_eq!(r.decision, Decision::AskUser);
    assert_eq!(r.priority, 42);
    assert_eq!(r.modes.len(), 3);
    assert!(r.allow_redirection);
    assert!((r.final_priority() - 5.042).abs() < 1e-9);
}

#[test]
fn command_prefix_implies_shell_tool() {
    let (rules, errors) = parse_policy(
        &rule("commandPrefix = \"git \"\ndecision = \"allow\""),
        "p.toml",
        Tier::User,
    );
    assert!(errors.is_empty());
    assert_eq!(rules[0].tool_names, vec!["run_shell_command"]);
    assert_eq!(rules[0].command_prefix, vec!["git "]);
    let (rules, _) = parse_policy(
        &rule("commandRegex = \"^ls\"\ndecision = \"allow\""),
        "p.toml",
        Tier::User,
    );
    assert_eq!(rules[0].tool_names, vec!["run_shell_command"]);
    let (rules, _) = parse_policy("", "p.toml", Tier::User);
    assert!(rules.is_empty());
}

#[test]
fn unknown_fields_warn_and_the_rule_loads() {
    let cases: &[(&str, &str, Decision)] = &[
        (
            "decision = \"deny\"\nfoo = 1",
            "p.toml: rule #1: unknown field `foo` ignored",
            Decision::Deny,
        ),
        (
            "decision = \"allow\"\nkinds = [\"read\"]",
            "p.toml: rule #1: unknown field `kinds` ignored; this allow rule counts as ask_user until the field is fixed",
            Decision::AskUser,
        ),
        (
            "decision = \"allow\"\ntoolname = \"x\"",
            "p.toml: rule #1: unknown field `toolname` ignored; this allow rule counts as ask_user until the field is fixed",
            Decision::AskUser,
        ),
    ];
    for (body, expected, decision) in cases {
        let (rules, errors) = parse_policy(&rule(body), "p.toml", Tier::User);
        assert_eq!(rules.len(), 1, "{body}");
        assert!(!rules[0].floor);
        assert_eq!(rules[0].decision, *decision, "{body}");
        assert_eq!(errors.len(), 1);
        assert!(errors[0].is_warning());
        assert_eq!(errors[0].to_string(), *expected);
    }
}

#[test]
fn the_0_61_schema_loads() {
    let toml = rule(
        "name = \"no rm\"\ntoolName = \"run_shell_command\"\ncommandPrefix = \"rm\"\ndecision = \"deny\"\npriority = 100\ndenyMessage = \"no\"\nmodes = [\"plan\", \"yolo\"]\ninteractive = true\ntoolAnnotations = { readOnlyHint = false }\nsubagent = \"helper\"\nallow_redirection = true",
    );
    let (rules, errors) = parse_policy(&toml, "u.toml", Tier::User);
    assert!(errors.is_empty(), "{errors:?}");
    let r = &rules[0];
    assert_eq!(r.deny_message.as_deref(), Some("no"));
    assert_eq!(r.label.as_deref(), Some("no rm"));
    assert_eq!(r.interactive, Some(true));
    assert_eq!(r.subagent.as_deref(), Some("helper"));
    assert!(r.allow_redirection);
    assert_eq!(
        r.tool_annotations
            .as_ref()
            .map(|a| a["readOnlyHint"].clone()),
        Some(serde_json::json!(false))
    );
    let (rules, _) = parse_policy(
        &rule(
            "toolName = [\"grep_search\", \"*\"]\nmcpName = \"*\"\ndecision = \"deny\"\ndeny_message = \"x\"",
        ),
        "u.toml",
        Tier::User,
    );
    assert_eq!(rules[0].tool_names, vec!["mcp_*_search_file_content", "*"]);
    assert_eq!(rules[0].deny_message.as_deref(), Some("x"));
}

#[test]
fn unreadable_rules_stand_for_their_tools() {
    let cases: &[(&str, &[&str], Decision)] = &[
        (
            "toolName = \"write_file\"\ndecision = \"allow\"\nmodes = [\"planning\"]",
            &["write_file"],
            Decision::AskUser,
        ),
        (
            "commandPrefix = \"rm\"\ndecision = \"deny\"\npriority = \"high\"",
            &["run_shell_command"],
            Decision::Deny,
        ),
        (
            "mcpName = \"srv\"\ndecision = \"deny\"\nargsPattern = \"(\"",
            &["srv__*"],
            Decision::Deny,
        ),
        (
            "toolName = \"grep_search\"\ndecision = \"sometimes\"",
            &["search_file_content"],
            Decision::AskUser,
        ),
        ("toolName = 5\ndecision = \"deny\"", &[], Decision::Deny),
    ];
    for (body, tools, decision) in cases {
        let (rules, errors) = parse_policy(&rule(body), "p.toml", Tier::User);
        assert_eq!(errors.len(), 1, "{body}: {errors:?}");
        assert!(!errors[0].is_warning());
        assert_eq!(rules.len(), 1, "{body}");
        assert!(rules[0].floor);
        assert_eq!(rules[0].tool_names, *tools, "{body}");
        assert_eq!(rules[0].decision, *decision, "{body}");
    }
}

#[test]
fn extensions_may_not_allow_or_touch_yolo() {
    let toml = format!(
        "{}{}{}",
        rule("toolName = \"a\"\ndecision = \"allow\""),
        rule("toolName = \"b\"\ndecision = \"deny\"\nmodes = [\"yolo\"]"),
        rule("toolName = \"c\"\ndecision = \"deny\""),
    );
    let (rules, errors) = parse_policy(&toml, "ext.toml", Tier::Extension);
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0].tool_names, vec!["c"]);
    assert!((rules[0].final_priority() - 2.0).abs() < 1e-9);
    assert_eq!(errors.len(), 2);
    assert!(errors.iter().all(PolicyLoadError::is_warning));
}
