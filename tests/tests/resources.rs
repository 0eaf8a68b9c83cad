//! Resources a client can take from the others, through a real daemon:
//! outbound memory (subscribers that never read share one budget) and
//! connections (silent ones time out and are shed before a new client is
//! kept waiting).

use std::io::Read;
use std::os::unix::net::UnixStream as StdUnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use geminid_protocol::EventPayload;
use geminid_tests::load::{mib, vm_field};
use geminid_tests::*;
use serde_json::{Value, json};

/// Samples the daemon's outbound bytes (from `daemon.status`) until told to
/// stop; returns the largest seen.
fn watch_outbound(
    socket: std::path::PathBuf,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut conn = RawConn::connect(&socket);
        conn.initialize();
        let mut peak = 0;
        while !stop.load(Ordering::Relaxed) {
            let status = conn.request("daemon.status", json!({}));
            let bytes = status["result"]["outboundBytes"].as_u64().unwrap_or(0);
            peak = peak.max(bytes);
            std::thread::sleep(Duration::from_millis(50));
        }
        peak
    })
}

/// How many 1 MB calls the busy session makes.
const CALLS: usize = 96;

/// 16 clients subscribe to a session that prints 96 MB and never read a
/// byte. Before the budget each held up to 4,096 queued events (about
/// 70 MB); now all of them together hold at most the budget (64 MiB) plus
/// one event each, the daemon's resident memory stays bounded, a client
/// that reads gets every event, and the ones that never read are dropped
/// (a send found no room for 10 s) or lag within their share.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_subscribers_that_never_read_share_one_budget() {
    let d = TestDaemon::start();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    let mut reader = c
        .subscribe_session(session.clone(), None)
        .await
        .expect("subscribe");

    let mut silent = Vec::new();
    for _ in 0..16 {
        let mut conn = RawConn::connect(&d.socket);
        conn.initialize();
        let r = conn.request("session.subscribe", json!({"sessionId": session}));
        assert!(r.get("result").is_some(), "subscribe: {r}");
        silent.push(conn);
    }
    // Warm: one small call, so what a call costs anyway is in the baseline.
    call_and_wait(
        &c,
        &session,
        "run_shell_command",
        json!({"command": "echo warm"}),
    )
    .await;
    let rss_before = vm_field(d.pid(), "VmRSS:").expect("VmRSS");

    let stop = Arc::new(AtomicBool::new(false));
    let watcher = watch_outbound(d.socket.clone(), stop.clone());
    // The reading client gets every event, in order, with no gap, while
    // 96 calls print 1 MB each (what a call streams).
    let reading = tokio::spawn(async move {
        let mut last_seq = 0;
        let mut streamed = 0usize;
        let mut finished = 0;
        let deadline = Instant::now() + Duration::from_secs(600);
        // The warm call, then the busy ones.
        while finished < CALLS + 1 {
            let event = tokio::time::timeout_at(deadline.into(), reader.next())
                .await
                .expect("the reading client kept up")
                .expect("stream open")
                .expect("event");
            if last_seq != 0 {
                assert_eq!(event.seq, last_seq + 1, "gapless");
            }
            last_seq = event.seq;
            if let EventPayload::ToolCall(call) = &event.payload {
                streamed += call.output_delta.as_deref().map_or(0, str::len);
                if call.state.is_terminal() {
                    finished += 1;
                }
            }
        }
        streamed
    });
    let line = "0123456789abcdef".repeat(6);
    let command = format!("yes '{line}' | head -c 1000000");
    let started = Instant::now();
    for _ in 0..CALLS {
        call_and_wait(
            &c,
            &session,
            "run_shell_command",
            json!({"command": command}),
        )
        .await;
    }
    let took = started.elapsed();
    let streamed = reading.await.expect("reader");
    stop.store(true, Ordering::Relaxed);
    let outbound_peak = watcher.join().expect("watcher");
    let hwm = vm_field(d.pid(), "VmHWM:").expect("VmHWM");
    let grown = hwm.saturating_sub(rss_before);
    println!(
        "{CALLS} calls in {took:?}; streamed {} to one reader; outbound queues peaked at {}; VmRSS {} before, VmHWM {} (+{})",
        mib(streamed as u64),
        mib(outbound_peak),
        mib(rss_before),
        mib(hwm),
        mib(grown)
    );
    assert!(
        streamed >= CALLS * 1_000_000,
        "the reader saw all output: {streamed}"
    );
    // The budget, and one event of at most a few hundred KiB per client.
    assert!(
        outbound_peak <= 64 * 1024 * 1024 + 17 * 512 * 1024,
        "outbound bytes {} over the budget",
        mib(outbound_peak)
    );
    // 16 x 70 MB before; now the budget plus what the calls cost anyway.
    assert!(
        grown < 192 * 1024 * 1024,
        "VmHWM grew by {} with 16 clients that never read",
        mib(grown)
    );

    // A client that never reads is dropped once a send waits 10 s for
    // room; one that the session left alone holds what it had queued
    // (within its share) and lags, to catch up from the store. Either way
    // what is queued stays within the budget.
    tokio::time::sleep(Duration::from_secs(11)).await;
    let status = c.status().await.expect("status");
    let queued = status.outbound_bytes.expect("outboundBytes");
    println!(
        "after the run: {} of 16 silent clients dropped, {} still queued",
        17 - status.connections.min(17),
        mib(queued)
    );
    assert!(
        queued <= 64 * 1024 * 1024 + 17 * 512 * 1024,
        "{}",
        mib(queued)
    );
    drop(silent);
}

