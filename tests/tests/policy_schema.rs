//! A Gemini CLI 0.61 user's policy files through a real daemon: every
//! field of 0.61's rule schema (`denyMessage`, `*` wildcards, 0.61's MCP
//! naming, 0.61 tool names in `tools.core`, plan mode), unknown fields as
//! warnings, unreadable rules failing closed, and `tools.core` /
//! `tools.exclude` shaping what a session is shown.

mod peers;

use std::path::PathBuf;

use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::{CallState, ToolCallSnapshot};
use geminid_tests::*;
use peers::*;
use serde_json::{Value, json};

fn write_policy(d: &TestDaemon, name: &str, text: &str) -> PathBuf {
    let dir = d.home().join(".gemini/policies");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A daemon started with `text` already in `~/.gemini/policies/u.toml`.
fn daemon_with_policy(text: &str) -> TestDaemon {
    let mut d = TestDaemon::start();
    d.terminate();
    write_policy(&d, "u.toml", text);
    d.spawn();
    d
}

async fn session_in(c: &Client, d: &TestDaemon, mode: ApprovalMode, interactive: bool) -> String {
    c.create_session(
        d.workspace.display().to_string(),
        Some(mode),
        None,
        Some(interactive),
        None,
        None,
        None,
    )
    .await
    .expect("session")
    .session_id
}

async fn shell(c: &Client, sid: &str, command: &str) -> ToolCallSnapshot {
    run(c, sid, "run_shell_command", json!({"command": command})).await
}

fn denied_message(s: &ToolCallSnapshot) -> String {
    assert_eq!(s.state, CallState::Error, "{s:#?}");
    let error = s.error.as_ref().expect("error");
    assert_eq!(error.kind, "denied", "{s:#?}");
    error.message.clone()
}

fn gemctl_check(d: &TestDaemon, args: &[&str]) -> String {
    let mut full = vec!["policy", "check"];
    full.extend_from_slice(args);
    let out = d.gemctl(&full).output().expect("gemctl");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_issues_deny_message_rule_denies_rm_in_yolo_and_the_message_reaches_the_result() {
    let d = daemon_with_policy(
        "[[rule]]\ncommandPrefix = \"rm\"\ndecision = \"deny\"\ndenyMessage = \"no deleting here\"\n",
    );
    let c = d.client().await;
    std::fs::create_dir_all(d.workspace.join("build")).unwrap();
    let sid = session_in(&c, &d, ApprovalMode::Yolo, true).await;
    let result = shell(&c, &sid, "rm -rf build").await;
    let message = denied_message(&result);
    assert!(message.starts_with("no deleting here"), "{message}");
    assert!(d.workspace.join("build").is_dir(), "the command ran");
    // `gemctl policy check` explains it: the rule, its tier, the field, the message.
    let out = gemctl_check(
        &d,
        &[
            "--mode",
            "yolo",
            "run_shell_command",
            r#"{"command":"rm -rf build"}"#,
        ],
    );
    assert!(out.starts_with("deny"), "{out}");
    assert!(out.contains("u.toml rule #1"), "{out}");
    assert!(out.contains("user tier"), "{out}");
    assert!(out.contains("commandPrefix = \"rm\""), "{out}");
    assert!(out.contains("message no deleting here"), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_star_tool_name_with_an_args_pattern_denies_every_tool() {
    let d = daemon_with_policy(
        "[[rule]]\ntoolName = \"*\"\nargsPattern = \"password\"\ndecision = \"deny\"\npriority = 100\n",
    );
    let c = d.client().await;
    let sid = session_in(&c, &d, ApprovalMode::Yolo, true).await;
    denied_message(&shell(&c, &sid, "echo password").await);
    assert_eq!(shell(&c, &sid, "echo hi").await.state, CallState::Success);
    std::fs::write(d.workspace.join("password.txt"), "x").unwrap();
    let path = d.workspace.join("password.txt").display().to_string();
    denied_message(&run(&c, &sid, "read_file", json!({"absolute_path": path})).await);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_server_wildcard_in_0_61_naming_denies_a_real_servers_tools_and_hides_them() {
    let p = peers();
    let mut d =
        daemon_with_settings(&json!({"mcpServers": {"everything": {"command": everything(&p)}}}));
    d.terminate();
    write_policy(
        &d,
        "mcp.toml",
        "[[rule]]\ntoolName = \"mcp_everything_*\"\ndecision = \"deny\"\npriority = 100\ndenyMessage = \"not that server\"\n",
    );
    d.spawn();
    let c = d.client().await;
    connected(&c, &["everything"]).await;
    let sid = session_in(&c, &d, ApprovalMode::Yolo, true).await;
    let message = denied_message(&run(&c, &sid, "echo", json!({"message": "hi"})).await);
    assert!(message.starts_with("not that server"), "{message}");
    // The model is not told about them, and `tool.list` for the session
    // leaves them out; the daemon-wide list still has them.
    let shown = c.list_tools(Some(sid.clone())).await.unwrap();
    assert!(!shown.iter().any(|t| t.name == "echo"), "{shown:#?}");
    assert!(shown.iter().any(|t| t.name == "read_file"));
    let all = c.list_tools(None).await.unwrap();
    assert!(all.iter().any(|t| t.name == "echo"));
}

#[tokio::test(flavor = "multi_thread")]
async fn grep_search_in_tools_core_keeps_our_search_tool_and_hides_the_rest() {
    let d = daemon_with_settings(
        &json!({"tools": {"core": ["grep_search", "read_file"], "exclude": ["glob"]}}),
    );
    let c = d.client().await;
    let sid = session_in(&c, &d, ApprovalMode::Default, true).await;
    let shown: Vec<String> = c
        .list_tools(Some(sid.clone()))
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(
        shown.contains(&"search_file_content".to_owned()),
        "{shown:?}"
    );
    assert!(shown.contains(&"read_file".to_owned()), "{shown:?}");
    for hidden in ["write_file", "glob", "run_shell_command"] {
        assert!(
            !shown.contains(&hidden.to_owned()),
            "{hidden} shown: {shown:?}"
        );
    }
    std::fs::write(d.workspace.join("a.txt"), "needle\n").unwrap();
    let found = run(
        &c,
        &sid,
        "search_file_content",
        json!({"pattern": "needle", "path": d.workspace.display().to_string()}),
    )
    .await;
    assert_eq!(found.state, CallState::Success, "{found:#?}");
    let path = d.workspace.join("b.txt").display().to_string();
    denied_message(
        &run(
            &c,
            &sid,
            "write_file",
            json!({"file_path": path, "content": "x"}),
        )
        .await,
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_fields_warn_and_unreadable_rules_fail_closed() {
    let d = daemon_with_policy(
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"rm\"\ndecision = \"deny\"\ncomment = \"from a newer release\"\n\
         [[rule]]\ntoolName = \"write_file\"\ndecision = \"allow\"\npriority = \"high\"\n",
    );
    let c = d.client().await;
    let list = c.list_policy().await.unwrap();
    let problems = list.problems.join("\n");
    assert!(
        problems.contains("u.toml: rule #1: unknown field `comment` ignored"),
        "{problems}"
    );
    assert!(
        problems.contains("u.toml: rule #2: field `priority`"),
        "{problems}"
    );
    let sid = session_in(&c, &d, ApprovalMode::Yolo, true).await;
    // The rule with the unknown field still denies.
    denied_message(&shell(&c, &sid, "rm -rf x").await);
    // The unreadable allow makes write_file ask even in yolo; nobody is
    // asked in a non-interactive session, so it is refused there.
    let batch = session_in(&c, &d, ApprovalMode::Yolo, false).await;
    let path = d.workspace.join("w.txt").display().to_string();
    let message = denied_message(
        &run(
            &c,
            &batch,
            "write_file",
            json!({"file_path": path, "content": "x"}),
        )
        .await,
    );
    assert!(message.contains("unreadable rule"), "{message}");
    let out = gemctl_check(&d, &["--mode", "yolo", "write_file", "{}"]);
    assert!(out.starts_with("ask_user"), "{out}");
    assert!(out.contains("u.toml rule #2"), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn plan_mode_runs_only_read_only_tools() {
    let d = TestDaemon::start();
    let c = d.client().await;
    let sid = session_in(&c, &d, ApprovalMode::Plan, true).await;
    let path = d.workspace.join("p.txt");
    std::fs::write(&path, "plan\n").unwrap();
    let read = run(
        &c,
        &sid,
        "read_file",
        json!({"absolute_path": path.display().to_string()}),
    )
    .await;
    assert_eq!(read.state, CallState::Success, "{read:#?}");
    // A write outside the session's plans directory is refused before
    // the policy is asked, as 0.61's plan-path check refuses it.
    let outside = run(
        &c,
        &sid,
        "write_file",
        json!({"file_path": path.display().to_string(), "content": "x"}),
    )
    .await;
    assert_eq!(outside.state, CallState::Error, "{outside:#?}");
    let message = &outside.error.as_ref().expect("error").message;
    assert!(message.contains("designated plans directory"), "{message}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "plan\n");
    // In the plans directory, only a plan (.md) may be written.
    let message = denied_message(
        &run(
            &c,
            &sid,
            "write_file",
            json!({"file_path": "notes.txt", "content": "x"}),
        )
        .await,
    );
    assert!(message.contains("Plan Mode"), "{message}");
    assert!(denied_message(&shell(&c, &sid, "ls").await).contains("Plan Mode"));
    let shown: Vec<String> = c
        .list_tools(Some(sid))
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    // write_file stays, for plans (as 0.61 shows it); the shell does not.
    assert!(shown.contains(&"write_file".to_owned()), "{shown:?}");
    assert!(
        !shown.contains(&"run_shell_command".to_owned()),
        "{shown:?}"
    );
    assert!(shown.contains(&"read_file".to_owned()), "{shown:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_extensions_policies_load_in_their_tier_without_allow_rules() {
    let mut d = TestDaemon::start();
    d.terminate();
    let dir = d.home().join(".gemini/extensions/tidy/policies");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("p.toml"),
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"curl\"\ndecision = \"deny\"\npriority = 10\n\
         [[rule]]\ntoolName = \"*\"\ndecision = \"allow\"\npriority = 999\n",
    )
    .unwrap();
    d.spawn();
    let c = d.client().await;
    let list = c.list_policy().await.unwrap();
    let problems = list.problems.join("\n");
    assert!(
        problems.contains("an extension may not contribute an allow rule"),
        "{problems}"
    );
    let check: Value = serde_json::to_value(
        c.check_policy(
            None,
            None,
            "run_shell_command".into(),
            Some(json!({"command": "curl example.com"})),
            Some(ApprovalMode::Default),
            None,
        )
        .await
        .unwrap(),
    )
    .unwrap();
    assert_eq!(check["decision"], "deny", "{check}");
    assert_eq!(check["rule"]["tier"], "extension", "{check}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workspaces_own_policies_deny_and_ask_for_its_sessions_only_and_never_allow() {
    let d = TestDaemon::start();
    let c = d.client().await;
    let dir = d.workspace.join(".gemini/policies");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("w.toml"),
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"touch\"\ndecision = \"deny\"\npriority = 10\ndenyMessage = \"not in this repository\"\n\
         [[rule]]\ntoolName = \"*\"\ndecision = \"allow\"\npriority = 999\n",
    )
    .unwrap();
    let sid = session_in(&c, &d, ApprovalMode::Yolo, true).await;
    let message = denied_message(&shell(&c, &sid, "touch made").await);
    assert!(message.starts_with("not in this repository"), "{message}");
    // Its allow rule is left out: a non-interactive default session is
    // still refused what would ask.
    let batch = session_in(&c, &d, ApprovalMode::Default, false).await;
    denied_message(&shell(&c, &batch, "echo hi").await);
    // Another workspace is not affected.
    let other = tempfile::tempdir().unwrap();
    let elsewhere = c
        .create_session(
            other.path().display().to_string(),
            Some(ApprovalMode::Yolo),
            None,
            Some(true),
            None,
            None,
            None,
        )
        .await
        .unwrap()
        .session_id;
    assert_eq!(
        shell(&c, &elsewhere, "touch made").await.state,
        CallState::Success
    );
}
