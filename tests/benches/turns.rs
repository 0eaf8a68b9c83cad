//! Agent-loop benchmarks (issue #6), against the local fake model, which
//! answers at once (model latency excluded):
//!
//! 1. `overhead`: a turn with 10 tool calls made one per model response
//!    (11 model requests): the turn's wall time per call, and the time the
//!    daemon spends between receiving a model response and sending the
//!    next request (tool execution, scheduling, persistence, history).
//!    Target: <= 5 ms per call.
//! 2. `first-request`: from `gemctl prompt --session S "..."` process
//!    start to the first model request arriving at the fake. Target:
//!    <= 15 ms. Also with a new session (`--cwd`), for information.
//!
//! 3. `compression`: a 100-step turn (99 `read_file` calls) with a
//!    history near the compression threshold, then the same after
//!    `session.compress`: the daemon's own time per step, from the
//!    fake's reply written out to the next request arriving (the model
//!    excluded; tool, scheduling, persistence, history, estimate).
//!
//! Run with `cargo bench -p geminid-tests --bench turns` (arguments after
//! `--` select figures by name). `TURNS_N` sets the repetitions.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use geminid_protocol::EventPayload;
use geminid_tests::fake_model::{self, FakeModel, gemini};
use geminid_tests::*;
use serde_json::json;

const CALLS_PER_TURN: usize = 10;

