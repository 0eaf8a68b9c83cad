//! MCP connections over time: a server that dies, is down, comes back or
//! is restarted, and calls cancelled while they run.

mod peers;

use std::time::{Duration, Instant};

use geminid_protocol::event::EventPayload;
use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::CallState;
use geminid_tests::*;
use peers::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn killed_server_is_unavailable_then_reconnects() {
    let p = peers();
    let d = daemon_with_settings(&json!({"mcpServers": {"e": {"command": everything(&p)}}}));
    let c = d.client().await;
    let mut sub_pid = server(&connected(&c, &["e"]).await, "e").pid.expect("pid");
    let sid = session(&c, &d, ApprovalMode::Yolo).await;
    let mut events = c.subscribe_session(sid.clone(), None).await.unwrap();

    let group = rustix::process::Pid::from_raw(sub_pid as i32).expect("pid");
    rustix::process::kill_process_group(group, rustix::process::Signal::KILL)
        .expect("kill the server");
    let started = Instant::now();
    let during = run(&c, &sid, "echo", json!({"message": "x"})).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "a call to a dead server must not hang"
    );
    if during.state != CallState::Success {
        assert_eq!(
            during.error.as_ref().unwrap().kind,
            "unavailable",
            "{during:#?}"
        );
    }
    let list = wait_list(&c, 60, |l| {
        let s = server(l, "e");
        s.status == "connected" && s.pid.is_some_and(|pid| pid != sub_pid)
    })
    .await;
    sub_pid = server(&list, "e").pid.unwrap();
    let after = run(&c, &sid, "echo", json!({"message": "back"})).await;
    assert_eq!(after.state, CallState::Success, "{after:#?}");
    // Sessions heard about it.
    let seen = collect_until(&mut events, |e| {
        matches!(&e.payload, EventPayload::McpServerStatus { status, .. } if status == "connected")
    })
    .await;
    assert!(seen.iter().any(|e| matches!(&e.payload, EventPayload::McpServerStatus { status, .. } if status == "disconnected")));

    // mcp.restart gives a fresh process.
    let restarted = c.restart_mcp("e".into(), None).await.unwrap();
    assert_eq!(restarted.status, "connected");
    assert_ne!(restarted.pid, Some(sub_pid));
    assert!(c.restart_mcp("nope".into(), None).await.is_err());
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_a_running_mcp_call_ends_it_at_once() {
    let p = peers();
    let d = daemon_with_settings(&json!({"mcpServers": {"e": {"command": everything(&p)}}}));
    let c = d.client().await;
    connected(&c, &["e"]).await;
    let sid = session(&c, &d, ApprovalMode::Yolo).await;
    let mut sub = c.subscribe_session(sid.clone(), None).await.unwrap();
    let call = c
        .call_tool(
            sid.clone(),
            "trigger-long-running-operation".into(),
            Some(json!({"duration": 60, "steps": 60})),
            None,
        )
        .await
        .unwrap()
        .call_id;
    wait_state(&mut sub, &call, CallState::Executing).await;
    let started = Instant::now();
    c.cancel_session(sid.clone()).await.unwrap();
    let events = collect_until(&mut sub, |e| is_final(e, &call)).await;
    // The operation runs 60 s: well under that is "at once", however
    // loaded the machine.
    assert!(started.elapsed() < Duration::from_secs(20));
    let last = events.last().unwrap();
    assert!(
        matches!(&last.payload, EventPayload::ToolCall(s) if s.state == CallState::Cancelled),
        "{last:#?}"
    );
    // The connection is still good.
    let echo = run(&c, &sid, "echo", json!({"message": "after"})).await;
    assert_eq!(echo.state, CallState::Success);
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_fail_fast_while_the_server_is_down() {
    use std::os::unix::fs::PermissionsExt;
    let p = peers();
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("up");
    let launcher = dir.path().join("launch.sh");
    std::fs::write(
        &launcher,
        format!(
            "#!/bin/sh\n[ -e {} ] || exit 1\nexec {}\n",
            flag.display(),
            everything(&p)
        ),
    )
    .unwrap();
    std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(&flag, "").unwrap();
    let d = daemon_with_settings(&json!({"mcpServers": {"e": {"command": launcher}}}));
    let c = d.client().await;
    let pid = server(&connected(&c, &["e"]).await, "e").pid.unwrap();
    let sid = session(&c, &d, ApprovalMode::Yolo).await;

    std::fs::remove_file(&flag).unwrap();
    let group = rustix::process::Pid::from_raw(pid as i32).unwrap();
    rustix::process::kill_process_group(group, rustix::process::Signal::KILL).unwrap();
    wait_list(&c, 30, |l| server(l, "e").status == "disconnected").await;
    let started = Instant::now();
    let down = run(&c, &sid, "echo", json!({"message": "x"})).await;
    // Fast against the call timeout (10 minutes), not against a clock a
    // loaded machine may not keep.
    assert!(started.elapsed() < Duration::from_secs(10));
    let error = down.error.expect("an error");
    assert_eq!(error.kind, "unavailable", "{error:?}");
    assert!(
        error.message.contains("MCP server e is unavailable"),
        "{error:?}"
    );

    std::fs::write(&flag, "").unwrap();
    let back = c.restart_mcp("e".into(), None).await.unwrap();
    assert_eq!(back.status, "connected", "{back:#?}");
    let up = run(&c, &sid, "echo", json!({"message": "y"})).await;
    assert_eq!(up.state, CallState::Success, "{up:#?}");
}

/// An HTTP server that goes away is noticed without a call (a ping fails),
/// calls fail fast while it is down, and it is connected again when it
/// is back on its port.
#[tokio::test(flavor = "multi_thread")]
async fn an_http_server_that_restarts_is_noticed_and_reconnected() {
    let p = peers();
    let peer = HttpPeer::start(&p, "streamableHttp");
    let port = peer.port;
    let mut d = TestDaemon::start_with_env(&[("GEMINID_MCP_PING_MS", "300")]);
    d.terminate();
    let dir = d.home().join(".gemini");
    std::fs::create_dir_all(&dir).unwrap();
    let settings = json!({"mcpServers": {"h": {"httpUrl": format!("http://127.0.0.1:{port}/mcp"), "timeout": 30000}}});
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
    d.spawn();
    let c = d.client().await;
    connected(&c, &["h"]).await;
    let sid = session(&c, &d, ApprovalMode::Yolo).await;
    assert_eq!(
        run(&c, &sid, "echo", json!({"message": "up"})).await.state,
        CallState::Success
    );

    drop(peer);
    let started = Instant::now();
    wait_list(&c, 30, |l| server(l, "h").status != "connected").await;
    println!("http server gone noticed in {:?}", started.elapsed());
    let started = Instant::now();
    let down = run(&c, &sid, "echo", json!({"message": "x"})).await;
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "a call while the server is down must not wait for its 30 s timeout: {:?}",
        started.elapsed()
    );
    assert_ne!(down.state, CallState::Success, "{down:#?}");

    let _back = HttpPeer::start_on(&p, "streamableHttp", port);
    wait_list(&c, 90, |l| server(l, "h").status == "connected").await;
    assert_eq!(
        run(&c, &sid, "echo", json!({"message": "back"}))
            .await
            .state,
        CallState::Success
    );
}

