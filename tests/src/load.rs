//! The load driver shared by `tests/tests/load.rs` (quick) and
//! `tests/benches/load.rs` (64 clients x 1,000 calls): N clients, each with
//! its own yolo session, subscribed to it, making sequential `wait: true`
//! calls of a mix of tools. Every problem is collected as text, not
//! panicked on, so a run reports all of them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use geminid_protocol::EventPayload;
use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::CallState;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::{Client, GeminidApiClient, TestDaemon};

/// What a run measured.
pub struct LoadReport {
    pub clients: usize,
    pub calls: u64,
    pub events: u64,
    pub elapsed: Duration,
    /// Per call, `tool.call` sent to its final snapshot received; sorted.
    pub latencies: Vec<Duration>,
    pub errors: Vec<String>,
    /// VmRSS in bytes: started and idle; warm (idle again after one client
    /// made one call of each kind in a session it then deleted, so the code
    /// those calls run is paged in); the highest sample during the run; 2 s
    /// after the clients left (their sessions still loaded); after the
    /// sessions were deleted.
    pub rss_idle: u64,
    pub rss_warm: u64,
    pub rss_peak: u64,
    pub rss_after: u64,
    pub rss_after_delete: u64,
    /// Write-ahead log segments on disk once the store settled after the
    /// load (1: only the current one).
    pub wal_segments: usize,
}

impl LoadReport {
    /// Nearest-rank percentile of the call latencies.
    pub fn pct(&self, p: f64) -> Duration {
        let n = self.latencies.len();
        if n == 0 {
            return Duration::ZERO;
        }
        let rank = ((p / 100.0) * n as f64).ceil() as usize;
        self.latencies[rank.clamp(1, n) - 1]
    }

    pub fn throughput(&self) -> f64 {
        self.calls as f64 / self.elapsed.as_secs_f64()
    }

