//! Our policy engine against the reference's `PolicyEngine.check`, on the
//! same 1,000 rules and the same two calls, in one run.
//!
//! Run: `GEMINID_PEER_DIR=/tmp/peer cargo bench -p geminid --bench policy_vs_reference`
//! where /tmp/peer is a copy of `shared/peer` after `npm install`. Without
//! the variable only our side is measured.
//!
//! Ours is timed per call in process. The reference is timed by its own
//! harness around `engine.check(...)` (the `ms` field, in-process, warm,
//! the engine cached between requests), so neither side pays for IPC.

// A benchmark, like a test, stops loudly on a broken setup.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

#[path = "common/policy_rules.rs"]
mod policy_rules;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use geminid::policy::{
    ApprovalMode, Decision, PolicyEngine, PolicyInput, Tier, ToolKind, default_rules, parse_policy,
};
use serde_json::{Value, json};

const OURS_CALLS: usize = 20_000;
const REFERENCE_CALLS: usize = 400;

fn main() {
    let toml = policy_rules::thousand_rules_toml();
    let (mut rules, errors) = parse_policy(&toml, "bench.toml", Tier::User);
    assert!(errors.is_empty(), "{errors:?}");
    rules.extend(default_rules());
    let engine = PolicyEngine::new(rules);

    let cases = [
        (
            "non-shell decision (write_file)",
            "write_file",
            ToolKind::Edit,
            policy_rules::plain_args(),
            20.0,
        ),
        (
            "shell decision, 5-part compound",
            "run_shell_command",
            ToolKind::Execute,
            policy_rules::shell_args(),
            200.0,
        ),
    ];
    let peer = std::env::var_os("GEMINID_PEER_DIR");
    let policies = tempfile::tempdir().expect("tempdir");
    std::fs::write(policies.path().join("bench.toml"), &toml).expect("write rules");

    println!(
        "| case | ours median | ours p99 | ours decision | target | reference median | reference decision | reference / ours |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (label, tool, kind, args, target_us) in cases {
        let input = PolicyInput {
            tool_name: tool,
            args: &args,
            server_name: None,
            remote_name: None,
            annotations: None,
            tool_kind: kind,
            mode: ApprovalMode::Default,
            interactive: true,
        };
        let (median, p99, decision) = time_ours(&engine, &input);
        let (reference, ratio) = match &peer {
            Some(dir) => {
                let (ms, decision) = time_reference(dir.as_ref(), policies.path(), tool, &args);
                let ratio = ms * 1000.0 / micros(median);
                (
                    format!("{:.1} µs | {decision}", ms * 1000.0),
                    format!("{ratio:.1}x"),
                )
            }
            None => (
                "not run (set GEMINID_PEER_DIR) | -".to_owned(),
                "-".to_owned(),
            ),
        };
        println!(
            "| {label} | {:.1} µs | {:.1} µs | {} | <= {target_us} µs | {reference} | {ratio} |",
            micros(median),
            micros(p99),
            decision.as_str(),
        );
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn time_ours(engine: &PolicyEngine, input: &PolicyInput<'_>) -> (Duration, Duration, Decision) {
    let decision = engine.check(input).decision;
    for _ in 0..1000 {
        std::hint::black_box(engine.check(input));
    }
    let mut times = Vec::with_capacity(OURS_CALLS);
    for _ in 0..OURS_CALLS {
        let start = Instant::now();
        std::hint::black_box(engine.check(std::hint::black_box(input)));
        times.push(start.elapsed());
    }
    times.sort();
    (
        times[times.len() / 2],
        times[times.len() * 99 / 100],
        decision,
    )
}

/// Median `ms` the reference harness reports for `engine.check`.
fn time_reference(
    peer: &std::path::Path,
    policies: &std::path::Path,
    tool: &str,
    args: &Value,
) -> (f64, String) {
    let mut child = Command::new("node")
        .arg("harness.mjs")
        .current_dir(peer)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("node harness.mjs");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let request = json!({
        "kind": "policy",
        "tool": tool,
        "args": args,
        "approval_mode": "default",
        "policies_dir": policies,
        "workspace": policies,
    })
    .to_string();
    let mut samples = Vec::new();
    let mut decision = String::new();
    // The first request builds and caches the engine; it is not timed.
    for i in 0..=REFERENCE_CALLS {
        writeln!(stdin, "{request}").expect("write request");
        let line = lines.next().expect("harness answered").expect("read");
        let response: Value = serde_json::from_str(&line).expect("json");
        if let Some(err) = response.get("error") {
            panic!("reference harness failed: {err}");
        }
        decision = response["decision"].as_str().unwrap_or("?").to_owned();
        if i > 0 {
            samples.push(response["ms"].as_f64().unwrap_or(f64::NAN));
        }
    }
    drop(stdin);
    let _ = child.wait();
    samples.sort_by(f64::total_cmp);
    (samples[samples.len() / 2], decision)
}
