//! The daemon's life: socket permissions, refusing to run twice, replacing
//! a stale socket, clean stops (SIGTERM, `daemon.shutdown`) that keep
//! everything, and refusing peers of another uid.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use geminid_protocol::EventPayload;
use geminid_protocol::tool::CallState;
use geminid_tests::*;
use serde_json::json;

/// Runs a second `geminid` on `socket` and `data_dir` and returns its exit
/// code and stderr (it is killed if it is still running after 20 s).
fn run_daemon(socket: &Path, data_dir: &Path) -> (Option<i32>, String) {
    let mut child = Command::new(geminid_bin())
        .arg("--socket")
        .arg(socket)
        .arg("--data-dir")
        .arg(data_dir)
        .env("GEMINID_LOG", "warn")
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn geminid");
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().expect("try_wait").is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("wait");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

async fn replay_all(
    c: &Client,
    session: &str,
    until: impl FnMut(&geminid_protocol::SessionEvent) -> bool,
) -> Vec<geminid_protocol::SessionEvent> {
    let mut sub = c.subscribe_session(session.to_owned(), None).await.unwrap();
    collect_until(&mut sub, until).await
}

#[test]
fn the_socket_is_private() {
    let d = TestDaemon::start();
    assert_eq!(mode(&d.socket), 0o600, "socket mode");
    assert_eq!(mode(d.socket.parent().unwrap()), 0o700, "socket dir mode");
}

#[test]
fn a_second_daemon_on_a_live_socket_exits_3_naming_the_socket() {
    let d = TestDaemon::start();
    let other_data = d.dir.path().join("other-data");
    for data_dir in [other_data.as_path(), d.data_dir.as_path()] {
        let (code, stderr) = run_daemon(&d.socket, data_dir);
        assert_eq!(code, Some(3), "data dir {}: {stderr}", data_dir.display());
        assert!(
            stderr.contains(&d.socket.display().to_string()),
            "the message names the socket: {stderr}"
        );
    }
    // The first one is unharmed.
    let mut conn = d.raw();
    conn.initialize();
}

#[tokio::test]
async fn a_stale_socket_file_is_replaced() {
    let mut d = TestDaemon::start();
    d.kill9();
    // A socket file nobody listens on, as a crashed process leaves it.
    let _ = std::fs::remove_file(&d.socket);
    drop(std::os::unix::net::UnixListener::bind(&d.socket).unwrap());
    assert!(d.socket.exists(), "the stale socket file is left behind");
    d.spawn();
    let c = d.client().await;
    assert!(c.status().await.is_ok());
    drop(c);

    // After kill -9 the daemon's own socket file stays; the next one takes over.
    d.kill9();
    assert!(d.socket.exists());
    d.spawn();
    let c = d.client().await;
    assert!(c.status().await.is_ok());
}

#[test]
fn sigterm_right_after_start_is_a_clean_exit() {
    // The daemon accepts connections as soon as it listens; SIGTERM from
    // then on must be a clean stop (exit 0, socket removed), not death by
    // the default signal action.
    let mut d = TestDaemon::start();
    assert_eq!(
        d.terminate(),
        Some(0),
        "killed by SIGTERM instead of stopping"
    );
    assert!(!d.socket.exists(), "a clean stop removes the socket");
}

#[tokio::test]
async fn sigterm_exits_0_and_a_restart_keeps_sessions_and_events() {
    let mut d = TestDaemon::start();
    std::fs::write(d.workspace.join("a.txt"), "alpha\n").unwrap();
    let (session, call) = {
        let c = d.client().await;
        let session = new_session(&c, &d.workspace).await;
        let done = call_and_wait(
            &c,
            &session,
            "read_file",
            json!({"absolute_path": d.workspace.join("a.txt")}),
        )
        .await;
        (session, done.call_id)
    };
    assert_eq!(d.terminate(), Some(0), "SIGTERM is a clean exit");
    d.spawn();
    let c = d.client().await;
    let sessions = c.list_sessions().await.unwrap();
    assert!(sessions.iter().any(|s| s.session_id == session));
    let events = replay_all(&c, &session, |e| is_final(e, &call)).await;
    let EventPayload::ToolCall(last) = &events.last().unwrap().payload else {
        unreachable!()
    };
    assert_eq!(last.state, CallState::Success);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.payload, EventPayload::SessionRecovered { .. })),
        "nothing was in flight, nothing to recover"
    );
}

