//! Folder trust, workspace-scoped MCP servers and the environment children
//! get, through a real daemon: an untrusted folder's MCP server is never
//! started, a trusted workspace's server is invisible and uncallable from
//! a yolo session in another directory, and a shell command does not see
//! the daemon's secrets.

mod peers;

use std::path::Path;

use geminid_protocol::EventPayload;
use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::CallState;
use geminid_tests::*;
use peers::*;
use serde_json::json;

async fn yolo_in(c: &Client, dir: &Path) -> String {
    session_in(c, dir, Some(ApprovalMode::Yolo), Some(false)).await
}

fn workspace_with_server(dir: &Path, name: &str, command: &str) {
    std::fs::create_dir_all(dir.join(".gemini")).unwrap();
    std::fs::write(
        dir.join(".gemini/settings.json"),
        json!({"mcpServers": {name: {"command": command, "includeTools": ["echo"]}}}).to_string(),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn untrusted_folders_start_nothing_and_workspace_tools_stay_in_their_workspace() {
    let p = peers();
    // The trust file decides (not the harness's blanket trust).
    let mut d = TestDaemon::prepared(&[("GEMINI_CLI_TRUST_WORKSPACE", "")]);
    let base = d.workspace.parent().unwrap().to_path_buf();
    let trusted = base.join("trusted");
    let untrusted = base.join("untrusted");
    let other = base.join("other");
    for dir in [&trusted, &untrusted, &other] {
        std::fs::create_dir_all(dir).unwrap();
    }
    workspace_with_server(&trusted, "mine", &everything(&p));
    workspace_with_server(&untrusted, "theirs", &everything(&p));
    let gemini = d.home().join(".gemini");
    std::fs::create_dir_all(&gemini).unwrap();
    std::fs::write(
        gemini.join("trustedFolders.json"),
        format!(
            "{{\n  // 0.61's file, with a comment\n  \"{}\": \"TRUST_FOLDER\",\n  \"{}\": \"DO_NOT_TRUST\",\n  \"{}\": \"TRUST_FOLDER\"\n}}\n",
            trusted.display(),
            untrusted.display(),
            other.display()
        ),
    )
    .unwrap();
    d.spawn();
    let c = d.client().await;

    // The untrusted folder: its server is never started, its memory file
    // names are not read, and status says why.
    let settings = untrusted.join(".gemini/settings.json");
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    value["context"] = json!({"fileName": "PLANTED.md"});
    std::fs::write(&settings, value.to_string()).unwrap();
    std::fs::write(untrusted.join("PLANTED.md"), "planted instructions").unwrap();
    let bad = yolo_in(&c, &untrusted).await;
    let memory = c.show_memory(Some(bad), None).await.unwrap();
    assert!(!memory.text.contains("planted"), "{}", memory.text);
    let status = c.status().await.unwrap();
    let problem = status
        .config_problems
        .iter()
        .find(|p| p.file.starts_with(&untrusted.display().to_string()))
        .unwrap_or_else(|| panic!("no trust problem: {status:#?}"));
    assert!(problem.message.contains("not trusted"), "{problem:?}");

    // The trusted one: its server starts and belongs to its sessions.
    let mine = yolo_in(&c, &trusted).await;
    let elsewhere = yolo_in(&c, &other).await;
    connected(&c, &["mine"]).await;
    let list = c.list_mcp().await.unwrap();
    assert!(
        list.servers.iter().all(|s| s.name != "theirs"),
        "the untrusted folder's server started: {list:#?}"
    );
    let ok = run(&c, &mine, "echo", json!({"message": "hi"})).await;
    assert_eq!(ok.state, CallState::Success, "{ok:#?}");
    let refused = run(&c, &elsewhere, "echo", json!({"message": "hi"})).await;
    assert_ne!(refused.state, CallState::Success, "{refused:#?}");
    let qualified = run(&c, &elsewhere, "mine__echo", json!({"message": "hi"})).await;
    assert_ne!(qualified.state, CallState::Success, "{qualified:#?}");
    let tools = c.list_tools(Some(elsewhere.clone())).await.unwrap();
    assert!(tools.iter().all(|t| t.name != "echo"), "visible elsewhere");
    let tools = c.list_tools(Some(mine.clone())).await.unwrap();
    assert!(tools.iter().any(|t| t.name == "echo"));
    // Its status news went to its own sessions only.
    let mut events = c
        .subscribe_session(elsewhere.clone(), Some(0))
        .await
        .unwrap();
    while let Ok(Some(Ok(event))) =
        tokio::time::timeout(std::time::Duration::from_millis(300), events.next()).await
    {
        assert!(
            !matches!(&event.payload, EventPayload::McpServerStatus { server, .. } if server == "mine"),
            "another workspace was told about mine: {event:?}"
        );
    }
}

#[tokio::test]
async fn shell_commands_do_not_see_the_daemon_s_secrets() {
    let mut d = TestDaemon::prepared(&[
        ("GEMINI_API_KEY", "not-for-children"),
        ("MY_SERVICE_TOKEN", "t0ken"),
        ("SHARED_PUBLIC_KEY", "pub"),
        ("PLAIN_SETTING", "visible"),
        ("SOME_URL", "https://user:pass@example.com/"),
    ]);
    let gemini = d.home().join(".gemini");
    std::fs::create_dir_all(&gemini).unwrap();
    std::fs::write(
        gemini.join("settings.json"),
        r#"{"security": {"environmentVariableRedaction": {"allowed": ["SHARED_PUBLIC_KEY"], "blocked": ["PLAIN_BLOCKED"]}}}"#,
    )
    .unwrap();
    d.env.push(("PLAIN_BLOCKED".into(), "x".into()));
    d.spawn();
    let c = d.client().await;
    let s = yolo_session(&c, &d.workspace).await;
    let snap = c
        .call_tool(
            s.clone(),
            "run_shell_command".into(),
            Some(json!({"command": "env"})),
            Some(true),
        )
        .await
        .unwrap()
        .outcome
        .unwrap();
    let out = serde_json::to_string(&snap.result).unwrap();
    for secret in [
        "GEMINI_API_KEY",
        "MY_SERVICE_TOKEN",
        "SOME_URL",
        "PLAIN_BLOCKED",
    ] {
        assert!(!out.contains(secret), "{secret} reached the shell: {out}");
    }
    assert!(out.contains("PLAIN_SETTING=visible"), "{out}");
    assert!(
        out.contains("SHARED_PUBLIC_KEY=pub"),
        "the opt-out passes: {out}"
    );
    assert!(out.contains("HOME="), "{out}");
}
