//! Rule sources: settings lists, the session allowlist, saved rules, policy
//! directories and the admin directory check.

use super::common::{decide, rule, tiered};
use crate::policy::dir::DirMeta;
use crate::policy::{
    ApprovalMode, Decision, PolicyEngine, PolicyInput, SavedRule, SessionAllowlist, Tier, ToolKind,
    admin_dir_problem, default_rules, load_dir, parse_policy, save_always_allow, settings_rules,
};
use serde_json::{Value, json};

const D: ApprovalMode = ApprovalMode::Default;
const Y: ApprovalMode = ApprovalMode::Yolo;

#[test]
fn settings_table() {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let mut rules = settings_rules(
        &[],
        &s(&["write_file", "run_shell_command(rm)"]),
        &s(&["run_shell_command(git status)", "replace"]),
    );
    rules.extend(default_rules());
    let e = PolicyEngine::new(rules);
    let shell = |e: &PolicyEngine, cmd: &str, mode| {
        decide(
            e,
            "run_shell_command",
            None,
            ToolKind::Execute,
            json!({ "command": cmd }),
            mode,
        )
    };
    assert_eq!(
        decide(&e, "write_file", None, ToolKind::Edit, json!({}), Y),
        Decision::Deny
    );
    assert_eq!(
        decide(&e, "replace", None, ToolKind::Edit, json!({}), D),
        Decision::Allow
    );
    assert_eq!(shell(&e, "git status", D), Decision::Allow);
    assert_eq!(shell(&e, "git status; rm -rf ~", Y), Decision::Deny);
    assert_eq!(shell(&e, "ls", D), Decision::AskUser);

    let mut rules = settings_rules(&s(&["read_file", "ShellTool(git)", "mcp__*"]), &[], &[]);
    rules.extend(default_rules());
    let e = PolicyEngine::new(rules);
    assert_eq!(
        decide(&e, "read_file", None, ToolKind::Read, json!({}), D),
        Decision::Allow
    );
    assert_eq!(
        decide(&e, "glob", None, ToolKind::Search, json!({}), D),
        Decision::Deny
    );
    assert_eq!(
        decide(&e, "x", Some("mcp"), ToolKind::Other, json!({}), D),
        Decision::AskUser
    );
    assert_eq!(
        decide(&e, "x", Some("other"), ToolKind::Other, json!({}), D),
        Decision::Deny
    );
    assert_eq!(shell(&e, "git log", D), Decision::Allow);
    assert_eq!(shell(&e, "ls", Y), Decision::Deny);
    assert_eq!(shell(&e, "git log && ls", D), Decision::Deny);
}

#[test]
fn session_allowlist() {
    let e = tiered(&[
        (&rule("write_file", "ask_user", 0), Tier::Admin),
        (&rule("delete_all", "deny", 0), Tier::User),
    ]);
    let mut session = SessionAllowlist::new();
    assert!(session.is_empty());
    session.allow_tool("write_file");
    session.allow_tool("replace");
    session.allow_tool("delete_all");
    session.allow_server("jira");
    session.allow_command_prefix("npm  test");
    let check = |tool: &str, server: Option<&str>, args: Value| {
        e.check_with_session(
            &PolicyInput {
                tool_name: tool,
                args: &args,
                server_name: server,
                remote_name: None,
                annotations: None,
                tool_kind: ToolKind::Other,
                mode: D,
                interactive: true,
            },
            &session,
        )
        .decision
    };
    assert_eq!(check("replace", None, json!({})), Decision::Allow);
    assert_eq!(
        check("write_file", None, json!({})),
        Decision::AskUser,
        "admin ask stays"
    );
    assert_eq!(
        check("delete_all", None, json!({})),
        Decision::Deny,
        "deny stays"
    );
    assert_eq!(check("anything", Some("jira"), json!({})), Decision::Allow);
    assert_eq!(
        check("anything", Some("other"), json!({})),
        Decision::AskUser
    );
    let cmd = |c: &str| check("run_shell_command", None, json!({ "command": c }));
    assert_eq!(cmd("npm test"), Decision::Allow);
    assert_eq!(cmd("npm test -- --watch"), Decision::Allow);
    assert_eq!(cmd("npm testx"), Decision::AskUser);
    assert_eq!(cmd("npm test && rm -rf ~"), Decision::AskUser);
    assert_eq!(cmd("npm test > out"), Decision::AskUser);
    assert_eq!(
        e.check(&PolicyInput {
            tool_name: "replace",
            args: &json!({}),
            server_name: None,
            remote_name: None,
            annotations: None,
            tool_kind: ToolKind::Edit,
            mode: D,
            interactive: true
        })
        .decision,
        Decision::AskUser
    );
}

