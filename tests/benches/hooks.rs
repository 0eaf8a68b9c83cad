//! What a no-op BeforeTool hook adds to a tool call: the same `read_file`
//! through two warm daemons, one without hooks and one whose settings run
//! `true` (a bash child in its own process group, the firing's JSON on its
//! stdin) before every call. Each figure is one `tool.call {wait: true}`
//! over an open NDJSON connection, from writing the request to reading the
//! whole answer; the two daemons alternate call by call, so both see the
//! same machine load. Medians of `HOOKS_BENCH_N` (default 60) calls.
//!
//! Run with `cargo bench -p geminid-tests --bench hooks`.

use std::time::{Duration, Instant};

use geminid_tests::*;
use serde_json::json;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn daemon(with_hook: bool) -> (TestDaemon, RawConn, String) {
    let mut d = TestDaemon::prepared(&[]);
    if with_hook {
        let dir = d.home().join(".gemini");
        std::fs::create_dir_all(&dir).expect("settings dir");
        std::fs::write(
            dir.join("settings.json"),
            json!({"hooks": {"BeforeTool": [{"hooks": [{"type": "command", "command": "true"}]}]}})
                .to_string(),
        )
        .expect("settings");
    }
    d.spawn();
    std::fs::write(d.workspace.join("a.txt"), "hello\n").expect("file");
    let mut conn = d.raw();
    conn.initialize();
    let created = conn.request(
        "session.create",
        json!({"cwd": d.workspace.display().to_string(), "approvalMode": "yolo"}),
    );
    let session = created["result"]["sessionId"]
        .as_str()
        .expect("session id")
        .to_owned();
    (d, conn, session)
}

fn call(conn: &mut RawConn, session: &str, path: &str) -> Duration {
    let started = Instant::now();
    let answer = conn.request(
        "tool.call",
        json!({"sessionId": session, "name": "read_file",
               "args": {"absolute_path": path}, "wait": true}),
    );
    let elapsed = started.elapsed();
    assert_eq!(answer["result"]["outcome"]["state"], "success", "{answer}");
    elapsed
}

fn main() {
    let n = std::env::var("HOOKS_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60usize)
        .max(5);
    print_machine();
    let (plain_d, mut plain, plain_s) = daemon(false);
    let (hooked_d, mut hooked, hooked_s) = daemon(true);
    let plain_path = plain_d.workspace.join("a.txt").display().to_string();
    let hooked_path = hooked_d.workspace.join("a.txt").display().to_string();
    // Warm both (first spawn, page cache, settings read once).
    for _ in 0..5 {
        call(&mut plain, &plain_s, &plain_path);
        call(&mut hooked, &hooked_s, &hooked_path);
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..n {
        a.push(call(&mut plain, &plain_s, &plain_path));
        b.push(call(&mut hooked, &hooked_s, &hooked_path));
    }
    let (a, b) = (median(a), median(b));
    println!("# no-op BeforeTool hook, read_file, p50 of {n} calls\n");
    println!("| figure | p50 |");
    println!("|---|---|");
    println!("| read_file, no hooks | {:.2} ms |", a.as_secs_f64() * 1e3);
    println!(
        "| read_file, one no-op BeforeTool hook | {:.2} ms |",
        b.as_secs_f64() * 1e3
    );
    println!(
        "| added by the hook | {:.2} ms |",
        (b.as_secs_f64() - a.as_secs_f64()) * 1e3
    );
}
