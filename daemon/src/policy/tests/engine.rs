//! Tiers, priorities, modes, defaults, argsPattern, MCP matching,
//! non-interactive use and shell verdict details.

use super::common::{decide, engine, rule, tiered, tool_verdict};
use crate::policy::{ApprovalMode, Decision, PolicyEngine, Tier, ToolKind};
use serde_json::{Value, json};

const D: ApprovalMode = ApprovalMode::Default;
const AE: ApprovalMode = ApprovalMode::AutoEdit;
const Y: ApprovalMode = ApprovalMode::Yolo;

#[test]
fn tier_and_priority_table() {
    use Decision::{Allow, AskUser, Deny};
    let cases: Vec<(Vec<(String, Tier)>, Decision)> = vec![
        (vec![(rule("write_file", "allow", 0), Tier::User)], Allow),
        (
            vec![
                (rule("write_file", "allow", 999), Tier::User),
                (rule("write_file", "deny", 0), Tier::Admin),
            ],
            Deny,
        ),
        (
            vec![
                (rule("write_file", "deny", 999), Tier::User),
                (rule("write_file", "allow", 0), Tier::Admin),
            ],
            Allow,
        ),
        (
            vec![
                (rule("write_file", "allow", 100), Tier::User),
                (rule("write_file", "deny", 200), Tier::User),
            ],
            Deny,
        ),
        (
            vec![
                (rule("write_file", "allow", 300), Tier::User),
                (rule("write_file", "deny", 200), Tier::User),
            ],
            Allow,
        ),
        (
            vec![
                (rule("write_file", "allow", 100), Tier::User),
                (rule("write_file", "deny", 100), Tier::User),
            ],
            Deny,
        ),
        (
            vec![
                (rule("write_file", "allow", 100), Tier::User),
                (rule("write_file", "ask_user", 100), Tier::User),
            ],
            AskUser,
        ),
        (vec![(rule("read_file", "deny", 0), Tier::User)], Deny),
        (
            vec![
                (rule("write_file", "ask_user", 0), Tier::Admin),
                (rule("write_file", "allow", 999), Tier::User),
            ],
            AskUser,
        ),
        (vec![], AskUser),
    ];
    for (files, expected) in cases {
        let refs: Vec<(&str, Tier)> = files.iter().map(|(t, tier)| (t.as_str(), *tier)).collect();
        let e = tiered(&refs);
        let target = if files.iter().any(|(t, _)| t.contains("read_file")) {
            "read_file"
        } else {
            "write_file"
        };
        let kind = if target == "read_file" {
            ToolKind::Read
        } else {
            ToolKind::Edit
        };
        assert_eq!(
            decide(&e, target, None, kind, json!({}), D),
            expected,
            "{files:?}"
        );
    }
}

#[test]
fn final_priority_reported() {
    let e = tiered(&[(&rule("write_file", "allow", 100), Tier::User)]);
    let v = tool_verdict(&e, "write_file", None, ToolKind::Edit, &json!({}), D, true);
    let matched = v.rule.expect("rule");
    assert!((matched.final_priority - 4.1).abs() < 1e-9);
    assert_eq!(matched.source.file, "User.toml");
    assert_eq!(matched.source.index, 1);
    assert!(v.reason.contains("User.toml rule #1"), "{}", v.reason);
}

#[test]
fn defaults_table() {
    use Decision::{Allow, AskUser};
    let e = engine("");
    let cases: &[(&str, Option<&str>, ToolKind, ApprovalMode, Decision)] = &[
        ("read_file", None, ToolKind::Read, D, Allow),
        ("list_directory", None, ToolKind::Read, D, Allow),
        ("glob", None, ToolKind::Search, D, Allow),
        ("search_file_content", None, ToolKind::Search, D, Allow),
        ("google_web_search", None, ToolKind::Search, D, Allow),
        ("web_fetch", None, ToolKind::Fetch, D, AskUser),
        ("web_fetch", None, ToolKind::Fetch, AE, Allow),
        ("web_fetch", None, ToolKind::Fetch, Y, Allow),
        ("read_many_files", None, ToolKind::Read, D, Allow),
        ("some_think_tool", None, ToolKind::Think, D, Allow),
        ("write_file", None, ToolKind::Edit, D, AskUser),
        ("replace", None, ToolKind::Edit, D, AskUser),
        ("save_memory", None, ToolKind::Think, D, AskUser),
        ("delete_tool", None, ToolKind::Delete, D, AskUser),
        ("write_file", None, ToolKind::Edit, AE, Allow),
        ("replace", None, ToolKind::Edit, AE, Allow),
        ("move_tool", None, ToolKind::Move, AE, Allow),
        ("save_memory", None, ToolKind::Other, AE, AskUser),
        ("run_shell_command", None, ToolKind::Execute, AE, AskUser),
        ("write_file", None, ToolKind::Edit, Y, Allow),
        ("anything", None, ToolKind::Other, Y, Allow),
        ("search", Some("jira"), ToolKind::Read, D, AskUser),
        ("search", Some("jira"), ToolKind::Edit, AE, AskUser),
        ("search", Some("jira"), ToolKind::Read, Y, Allow),
        ("discovered_tool", None, ToolKind::Other, D, AskUser),
    ];
    for (tool, server, kind, mode, expected) in cases {
        assert_eq!(
            decide(&e, tool, *server, *kind, json!({}), *mode),
            *expected,
            "{tool} {server:?} {kind:?} {mode:?}"
        );
    }
}

