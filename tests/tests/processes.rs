//! No process the daemon started survives the end of its reason to live:
//! a shell command's whole tree (background jobs, `nohup`, `setsid`, a
//! double fork that leaves the tree, a sleeper that ignores SIGTERM) after
//! `session.cancel`, a timeout and a client disconnect; everything left
//! behind after `daemon.shutdown` and SIGTERM; a stdio MCP server after
//! shutdown, SIGTERM and (by stdin EOF) kill -9. Processes are found with
//! `pgrep -f` on a marker unique to each scenario.

use std::process::Command;
use std::time::{Duration, Instant};

use geminid_protocol::tool::{CallState, ConfirmationOutcome};
use geminid_tests::*;
use serde_json::json;

/// The shell timeout of the test daemons, in seconds.
const TIMEOUT_S: &str = "3";

/// A command that starts one of each kind of survivor, all named after
/// `m`, says `ready`, and then sleeps in the foreground ignoring SIGTERM.
fn tree_command(m: &str) -> String {
    format!(
        "exec -a {m}-bg sleep 1000 & \
         nohup bash -c 'exec -a {m}-nohup sleep 1000' >/dev/null 2>&1 & \
         setsid bash -c 'exec -a {m}-setsid sleep 1000' >/dev/null 2>&1 & \
         ( setsid bash -c 'exec -a {m}-orphan sleep 1000' >/dev/null 2>&1 & ) ; \
         bash -c \"trap '' TERM; exec -a {m}-trap sleep 1000\" >/dev/null 2>&1 & \
         echo ready; trap '' TERM; exec -a {m}-fg sleep 1000"
    )
}

/// The kinds of processes `tree_command` starts.
const KINDS: [&str; 6] = ["bg", "nohup", "setsid", "orphan", "trap", "fg"];

fn marker(what: &str) -> String {
    format!("gmdproc{}x{what}", std::process::id())
}