#[test]
fn save_and_reload() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sub").join("auto-saved.toml");
    save_always_allow(&path, &SavedRule::command_prefix("git log")).expect("save 1");
    save_always_allow(&path, &SavedRule::server("jira")).expect("save 2");
    save_always_allow(&path, &SavedRule::tool("write_file")).expect("save 3");
    let text = std::fs::read_to_string(&path).expect("read");
    let (rules, errors) = parse_policy(&text, "auto-saved.toml", Tier::User);
    assert!(errors.is_empty(), "{errors:?}\n{text}");
    assert_eq!(rules.len(), 3);
    let mut all = rules;
    all.extend(default_rules());
    let e = PolicyEngine::new(all);
    assert_eq!(
        decide(
            &e,
            "run_shell_command",
            None,
            ToolKind::Execute,
            json!({"command": "git 'log' -1"}),
            D
        ),
        Decision::Allow
    );
    assert_eq!(
        decide(&e, "x", Some("jira"), ToolKind::Other, json!({}), D),
        Decision::Allow
    );
    assert_eq!(
        decide(&e, "write_file", None, ToolKind::Edit, json!({}), D),
        Decision::Allow
    );
    let leftovers = std::fs::read_dir(path.parent().expect("parent"))
        .expect("ls")
        .count();
    assert_eq!(leftovers, 1, "temp files left behind");

    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, "[[rule]\n").expect("write");
    assert!(save_always_allow(&broken, &SavedRule::tool("x")).is_err());
    assert_eq!(std::fs::read_to_string(&broken).expect("read"), "[[rule]\n");
}

#[test]
fn admin_dir_table() {
    let cases: &[(u32, u32, bool)] = &[
        (0, 0o40755, true),
        (0, 0o40700, true),
        (0, 0o40775, false),
        (0, 0o40757, false),
        (0, 0o40777, false),
        (1000, 0o40755, false),
        (1000, 0o40700, false),
    ];
    for (uid, mode, ok) in cases {
        let problem = admin_dir_problem(DirMeta {
            uid: *uid,
            mode: *mode,
        });
        assert_eq!(problem.is_none(), *ok, "{uid} {mode:o}: {problem:?}");
    }
}

#[test]
fn load_dir_in_name_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("b.toml"), rule("b", "deny", 1)).expect("write");
    std::fs::write(dir.path().join("a.toml"), rule("a", "allow", 1)).expect("write");
    std::fs::write(dir.path().join("c.txt"), "not toml").expect("write");
    std::fs::write(dir.path().join("d.toml"), "[[rule]]\ndecision = \"nope\"\n").expect("write");
    let (rules, errors) = load_dir(dir.path(), Tier::User);
    let names: Vec<&str> = rules
        .iter()
        .filter(|r| !r.floor)
        .map(|r| r.tool_names[0].as_str())
        .collect();
    assert_eq!(names, vec!["a", "b"]);
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0]
            .to_string()
            .contains("d.toml: rule #1: field `decision`"),
        "{}",
        errors[0]
    );
    let (rules, errors) = load_dir(&dir.path().join("missing"), Tier::User);
    assert!(rules.is_empty() && errors.is_empty());
}