#[test]
fn modes_table() {
    let e = engine(
        "[[rule]]\ntoolName = \"write_file\"\ndecision = \"deny\"\npriority = 5\nmodes = [\"autoEdit\"]\n",
    );
    assert_eq!(
        decide(&e, "write_file", None, ToolKind::Edit, json!({}), AE),
        Decision::Deny
    );
    assert_eq!(
        decide(&e, "write_file", None, ToolKind::Edit, json!({}), D),
        Decision::AskUser
    );
    assert_eq!(
        decide(&e, "write_file", None, ToolKind::Edit, json!({}), Y),
        Decision::Allow
    );
}

#[test]
fn args_pattern_table() {
    let e = engine(
        "[[rule]]\ntoolName = \"write_file\"\nargsPattern = '\"file_path\":\"/tmp/'\ndecision = \"allow\"\npriority = 1\n\
         [[rule]]\ntoolName = \"t\"\nargsPattern = '^\\{\"a\":1,\"b\":\\[2,\\{\"c\":\"x\",\"d\":null\\}\\]\\}$'\ndecision = \"deny\"\n\
         [[rule]]\nargsPattern = '\"command\":\"git status'\ndecision = \"allow\"\npriority = 1\n",
    );
    let cases: &[(&str, Value, Decision)] = &[
        (
            "write_file",
            json!({"content": "x", "file_path": "/tmp/a"}),
            Decision::Allow,
        ),
        (
            "write_file",
            json!({"file_path": "/etc/passwd", "content": "/tmp/"}),
            Decision::AskUser,
        ),
        (
            "t",
            json!({"b": [2, {"d": null, "c": "x"}], "a": 1}),
            Decision::Deny,
        ),
        ("t", json!({"a": 1}), Decision::AskUser),
    ];
    for (tool, args, expected) in cases {
        assert_eq!(
            decide(&e, tool, None, ToolKind::Other, args.clone(), D),
            *expected,
            "{tool} {args}"
        );
    }
    let shell = |cmd: &str| {
        decide(
            &e,
            "run_shell_command",
            None,
            ToolKind::Execute,
            json!({ "command": cmd }),
            D,
        )
    };
    assert_eq!(shell("git status"), Decision::Allow);
    assert_eq!(shell("git status && rm -rf ~"), Decision::AskUser);
}

#[test]
fn mcp_table() {
    let e = engine(
        "[[rule]]\ntoolName = \"bad__*\"\ndecision = \"deny\"\npriority = 1\n\
         [[rule]]\nmcpName = \"untrusted\"\ndecision = \"deny\"\npriority = 1\n\
         [[rule]]\nmcpName = \"jira\"\ntoolName = \"search\"\ndecision = \"allow\"\npriority = 1\n\
         [[rule]]\ntoolName = \"local_only\"\ndecision = \"allow\"\npriority = 1\n\
         [[rule]]\ntoolName = \"gh__list\"\ndecision = \"allow\"\npriority = 1\n",
    );
    use Decision::{Allow, AskUser, Deny};
    let cases: &[(&str, Option<&str>, Decision)] = &[
        ("anything", Some("bad"), Deny),
        ("bad__anything", Some("bad"), Deny),
        ("bad__x", None, AskUser),
        ("x", Some("bad2"), AskUser),
        ("x", Some("untrusted"), Deny),
        ("search", Some("jira"), Allow),
        ("jira__search", Some("jira"), Allow),
        ("create", Some("jira"), AskUser),
        ("search", None, AskUser),
        ("search", Some("other"), AskUser),
        ("local_only", None, Allow),
        ("local_only", Some("srv"), AskUser),
        ("list", Some("gh"), Allow),
        ("gh__list", None, Allow),
    ];
    for (tool, server, expected) in cases {
        assert_eq!(
            decide(&e, tool, *server, ToolKind::Other, json!({}), D),
            *expected,
            "{tool} {server:?}"
        );
    }
}

#[test]
fn non_interactive_and_fallback() {
    let e = engine("");
    let ni = |tool: &str, kind| tool_verdict(&e, tool, None, kind, &json!({}), D, false).decision;
    assert_eq!(ni("write_file", ToolKind::Edit), Decision::Deny);
    assert_eq!(ni("read_file", ToolKind::Read), Decision::Allow);
    let empty = PolicyEngine::new(Vec::new());
    let v = tool_verdict(&empty, "x", None, ToolKind::Other, &json!({}), D, true);
    assert_eq!((v.decision, v.rule), (Decision::AskUser, None));
    let v = tool_verdict(&empty, "x", None, ToolKind::Other, &json!({}), D, false);
    assert_eq!(v.decision, Decision::Deny);
    assert!(v.reason.contains("non-interactive"), "{}", v.reason);
}

#[test]
fn shell_verdict_lists_subcommands() {
    let v = super::common::shell_verdict(
        "[[rule]]\ncommandPrefix = \"git status\"\ndecision = \"allow\"\npriority = 1\n",
        "git status && rm -rf ~",
        D,
        true,
    );
    let subs: Vec<(&str, Decision)> = v
        .subcommands
        .iter()
        .map(|s| (s.command.as_str(), s.decision))
        .collect();
    assert!(subs.contains(&("git status", Decision::Allow)), "{subs:?}");
    assert!(subs.contains(&("rm -rf ~", Decision::AskUser)), "{subs:?}");
    assert_eq!(v.decision, Decision::AskUser);
    assert!(v.reason.contains("rm -rf ~"), "{}", v.reason);
}

#[test]
fn engine_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<PolicyEngine>();
    assert_send_sync::<crate::policy::SessionAllowlist>();
}
