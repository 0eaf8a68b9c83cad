//! A client in another language: Python with the standard library only
//! (tests/python/geminid_client.py) drives the daemon over the socket.

use std::path::Path;
use std::process::Command;

use geminid_tests::*;
use serde_json::{Value, json};

/// Runs the Python client against `d` and returns its JSON output.
fn run_python(d: &TestDaemon) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/geminid_client.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(&d.socket)
        .arg(&d.workspace)
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python client failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("bad output {stdout:?}: {e}"))
}

#[test]
fn a_stdlib_python_client_lists_a_directory_and_follows_events() {
    let d = TestDaemon::start();
    std::fs::write(d.workspace.join("hello.txt"), "hi\n").unwrap();
    std::fs::create_dir(d.workspace.join("subdir")).unwrap();
    let out = run_python(&d);

    assert_eq!(out["protocolVersion"], json!(1));
    assert!(out["pid"].as_u64().is_some_and(|p| p > 0), "{out}");
    let outcome = &out["outcome"];
    assert_eq!(outcome["state"], json!("success"), "{outcome}");
    let listing = outcome["result"].to_string();
    assert!(
        listing.contains("hello.txt") && listing.contains("subdir"),
        "{listing}"
    );

    let events = out["events"].as_array().expect("events");
    let seqs: Vec<u64> = events.iter().filter_map(|e| e["seq"].as_u64()).collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
    assert_eq!(
        events[0]["type"],
        json!("sessionCreated"),
        "{:?}",
        events[0]
    );
    assert_eq!(events[0]["title"], json!("from python"));
    let states: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == json!("toolCall"))
        .filter_map(|e| e["state"].as_str())
        .collect();
    assert_eq!(states.first(), Some(&"validating"), "{states:?}");
    assert_eq!(states.last(), Some(&"success"), "{states:?}");
    let last = events.last().unwrap();
    assert_eq!(last["callId"], outcome["callId"]);
    assert_eq!(
        last["result"], outcome["result"],
        "the stream ends with the outcome"
    );
}
