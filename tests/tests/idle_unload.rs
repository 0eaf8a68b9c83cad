//! Idle sessions leave memory and come back on demand: the loaded count
//! and the daemon's resident size fall back once sessions are idle, a
//! request racing an unload is never lost, and "always for this session"
//! answers survive an unload and a restart.

use std::sync::Arc;
use std::time::Duration;

use geminid_protocol::EventPayload;
use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::tool::{CallState, ConfirmationOutcome};
use geminid_tests::fake_model::{FakeModel, gemini};
use geminid_tests::*;
use serde_json::json;

/// The daemon's resident set size in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap()
}

async fn loaded(c: &jsonrpsee::core::client::Client) -> u64 {
    c.status().await.unwrap().sessions_loaded
}

/// Whether session `id` is loaded, as `session.list` says (listing loads
/// nothing).
async fn is_loaded(c: &jsonrpsee::core::client::Client, id: &str) -> bool {
    c.list_sessions()
        .await
        .unwrap()
        .iter()
        .find(|s| s.session_id == id)
        .map(|s| s.loaded)
        .unwrap()
}

async fn wait_unloaded(c: &jsonrpsee::core::client::Client) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while loaded(c).await > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "sessions still loaded: {}",
            loaded(c).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn fifty_idle_sessions_leave_memory_and_come_back_on_demand() {
    let d = TestDaemon::start_with_env(&[("GEMINID_SESSION_IDLE", "3")]);
    let c = d.client().await;
    std::fs::write(d.workspace.join("a.txt"), "alpha\n".repeat(2000)).unwrap();
    let path = d.workspace.join("a.txt").display().to_string();
    // Settle, then the baseline.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let baseline = rss_kib(d.pid());
    let mut ids = Vec::new();
    for _ in 0..50 {
        let id = yolo_session(&c, &d.workspace).await;
        let done = call_and_wait(&c, &id, "read_file", json!({"absolute_path": path})).await;
        assert_eq!(done.outcome.unwrap().state, CallState::Success);
        ids.push(id);
    }
    let peak_loaded = loaded(&c).await;
    let peak = rss_kib(d.pid());
    assert!(peak_loaded >= 40, "{peak_loaded} loaded right after");
    let text = d.gemctl(&["daemon", "status"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(text.contains("50 stored"), "{text}");

    let before: Vec<u64> = {
        let list = c.list_sessions().await.unwrap();
        ids.iter()
            .map(|id| list.iter().find(|s| &s.session_id == id).unwrap().last_seq)
            .collect()
    };
    wait_unloaded(&c).await;
    // The freed heap goes back after the wave of unloads.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after = rss_kib(d.pid());
    println!(
        "idle unload: baseline {baseline} KiB, 50 loaded {peak} KiB, all unloaded {after} KiB"
    );
    let text = d.gemctl(&["daemon", "status"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(text.contains("50 stored, 0 loaded"), "{text}");
    assert!(
        after < peak && after - baseline.min(after) < (peak - baseline.min(peak)) / 2 + 1024,
        "resident size must fall back near the baseline: baseline {baseline}, peak {peak}, after {after} KiB"
    );

    // Each comes back on demand, with its events.
    for (id, before) in ids.iter().zip(before).take(5) {
        let done = call_and_wait(&c, id, "read_file", json!({"absolute_path": path})).await;
        assert_eq!(done.outcome.unwrap().state, CallState::Success);
        assert!(is_loaded(&c, id).await);
        let info = c.get_session(id.clone()).await.unwrap();
        assert!(info.last_seq > before, "{before}: {info:?}");
    }
}

/// Prompts, attaches, calls and answers sent just as the session may be
/// unloading (a 30 ms idle period, requests 0-60 ms apart): every one is
/// served, by the actor that then does the work.
#[tokio::test]
async fn requests_racing_an_unload_always_work() {
    let fake = FakeModel::start(Arc::new(|_, _| gemini::answer(&["ok"]))).await;
    let d = TestDaemon::start_with_env(&[
        ("GEMINID_SESSION_IDLE", "0.03"),
        ("GEMINI_API_KEY", "test-key"),
        ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
        ("GEMINI_MODEL", "gemini-2.5-flash"),
    ]);
    let c = d.client().await;
    std::fs::write(d.workspace.join("a.txt"), "alpha\n").unwrap();
    let path = d.workspace.join("a.txt").display().to_string();
    let session = session_in(&c, &d.workspace, None, Some(true)).await;
    let (mut seen_loaded, mut seen_unloaded) = (0, 0);
    let (mut prompts, mut answered) = (0, 0);
    for i in 0..160u64 {
        tokio::time::sleep(Duration::from_millis((i * 7919) % 61)).await;
        if is_loaded(&c, &session).await {
            seen_loaded += 1;
        } else {
            seen_unloaded += 1;
        }
        match i % 4 {
            0 => {
                let done =
                    call_and_wait(&c, &session, "read_file", json!({"absolute_path": path})).await;
                assert_eq!(done.outcome.unwrap().state, CallState::Success, "round {i}");
            }
            1 => {
                // Attach, then see a call through another request.
                let mut sub = c.subscribe_session(session.clone(), None).await.unwrap();
                let call = c
                    .call_tool(
                        session.clone(),
                        "read_file".into(),
                        Some(json!({"absolute_path": path})),
                        None,
                    )
                    .await
                    .unwrap()
                    .call_id;
                let events = collect_until(&mut sub, |e| is_final(e, &call)).await;
                let Some(EventPayload::ToolCall(last)) = events.last().map(|e| &e.payload) else {
                    panic!("round {i}: {events:?}")
                };
                assert_eq!(last.state, CallState::Success, "round {i}");
            }
            2 => {
                c.prompt(session.clone(), format!("hello {i}"))
                    .await
                    .unwrap_or_else(|e| panic!("round {i}: prompt refused: {e}"));
                prompts += 1;
            }
            _ => {
                // A call awaiting an answer keeps the session loaded; the
                // answer comes after some idle periods.
                let target = d.workspace.join(format!("w{i}.txt"));
                let call = c
                    .call_tool(
                        session.clone(),
                        "write_file".into(),
                        Some(json!({"file_path": target.display().to_string(), "content": "x"})),
                        None,
                    )
                    .await
                    .unwrap()
                    .call_id;
                tokio::time::sleep(Duration::from_millis(40 + (i * 31) % 50)).await;
                let ok = c
                    .confirm_tool(
                        session.clone(),
                        call,
                        ConfirmationOutcome::ProceedOnce,
                        None,
                    )
                    .await
                    .unwrap_or_else(|e| panic!("round {i}: answer refused: {e}"));
                assert!(ok.accepted, "round {i}: the answer must reach the call");
                answered += 1;
            }
        }
    }
    assert!(
        seen_unloaded >= 10 && seen_loaded >= 10,
        "both sides of the race: {seen_loaded} loaded, {seen_unloaded} unloaded"
    );
    // Every prompt ran to its end and every answered write happened.
    let mut sub = c.subscribe_session(session.clone(), Some(0)).await.unwrap();
    let mut finished = 0;
    collect_until(&mut sub, |e| {
        if let EventPayload::TurnFinished { reason, .. } = &e.payload {
            assert_eq!(reason, "completed", "{e:?}");
            finished += 1;
        }
        finished == prompts
    })
    .await;
    let written = (0..160)
        .filter(|i| d.workspace.join(format!("w{i}.txt")).exists())
        .count();
    assert_eq!(written, answered);
    assert_eq!(fake.seen().len(), prompts);
}

/// "Always allow for this session" is kept with the session: the session
/// unloaded and loaded again, and the daemon restarted, it still holds.
#[tokio::test]
async fn a_session_approval_survives_unload_and_restart() {
    let mut d = TestDaemon::start_with_env(&[("GEMINID_SESSION_IDLE", "0.2")]);
    let c = d.client().await;
    let session = session_in(&c, &d.workspace, None, Some(true)).await;
    let ws = d.workspace.clone();
    let write =
        |name: &str| json!({"file_path": ws.join(name).display().to_string(), "content": "x"});
    let mut sub = c.subscribe_session(session.clone(), None).await.unwrap();
    let call = c
        .call_tool(session.clone(), "write_file".into(), Some(write("a")), None)
        .await
        .unwrap()
        .call_id;
    wait_state(&mut sub, &call, CallState::AwaitingApproval).await;
    let ok = c
        .confirm_tool(
            session.clone(),
            call.clone(),
            ConfirmationOutcome::ProceedAlways,
            None,
        )
        .await
        .unwrap();
    assert!(ok.accepted);
    collect_until(&mut sub, |e| is_final(e, &call)).await;
    drop(sub);
    wait_unloaded(&c).await;

    let again = call_and_wait(&c, &session, "write_file", write("b")).await;
    let snapshot = again.outcome.unwrap();
    assert_eq!(snapshot.state, CallState::Success, "{snapshot:?}");
    // Another tool still asks: only what was allowed is remembered.
    let other = c
        .call_tool(
            session.clone(),
            "replace".into(),
            Some(json!({"file_path": d.workspace.join("b").display().to_string(), "old_string": "x", "new_string": "y"})),
            None,
        )
        .await
        .unwrap()
        .call_id;
    let mut sub = c.subscribe_session(session.clone(), Some(0)).await.unwrap();
    wait_state(&mut sub, &other, CallState::AwaitingApproval).await;
    drop(sub);
    drop(c);

    d.terminate();
    d.spawn();
    let c = d.client().await;
    let after = call_and_wait(&c, &session, "write_file", write("c")).await;
    let snapshot = after.outcome.unwrap();
    assert_eq!(snapshot.state, CallState::Success, "{snapshot:?}");
    assert!(d.workspace.join("c").exists());
}
