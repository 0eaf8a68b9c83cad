//! `gemctl` as people and scripts use it: real processes, checked by exit
//! status and output.

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use geminid_protocol::tool::CallState;
use geminid_tests::*;
use serde_json::{Value, json};

/// Runs a gemctl command to completion: (exit code, stdout, stderr).
fn check(mut cmd: Command) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.stdin(Stdio::null()).output().expect("run gemctl");
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

fn json_of(out: &str) -> Value {
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("not JSON: {out:?}: {e}"))
}

/// A session created with `gemctl session new --cwd <workspace> EXTRA...`.
fn new_session_cli(d: &TestDaemon, extra: &[&str]) -> String {
    let ws = d.workspace.display().to_string();
    let mut args = vec!["session", "new", "--cwd", ws.as_str()];
    args.extend_from_slice(extra);
    let (code, out, err) = check(d.gemctl(&args));
    assert_eq!(code, 0, "{err}");
    let id = out.trim().to_owned();
    assert!(
        !id.is_empty() && !id.contains(char::is_whitespace),
        "{out:?}"
    );
    id
}

/// Whether the process is gone (or a zombie nobody reaped yet).
fn gone(pid: u64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[test]
fn daemon_status_reports_the_running_daemon() {
    let d = TestDaemon::start();
    let (code, out, err) = check(d.gemctl(&["daemon", "status"]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("pid {}", d.pid())), "{out}");
    let (code, out, _) = check(d.gemctl(&["--json", "daemon", "status"]));
    assert_eq!(code, 0);
    let status = json_of(&out);
    assert_eq!(status["pid"], json!(d.pid()));
    assert_eq!(status["dataDir"], json!(d.data_dir.display().to_string()));
}

#[test]
fn daemon_start_is_idempotent_when_one_is_running() {
    let d = TestDaemon::start();
    let bin = geminid_bin().display().to_string();
    let (code, out, err) = check(d.gemctl(&["daemon", "start", "--bin", &bin]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("already running"), "{out}");
    assert!(out.contains(&d.pid().to_string()), "{out}");
}

#[test]
fn daemon_start_and_stop_on_a_fresh_socket() {
    let d = TestDaemon::start();
    let base = d.workspace.parent().unwrap();
    let socket = base.join("run2/other.sock");
    let data = base.join("data2");
    let gemctl = |args: &[&str]| {
        let mut cmd = Command::new(gemctl_bin());
        cmd.arg("--socket").arg(&socket).args(args);
        cmd
    };
    let bin = geminid_bin().display().to_string();
    let data_arg = data.display().to_string();
    let (code, out, err) = check(gemctl(&[
        "--json",
        "daemon",
        "start",
        "--bin",
        &bin,
        "--data-dir",
        &data_arg,
    ]));
    assert_eq!(code, 0, "{out}{err}");
    let started = json_of(&out);
    assert_eq!(started["state"], json!("started"), "{started}");
    let pid = started["pid"].as_u64().unwrap();
    assert_ne!(pid, u64::from(d.pid()), "a new daemon, not ours");

    let (code, out, _) = check(gemctl(&["--json", "daemon", "status"]));
    assert_eq!(code, 0);
    let status = json_of(&out);
    assert_eq!(status["pid"], json!(pid));
    assert_eq!(status["dataDir"], json!(data_arg));
    assert!(data.exists(), "the data dir was passed on");

    let (code, out, err) = check(gemctl(&["daemon", "stop"]));
    let log = std::fs::read_to_string(base.join("run2/other.sock.log")).unwrap_or_default();
    assert_eq!(code, 0, "{out}{err}\ndaemon log:\n{log}");
    assert!(gone(pid), "geminid {pid} still runs after `daemon stop`");
    let (code, _, _) = check(gemctl(&["daemon", "status"]));
    assert_eq!(code, 69, "nothing answers any more");
    // Ours was not touched.
    let (code, _, _) = check(d.gemctl(&["daemon", "status"]));
    assert_eq!(code, 0);
}

#[test]
fn session_new_list_show_rm() {
    let d = TestDaemon::start();
    let id = new_session_cli(&d, &["--title", "cli test"]);

    let (code, out, _) = check(d.gemctl(&["session", "list"]));
    assert_eq!(code, 0);
    assert!(out.contains(&id), "{out}");
    let (code, out, _) = check(d.gemctl(&["--json", "session", "list"]));
    assert_eq!(code, 0);
    let list = json_of(&out);
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .any(|s| s["sessionId"] == json!(id)),
        "{list}"
    );

    let (code, out, _) = check(d.gemctl(&["session", "show", &id]));
    assert_eq!(code, 0);
    assert!(out.contains(&id) && out.contains("cli test"), "{out}");
    let (code, out, _) = check(d.gemctl(&["--json", "session", "show", &id]));
    assert_eq!(code, 0);
    let shown = json_of(&out);
    assert_eq!(shown["sessionId"], json!(id));
    assert_eq!(shown["cwd"], json!(d.workspace.display().to_string()));
    assert_eq!(shown["interactive"], json!(true));

    let (code, out, _) = check(d.gemctl(&["--json", "session", "rm", &id]));
    assert_eq!(code, 0);
    assert_eq!(json_of(&out)["deleted"], json!(id));
    let (code, _, _) = check(d.gemctl(&["session", "show", &id]));
    assert_eq!(code, 1, "a deleted session is not found");
}

#[test]
fn call_exit_status_success_tool_error_and_denial() {
    let d = TestDaemon::start();
    std::fs::write(d.workspace.join("a.txt"), "alpha from the file\n").unwrap();
    let id = new_session_cli(&d, &[]);
    let args = json!({"absolute_path": d.workspace.join("a.txt")}).to_string();
    let (code, out, err) = check(d.gemctl(&["call", "--session", &id, "read_file", &args]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("alpha from the file"), "{out}");

    let missing = json!({"absolute_path": d.workspace.join("missing.txt")}).to_string();
    let (code, _, err) = check(d.gemctl(&["call", "--session", &id, "read_file", &missing]));
    assert_eq!(code, 1, "a tool error: {err}");

    let (code, _, _) = check(d.gemctl(&["call", "--session", &id, "read_file", "not json"]));
    assert_eq!(code, 2, "bad usage");

    let strict = new_session_cli(&d, &["--non-interactive"]);
    let write = json!({"file_path": d.workspace.join("w.txt"), "content": "x"}).to_string();
    let (code, _, err) = check(d.gemctl(&["call", "--session", &strict, "write_file", &write]));
    assert_eq!(code, 3, "denied by policy: {err}");
    assert!(!d.workspace.join("w.txt").exists());
}

#[tokio::test]
async fn call_exit_status_4_when_cancelled_from_another_client() {
    let d = TestDaemon::start();
    let c = d.client().await;
    let session = new_session(&c, &d.workspace).await;
    let mut sub = c.subscribe_session(session.clone(), None).await.unwrap();
    let write = json!({"file_path": d.workspace.join("w.txt"), "content": "x"}).to_string();
    let child = d
        .gemctl(&["call", "--session", &session, "write_file", &write])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    collect_until(&mut sub, |e| {
        matches!(&e.payload, geminid_protocol::EventPayload::ToolCall(c)
            if c.state == CallState::AwaitingApproval)
    })
    .await;
    assert!(c.cancel_session(session.clone()).await.unwrap().ok);
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!d.workspace.join("w.txt").exists());
}

#[test]
fn tools_json_lists_the_builtin_tools() {
    let d = TestDaemon::start();
    let (code, out, err) = check(d.gemctl(&["--json", "tools"]));
    assert_eq!(code, 0, "{err}");
    let tools = json_of(&out);
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for want in ["read_file", "write_file", "list_directory", "replace"] {
        assert!(names.contains(&want), "{names:?}");
    }
}

/// Runs `gemctl ARGS` in the background and returns its first lines until
/// `enough` says stop, then kills it.
fn read_lines(mut cmd: Command, mut enough: impl FnMut(&str) -> bool) -> Vec<String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut lines = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(Ok(line)) => {
                let stop = enough(&line);
                lines.push(line);
                if stop {
                    break;
                }
            }
            other => {
                let _ = child.kill();
                panic!("output ended ({other:?}) after {lines:#?}");
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    lines
}

#[tokio::test]
async fn attach_replays_the_history() {
    let d = TestDaemon::start();
    std::fs::write(d.workspace.join("a.txt"), "alpha\n").unwrap();
    let c = d.client().await;
    let session = new_session(&c, &d.workspace).await;
    let done = call_and_wait(
        &c,
        &session,
        "read_file",
        json!({"absolute_path": d.workspace.join("a.txt")}),
    )
    .await;
    let call = done.call_id;
    let last_seq = c.get_session(session.clone()).await.unwrap().last_seq;

    let lines = read_lines(d.gemctl(&["attach", &session, "--no-confirm"]), |l| {
        l.contains(&call) && l.contains("success")
    });
    assert!(lines[0].contains("session created"), "{lines:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&call) && l.contains("executing")),
        "{lines:#?}"
    );

    let lines = read_lines(
        d.gemctl(&["--json", "attach", &session, "--no-confirm"]),
        |l| json_of(l)["seq"] == json!(last_seq),
    );
    let seqs: Vec<u64> = lines
        .iter()
        .filter_map(|l| json_of(l)["seq"].as_u64())
        .collect();
    assert_eq!(seqs, (1..=last_seq).collect::<Vec<_>>());
}

#[test]
fn an_unreachable_daemon_is_exit_69() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("nobody.sock");
    for args in [&["daemon", "status"][..], &["session", "list"], &["tools"]] {
        let mut cmd = Command::new(gemctl_bin());
        cmd.arg("--socket").arg(&socket).args(args);
        let (code, _, err) = check(cmd);
        assert_eq!(code, 69, "{args:?}: {err}");
        assert!(err.contains(&socket.display().to_string()), "{err}");
    }
}
