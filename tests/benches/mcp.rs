//! MCP benchmark: a warm MCP `echo` call on server-everything (stdio)
//! through the daemon, from a fresh `gemctl call` process, start to exit.
//! Target: median <= 15 ms.
//!
//! Run with `cargo bench -p geminid-tests --bench mcp` (needs the test peers,
//! see `.ci/install-deps`). `MCP_BENCH_N` sets the sample count.

#[path = "../tests/peers/mod.rs"]
mod peers;

use std::process::Stdio;
use std::time::{Duration, Instant};

use geminid_protocol::session::ApprovalMode;
use geminid_tests::*;
use serde_json::json;

fn main() {
    let p = peers::peers();
    for bin in [geminid_bin(), gemctl_bin()] {
        assert!(
            bin.exists(),
            "{} is missing: run through cargo bench",
            bin.display()
        );
        if !bin.components().any(|c| c.as_os_str() == "release") {
            eprintln!("WARNING: {} is not a release build", bin.display());
        }
    }
    let n: usize = std::env::var("MCP_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let d = peers::daemon_with_settings(
        &json!({"mcpServers": {"everything": {"command": peers::everything(&p)}}}),
    );
    let session = rt.block_on(async {
        let c = d.client().await;
        peers::connected(&c, &["everything"]).await;
        peers::session(&c, &d, ApprovalMode::Yolo).await
    });
    let args = json!({"message": "bench"}).to_string();
    let call = ["call", "--session", session.as_str(), "echo", args.as_str()];
    let out = d
        .gemctl(&call)
        .stdin(Stdio::null())
        .output()
        .expect("gemctl");
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("Echo: bench"),
        "the call works: {} {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let time = || {
        let start = Instant::now();
        let status = d
            .gemctl(&call)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("gemctl");
        assert!(status.success());
        start.elapsed()
    };
    for _ in 0..20 {
        time();
    }
    let mut samples: Vec<Duration> = (0..n).map(|_| time()).collect();
    samples.sort();
    let pick = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let median = ms(pick(0.5));
    println!("\n## MCP echo (server-everything, stdio) via a fresh `gemctl call`\n");
    println!("| n | p50 | p90 | p99 | max |");
    println!("|---|---|---|---|---|");
    println!(
        "| {n} | {median:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms |",
        ms(pick(0.9)),
        ms(pick(0.99)),
        ms(pick(1.0))
    );
    let verdict = if median <= 15.0 { "PASS" } else { "FAIL" };
    println!("\nmedian {median:.2} ms, target <= 15 ms: {verdict}");
    reference_anchor(&p, median);
}

/// The same call through the TypeScript SDK client from a fresh node
/// process (see reference_mcp_echo.mjs), measured in the same run.
fn reference_anchor(peers: &std::path::Path, ours_ms: f64) {
    // The script must sit next to the peers' node_modules to resolve them.
    let script = peers.join("reference_mcp_echo.mjs");
    let source =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/reference_mcp_echo.mjs");
    std::fs::copy(&source, &script).expect("copy the reference script");
    let server = peers::everything(peers);
    let runs: usize = std::env::var("MCP_BENCH_REFERENCE_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let mut samples: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            let status = std::process::Command::new("node")
                .arg(&script)
                .arg(&server)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .status()
                .expect("node");
            assert!(status.success(), "the reference echo call failed");
            start.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    let median = samples[samples.len() / 2];
    println!(
        "\nanchor: the same echo through the TypeScript MCP SDK client from a fresh node process: median {median:.0} ms over {runs} runs ({:.0}x ours); the reference CLI also imports gemini-cli-core first (about 2 s)",
        median / ours_ms
    );
}