#[test]
fn daemon_shutdown_answers_then_exits_0() {
    // Several rounds: the answer must never lose a race with the exit.
    for round in 0..25 {
        let mut d = TestDaemon::start();
        let mut conn = d.raw();
        conn.initialize();
        conn.send_line(r#"{"jsonrpc":"2.0","id":"bye","method":"daemon.shutdown","params":{}}"#);
        let answer = conn.try_read_message();
        assert_eq!(
            answer,
            Some(json!({"jsonrpc": "2.0", "id": "bye", "result": {"ok": true}})),
            "round {round}: daemon.shutdown must be answered before the daemon exits"
        );
        assert_eq!(d.wait_exit(), Some(0), "round {round}");
        assert!(
            !d.socket.exists(),
            "round {round}: the socket file is removed"
        );
    }
}

#[tokio::test]
async fn a_call_awaiting_approval_at_sigterm_is_stored_as_cancelled() {
    let mut d = TestDaemon::start();
    let target = d.workspace.join("w.txt");
    let (session, call) = {
        let c = d.client().await;
        let session = new_session(&c, &d.workspace).await;
        let mut sub = c.subscribe_session(session.clone(), None).await.unwrap();
        let call = c
            .call_tool(
                session.clone(),
                "write_file".into(),
                Some(json!({"file_path": target, "content": "x"})),
                None,
            )
            .await
            .unwrap()
            .call_id;
        wait_state(&mut sub, &call, CallState::AwaitingApproval).await;
        (session, call)
    };
    assert_eq!(d.terminate(), Some(0));
    d.spawn();
    let c = d.client().await;
    let events = replay_all(&c, &session, |e| is_final(e, &call)).await;
    let EventPayload::ToolCall(last) = &events.last().unwrap().payload else {
        unreachable!()
    };
    assert_eq!(last.state, CallState::Cancelled, "{last:?}");
    assert!(!target.exists(), "the write never ran");
    let info = c.get_session(session.clone()).await.unwrap();
    assert_eq!(
        info.last_seq,
        events.last().unwrap().seq,
        "nothing after the cancellation (no interrupted/recovered)"
    );
}

#[test]
fn a_peer_with_another_uid_is_refused() {
    assert_eq!(
        rustix::process::getuid().as_raw(),
        0,
        "this test adds a user and switches to it, which needs root (CI runs \
         it as root): run `cargo test -p geminid-tests --test lifecycle` as root"
    );
    let user = "geminidtest";
    let exists = Command::new("id").arg("-u").arg(user).output().unwrap();
    if !exists.status.success() {
        let made = Command::new("useradd").args(["-M", user]).status().unwrap();
        assert!(made.success(), "useradd {user}");
    }
    let d = TestDaemon::start();
    // Open the path up so that only the daemon's uid check can refuse.
    for dir in [d.dir.path(), d.socket.parent().unwrap()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&d.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let script = r#"
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(20)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("connect-failed", e); sys.exit(0)
try:
    s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"daemon.initialize","params":{}}\n')
    data = s.makefile("rb").readline()
except OSError as e:
    data = b""
print("answered" if data else "closed", data.decode(errors="replace").strip())
"#;
    let out = Command::new("runuser")
        .args(["-u", user, "--", "/usr/bin/python3", "-c", script])
        .arg(&d.socket)
        .output()
        .expect("runuser");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with("closed"),
        "another uid must be cut off without an answer: {stdout}"
    );
    // The owner still gets in.
    let mut conn = d.raw();
    conn.initialize();
}
