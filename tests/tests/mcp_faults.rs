//! MCP servers that misbehave (`mcp_faults/server.py`, stdlib Python): one
//! hangs on `tools/call`, one exits mid-call, one floods notifications, one
//! answers with a line that is not JSON. Each call ends with a clear error
//! naming the server and the problem (the hanging one by its `timeout`
//! setting, or by cancel), while the session and the daemon stay
//! responsive and each server's healthy tool keeps working.

mod peers;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use geminid_protocol::EventPayload;
use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::{CallState, ToolCallSnapshot};
use geminid_tests::*;
use peers::*;
use serde_json::{Value, json};

fn server_entry(mode: &str, timeout_ms: Option<u64>) -> Value {
    let python = ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .unwrap_or("python3");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_faults/server.py");
    let mut entry = json!({"command": python, "args": [script, mode]});
    if let Some(ms) = timeout_ms {
        entry["timeout"] = json!(ms);
    }
    entry
}

fn faulty_daemon() -> TestDaemon {
    daemon_with_settings(&json!({"mcpServers": {
        "hang": server_entry("hang", Some(1500)),
        "crash": server_entry("crash", None),
        "flood": server_entry("flood", None),
        "badjson": server_entry("badjson", Some(30_000)),
    }}))
}

const SERVERS: [&str; 4] = ["hang", "crash", "flood", "badjson"];

fn error_of(s: &ToolCallSnapshot) -> (String, String) {
    assert_eq!(s.state, CallState::Error, "{s:#?}");
    let e = s.error.as_ref().expect("error");
    (e.kind.clone(), e.message.clone())
}

/// `daemon.status` and a built-in call, answered promptly, in a loop on
/// their own connection until `stop`; returns the slowest round.
fn watchdog(
    d: &TestDaemon,
    session: String,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<Duration> {
    let socket = d.socket.clone();
    let file = d.workspace.join("a.txt");
    std::fs::write(&file, "alpha\n").unwrap();
    tokio::spawn(async move {
        let c = Client::connect(&socket).await.unwrap();
        let mut slowest = Duration::ZERO;
        while !stop.load(Ordering::Relaxed) {
            let t = Instant::now();
            c.status().await.unwrap();
            let r = call_and_wait(&c, &session, "read_file", json!({"absolute_path": file})).await;
            assert_eq!(r.outcome.unwrap().state, CallState::Success);
            slowest = slowest.max(t.elapsed());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        slowest
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faulty_servers_end_calls_with_clear_errors_and_stall_nothing() {
    let d = faulty_daemon();
    let c = d.client().await;
    connected(&c, &SERVERS).await;
    let sid = session(&c, &d, ApprovalMode::Yolo).await;
    let stop = Arc::new(AtomicBool::new(false));
    let dog = watchdog(&d, sid.clone(), stop.clone());

    // All four faults at once, in one session.
    let t = Instant::now();
    let (hang, crash, flood, bad) = tokio::join!(
        run(&c, &sid, "hang__work", json!({})),
        run(&c, &sid, "crash__work", json!({})),
        run(&c, &sid, "flood__work", json!({})),
        run(&c, &sid, "badjson__work", json!({})),
    );
    let took = t.elapsed();

    let (kind, message) = error_of(&hang);
    assert_eq!(kind, "timeout", "{message}");
    assert!(
        message.contains("hang") && message.contains("1500 ms"),
        "{message}"
    );

    let (_, message) = error_of(&crash);
    assert!(message.contains("crash"), "names the server: {message}");
    assert!(
        message.contains("exited") || message.contains("closed"),
        "says what happened: {message}"
    );

    let (_, message) = error_of(&bad);
    assert!(
        message.contains("badjson") && message.contains("invalid JSON"),
        "{message}"
    );
    assert!(
        took < Duration::from_secs(20),
        "the bad answer ended the call, not its 30 s timeout: {took:?}"
    );

    assert_eq!(flood.state, CallState::Success, "{flood:#?}");
    assert!(
        result_json(&flood).to_string().contains("flood done"),
        "{flood:#?}"
    );

    // The hanging server is healthy apart from its fault; the others came back.
    let pong = run(&c, &sid, "hang__ping", json!({})).await;
    assert_eq!(pong.state, CallState::Success, "{pong:#?}");
    for name in ["crash", "badjson", "flood"] {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let pong = run(&c, &sid, &format!("{name}__ping"), json!({})).await;
            if pong.state == CallState::Success {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{name} never came back: {pong:#?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    stop.store(true, Ordering::Relaxed);
    let slowest = dog.await.unwrap();
    println!("faults took {took:?}; slowest status + read_file round meanwhile: {slowest:?}");
    assert!(slowest < Duration::from_secs(2), "{slowest:?}");

    // The flood's progress reached the session as output, batched: a few
    // events a second, the newest lines kept, the rest counted.
    let last = c.get_session(sid.clone()).await.unwrap().last_seq;
    let mut sub = c.subscribe_session(sid.clone(), None).await.unwrap();
    let events = collect_until(&mut sub, |e| e.seq >= last).await;
    let flood_events: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::ToolCall(s) if s.call_id == flood.call_id => Some(s),
            _ => None,
        })
        .collect();
    let output: String = flood_events
        .iter()
        .filter_map(|s| s.output_delta.clone())
        .collect();
    println!(
        "flood: {} events, {} bytes of output",
        flood_events.len(),
        output.len()
    );
    assert!(
        flood_events.len() < 60,
        "{} events for one call",
        flood_events.len()
    );
    assert!(output.contains("progress updates skipped"), "{output}");
    // (rmcp hands notifications to tasks: the last few may lose the race
    // with the answer, so only "some of the newest" can be asked for.)
    assert!(output.contains("] step "), "{output}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_call_ends_when_cancelled() {
    let d =
        daemon_with_settings(&json!({"mcpServers": {"hangforever": server_entry("hang", None)}}));
    let c = d.client().await;
    connected(&c, &["hangforever"]).await;
    let sid = session(&c, &d, ApprovalMode::Yolo).await;
    let mut sub = c.subscribe_session(sid.clone(), None).await.unwrap();
    let call = c
        .call_tool(sid.clone(), "work".into(), Some(json!({})), None)
        .await
        .unwrap()
        .call_id;
    wait_state(&mut sub, &call, CallState::Executing).await;
    let t = Instant::now();
    c.cancel_session(sid.clone()).await.unwrap();
    let events = collect_until(&mut sub, |e| is_final(e, &call)).await;
    let EventPayload::ToolCall(last) = &events.last().unwrap().payload else {
        unreachable!()
    };
    assert_eq!(last.state, CallState::Cancelled, "{last:#?}");
    // It would hang forever: well under a minute is "ended by the cancel".
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    // The server is still usable.
    let pong = run(&c, &sid, "ping", json!({})).await;
    assert_eq!(pong.state, CallState::Success, "{pong:#?}");
}