fn main() {
    let selected: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wants = |name: &str| selected.is_empty() || selected.iter().any(|s| s == name);
    let n: usize = std::env::var("TURNS_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!("# Agent-loop benchmarks\n");
    print_machine();
    print_load("load average at the start");
    let mut rows: Vec<(String, String, String, bool)> = Vec::new();
    if wants("overhead") {
        rows.extend(runtime.block_on(overhead(n)));
    }
    if wants("compression") {
        rows.extend(runtime.block_on(compression()));
    }
    if wants("first-request") {
        rows.extend(runtime.block_on(first_request(n)));
    }
    println!("\n## Summary\n\n| Figure | Measured | Target | Result |\n|---|---|---|---|");
    for (figure, measured, target, pass) in rows {
        println!(
            "| {figure} | {measured} | {target} | {} |",
            if pass { "PASS" } else { "**FAIL**" }
        );
    }
    print_load("load average at the end");
}

async fn overhead(n: usize) -> Vec<(String, String, String, bool)> {
    println!("\n## Overhead per tool call ({CALLS_PER_TURN} calls per turn, {n} turns)\n");
    let fake = FakeModel::start(ten_calls_by_turn()).await;
    let d = TestDaemon::start_with_env(&[
        ("GEMINI_API_KEY", "k"),
        ("GOOGLE_GEMINI_BASE_URL", &fake.base_url),
    ]);
    fake.set_var("WS", &d.workspace.display().to_string());
    for i in 0..CALLS_PER_TURN {
        std::fs::write(d.workspace.join(format!("small-{i}.txt")), "hello\n").unwrap();
    }
    let c = d.client().await;
    let session = c
        .create_session(
            d.workspace.display().to_string(),
            Some(geminid_protocol::session::ApprovalMode::Yolo),
            None,
            None,
            None,
            None,
            None,
        )
        .await
        .unwrap()
        .session_id;
    let mut sub = c.subscribe_session(session.clone(), None).await.unwrap();
    let mut per_call = Vec::new();
    let mut gaps = Vec::new();
    let mut split: [Vec<Duration>; 3] = Default::default();
    for i in 0..n + 2 {
        let before = fake.seen().len();
        let started = Instant::now();
        let turn = c
            .prompt(session.clone(), format!("turn {i}"))
            .await
            .unwrap()
            .turn_id;
        // When each call's first event and final event reached this client.
        let mut marks: Vec<(Instant, bool)> = Vec::new();
        collect_until(&mut sub, |e| {
            if let EventPayload::ToolCall(c) = &e.payload {
                if c.state == geminid_protocol::tool::CallState::Executing {
                    marks.push((Instant::now(), false));
                } else if c.state.is_terminal() {
                    marks.push((Instant::now(), true));
                }
            }
            matches!(&e.payload, EventPayload::TurnFinished { turn_id, .. } if *turn_id == turn)
        })
        .await;
        let wall = started.elapsed();
        let seen = fake.seen();
        assert_eq!(
            seen.len() - before,
            CALLS_PER_TURN + 1,
            "one request per call plus the answer"
        );
        if i < 2 {
            continue; // warm-up
        }
        per_call.push(wall / CALLS_PER_TURN as u32);
        // Daemon time between a response and the next request: the
        // request's arrival minus the previous request's arrival (the fake
        // answers at once, so this is tool + scheduling + persistence +
        // HTTP on loopback).
        for pair in seen[before..].windows(2) {
            gaps.push(pair[1].at - pair[0].at);
        }
        // Split each step: request -> call executing (model response,
        // stream, scheduling), executing -> final (the tool), final ->
        // next request (function response, history, next request).
        let starts: Vec<Instant> = marks.iter().filter(|m| !m.1).map(|m| m.0).collect();
        let ends: Vec<Instant> = marks.iter().filter(|m| m.1).map(|m| m.0).collect();
        for (k, pair) in seen[before..].windows(2).enumerate() {
            if let (Some(s), Some(e)) = (starts.get(k), ends.get(k)) {
                split[0].push(s.saturating_duration_since(pair[0].at));
                split[1].push(e.saturating_duration_since(*s));
                split[2].push(pair[1].at.saturating_duration_since(*e));
            }
        }
    }
    for (name, v) in [
        "request -> executing seen",
        "executing -> final seen",
        "final seen -> next request",
    ]
    .iter()
    .zip(split.iter_mut())
    {
        v.sort();
        if !v.is_empty() {
            println!("- {name}: p50 {:.2} ms", ms(v[v.len() / 2]));
        }
    }
    per_call.sort();
    gaps.sort();
    let p = |v: &[Duration], q: f64| v[((v.len() - 1) as f64 * q) as usize];
    println!(
        "- turn wall time per call: p50 {:.2} ms, p99 {:.2} ms",
        ms(p(&per_call, 0.5)),
        ms(p(&per_call, 0.99))
    );
    println!(
        "- model request to next model request (one call in between): p50 {:.2} ms, p99 {:.2} ms",
        ms(p(&gaps, 0.5)),
        ms(p(&gaps, 0.99))
    );
    let measured = p(&per_call, 0.5);
    vec![(
        "daemon overhead per call, 10-call turn (p50 of turn wall time / 10)".into(),
        format!("{:.2} ms", ms(measured)),
        "<= 5 ms".into(),
        measured <= Duration::from_millis(5),
    )]
}

/// The window the `compression` figure runs under.
const BENCH_WINDOW: u64 = 200_000;
const STEPS: usize = 100;

async fn compression() -> Vec<(String, String, String, bool)> {
    println!("\n## Per-step daemon time, {STEPS}-step turn, history near the window\n");
    let fake = FakeModel::start(steps_by_turn()).await;
    let window = BENCH_WINDOW.to_string();
    let d = TestDaemon::start_with_env(&[
        ("GEMINI_API_KEY", "k"),
        ("GOOGLE_GEMINI_BASE_URL", &fake.base_url),
        ("GEMINID_CONTEXT_WINDOW", &window),
    ]);
    fake.set_var("WS", &d.workspace.display().to_string());
    for i in 0..STEPS {
        std::fs::write(d.workspace.join(format!("small-{i}.txt")), "hello\n").unwrap();
    }
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    let mut sub = c.subscribe_session(session.clone(), None).await.unwrap();
    let run = |text: String| {
        let c = &c;
        let session = session.clone();
        async move { c.prompt(session, text).await.unwrap().turn_id }
    };
    // History up to ~40% of the window: prompts of ~8,000 characters.
    let filler = "context ".repeat(1000);
    let mut primed = 0;
    while primed < 34 {
        let turn = run(format!("note {primed}: {filler}")).await;
        collect_until(&mut sub, |e| matches!(&e.payload, EventPayload::TurnFinished { turn_id, .. } if *turn_id == turn)).await;
        primed += 1;
    }
    let mut rows = Vec::new();
    for label in ["before compression", "after compression"] {
        if label.starts_with("after") {
            let done = c.compress(session.clone()).await.unwrap();
            println!(
                "- compressed: {} entries replaced, about {} -> {} tokens",
                done.replaced_entries, done.tokens_before, done.tokens_after
            );
        }
        let before = fake.seen().len();
        let turn = run(format!("run {label}")).await;
        let events = collect_until(&mut sub, |e| matches!(&e.payload, EventPayload::TurnFinished { turn_id, .. } if *turn_id == turn)).await;
        assert!(
            !events.iter().any(|e| matches!(&e.payload,
                EventPayload::Compressed { turn_id: Some(t), .. } if *t == turn)),
            "the turn itself must not compress"
        );
        let seen = fake.seen();
        assert_eq!(seen.len() - before, STEPS, "{STEPS} model requests");
        let answered = fake.answered();
        let mut gaps: Vec<Duration> = (before..seen.len() - 1)
            .filter_map(|n| {
                let written = answered.iter().find(|(m, _)| *m == n)?.1;
                Some(seen[n + 1].at.saturating_duration_since(written))
            })
            .collect();
        gaps.sort();
        let p = |q: f64| gaps[((gaps.len() - 1) as f64 * q) as usize];
        let tokens = |n: usize| seen[n].body.to_string().len() / 4;
        println!(
            "- {label}: request {} -> {} tokens (~{}% of {BENCH_WINDOW}); daemon per step p50 {:.2} ms, p99 {:.2} ms",
            tokens(before),
            tokens(seen.len() - 1),
            tokens(seen.len() - 1) * 100 / BENCH_WINDOW as usize,
            ms(p(0.5)),
            ms(p(0.99))
        );
        rows.push((
            format!("daemon time per model step, {STEPS}-step turn, {label} (p50)"),
            format!("{:.2} ms (p99 {:.2})", ms(p(0.5)), ms(p(0.99))),
            "info".into(),
            true,
        ));
    }
    rows
}

/// `STEPS - 1` calls, one per response, then an answer; like
/// `ten_calls_by_turn`, a plain prompt (no "run") is answered at once.
fn steps_by_turn() -> fake_model::Responder {
    Arc::new(|seen: &fake_model::Seen, _| {
        let contents = seen.body["contents"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let start = contents.iter().rposition(|c| {
            c["role"] == "user"
                && c["parts"].as_array().is_some_and(|p| {
                    p.iter()
                        .any(|p| p["text"].as_str().is_some_and(|t| t.starts_with("run ")))
                })
        });
        let Some(start) = start else {
            return gemini::answer(&["ok"]);
        };
        let answered = contents[start..]
            .iter()
            .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
            .filter(|p| p.get("functionResponse").is_some())
            .count();
        if answered < STEPS - 1 {
            let path = format!("{{WS}}/small-{answered}.txt");
            gemini::call_reply(&[("read_file", json!({"absolute_path": path}))])
        } else {
            gemini::answer(&["done"])
        }
    })
}

/// Ten calls per turn, then an answer, whatever the history holds: counts
/// the function responses since the turn's own user text.
fn ten_calls_by_turn() -> fake_model::Responder {
    Arc::new(|seen: &fake_model::Seen, _| {
        let contents = seen.body["contents"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let start = contents
            .iter()
            .rposition(|c| {
                c["role"] == "user"
                    && c["parts"]
                        .as_array()
                        .is_some_and(|p| p.iter().any(|p| p.get("text").is_some()))
            })
            .unwrap_or(0);
        let answered = contents[start..]
            .iter()
            .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
            .filter(|p| p.get("functionResponse").is_some())
            .count();
        if answered < CALLS_PER_TURN {
            // A different file each time: the same call five times is a loop.
            let path = format!("{{WS}}/small-{answered}.txt");
            gemini::call_reply(&[("read_file", json!({"absolute_path": path}))])
        } else {
            gemini::answer(&["done"])
        }
    })
}

async fn first_request(n: usize) -> Vec<(String, String, String, bool)> {
    println!("\n## gemctl prompt start to the first model request ({n} runs)\n");
    let fake = FakeModel::start(Arc::new(|_: &fake_model::Seen, _| gemini::answer(&["ok"]))).await;
    let d = TestDaemon::start_with_env(&[
        ("GEMINI_API_KEY", "k"),
        ("GOOGLE_GEMINI_BASE_URL", &fake.base_url),
    ]);
    let c = d.client().await;
    let session = new_session(&c, &d.workspace).await;
    let mut existing = Vec::new();
    let mut fresh = Vec::new();
    for i in 0..n + 2 {
        for (new_session, out) in [(false, &mut existing), (true, &mut fresh)] {
            let before = fake.seen().len();
            let mut cmd = d.gemctl(&[]);
            if new_session {
                cmd.args(["prompt", "--cwd", &d.workspace.display().to_string(), "hi"]);
            } else {
                cmd.args(["prompt", "--session", &session, "hi"]);
            }
            cmd.stdout(std::process::Stdio::null());
            let started = Instant::now();
            let status = tokio::task::spawn_blocking(move || cmd.status().unwrap())
                .await
                .unwrap();
            assert!(status.success());
            let seen = fake.seen();
            assert_eq!(seen.len(), before + 1);
            if i >= 2 {
                out.push(seen[before].at - started);
            }
        }
    }
    existing.sort();
    fresh.sort();
    let p = |v: &[Duration], q: f64| v[((v.len() - 1) as f64 * q) as usize];
    println!(
        "- existing session: p50 {:.2} ms, p90 {:.2} ms, max {:.2} ms",
        ms(p(&existing, 0.5)),
        ms(p(&existing, 0.9)),
        ms(p(&existing, 1.0))
    );
    println!(
        "- new session (--cwd): p50 {:.2} ms, p90 {:.2} ms",
        ms(p(&fresh, 0.5)),
        ms(p(&fresh, 0.9))
    );
    let measured = p(&existing, 0.5);
    vec![
        (
            "gemctl prompt start to first model request (existing session, p50)".into(),
            format!("{:.2} ms", ms(measured)),
            "<= 15 ms".into(),
            measured <= Duration::from_millis(15),
        ),
        (
            "same, new session via --cwd (p50)".into(),
            format!("{:.2} ms", ms(p(&fresh, 0.5))),
            "<= 15 ms".into(),
            p(&fresh, 0.5) <= Duration::from_millis(15),
        ),
    ]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
