//! A workspace's own configuration through a real daemon: its
//! `.gemini/settings.json` `tools.exclude` / `tools.core` hide and refuse
//! tools for that workspace's sessions only, live on edit, and a value that
//! cannot be read fails closed and is reported in `daemon status`.

mod peers;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use geminid_tests::*;
use serde_json::json;

fn write_workspace_settings(root: &Path, text: &str) -> PathBuf {
    let dir = root.join(".gemini");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("settings.json");
    std::fs::write(&path, text).unwrap();
    path
}

async fn tool_names(c: &Client, session: &str) -> Vec<String> {
    c.list_tools(Some(session.to_owned()))
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect()
}

/// Runs `name` with `args` and returns its final snapshot.
async fn run(
    c: &Client,
    session: &str,
    name: &str,
    args: serde_json::Value,
) -> geminid_protocol::tool::ToolCallSnapshot {
    c.call_tool(session.to_owned(), name.into(), Some(args), Some(true))
        .await
        .unwrap()
        .outcome
        .expect("a final snapshot")
}

async fn until_listed(c: &Client, session: &str, tool: &str, want: bool) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        if tool_names(c, session).await.iter().any(|n| n == tool) == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{tool} listed should be {want}");
}

#[tokio::test]
async fn a_workspace_exclude_hides_and_refuses_the_tool_there_only() {
    let d = TestDaemon::start();
    let other = d.dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let other = other.canonicalize().unwrap();
    let settings = write_workspace_settings(
        &d.workspace,
        "{\n  // no shell here\n  \"tools\": {\"exclude\": [\"run_shell_command\"]}\n}\n",
    );
    let c = d.client().await;
    let here = yolo_session(&c, &d.workspace).await;
    let there = yolo_session(&c, &other).await;
    assert!(
        !tool_names(&c, &here)
            .await
            .iter()
            .any(|n| n == "run_shell_command")
    );
    assert!(
        tool_names(&c, &there)
            .await
            .iter()
            .any(|n| n == "run_shell_command")
    );
    let refused = run(
        &c,
        &here,
        "run_shell_command",
        json!({"command": "echo hi"}),
    )
    .await;
    let error = refused.error.expect("refused");
    assert_eq!(error.kind, "denied", "{error:?}");
    assert!(
        error.message.contains("settings.json")
            || refused
                .decided_by
                .as_deref()
                .is_some_and(|d| d.contains("settings.json")),
        "the refusal names where it comes from: {error:?} {:?}",
        refused.decided_by
    );
    let ran = run(
        &c,
        &there,
        "run_shell_command",
        json!({"command": "echo hi"}),
    )
    .await;
    assert!(ran.result.is_some(), "{ran:?}");
    // Live: the exclusion moves to another tool.
    std::fs::write(&settings, r#"{"tools": {"exclude": ["glob"]}}"#).unwrap();
    until_listed(&c, &here, "run_shell_command", true).await;
    until_listed(&c, &here, "glob", false).await;
    // tools.core: only what it lists.
    std::fs::write(&settings, r#"{"tools": {"core": ["read_file"]}}"#).unwrap();
    until_listed(&c, &here, "write_file", false).await;
    let names = tool_names(&c, &here).await;
    assert!(names.contains(&"read_file".to_owned()), "{names:?}");
    assert!(
        !names.contains(&"run_shell_command".to_owned()),
        "{names:?}"
    );
    assert!(!names.contains(&"glob".to_owned()), "{names:?}");
    // A workspace cannot allow: its tools.allowed is not read.
    std::fs::write(
        &settings,
        r#"{"tools": {"allowed": ["run_shell_command"]}}"#,
    )
    .unwrap();
    let default = session_in(&c, &d.workspace, None, Some(false)).await;
    until_listed(&c, &default, "write_file", true).await;
    let asked = run(
        &c,
        &default,
        "run_shell_command",
        json!({"command": "echo hi"}),
    )
    .await;
    assert_eq!(asked.error.map(|e| e.kind).as_deref(), Some("denied"));
}

#[tokio::test]
async fn a_workspace_exclude_that_cannot_be_read_fails_closed_and_is_reported() {
    let d = TestDaemon::start();
    let settings = write_workspace_settings(&d.workspace, r#"{"tools": {"exclude": "glob"}}"#);
    let c = d.client().await;
    let session = session_in(&c, &d.workspace, None, Some(false)).await;
    let file = std::fs::canonicalize(&d.workspace)
        .unwrap()
        .join(".gemini/settings.json");
    let status = c.status().await.unwrap();
    let problem = status
        .config_problems
        .iter()
        .find(|p| p.file == file.display().to_string())
        .unwrap_or_else(|| panic!("not reported: {:?}", status.config_problems));
    assert!(problem.message.contains("tools.exclude"), "{problem:?}");
    // Every tool asks, so in a non-interactive session even a read is refused.
    std::fs::write(d.workspace.join("a.txt"), "hello").unwrap();
    let path = d.workspace.join("a.txt").display().to_string();
    let refused = run(&c, &session, "read_file", json!({"absolute_path": path})).await;
    assert_eq!(refused.error.map(|e| e.kind).as_deref(), Some("denied"));
    // Not JSON at all: still closed, the line named.
    std::fs::write(&settings, "{\n  \"tools\": {\"exclude\": [\"glob\"]\n").unwrap();
    let start = Instant::now();
    loop {
        let status = c.status().await.unwrap();
        if status
            .config_problems
            .iter()
            .any(|p| p.file.ends_with(".gemini/settings.json") && p.line.is_some())
        {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{status:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let refused = run(&c, &session, "read_file", json!({"absolute_path": path})).await;
    assert_eq!(refused.error.map(|e| e.kind).as_deref(), Some("denied"));
    // Fixed: the read runs, the problem is gone.
    std::fs::write(&settings, r#"{"tools": {"exclude": ["glob"]}}"#).unwrap();
    let start = Instant::now();
    loop {
        let ran = run(&c, &session, "read_file", json!({"absolute_path": path})).await;
        if ran.result.is_some() {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{ran:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let start = Instant::now();
    while c
        .status()
        .await
        .unwrap()
        .config_problems
        .iter()
        .any(|p| p.file.ends_with(".gemini/settings.json"))
    {
        assert!(start.elapsed() < Duration::from_secs(30));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn include_directories_are_extra_roots_and_a_missing_one_is_reported() {
    let mut d = TestDaemon::prepared(&[]);
    let extra = d.dir.path().join("shared-lib");
    let outside = d.dir.path().join("outside");
    std::fs::create_dir_all(&extra).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(extra.join("lib.txt"), "shared-content").unwrap();
    std::fs::write(outside.join("secret.txt"), "not-for-tools").unwrap();
    let gemini = d.home().join(".gemini");
    std::fs::create_dir_all(&gemini).unwrap();
    std::fs::write(
        gemini.join("settings.json"),
        json!({"context": {"includeDirectories": [extra, d.dir.path().join("missing")]}})
            .to_string(),
    )
    .unwrap();
    d.spawn();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    let read = run(
        &c,
        &session,
        "read_file",
        json!({"absolute_path": extra.join("lib.txt")}),
    )
    .await;
    let text = serde_json::to_string(&read.result).unwrap();
    assert!(text.contains("shared-content"), "{read:?}");
    let wrote = run(
        &c,
        &session,
        "write_file",
        json!({"file_path": extra.join("new.txt"), "content": "made"}),
    )
    .await;
    assert!(wrote.result.is_some(), "{wrote:?}");
    assert_eq!(
        std::fs::read_to_string(extra.join("new.txt")).unwrap(),
        "made"
    );
    let refused = run(
        &c,
        &session,
        "read_file",
        json!({"absolute_path": outside.join("secret.txt")}),
    )
    .await;
    assert_eq!(
        refused.error.map(|e| e.kind).as_deref(),
        Some("path_not_allowed")
    );
    // The missing one: said in the session, the session works.
    let mut events = c.subscribe_session(session.clone(), Some(0)).await.unwrap();
    collect_until(&mut events, |e| {
        matches!(&e.payload, geminid_protocol::EventPayload::Error { message }
            if message.contains("includeDirectories") && message.contains("missing"))
    })
    .await;
}

#[tokio::test]
async fn a_workspace_env_file_reaches_its_shell_commands_only_sanitized() {
    let d = TestDaemon::start();
    let other = d.dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(
        d.workspace.join(".env"),
        "GEMINID_DOTENV_PROBE=from-ws\nBASH_ENV=/tmp/evil\nDEBUG=1\nGEMINI_API_KEY=sekrit\nHOME=/nowhere\n",
    )
    .unwrap();
    let c = d.client().await;
    let here = yolo_session(&c, &d.workspace).await;
    let there = yolo_session(&c, &other.canonicalize().unwrap()).await;
    let probe = json!({"command":
        "echo \"P=${GEMINID_DOTENV_PROBE:-none} B=${BASH_ENV:-none} D=${DEBUG:-none} K=${GEMINI_API_KEY:-none} H=$HOME\""});
    let out =
        |s: geminid_protocol::tool::ToolCallSnapshot| serde_json::to_string(&s.result).unwrap();
    let text = out(run(&c, &here, "run_shell_command", probe.clone()).await);
    assert!(text.contains("P=from-ws"), "{text}");
    assert!(
        text.contains("B=none"),
        "dangerous variable dropped: {text}"
    );
    assert!(
        text.contains("D=none"),
        "0.61's excluded variable dropped: {text}"
    );
    assert!(text.contains("K=none"), "secrets stay redacted: {text}");
    assert!(
        !text.contains("H=/nowhere"),
        "the daemon's own variables win: {text}"
    );
    let text = out(run(&c, &there, "run_shell_command", probe).await);
    assert!(
        text.contains("P=none"),
        "no leak to another workspace: {text}"
    );
}

#[tokio::test]
async fn a_session_loaded_after_a_restart_starts_its_workspace_servers() {
    let p = peers::peers();
    let mut d = TestDaemon::prepared(&[]);
    write_workspace_settings(
        &d.workspace,
        &json!({"mcpServers": {"ws": {"command": peers::everything(&p), "includeTools": ["echo"]}}})
            .to_string(),
    );
    d.spawn();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    peers::connected(&c, &["ws"]).await;
    drop(c);
    assert_eq!(d.terminate(), Some(0));
    d.spawn();
    let c = d.client().await;
    // Nothing has opened the workspace yet.
    assert!(
        c.list_mcp()
            .await
            .unwrap()
            .servers
            .iter()
            .all(|s| s.name != "ws")
    );
    // Using the stored session loads it, which starts its servers.
    let file = d.workspace.join("a.txt");
    std::fs::write(&file, "x").unwrap();
    let read = run(&c, &session, "read_file", json!({"absolute_path": file})).await;
    assert!(read.result.is_some(), "{read:?}");
    peers::connected(&c, &["ws"]).await;
    let start = Instant::now();
    while !tool_names(&c, &session).await.contains(&"echo".to_owned()) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "echo never listed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