/// 1,024 connections that never send a byte take every slot; `daemon
/// status` still answers at once (an idle one is shed for it), the shed
/// one is told why, and silent connections are closed once the
/// `daemon.initialize` deadline passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connections_never_lock_a_client_out() {
    let d = TestDaemon::start_with_env(&[("GEMINID_INITIALIZE_TIMEOUT", "8")]);
    let mut silent = Vec::new();
    for _ in 0..1024 {
        silent.push(StdUnixStream::connect(&d.socket).expect("connect"));
    }
    // Let the daemon take them all in.
    std::thread::sleep(Duration::from_millis(500));
    let mut slowest = Duration::ZERO;
    for _ in 0..3 {
        let asked = Instant::now();
        let out = d.gemctl(&["daemon", "status"]).output().expect("gemctl");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        slowest = slowest.max(asked.elapsed());
    }
    println!("daemon status with 1,024 silent connections: slowest of 3 {slowest:?}");
    // "At once" against the alternative: waiting for a silent one's 8 s
    // initialize deadline (a process start on a loaded machine is slow).
    assert!(slowest < Duration::from_secs(6), "{slowest:?}");

    // The oldest silent connections made room, and were told why.
    let first = read_all(&mut silent[0], Duration::from_secs(5));
    let message: Value = serde_json::from_str(first.lines().next().unwrap_or("{}")).expect("json");
    assert_eq!(message["error"]["code"], json!(-32005), "{first}");
    assert!(
        message["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("connection limit"),
        "{first}"
    );

    // An initialized client outlives the deadline; the silent ones do not.
    let mut kept = RawConn::connect(&d.socket);
    kept.initialize();
    let last = silent.len() - 1;
    let closed = read_all(&mut silent[last], Duration::from_secs(20));
    assert!(
        closed.contains("daemon.initialize did not come within"),
        "{closed}"
    );
    // The deadlines of the last few end within moments of each other.
    let settled = Instant::now() + Duration::from_secs(20);
    let (connections, r) = loop {
        let r = kept.request("daemon.status", json!({}));
        let connections = r["result"]["connections"].as_u64().expect("status");
        if connections <= 2 || Instant::now() > settled {
            break (connections, r);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    println!("connections after the deadline: {connections}");
    assert!(connections <= 2, "silent connections left: {r}");
}

/// Everything the daemon sends on `stream` until it closes it.
fn read_all(stream: &mut StdUnixStream, limit: Duration) -> String {
    stream.set_read_timeout(Some(limit)).expect("timeout");
    let mut out = Vec::new();
    let _ = stream.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The bytes of every regular file below `dir` whose path does not contain
/// `except`.
fn disk_use(dir: &std::path::Path, except: &str) -> u64 {
    let mut total = 0;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.to_string_lossy().contains(except) {
            continue;
        }
        match entry.metadata() {
            Ok(m) if m.is_dir() => total += disk_use(&path, except),
            Ok(m) => total += m.len(),
            Err(_) => {}
        }
    }
    total
}

/// 128 MB of shell output with `geminid.shell.maxStoredOutputBytes` at
/// 8 MiB: the spill file stops at 8 MiB (the result says so), the
/// session's events hold only the first MiB streamed (before: the whole
/// output in the events and again in the spill file), and
/// `session.delete` removes the spill file with the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_output_is_stored_once_capped_and_deleted_with_its_session() {
    let mut d = TestDaemon::start();
    std::fs::create_dir_all(d.home().join(".gemini")).expect("gemini dir");
    std::fs::write(
        d.home().join(".gemini/settings.json"),
        r#"{"geminid": {"shell": {"maxStoredOutputBytes": 8388608}}}"#,
    )
    .expect("settings");
    d.kill9();
    d.spawn();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    let store_before = disk_use(&d.data_dir, "shell-output");
    let line = "0123456789abcdef".repeat(6);
    let command = format!("yes '{line}' | head -c 128000000");
    let started = Instant::now();
    let done = call_and_wait(
        &c,
        &session,
        "run_shell_command",
        json!({"command": command}),
    )
    .await;
    let took = started.elapsed();
    let text = done
        .outcome
        .as_ref()
        .and_then(|o| o.result.as_ref())
        .and_then(|r| r.llm_content.first())
        .map(|p| format!("{p:?}"))
        .unwrap_or_default();
    assert!(
        text.contains("Output was 128000000 bytes; its first 8388608 bytes"),
        "{text}"
    );

    let spill_dir = d.data_dir.join("shell-output").join(&session);
    let spills: Vec<_> = std::fs::read_dir(&spill_dir)
        .expect("the session's spill directory")
        .flatten()
        .collect();
    assert_eq!(spills.len(), 1, "{spills:?}");
    let spilled = spills[0].metadata().expect("spill").len();
    // Let the store apply and checkpoint what the call logged.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let store_grown = disk_use(&d.data_dir, "shell-output").saturating_sub(store_before);
    println!(
        "128 MB of output in {took:?}: spill file {}, the store grew by {}",
        mib(spilled),
        mib(store_grown)
    );
    assert_eq!(spilled, 8 * 1024 * 1024);
    assert!(
        store_grown < 4 * 1024 * 1024,
        "the store grew by {} for one call",
        mib(store_grown)
    );

    c.delete_session(session.clone()).await.expect("delete");
    assert!(
        !spill_dir.exists(),
        "the spill directory outlived its session"
    );
}

/// At the limit with every connection waiting on a call, a new one is
/// turned away, saying why; once a call ends, a new client is served
/// again (the idle one is shed for it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_client_is_turned_away_only_when_every_connection_is_busy() {
    let d = TestDaemon::start_with_env(&[("GEMINID_MAX_CONNECTIONS", "2")]);
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    drop(c);
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Each call says it runs (a file), then waits to be released: the
    // new client comes while both surely run, however slow the machine.
    // The marks go in a folder of their own: the sandbox of a yolo session
    // lets nothing new be made at the top of a root without `.git`.
    let marks = d.workspace.join("marks");
    std::fs::create_dir(&marks).expect("marks");
    let release = marks.join("release");
    let mut busy = Vec::new();
    for i in 0..2 {
        let c = d.client().await;
        let sid = session.clone();
        let command = format!(
            "touch marks/running-{i}; while [ ! -e {} ]; do sleep 0.05; done",
            release.display()
        );
        busy.push(tokio::spawn(async move {
            call_and_wait(&c, &sid, "run_shell_command", json!({"command": command})).await;
            c
        }));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(0..2).all(|i| marks.join(format!("running-{i}")).exists()) {
        assert!(Instant::now() < deadline, "the busy calls never ran");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut turned = StdUnixStream::connect(&d.socket).expect("connect");
    let answer = read_all(&mut turned, Duration::from_secs(20));
    std::fs::write(&release, "").expect("release");
    assert!(
        answer.contains("-32005") && answer.contains("request in flight"),
        "{answer}"
    );
    for call in busy {
        call.await.expect("the busy calls finish");
    }
    let status = d.client().await.status().await.expect("served again");
    assert!(status.connections <= 2, "{status:?}");
}