/// Command lines of live processes whose command line contains `m`.
fn pgrep(m: &str) -> Vec<String> {
    let out = Command::new("pgrep")
        .args(["-a", "-f", m])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Waits until `done(pgrep(m))` holds; panics with the list otherwise.
async fn wait_for(m: &str, secs: u64, what: &str, done: impl Fn(&[String]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let found = pgrep(m);
        if done(&found) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {found:#?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn all_started(m: &str) {
    wait_for(m, 20, "not every kind started", |f| {
        KINDS
            .iter()
            .all(|k| f.iter().any(|l| l.contains(&format!("{m}-{k}"))))
    })
    .await;
}

async fn none_left(m: &str, secs: u64) {
    wait_for(m, secs, "processes survived", <[String]>::is_empty).await;
}

async fn start_tree(c: &Client, sid: &str, m: &str) -> String {
    let started = c
        .call_tool(
            sid.to_owned(),
            "run_shell_command".into(),
            Some(json!({"command": tree_command(m)})),
            Some(false),
        )
        .await
        .unwrap();
    all_started(m).await;
    started.call_id
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_timeout_and_disconnect_leave_no_process() {
    let d = TestDaemon::start_with_env(&[("GEMINID_SHELL_TIMEOUT", TIMEOUT_S)]);
    let c = d.client().await;
    let sid = yolo_session(&c, &d.workspace).await;

    // session.cancel while everything runs
    let m = marker("cancel");
    start_tree(&c, &sid, &m).await;
    assert!(c.cancel_session(sid.clone()).await.unwrap().ok);
    none_left(&m, 20).await;

    // the timeout
    let m = marker("timeout");
    let done = c
        .call_tool(
            sid.clone(),
            "run_shell_command".into(),
            Some(json!({"command": tree_command(&m)})),
            Some(true),
        )
        .await
        .unwrap()
        .outcome
        .unwrap();
    assert_eq!(done.state, CallState::Error, "{done:#?}");
    assert_eq!(done.error.as_ref().unwrap().kind, "timeout", "{done:#?}");
    none_left(&m, 20).await;

    // a client that disconnects mid-command: the call runs on (sessions
    // outlive connections) and its timeout still ends the whole tree
    let m = marker("disconnect");
    {
        let gone = d.client().await;
        start_tree(&gone, &sid, &m).await;
    }
    none_left(&m, 20).await;

    // tool.confirm cancel: the command never starts
    let m = marker("confirm");
    let asking = c
        .create_session(
            d.workspace.display().to_string(),
            None,
            None,
            None,
            None,
            None,
            None,
        )
        .await
        .unwrap()
        .session_id;
    let call = c
        .call_tool(
            asking.clone(),
            "run_shell_command".into(),
            Some(json!({"command": tree_command(&m)})),
            Some(false),
        )
        .await
        .unwrap()
        .call_id;
    let mut sub = c.subscribe_session(asking.clone(), Some(0)).await.unwrap();
    wait_state(&mut sub, &call, CallState::AwaitingApproval).await;
    let r = c
        .confirm_tool(asking, call.clone(), ConfirmationOutcome::Cancel, None)
        .await
        .unwrap();
    assert!(r.accepted);
    wait_state(&mut sub, &call, CallState::Cancelled).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(pgrep(&m).is_empty(), "{:#?}", pgrep(&m));
}

/// A finished command's background jobs are left running (as the
/// reference does), but not past the daemon: shutdown and SIGTERM end them,
/// and the still-running command's tree.
#[tokio::test(flavor = "multi_thread")]
async fn daemon_stop_ends_every_process_it_started() {
    for how in ["shutdown", "sigterm"] {
        let mut d = TestDaemon::start();
        let c = d.client().await;
        let sid = yolo_session(&c, &d.workspace).await;
        let left = marker(&format!("{how}-left"));
        let done = call_and_wait(
            &c,
            &sid,
            "run_shell_command",
            json!({"command": format!(
                "setsid bash -c 'exec -a {left}-job sleep 1000' >/dev/null 2>&1 & \
                 ( exec -a {left}-bg sleep 1000 >/dev/null 2>&1 & ); echo started"
            )}),
        )
        .await;
        assert_eq!(done.outcome.unwrap().state, CallState::Success);
        wait_for(&left, 20, "jobs did not start", |f| f.len() == 2).await;
        let running = marker(&format!("{how}-running"));
        start_tree(&c, &sid, &running).await;
        if how == "shutdown" {
            assert!(c.shutdown().await.unwrap().ok);
            assert_eq!(d.wait_exit(), Some(0));
        } else {
            assert_eq!(d.terminate(), Some(0));
        }
        // Killed by the daemon on its way out; gone once the kernel has
        // run them down (a moment, on a loaded machine).
        none_left(&left, 20).await;
        none_left(&running, 20).await;
    }
}

/// A stdio MCP server speaking just enough of the protocol: its argv
/// carries the marker; it exits when stdin closes.
const MCP_SERVER: &str = r#"
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    m = msg.get("method")
    if m == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"tools": {}},
                  "serverInfo": {"name": "tiny", "version": "1"}}
    elif m == "tools/list":
        result = {"tools": [{"name": "tiny_echo", "inputSchema": {"type": "object"}}]}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"#;

#[tokio::test(flavor = "multi_thread")]
async fn no_stdio_mcp_server_outlives_the_daemon() {
    for how in ["shutdown", "sigterm", "kill9"] {
        let m = marker(&format!("mcp-{how}"));
        let mut d = TestDaemon::start();
        d.terminate(); // not kill -9: see peers::daemon_with_settings
        let script = d.home().join("tiny_mcp.py");
        std::fs::write(&script, MCP_SERVER).unwrap();
        let settings = json!({"mcpServers": {"tiny": {
            "command": "python3", "args": [script.display().to_string(), m.clone()]}}});
        let gemini = d.home().join(".gemini");
        std::fs::create_dir_all(&gemini).unwrap();
        std::fs::write(gemini.join("settings.json"), settings.to_string()).unwrap();
        d.spawn();
        let c = d.client().await;
        let deadline = Instant::now() + Duration::from_secs(20);
        while !c
            .list_mcp()
            .await
            .unwrap()
            .servers
            .iter()
            .any(|s| s.status == "connected")
        {
            assert!(
                Instant::now() < deadline,
                "{how}: the server never connected"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(pgrep(&m).len(), 1, "{how}: {:#?}", pgrep(&m));
        match how {
            "shutdown" => {
                c.shutdown().await.unwrap();
                assert_eq!(d.wait_exit(), Some(0));
            }
            "sigterm" => assert_eq!(d.terminate(), Some(0)),
            // Nothing runs in the daemon any more: the server sees EOF on
            // stdin and exits by itself.
            _ => d.kill9(),
        }
        none_left(&m, 20).await;
    }
}

/// kill -9 of the daemon while a shell call streams: the command, its
/// background jobs (every kind, `setsid` and double forks included) and
/// the jobs of a command that had finished keep running, as nothing is
/// left to end them; the next daemon on that data dir ends them all when
/// it starts (their `GEMINID_RUN` marker names the dead daemon's pid).
#[tokio::test(flavor = "multi_thread")]
async fn the_next_start_ends_what_a_killed_daemon_left_running() {
    let mut d = TestDaemon::start();
    let c = d.client().await;
    let sid = yolo_session(&c, &d.workspace).await;
    let left = marker("kill9-left");
    let done = call_and_wait(
        &c,
        &sid,
        "run_shell_command",
        json!({"command": format!(
            "setsid bash -c 'exec -a {left}-job sleep 1000' >/dev/null 2>&1 & echo started"
        )}),
    )
    .await;
    assert_eq!(done.outcome.unwrap().state, CallState::Success);
    wait_for(&left, 20, "the job did not start", |f| f.len() == 1).await;
    let streaming = marker("kill9-streaming");
    let m = &streaming;
    let command = format!(
        "exec -a {m}-bg sleep 1000 & \
         nohup bash -c 'exec -a {m}-nohup sleep 1000' >/dev/null 2>&1 & \
         setsid bash -c 'exec -a {m}-setsid sleep 1000' >/dev/null 2>&1 & \
         ( setsid bash -c 'exec -a {m}-orphan sleep 1000' >/dev/null 2>&1 & ) ; \
         bash -c \"trap '' TERM; exec -a {m}-trap sleep 1000\" >/dev/null 2>&1 & \
         exec -a {m}-fg bash -c 'while true; do echo tick; sleep 0.05; done'"
    );
    c.call_tool(
        sid.clone(),
        "run_shell_command".into(),
        Some(json!({"command": command})),
        Some(false),
    )
    .await
    .unwrap();
    all_started(&streaming).await;
    drop(c);
    d.kill9();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !pgrep(&streaming).is_empty(),
        "the commands should outlive a kill -9"
    );
    assert_eq!(pgrep(&left).len(), 1);

    let restarted = Instant::now();
    d.spawn();
    none_left(&streaming, 20).await;
    none_left(&left, 20).await;
    println!(
        "after kill -9, the next start ended the leftovers within {:?}",
        restarted.elapsed()
    );
    // The interrupted call is reported as such.
    let c = d.client().await;
    let info = c.get_session(sid.clone()).await.unwrap();
    assert!(info.last_seq > 0);
}
