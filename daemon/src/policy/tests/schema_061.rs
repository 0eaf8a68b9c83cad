//! 0.61's rule schema in evaluation: `*` wildcards, both MCP namings,
//! 0.61 tool names, plan mode, `interactive`, `toolAnnotations`,
//! `subagent`, `denyMessage`, and floors for rules that cannot be read.

use super::common::{engine, shell_verdict};
use crate::policy::{
    ApprovalMode, Decision, PolicyEngine, PolicyInput, Tier, ToolKind, default_rules, parse_policy,
};
use serde_json::{Map, Value, json};

const Y: ApprovalMode = ApprovalMode::Yolo;
const D: ApprovalMode = ApprovalMode::Default;
const P: ApprovalMode = ApprovalMode::Plan;

fn mcp(
    e: &PolicyEngine,
    server: &str,
    tool: &str,
    annotations: Option<&Map<String, Value>>,
    mode: ApprovalMode,
    interactive: bool,
) -> Decision {
    e.check(&PolicyInput {
        tool_name: tool,
        args: &json!({}),
        server_name: Some(server),
        remote_name: Some(tool),
        annotations,
        tool_kind: ToolKind::Other,
        mode,
        interactive,
    })
    .decision
}

fn builtin(e: &PolicyEngine, tool: &str, kind: ToolKind, mode: ApprovalMode) -> Decision {
    e.check(&PolicyInput {
        tool_name: tool,
        args: &json!({}),
        server_name: None,
        remote_name: None,
        annotations: None,
        tool_kind: kind,
        mode,
        interactive: true,
    })
    .decision
}

#[test]
fn the_issues_deny_message_rule_denies_in_yolo_and_says_why() {
    let v = shell_verdict(
        "[[rule]]\ncommandPrefix = \"rm\"\ndecision = \"deny\"\ndenyMessage = \"no\"\n",
        "rm -rf build",
        Y,
        true,
    );
    assert_eq!(v.decision, Decision::Deny);
    assert_eq!(v.deny_message.as_deref(), Some("no"));
    assert!(v.reason.contains("commandPrefix = \"rm\""), "{}", v.reason);
    assert!(v.reason.contains("user tier"), "{}", v.reason);
}

#[test]
fn star_tool_name_with_args_pattern_denies_every_tool() {
    let rules = "[[rule]]\ntoolName = \"*\"\nargsPattern = \"password\"\ndecision = \"deny\"\npriority = 100\n";
    assert_eq!(
        shell_verdict(rules, "echo password", Y, true).decision,
        Decision::Deny
    );
    assert_eq!(
        shell_verdict(rules, "echo hi", Y, true).decision,
        Decision::Allow
    );
    let e = engine(rules);
    let v = e.check(&PolicyInput {
        tool_name: "read_file",
        args: &json!({"absolute_path": "/x/password.txt"}),
        server_name: None,
        remote_name: None,
        annotations: None,
        tool_kind: ToolKind::Read,
        mode: Y,
        interactive: true,
    });
    assert_eq!(v.decision, Decision::Deny);
}

#[test]
fn mcp_names_in_both_namings() {
    let e = engine(
        "[[rule]]\ntoolName = \"mcp_srv_danger\"\ndecision = \"deny\"\npriority = 300\n\
         [[rule]]\ntoolName = \"mcp_other_*\"\ndecision = \"deny\"\npriority = 200\n\
         [[rule]]\ntoolName = \"*\"\nmcpName = \"third\"\ndecision = \"deny\"\npriority = 200\n\
         [[rule]]\ntoolName = \"fourth__*\"\ndecision = \"deny\"\npriority = 200\n",
    );
    assert_eq!(mcp(&e, "srv", "danger", None, Y, true), Decision::Deny);
    assert_eq!(mcp(&e, "srv", "safe", None, Y, true), Decision::Allow);
    assert_eq!(mcp(&e, "other", "x", None, Y, true), Decision::Deny);
    assert_eq!(mcp(&e, "third", "x", None, Y, true), Decision::Deny);
    assert_eq!(mcp(&e, "fourth", "x", None, Y, true), Decision::Deny);
    let any = engine("[[rule]]\ntoolName = \"*\"\nmcpName = \"*\"\ndecision = \"deny\"\n");
    assert_eq!(mcp(&any, "srv", "x", None, Y, true), Decision::Deny);
    assert_eq!(
        builtin(&any, "read_file", ToolKind::Read, Y),
        Decision::Allow
    );
}

#[test]
fn tool_names_of_0_61_are_aliases() {
    let e = engine("[[rule]]\ntoolName = \"grep_search\"\ndecision = \"deny\"\npriority = 100\n");
    assert_eq!(
        builtin(&e, "search_file_content", ToolKind::Search, D),
        Decision::Deny
    );
}