    pub fn summary(&self) -> String {
        format!(
            "{} clients, {} calls, {} events in {:.2} s: {:.0} calls/s, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; \
             VmRSS idle {}, warm {}, peak {}, after {} ({} after deleting the sessions); {} errors",
            self.clients,
            self.calls,
            self.events,
            self.elapsed.as_secs_f64(),
            self.throughput(),
            ms(self.pct(50.0)),
            ms(self.pct(99.0)),
            ms(self.latencies.last().copied().unwrap_or_default()),
            mib(self.rss_idle),
            mib(self.rss_warm),
            mib(self.rss_peak),
            mib(self.rss_after),
            mib(self.rss_after_delete),
            self.errors.len()
        )
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// A `/proc/<pid>/status` field in bytes (`VmRSS:`, `VmHWM:`).
pub fn vm_field(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The files the calls work on.
pub fn prepare_workspace(d: &TestDaemon) {
    for dir in ["src", "docs"] {
        std::fs::create_dir_all(d.workspace.join(dir)).expect("mkdir");
        for i in 0..10 {
            let text = format!("line one of {dir}/{i}\nthe needle is here\nlast line\n");
            std::fs::write(d.workspace.join(format!("{dir}/f{i}.txt")), text).expect("write");
        }
    }
}

/// The i-th call of the mix (read_file, glob, search_file_content, shell)
/// and a text its result must contain.
fn call_for(workspace: &Path, i: usize) -> (&'static str, Value, &'static str) {
    match i % 4 {
        0 => (
            "read_file",
            json!({"absolute_path": workspace.join(format!("src/f{}.txt", i % 10))}),
            "the needle is here",
        ),
        1 => ("glob", json!({"pattern": "**/*.txt"}), "f9.txt"),
        2 => (
            "search_file_content",
            json!({"pattern": "needle"}),
            "needle",
        ),
        _ => ("run_shell_command", json!({"command": "echo hi"}), "hi"),
    }
}

/// Runs `clients` clients of `calls` calls each against `d`.
pub async fn run(d: &TestDaemon, clients: usize, calls: usize) -> LoadReport {
    prepare_workspace(d);
    let data_dir = d.data_dir.clone();
    let pid = d.pid();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss_idle = vm_field(pid, "VmRSS:").unwrap_or(0);
    let d = Arc::new(Shared {
        socket: d.socket.clone(),
        workspace: d.workspace.clone(),
    });
    let mut warm_up = one_client(&d, clients, 4).await;
    if let Some(session) = &warm_up.session {
        delete_sessions(
            &d.socket,
            std::slice::from_ref(session),
            &mut warm_up.errors,
        )
        .await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss_warm = vm_field(pid, "VmRSS:").unwrap_or(0);
    let peak = Arc::new(AtomicU64::new(rss_warm));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (peak, sampling) = (peak.clone(), sampling.clone());
        std::thread::spawn(move || {
            while sampling.load(Ordering::Relaxed) {
                if let Some(rss) = vm_field(pid, "VmRSS:") {
                    peak.fetch_max(rss, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };

    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|n| {
            let d = d.clone();
            tokio::spawn(async move { one_client(&d, n, calls).await })
        })
        .collect();
    let mut report = LoadReport {
        clients,
        calls: 0,
        events: 0,
        elapsed: Duration::ZERO,
        latencies: Vec::with_capacity(clients * calls),
        errors: warm_up.errors,
        rss_idle,
        rss_warm,
        rss_peak: 0,
        rss_after: 0,
        rss_after_delete: 0,
        wal_segments: 0,
    };
    let mut sessions = Vec::new();
    for task in tasks {
        match task.await {
            Ok(outcome) => {
                report.calls += outcome.latencies.len() as u64;
                report.events += outcome.events;
                report.latencies.extend(outcome.latencies);
                report.errors.extend(outcome.errors);
                sessions.extend(outcome.session);
            }
            Err(e) => report.errors.push(format!("client task failed: {e}")),
        }
    }
    report.elapsed = started.elapsed();
    report.latencies.sort_unstable();
    tokio::time::sleep(Duration::from_secs(2)).await;
    report.rss_after = vm_field(pid, "VmRSS:").unwrap_or(0);
    delete_sessions(&d.socket, &sessions, &mut report.errors).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    report.rss_after_delete = vm_field(pid, "VmRSS:").unwrap_or(0);
    // Checkpoints run every 500 ms; once the apply thread has caught up,
    // every cut segment must be gone, none left behind by a busy tick.
    let settle = std::time::Instant::now();
    report.wal_segments = loop {
        let n = crate::wal_files(&data_dir).len();
        if n <= 1 || settle.elapsed() > Duration::from_secs(10) {
            break n;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    if report.wal_segments > 1 {
        report.errors.push(format!(
            "{} write-ahead log segments left on disk 10 s after the load",
            report.wal_segments
        ));
    }
    // For a heap profiler or gdb: the daemon stays up this long.
    if let Ok(secs) = std::env::var("LOAD_HOLD") {
        eprintln!("holding daemon pid {pid} for {secs} s");
        tokio::time::sleep(Duration::from_secs(secs.parse().unwrap_or(60))).await;
    }
    sampling.store(false, Ordering::Relaxed);
    let _ = sampler.join();
    report.rss_peak = peak.load(Ordering::Relaxed);
    report
}

async fn delete_sessions(socket: &Path, sessions: &[String], errors: &mut Vec<String>) {
    match Client::connect(socket).await {
        Ok(c) => {
            for s in sessions {
                if let Err(e) = c.delete_session(s.clone()).await {
                    errors.push(format!("session.delete {s}: {e}"));
                }
            }
        }
        Err(e) => errors.push(format!("connect: {e}")),
    }
}

/// What the client tasks need of the daemon.
struct Shared {
    socket: PathBuf,
    workspace: PathBuf,
}

#[derive(Default)]
struct ClientOutcome {
    session: Option<String>,
    latencies: Vec<Duration>,
    events: u64,
    errors: Vec<String>,
}

async fn one_client(d: &Shared, n: usize, calls: usize) -> ClientOutcome {
    let mut out = ClientOutcome::default();
    let c = match Client::connect(&d.socket).await {
        Ok(c) => c,
        Err(e) => {
            out.errors.push(format!("client {n}: connect: {e}"));
            return out;
        }
    };
    let session = match c
        .create_session(
            d.workspace.display().to_string(),
            Some(ApprovalMode::Yolo),
            None,
            Some(false),
            None,
            None,
            None,
        )
        .await
    {
        Ok(info) => info.session_id,
        Err(e) => {
            out.errors.push(format!("client {n}: session.create: {e}"));
            return out;
        }
    };
    out.session = Some(session.clone());
    let sub = match c.subscribe_session(session.clone(), None).await {
        Ok(sub) => sub,
        Err(e) => {
            out.errors.push(format!("client {n}: subscribe: {e}"));
            return out;
        }
    };
    let (target_tx, target_rx) = watch::channel(u64::MAX);
    let watcher = tokio::spawn(watch_events(sub, target_rx));

    let mut call_ids = Vec::with_capacity(calls);
    for i in 0..calls {
        let (tool, args, expect) = call_for(&d.workspace, n + i);
        let t = Instant::now();
        let answer = c
            .call_tool(session.clone(), tool.into(), Some(args), Some(true))
            .await;
        let elapsed = t.elapsed();
        match answer {
            Ok(started) => {
                let ok = started.outcome.as_ref().is_some_and(|o| {
                    o.state == CallState::Success
                        && serde_json::to_string(&o.result).is_ok_and(|r| r.contains(expect))
                });
                if !ok {
                    out.errors
                        .push(format!("client {n} call {i} {tool}: {:?}", started.outcome));
                }
                call_ids.push(started.call_id);
                out.latencies.push(elapsed);
            }
            Err(e) => out.errors.push(format!("client {n} call {i} {tool}: {e}")),
        }
    }
    let last = match c.get_session(session.clone()).await {
        Ok(info) => info.last_seq,
        Err(e) => {
            out.errors.push(format!("client {n}: session.get: {e}"));
            return out;
        }
    };
    let _ = target_tx.send(last);
    let seen = match watcher.await {
        Ok(seen) => seen,
        Err(e) => {
            out.errors.push(format!("client {n}: watcher: {e}"));
            return out;
        }
    };
    out.events = seen.events;
    out.errors
        .extend(seen.errors.into_iter().map(|e| format!("client {n}: {e}")));
    for id in &call_ids {
        match seen.finals.get(id) {
            Some(1) => {}
            count => out.errors.push(format!(
                "client {n}: call {id}: {count:?} final snapshots, want exactly 1"
            )),
        }
    }
    if seen.finals.len() != call_ids.len() {
        out.errors.push(format!(
            "client {n}: {} calls have final snapshots, {} were made",
            seen.finals.len(),
            call_ids.len()
        ));
    }
    out
}

#[derive(Default)]
struct Seen {
    events: u64,
    finals: HashMap<String, u32>,
    errors: Vec<String>,
}

/// Reads the subscription until seq reaches the target: seq must go 1, 2,
/// 3, ... with no gap and no repeat; counts final snapshots per call.
async fn watch_events(
    mut sub: jsonrpsee::core::client::Subscription<geminid_protocol::SessionEvent>,
    target: watch::Receiver<u64>,
) -> Seen {
    let mut seen = Seen::default();
    let mut last = 0u64;
    let mut progress = Instant::now();
    loop {
        if last >= *target.borrow() {
            return seen;
        }
        match tokio::time::timeout(Duration::from_millis(200), sub.next()).await {
            Err(_) => {
                // Once the target is known (every event durable and
                // broadcast), a silence longer than this is a lost event.
                if *target.borrow() != u64::MAX && progress.elapsed() > Duration::from_secs(15) {
                    seen.errors.push(format!(
                        "subscription stalled at seq {last}, want {}",
                        *target.borrow()
                    ));
                    return seen;
                }
            }
            Ok(None) => {
                seen.errors
                    .push(format!("subscription ended at seq {last}"));
                return seen;
            }
            Ok(Some(Err(e))) => {
                seen.errors.push(format!("bad event after seq {last}: {e}"));
                return seen;
            }
            Ok(Some(Ok(event))) => {
                if event.seq != last + 1 {
                    seen.errors
                        .push(format!("seq {} after {last}: gap or repeat", event.seq));
                }
                last = event.seq;
                progress = Instant::now();
                seen.events += 1;
                if let EventPayload::ToolCall(c) = &event.payload
                    && c.state.is_terminal()
                {
                    *seen.finals.entry(c.call_id.clone()).or_default() += 1;
                }
            }
        }
    }
}
