//! What a no-op BeforeTool hook adds to a tool call: the same `read_file`
//! through two warm daemons, one without hooks and one whose settings run
//! `true` (a bash child in its own process group, the firing's JSON on its
//! stdin) before every call. Each figure is one `tool.call {wait: true}`
//! over an open NDJSON connection, from writing the request to reading the
//! whole answer; the two daemons alternate call by call, so both see the
//! same machine load. Medians of `HOOKS_BENCH_N` (default 60) calls.
//!
//! Then what a no-op BeforeModel hook adds to each model step: one-step
//! turns (the fake model answers at once) through two warm daemons, one
//! with `true` as its BeforeModel hook, alternating; each figure is from
//! `session.prompt` to the turn's `turnFinished`. Medians of the same N.
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

/// A daemon on the fake model (its own), with a no-op BeforeModel hook
/// or none, and a yolo session.
async fn model_daemon(
    with_hook: bool,
) -> (
    TestDaemon,
    geminid_tests::fake_model::FakeModel,
    Client,
    String,
) {
    use geminid_tests::fake_model::{FakeModel, gemini};
    let fake = FakeModel::start(std::sync::Arc::new(|_, _| gemini::answer(&["ok"]))).await;
    let mut d = TestDaemon::prepared(&[
        ("GEMINI_API_KEY", "test-key"),
        ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
        ("GEMINI_MODEL", "gemini-2.5-flash"),
    ]);
    if with_hook {
        let dir = d.home().join(".gemini");
        std::fs::create_dir_all(&dir).expect("settings dir");
        std::fs::write(
            dir.join("settings.json"),
            json!({"hooks": {"BeforeModel": [{"hooks": [{"type": "command", "command": "true"}]}]}})
                .to_string(),
        )
        .expect("settings");
    }
    d.spawn();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    (d, fake, c, session)
}

async fn one_step(c: &Client, session: &str) -> Duration {
    let started = Instant::now();
    let events = run_turn(c, session, "hi").await;
    let elapsed = started.elapsed();
    assert!(
        events.iter().any(|e| matches!(&e.payload,
            geminid_protocol::event::EventPayload::TurnFinished { reason, .. } if reason == "completed")),
        "the turn completed"
    );
    elapsed
}

fn before_model(n: usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let (_pd, _pf, plain, plain_s) = model_daemon(false).await;
        let (_hd, _hf, hooked, hooked_s) = model_daemon(true).await;
        for _ in 0..3 {
            one_step(&plain, &plain_s).await;
            one_step(&hooked, &hooked_s).await;
        }
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..n {
            a.push(one_step(&plain, &plain_s).await);
            b.push(one_step(&hooked, &hooked_s).await);
        }
        let (a, b) = (median(a), median(b));
        println!("\n# no-op BeforeModel hook, one-step turns, p50 of {n} turns\n");
        println!("| figure | p50 |");
        println!("|---|---|");
        println!("| turn, no hooks | {:.2} ms |", a.as_secs_f64() * 1e3);
        println!(
            "| turn, one no-op BeforeModel hook | {:.2} ms |",
            b.as_secs_f64() * 1e3
        );
        println!(
            "| added per model step | {:.2} ms |",
            (b.as_secs_f64() - a.as_secs_f64()) * 1e3
        );
    });
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
    before_model(n);
}