/// The `McpServerStatus` events of `events` for `name`.
fn statuses_of(events: &[geminid_protocol::SessionEvent], name: &str) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::McpServerStatus { server, status, .. } if server == name => {
                Some(status.clone())
            }
            _ => None,
        })
        .collect()
}

/// A server that fails at every start is retried with backoff; `mcp list`
/// shows its state, and each loaded session is told once that it is
/// down, not at every attempt (before: `connecting` and `disconnected`
/// in every loaded session, every attempt, for the life of the daemon). A
/// workspace's server is news only for that workspace's sessions.
#[tokio::test(flavor = "multi_thread")]
async fn a_failing_server_is_announced_once_and_only_where_it_is_used() {
    // Each start leaves a line in its file, and fails.
    let tally = tempfile::tempdir().unwrap();
    let failing = |name: &str| {
        let file = tally.path().join(name);
        json!({"command": "sh", "args": ["-c", format!("echo x >> {}; exit 3", file.display())]})
    };
    let d = daemon_with_settings(&json!({"mcpServers": {"broken": failing("broken")}}));
    let c = d.client().await;
    let here = session(&c, &d, ApprovalMode::Yolo).await;
    let other_ws = d.dir.path().join("other");
    std::fs::create_dir_all(other_ws.join(".gemini")).unwrap();
    std::fs::write(
        other_ws.join(".gemini/settings.json"),
        json!({"mcpServers": {"wsbroken": failing("wsbroken")}}).to_string(),
    )
    .unwrap();
    let there = session_in(&c, &other_ws, Some(ApprovalMode::Yolo), Some(false)).await;
    // Backoff 1, 2, 4 s: three attempts of each server (counted, not
    // timed: a loaded machine starts them later), each one over.
    let deadline = Instant::now() + Duration::from_secs(60);
    let starts = |name: &str| {
        std::fs::read_to_string(tally.path().join(name))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    let list = loop {
        let list = c.list_mcp().await.unwrap();
        let settled = ["broken", "wsbroken"].iter().all(|name| {
            starts(name) >= 3
                && list
                    .servers
                    .iter()
                    .any(|s| s.name == *name && s.status == "disconnected")
        });
        if settled {
            break list;
        }
        assert!(
            Instant::now() < deadline,
            "three failed starts of each: broken {}, wsbroken {}: {list:#?}",
            starts("broken"),
            starts("wsbroken")
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(server(&list, "broken").status, "disconnected", "{list:#?}");
    for (sid, sees, never) in [(&here, "broken", "wsbroken"), (&there, "wsbroken", "")] {
        let last = c.get_session(sid.clone()).await.unwrap().last_seq;
        let mut sub = c.subscribe_session(sid.clone(), Some(0)).await.unwrap();
        let events = collect_until(&mut sub, |e| e.seq >= last).await;
        let told = statuses_of(&events, sees);
        println!("session in {sid}: {sees}: {told:?}");
        assert!(
            told.len() <= 1,
            "{sees} announced {} times: {told:?}",
            told.len()
        );
        assert!(told.iter().all(|s| s == "disconnected"), "{told:?}");
        if !never.is_empty() {
            assert!(
                statuses_of(&events, never).is_empty(),
                "{never} announced to a session of another workspace"
            );
        }
    }
}