#[test]
fn plan_mode_runs_only_read_only_tools() {
    let e = engine("");
    assert_eq!(builtin(&e, "read_file", ToolKind::Read, P), Decision::Allow);
    assert_eq!(
        builtin(&e, "search_file_content", ToolKind::Search, P),
        Decision::Allow
    );
    for (tool, kind) in [
        ("write_file", ToolKind::Edit),
        ("replace", ToolKind::Edit),
        ("run_shell_command", ToolKind::Execute),
        ("save_memory", ToolKind::Think),
    ] {
        assert_eq!(builtin(&e, tool, kind, P), Decision::Deny, "{tool}");
    }
    let v = shell_verdict("", "ls", P, true);
    assert_eq!(v.decision, Decision::Deny);
    assert!(v.deny_message.is_some_and(|m| m.contains("Plan Mode")));
    let read_only: Map<String, Value> = json!({"readOnlyHint": true})
        .as_object()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        mcp(&e, "srv", "look", Some(&read_only), P, true),
        Decision::AskUser
    );
    assert_eq!(
        mcp(&e, "srv", "look", Some(&read_only), P, false),
        Decision::Deny
    );
    assert_eq!(mcp(&e, "srv", "act", None, P, true), Decision::Deny);
    // A rule may say otherwise.
    let e = engine(
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"ls\"\ndecision = \"allow\"\nmodes = [\"plan\"]\n",
    );
    assert_eq!(
        e.check(&PolicyInput {
            tool_name: "run_shell_command",
            args: &json!({"command": "ls -la"}),
            server_name: None,
            remote_name: None,
            annotations: None,
            tool_kind: ToolKind::Execute,
            mode: P,
            interactive: true,
        })
        .decision,
        Decision::Allow
    );
}

#[test]
fn interactive_annotations_and_subagent_conditions() {
    let e = engine(
        "[[rule]]\ntoolName = \"web_fetch\"\ndecision = \"allow\"\ninteractive = true\npriority = 100\n\
         [[rule]]\ntoolName = \"*\"\nmcpName = \"*\"\ntoolAnnotations = { readOnlyHint = true }\ndecision = \"allow\"\npriority = 100\n\
         [[rule]]\ntoolName = \"*\"\nsubagent = \"helper\"\ndecision = \"deny\"\npriority = 900\n",
    );
    let fetch = |interactive| {
        e.check(&PolicyInput {
            tool_name: "web_fetch",
            args: &json!({}),
            server_name: None,
            remote_name: None,
            annotations: None,
            tool_kind: ToolKind::Fetch,
            mode: D,
            interactive,
        })
        .decision
    };
    assert_eq!(fetch(true), Decision::Allow);
    assert_eq!(fetch(false), Decision::Deny);
    let read_only = json!({"readOnlyHint": true}).as_object().cloned();
    let writes = json!({"readOnlyHint": false}).as_object().cloned();
    assert_eq!(
        mcp(&e, "s", "t", read_only.as_ref(), D, true),
        Decision::Allow
    );
    assert_eq!(
        mcp(&e, "s", "t", writes.as_ref(), D, true),
        Decision::AskUser
    );
    assert_eq!(mcp(&e, "s", "t", None, D, true), Decision::AskUser);
}

#[test]
fn an_unreadable_rule_makes_its_tools_stricter_never_looser() {
    let (mut rules, errors) = parse_policy(
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"rm\"\ndecision = \"deny\"\nmodes = [\"yolo-ish\"]\n\
         [[rule]]\ntoolName = \"write_file\"\ndecision = \"allow\"\npriority = \"high\"\n",
        "u.toml",
        Tier::User,
    );
    assert_eq!(errors.len(), 2);
    rules.extend(default_rules());
    let e = PolicyEngine::new(rules);
    // The broken deny still denies the shell, in yolo too.
    let v = e.check(&PolicyInput {
        tool_name: "run_shell_command",
        args: &json!({"command": "echo hi"}),
        server_name: None,
        remote_name: None,
        annotations: None,
        tool_kind: ToolKind::Execute,
        mode: Y,
        interactive: true,
    });
    assert_eq!(v.decision, Decision::Deny);
    assert!(v.reason.contains("unreadable rule"), "{}", v.reason);
    // The broken allow asks (and denies where nobody is asked), even in yolo.
    let write = |mode, interactive| {
        e.check(&PolicyInput {
            tool_name: "write_file",
            args: &json!({}),
            server_name: None,
            remote_name: None,
            annotations: None,
            tool_kind: ToolKind::Edit,
            mode,
            interactive,
        })
        .decision
    };
    assert_eq!(write(Y, true), Decision::AskUser);
    assert_eq!(write(ApprovalMode::AutoEdit, false), Decision::Deny);
    assert_eq!(builtin(&e, "read_file", ToolKind::Read, Y), Decision::Allow);
}

