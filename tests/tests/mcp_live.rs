//! `mcpServers` in the user settings apply live, through a real daemon:
//! adding, changing and removing a server while a call to another one
//! runs (it finishes), and a broken settings file that is fixed brings
//! the servers back.

mod peers;

use std::time::Duration;

use geminid_protocol::EventPayload;
use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::CallState;
use geminid_tests::*;
use peers::*;
use serde_json::{Value, json};

fn write_settings(d: &TestDaemon, settings: &Value) {
    let path = d.home().join(".gemini/settings.json");
    std::fs::write(&path, settings.to_string()).unwrap();
}

async fn gone(c: &Client, name: &str) {
    wait_list(c, 30, |l| l.servers.iter().all(|s| s.name != name)).await;
}

/// Waits until `daemon.status` reports a problem with the user settings
/// (the daemon has read the broken file).
async fn until_settings_problem(c: &Client) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let status = c.status().await.unwrap();
        if status
            .config_problems
            .iter()
            .any(|p| p.file.ends_with("settings.json"))
        {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no settings problem: {status:#?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn servers_follow_the_settings_and_untouched_calls_finish() {
    let p = peers();
    let srv = everything(&p);
    let d = daemon_with_settings(&json!({"mcpServers": {
        "keep": {"command": srv, "includeTools": ["trigger-long-running-operation", "echo"]}
    }}));
    let c = d.client().await;
    connected(&c, &["keep"]).await;
    let sid = session(&c, &d, ApprovalMode::Yolo).await;
    let pid_before = server(&c.list_mcp().await.unwrap(), "keep").pid;

    // A call on `keep` runs while the others come and go.
    let mut sub = c.subscribe_session(sid.clone(), None).await.unwrap();
    let long = c
        .call_tool(
            sid.clone(),
            "trigger-long-running-operation".into(),
            Some(json!({"duration": 3, "steps": 3})),
            None,
        )
        .await
        .unwrap()
        .call_id;

    // Added.
    write_settings(
        &d,
        &json!({"mcpServers": {
            "keep": {"command": srv, "includeTools": ["trigger-long-running-operation", "echo"]},
            "added": {"command": srv, "includeTools": ["get-sum"]}
        }}),
    );
    connected(&c, &["keep", "added"]).await;
    let sum = run(&c, &sid, "get-sum", json!({"a": 2, "b": 3})).await;
    assert_eq!(sum.state, CallState::Success, "{sum:#?}");
    // Changed: only `added` restarts (another tool list).
    let added_pid = server(&c.list_mcp().await.unwrap(), "added").pid;
    write_settings(
        &d,
        &json!({"mcpServers": {
            "keep": {"command": srv, "includeTools": ["trigger-long-running-operation", "echo"]},
            "added": {"command": srv, "includeTools": ["get-sum", "get-tiny-image"]}
        }}),
    );
    let list = wait_list(&c, 30, |l| {
        l.servers
            .iter()
            .any(|s| s.name == "added" && s.status == "connected" && s.pid != added_pid)
    })
    .await;
    assert_eq!(server(&list, "keep").pid, pid_before, "keep was restarted");
    // Removed.
    write_settings(
        &d,
        &json!({"mcpServers": {
            "keep": {"command": srv, "includeTools": ["trigger-long-running-operation", "echo"]}
        }}),
    );
    gone(&c, "added").await;
    let missing = run(&c, &sid, "get-sum", json!({"a": 2, "b": 3})).await;
    assert_ne!(missing.state, CallState::Success, "{missing:#?}");

    // The call on the untouched server finished normally.
    let events = collect_until(&mut sub, |e| is_final(e, &long)).await;
    let last = events
        .iter()
        .rev()
        .find_map(|e| match &e.payload {
            EventPayload::ToolCall(s) if s.call_id == long => Some(s.state),
            _ => None,
        })
        .unwrap();
    assert_eq!(last, CallState::Success);
    assert_eq!(server(&c.list_mcp().await.unwrap(), "keep").pid, pid_before);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broken_settings_file_keeps_the_servers_and_a_fixed_one_brings_them_back() {
    let p = peers();
    let srv = everything(&p);
    let mut d = TestDaemon::prepared(&[]);
    let gemini = d.home().join(".gemini");
    std::fs::create_dir_all(&gemini).unwrap();
    // Broken from the start: nothing runs.
    std::fs::write(gemini.join("settings.json"), "{ \"mcpServers\": ").unwrap();
    d.spawn();
    let c = d.client().await;
    until_settings_problem(&c).await;
    assert!(c.list_mcp().await.unwrap().servers.is_empty());
    // Fixed (with a comment): the server comes.
    std::fs::write(
        gemini.join("settings.json"),
        format!(
            "{{\n  // mine\n  \"mcpServers\": {{\"srv\": {{\"command\": \"{srv}\", \"includeTools\": [\"echo\"]}}}}\n}}\n"
        ),
    )
    .unwrap();
    connected(&c, &["srv"]).await;
    // Broken again: the server stays.
    std::fs::write(gemini.join("settings.json"), "{ oops").unwrap();
    until_settings_problem(&c).await;
    let list = c.list_mcp().await.unwrap();
    assert_eq!(server(&list, "srv").status, "connected");
    // SIGHUP changes nothing either.
    let pid = rustix::process::Pid::from_raw(d.pid() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::HUP).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        server(&c.list_mcp().await.unwrap(), "srv").status,
        "connected"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_session_s_first_prompt_waits_for_its_workspace_servers() {
    use geminid_tests::fake_model::{FakeModel, gemini};
    let p = peers();
    let fake = FakeModel::scripted(vec![
        gemini::call_reply(&[("echo", json!({"message": "from the first turn"}))]),
        gemini::answer(&["done"]),
    ])
    .await;
    let mut d = TestDaemon::prepared(&[
        ("GEMINI_API_KEY", "test-key"),
        ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
        ("GEMINI_MODEL", "gemini-2.5-flash"),
    ]);
    std::fs::create_dir_all(d.workspace.join(".gemini")).unwrap();
    std::fs::write(
        d.workspace.join(".gemini/settings.json"),
        json!({"mcpServers": {"ws": {"command": everything(&p), "includeTools": ["echo"]}}})
            .to_string(),
    )
    .unwrap();
    d.spawn();
    let c = d.client().await;
    // session.create starts the connection; the prompt follows at once.
    let sid = session(&c, &d, ApprovalMode::Yolo).await;
    let mut sub = c.subscribe_session(sid.clone(), None).await.unwrap();
    let turn = c
        .prompt(sid.clone(), "echo something".into())
        .await
        .unwrap()
        .turn_id;
    let events = collect_until(
        &mut sub,
        |e| matches!(&e.payload, EventPayload::TurnFinished { turn_id, .. } if *turn_id == turn),
    )
    .await;
    assert!(
        events.iter().any(|e| matches!(&e.payload,
            EventPayload::McpServerStatus { server, message: Some(m), .. }
                if server == "ws" && m.contains("waits"))),
        "no event said what the prompt waited for: {events:#?}"
    );
    let call = events
        .iter()
        .rev()
        .find_map(|e| match &e.payload {
            EventPayload::ToolCall(s) if s.state.is_terminal() => Some((**s).clone()),
            _ => None,
        })
        .expect("the echo call");
    assert_eq!(call.state, CallState::Success, "{call:#?}");
    let first = &fake.seen()[0].body;
    let told: Vec<&str> = first["tools"][0]["functionDeclarations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["name"].as_str())
        .collect();
    assert!(told.contains(&"echo"), "the model was not told: {told:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_excluded_and_allowed_apply_live() {
    let p = peers();
    let srv = everything(&p);
    let d = daemon_with_settings(&json!({
        "mcp": {"excluded": ["b"]},
        "mcpServers": {
            "a": {"command": srv, "includeTools": ["echo"]},
            "b": {"command": srv, "includeTools": ["echo"]}
        }
    }));
    let c = d.client().await;
    connected(&c, &["a"]).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        c.list_mcp()
            .await
            .unwrap()
            .servers
            .iter()
            .all(|s| s.name != "b")
    );
    write_settings(
        &d,
        &json!({
            "mcp": {"allowed": ["b"]},
            "mcpServers": {
                "a": {"command": srv, "includeTools": ["echo"]},
                "b": {"command": srv, "includeTools": ["echo"]}
            }
        }),
    );
    connected(&c, &["b"]).await;
    gone(&c, "a").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workspace_s_servers_follow_its_settings_and_its_trust_live() {
    let p = peers();
    let srv = everything(&p);
    let mut d = TestDaemon::prepared(&[("GEMINI_CLI_TRUST_WORKSPACE", "")]);
    let gemini = d.home().join(".gemini");
    std::fs::create_dir_all(&gemini).unwrap();
    let trust = gemini.join("trustedFolders.json");
    std::fs::write(
        &trust,
        json!({d.workspace.display().to_string(): "TRUST_FOLDER"}).to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(d.workspace.join(".gemini")).unwrap();
    let ws_settings = d.workspace.join(".gemini/settings.json");
    std::fs::write(&ws_settings, "{}").unwrap();
    d.spawn();
    let c = d.client().await;
    let _sid = session(&c, &d, ApprovalMode::Yolo).await;
    // A server added to the workspace's settings starts without a new session.
    std::fs::write(
        &ws_settings,
        json!({"mcpServers": {"ws": {"command": srv, "includeTools": ["echo"]}}}).to_string(),
    )
    .unwrap();
    connected(&c, &["ws"]).await;
    // The folder loses its trust: the server stops.
    std::fs::write(
        &trust,
        json!({d.workspace.display().to_string(): "DO_NOT_TRUST"}).to_string(),
    )
    .unwrap();
    gone(&c, "ws").await;
}
