//! MCP roots through the daemon, with server-everything's
//! `get-roots-list`: a user server is told every workspace the sessions
//! opened, and told again (`notifications/roots/list_changed`) when one
//! more is opened.

mod peers;

use std::time::{Duration, Instant};

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::CallState;
use peers::*;
use serde_json::{Value, json};

fn text(result: &Value) -> String {
    result["llmContent"]
        .as_array()
        .expect("parts")
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect()
}

async fn roots_seen(c: &geminid_tests::Client, sid: &str) -> String {
    roots_of(c, sid, "everything").await
}

async fn roots_of(c: &geminid_tests::Client, sid: &str, server: &str) -> String {
    let tool = format!("{server}__get-roots-list");
    let listed = run(c, sid, &tool, json!({})).await;
    assert_eq!(listed.state, CallState::Success, "{listed:#?}");
    text(&result_json(&listed))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_user_server_sees_every_open_workspace_and_hears_of_a_new_one() {
    let p = peers();
    let d = daemon_with_settings(&json!({"mcpServers": {
        "everything": {"command": everything(&p)}
    }}));
    let c = d.client().await;
    connected(&c, &["everything"]).await;
    let sid = session(&c, &d, ApprovalMode::Yolo).await;
    let first = format!("file://{}", d.workspace.display());
    let seen = roots_seen(&c, &sid).await;
    assert!(seen.contains("Current MCP Roots (1 total)"), "{seen}");
    assert!(seen.contains(&format!("URI: {first}\n")), "{seen}");

    // A session in a second folder: the server is told, asks again, and
    // then knows both.
    let other = d.dir.path().join("second project");
    std::fs::create_dir_all(&other).expect("second workspace");
    let other = other.canonicalize().expect("canonical");
    let second_sid = c
        .create_session(
            other.display().to_string(),
            Some(ApprovalMode::Yolo),
            None,
            Some(false),
            None,
            None,
            None,
        )
        .await
        .expect("second session")
        .session_id;
    let second = format!("file://{}", other.display()).replace(' ', "%20");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let seen = roots_seen(&c, &sid).await;
        if seen.contains("Current MCP Roots (2 total)") {
            assert!(seen.contains(&format!("URI: {first}\n")), "{seen}");
            assert!(seen.contains(&format!("URI: {second}\n")), "{seen}");
            assert!(seen.contains("second project"), "{seen}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "never told of the second root: {seen}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The last session in the second folder goes: so does its root.
    c.delete_session(second_sid).await.expect("delete");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let seen = roots_seen(&c, &sid).await;
        if seen.contains("Current MCP Roots (1 total)") {
            assert!(seen.contains(&format!("URI: {first}\n")), "{seen}");
            assert!(!seen.contains("second project"), "{seen}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "never told the second root went: {seen}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workspace_server_sees_its_root_and_include_dirs_but_no_other_workspace() {
    let p = peers();
    let outside = tempfile::tempdir().expect("temp dir");
    let lib = outside.path().join("lib");
    std::fs::create_dir_all(&lib).expect("include dir");
    let lib = lib.canonicalize().expect("canonical");
    let d = daemon_with_settings(&json!({
        "context": {"includeDirectories": [lib.display().to_string()]}
    }));
    std::fs::create_dir_all(d.workspace.join(".gemini")).expect("workspace .gemini");
    std::fs::write(
        d.workspace.join(".gemini/settings.json"),
        json!({"mcpServers": {"ws": {"command": everything(&p)}}}).to_string(),
    )
    .expect("workspace settings");
    let c = d.client().await;
    let sid = session(&c, &d, ApprovalMode::Yolo).await;
    connected(&c, &["ws"]).await;
    let other = d.dir.path().join("elsewhere");
    std::fs::create_dir_all(&other).expect("other workspace");
    c.create_session(
        other
            .canonicalize()
            .expect("canonical")
            .display()
            .to_string(),
        Some(ApprovalMode::Yolo),
        None,
        Some(false),
        None,
        None,
        None,
    )
    .await
    .expect("second session");
    let seen = roots_of(&c, &sid, "ws").await;
    assert!(seen.contains("Current MCP Roots (2 total)"), "{seen}");
    assert!(
        seen.contains(&format!("URI: file://{}\n", d.workspace.display())),
        "{seen}"
    );
    assert!(
        seen.contains(&format!("URI: file://{}\n", lib.display())),
        "{seen}"
    );
    assert!(!seen.contains("elsewhere"), "{seen}");
}