#[test]
fn outright_denies_hide_tools_from_the_model() {
    let e = engine(
        "[[rule]]\ntoolName = \"write_file\"\ndecision = \"deny\"\n\
         [[rule]]\ntoolName = \"*\"\nargsPattern = \"password\"\ndecision = \"deny\"\npriority = 100\n\
         [[rule]]\ntoolName = \"mcp_srv_*\"\ndecision = \"deny\"\n",
    );
    let hidden = |tool: &str, server: Option<&str>, mode| {
        e.excludes(&PolicyInput {
            tool_name: tool,
            args: &json!({}),
            server_name: server,
            remote_name: server.map(|_| tool),
            annotations: None,
            tool_kind: ToolKind::Other,
            mode,
            interactive: true,
        })
    };
    assert!(hidden("write_file", None, D));
    assert!(!hidden("read_file", None, D));
    assert!(!hidden("run_shell_command", None, D));
    assert!(hidden("x", Some("srv"), Y));
    assert!(!hidden("x", Some("other"), Y));
    // Plan mode hides what it denies outright; the write tools stay,
    // for plans (0.61 shows them in plan mode).
    assert!(hidden("run_shell_command", None, P));
    assert!(!hidden("replace", None, P));
    // Each plan-mode tool only where it can be called (0.61's registry).
    assert!(hidden("exit_plan_mode", None, D));
    assert!(!hidden("exit_plan_mode", None, P));
    assert!(hidden("enter_plan_mode", None, P));
    assert!(!hidden("enter_plan_mode", None, D));
    assert!(hidden("enter_plan_mode", None, Y));
}

#[test]
fn mcp_excluded_and_confirmation_required_settings() {
    let mut rules = crate::policy::settings::stricter_settings_rules(
        &["srv".to_owned()],
        &["grep_search".to_owned()],
    );
    rules.extend(default_rules());
    let e = PolicyEngine::new(rules);
    assert_eq!(mcp(&e, "srv", "x", None, Y, true), Decision::Deny);
    assert_eq!(mcp(&e, "other", "x", None, Y, true), Decision::Allow);
    assert_eq!(
        builtin(&e, "search_file_content", ToolKind::Search, D),
        Decision::AskUser
    );
    let all = crate::policy::settings::stricter_settings_rules(&["*".to_owned()], &[]);
    let e = PolicyEngine::new(all);
    assert_eq!(mcp(&e, "any", "x", None, Y, true), Decision::Deny);
}

/// Plan mode's transitions and plan files, as 0.61's `plan.toml` decides
/// them.
#[test]
fn plan_mode_transitions_and_plan_files() {
    let e = PolicyEngine::new(default_rules());
    let check = |tool: &str, args: Value, mode, interactive| {
        e.check(&PolicyInput {
            tool_name: tool,
            args: &args,
            server_name: None,
            remote_name: None,
            annotations: None,
            tool_kind: ToolKind::Other,
            mode,
            interactive,
        })
    };
    let d = |tool: &str, mode, interactive| check(tool, json!({}), mode, interactive).decision;
    assert_eq!(d("enter_plan_mode", D, true), Decision::AskUser);
    assert_eq!(d("enter_plan_mode", D, false), Decision::Allow);
    let already = check("enter_plan_mode", json!({}), P, true);
    assert_eq!(already.decision, Decision::Deny);
    assert_eq!(
        already.deny_message.as_deref(),
        Some("You are already in Plan Mode.")
    );
    assert_eq!(d("exit_plan_mode", P, true), Decision::AskUser);
    assert_eq!(d("exit_plan_mode", P, false), Decision::Allow);
    let not_in = check("exit_plan_mode", json!({}), D, true);
    assert_eq!(not_in.decision, Decision::Deny);
    assert!(
        not_in
            .deny_message
            .unwrap()
            .starts_with("You are not currently in Plan Mode")
    );
    assert_eq!(d("exit_plan_mode", Y, true), Decision::Deny);
    assert_eq!(d("enter_plan_mode", Y, true), Decision::Deny);
    // Plans are .md files spelled as 0.61 spells them; nothing else is
    // written in plan mode.
    for ok in [
        "plan.md",
        "./feature-x.md",
        "plans/a.md",
        "/home/u/.gemini/tmp/w-0a1b2c3d/0123abcd/plans/a.md",
    ] {
        let v = check(
            "write_file",
            json!({"file_path": ok, "content": "x"}),
            P,
            true,
        );
        assert_eq!(v.decision, Decision::Allow, "{ok}");
    }
    for refused in ["src/main.rs", "/w/src/x.md", "../x.md", "plan.txt"] {
        let v = check(
            "replace",
            json!({"file_path": refused, "old_string": "a", "new_string": "b"}),
            P,
            true,
        );
        assert_eq!(v.decision, Decision::Deny, "{refused}");
    }
}
