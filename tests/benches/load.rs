//! Load: 64 concurrent clients, each creating a yolo session, subscribing
//! to it and making 1,000 `wait: true` tool calls (read_file, glob,
//! search_file_content, `echo hi` in turn). Checks zero errors, a gapless
//! seq and exactly one final snapshot per call on every subscription;
//! reports throughput, p50/p99 latency and the daemon's VmRSS (idle, peak,
//! after, after deleting the sessions).
//!
//! `cargo bench -p geminid-tests --bench load`; `LOAD_CLIENTS` (64) and
//! `LOAD_CALLS` (1000) change the size.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use geminid_tests::load::{self, mib};
use geminid_tests::*;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let clients = env_usize("LOAD_CLIENTS", 64);
    let calls = env_usize("LOAD_CALLS", 1000);
    println!("# geminid load: {clients} clients x {calls} calls\n");
    print_machine();
    println!("- daemon: {}", geminid_bin().display());
    print_load("load average at the start");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let d = TestDaemon::start();
    let report = rt.block_on(load::run(&d, clients, calls));
    print_load("load average at the end");
    println!("\n| figure | measured |");
    println!("|---|---|");
    let ms = |d: std::time::Duration| format!("{:.2} ms", d.as_secs_f64() * 1e3);
    let rows = [
        ("calls (all `wait: true`)", report.calls.to_string()),
        ("events delivered to subscribers", report.events.to_string()),
        (
            "errors, lost or duplicated events",
            report.errors.len().to_string(),
        ),
        (
            "wall time",
            format!("{:.2} s", report.elapsed.as_secs_f64()),
        ),
        ("throughput", format!("{:.0} calls/s", report.throughput())),
        ("latency p50", ms(report.pct(50.0))),
        ("latency p90", ms(report.pct(90.0))),
        ("latency p99", ms(report.pct(99.0))),
        ("latency max", ms(report.pct(100.0))),
        ("VmRSS idle (started, no session)", mib(report.rss_idle)),
        (
            "VmRSS warm (idle after one session's 4 calls, deleted)",
            mib(report.rss_warm),
        ),
        ("VmRSS peak (sampled every 20 ms)", mib(report.rss_peak)),
        ("VmRSS 2 s after, sessions loaded", mib(report.rss_after)),
        (
            "VmRSS after deleting the sessions",
            mib(report.rss_after_delete),
        ),
        ("of it above warm (share of the peak's rise)", kept(&report)),
        (
            "write-ahead log segments on disk after (1 = current only)",
            report.wal_segments.to_string(),
        ),
    ];
    for (name, value) in rows {
        println!("| {name} | {value} |");
    }
    for e in report.errors.iter().take(20) {
        println!("ERROR {e}");
    }
    assert!(report.errors.is_empty(), "{} errors", report.errors.len());
}

/// What deleting the sessions left above the warm daemon, and which share
/// of the run's rise above warm that is.
fn kept(report: &load::LoadReport) -> String {
    let kept = report.rss_after_delete.saturating_sub(report.rss_warm);
    let rise = report.rss_peak.saturating_sub(report.rss_warm).max(1);
    format!("{} ({:.0}%)", mib(kept), 100.0 * kept as f64 / rise as f64)
}
