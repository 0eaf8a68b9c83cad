//! Writes and the files they meet, through a real daemon: a FIFO (or any
//! non-regular file) is refused at once instead of blocking the call, a
//! replaced file loses its setuid and setgid bits, new files and
//! directories follow the daemon's umask, and a write stuck in a blocking
//! operation ends when cancelled and does not keep a stopped daemon alive.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use geminid_protocol::EventPayload;
use geminid_protocol::tool::{CallState, ToolCallSnapshot};
use geminid_tests::*;
use serde_json::{Value, json};

/// `tool.call` with `wait: true`, failing the test if the call hangs (the
/// bug this file is about) instead of hanging the test run.
async fn run(c: &Client, session: &str, tool: &str, args: Value) -> ToolCallSnapshot {
    let call = c.call_tool(session.into(), tool.into(), Some(args.clone()), Some(true));
    tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .unwrap_or_else(|_| panic!("{tool} {args} did not return"))
        .unwrap()
        .outcome
        .unwrap()
}

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_is_refused_at_once_by_every_tool() {
    let d = TestDaemon::start();
    let ws = d.workspace.clone();
    mkfifo(&ws.join("pipe"));
    std::fs::write(ws.join("ok.txt"), "findme\n").unwrap();
    let c = d.client().await;
    let s = yolo_session(&c, &ws).await;
    let pipe = ws.join("pipe").display().to_string();
    for (tool, args) in [
        ("write_file", json!({"file_path": pipe, "content": "x"})),
        (
            "replace",
            json!({"file_path": pipe, "old_string": "a", "new_string": "b"}),
        ),
        ("read_file", json!({"absolute_path": pipe})),
    ] {
        let snap = run(&c, &s, tool, args).await;
        assert_eq!(snap.state, CallState::Error, "{tool}: {snap:?}");
        let message = snap.error.map(|e| e.message).unwrap_or_default();
        assert!(message.contains("not a regular file"), "{tool}: {message}");
    }
    // Walks and batch reads pass it by.
    let snap = run(&c, &s, "search_file_content", json!({"pattern": "findme"})).await;
    assert_eq!(snap.state, CallState::Success, "{snap:?}");
    let snap = run(
        &c,
        &s,
        "read_many_files",
        json!({"paths": ["pipe", "ok.txt"]}),
    )
    .await;
    assert_eq!(snap.state, CallState::Success, "{snap:?}");
    // The FIFO is still a FIFO, and the daemon answers.
    let ft = std::fs::symlink_metadata(ws.join("pipe"))
        .unwrap()
        .file_type();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&ft));
    c.status().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_file_drops_setuid_and_setgid() {
    let d = TestDaemon::start();
    let ws = d.workspace.clone();
    let c = d.client().await;
    let s = yolo_session(&c, &ws).await;
    for (name, mode) in [
        ("suid.sh", 0o4755),
        ("sgid.sh", 0o2750),
        ("both.sh", 0o6775),
    ] {
        let path = ws.join(name);
        std::fs::write(&path, "#!/bin/sh\necho old\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        assert_eq!(mode_of(&path), mode, "the fixture could not set {mode:o}");
        let snap = run(
            &c,
            &s,
            "write_file",
            json!({"file_path": path, "content": "#!/bin/sh\necho new\n"}),
        )
        .await;
        assert_eq!(snap.state, CallState::Success, "{snap:?}");
        assert_eq!(mode_of(&path), mode & 0o1777, "{name}");
    }
    let path = ws.join("edit.sh");
    std::fs::write(&path, "echo old\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o6755)).unwrap();
    let snap = run(
        &c,
        &s,
        "replace",
        json!({"file_path": path, "old_string": "old", "new_string": "new"}),
    )
    .await;
    assert_eq!(snap.state, CallState::Success, "{snap:?}");
    assert_eq!(mode_of(&path), 0o755);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_files_follow_the_daemons_umask() {
    let d = TestDaemon::start_with_umask(0o027);
    let ws = d.workspace.clone();
    let c = d.client().await;
    let s = yolo_session(&c, &ws).await;
    let snap = run(
        &c,
        &s,
        "write_file",
        json!({"file_path": ws.join("new/dir/a.txt"), "content": "a"}),
    )
    .await;
    assert_eq!(snap.state, CallState::Success, "{snap:?}");
    assert_eq!(mode_of(&ws.join("new/dir/a.txt")), 0o640);
    assert_eq!(mode_of(&ws.join("new")), 0o750);
    assert_eq!(mode_of(&ws.join("new/dir")), 0o750);
    let snap = run(
        &c,
        &s,
        "replace",
        json!({"file_path": ws.join("made.txt"), "old_string": "", "new_string": "m"}),
    )
    .await;
    assert_eq!(snap.state, CallState::Success, "{snap:?}");
    assert_eq!(mode_of(&ws.join("made.txt")), 0o640);
    // An existing file keeps its own mode.
    std::fs::write(ws.join("open.txt"), "x").unwrap();
    std::fs::set_permissions(ws.join("open.txt"), std::fs::Permissions::from_mode(0o664)).unwrap();
    run(
        &c,
        &s,
        "write_file",
        json!({"file_path": ws.join("open.txt"), "content": "y"}),
    )
    .await;
    assert_eq!(mode_of(&ws.join("open.txt")), 0o664);
}

/// `save_memory` locks its directory (`flock`) before it writes; a lock
/// another process holds blocks it. A cancel ends the call at once and
/// nothing is written when the lock is later released; a daemon stopped
/// while such a call blocks exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_write_ends_on_cancel_and_does_not_hold_up_stop() {
    let mut d = TestDaemon::start();
    let gemini = d.home().join(".gemini");
    std::fs::create_dir_all(&gemini).unwrap();
    let held = std::fs::File::open(&gemini).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let c = d.client().await;
    let s = yolo_session(&c, &d.workspace).await;
    let mut sub = c.subscribe_session(s.clone(), None).await.unwrap();
    let call = c
        .call_tool(
            s.clone(),
            "save_memory".into(),
            Some(json!({"fact": "never saved"})),
            None,
        )
        .await
        .unwrap()
        .call_id;
    wait_state(&mut sub, &call, CallState::Executing).await;
    // Give the write time to reach the lock and block on it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    c.cancel_session(s.clone()).await.unwrap();
    let events = collect_until(&mut sub, |e| is_final(e, &call)).await;
    let Some(EventPayload::ToolCall(last)) = events.last().map(|e| e.payload.clone()) else {
        panic!("no final snapshot");
    };
    assert_eq!(last.state, CallState::Cancelled, "{last:?}");
    // Released now, the abandoned write stops at its commit point.
    drop(held);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let memory = std::fs::read_to_string(gemini.join("GEMINI.md")).unwrap_or_default();
    assert!(!memory.contains("never saved"), "{memory}");
    // Blocked again, then the daemon is told to stop: it exits.
    let held = std::fs::File::open(&gemini).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let call = c
        .call_tool(
            s.clone(),
            "save_memory".into(),
            Some(json!({"fact": "stuck"})),
            None,
        )
        .await
        .unwrap()
        .call_id;
    wait_state(&mut sub, &call, CallState::Executing).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    c.shutdown().await.unwrap();
    drop(sub);
    drop(c);
    assert!(d.wait_exit().is_some(), "the daemon did not exit");
    drop(held);
}
