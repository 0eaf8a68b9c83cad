//! Protocol fuzzing against a real daemon (proptest): random bytes,
//! mutated requests, wrong param types for every method, unicode edge
//! cases (escaped lone surrogates, BOM, NUL, overlong and surrogate UTF-8),
//! deep nesting, over-long lines, and connections that end mid-line or
//! without reading. Throughout, a control client's `daemon.status` must
//! keep answering promptly; afterwards the process is alive, its stderr
//! has no panic, and the connection count and open descriptors are back to
//! where they were.
//!
//! Inputs go in batches, one connection per batch. The quick run sends a
//! few thousand inputs; `GEMINID_FUZZ_CASES=1000000` sets the number of
//! inputs for a long run (see BENCHMARKS.md).

mod fuzz_inputs;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fuzz_inputs::{End, batch};
use geminid_protocol::framing::MAX_LINE_BYTES;
use geminid_tests::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Value, json};

/// Runs one batch on a fresh connection. Every line the daemon sends must
/// be a JSON-RPC 2.0 message; an answered batch must get its marker back.
fn run_batch(
    socket: &Path,
    init: bool,
    lines: &[Vec<u8>],
    end: &End,
    codes: &Mutex<BTreeMap<i64, u64>>,
) -> Result<(), TestCaseError> {
    let stream =
        UnixStream::connect(socket).map_err(|e| TestCaseError::fail(format!("connect: {e}")))?;
    stream.set_read_timeout(Some(Duration::from_secs(30))).ok();
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut w = stream;
    let mut out = Vec::new();
    if init {
        out.extend_from_slice(
            b"{\"jsonrpc\":\"2.0\",\"id\":\"init\",\"method\":\"daemon.initialize\"}\n",
        );
    }
    for l in lines {
        out.extend_from_slice(l);
        out.push(b'\n');
    }
    match end {
        End::Answered => out.extend_from_slice(
            b"{\"jsonrpc\":\"2.0\",\"id\":\"marker\",\"method\":\"daemon.status\"}\n",
        ),
        End::HalfLine(half) => out.extend_from_slice(half),
        End::Abrupt => {}
    }
    // The daemon answers while we write: a closed connection here is ours
    // to report only if we wanted answers.
    let written = w.write_all(&out);
    if !matches!(end, End::Answered) {
        return Ok(());
    }
    written.map_err(|e| TestCaseError::fail(format!("write: {e}")))?;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| TestCaseError::fail(format!("read: {e}")))?;
        if n == 0 {
            return Err(TestCaseError::fail(
                "the daemon closed the connection before the marker",
            ));
        }
        let msg: Value = serde_json::from_slice(&buf).map_err(|e| {
            TestCaseError::fail(format!(
                "the daemon sent non-JSON {e}: {:?}",
                String::from_utf8_lossy(&buf)
            ))
        })?;
        prop_assert_eq!(&msg["jsonrpc"], &json!("2.0"), "{}", msg);
        // Answers by error code (0: a result).
        let code = msg["error"]["code"].as_i64().unwrap_or(0);
        *codes.lock().unwrap().entry(code).or_default() += 1;
        if msg["id"] == json!("marker") {
            return Ok(());
        }
    }
}

fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// `daemon.status` on its own connection, in a loop, until `stop`; returns
/// the slowest answer.
fn control_client(
    socket: &Path,
    stop: Arc<AtomicBool>,
    answers: Arc<AtomicU64>,
) -> std::thread::JoinHandle<Duration> {
    let mut conn = RawConn::connect(socket);
    conn.initialize();
    std::thread::spawn(move || {
        let mut slowest = Duration::ZERO;
        while !stop.load(Ordering::Relaxed) {
            let t = Instant::now();
            let r = conn.request("daemon.status", json!({}));
            assert!(r.get("result").is_some(), "{r}");
            slowest = slowest.max(t.elapsed());
            answers.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(20));
        }
        slowest
    })
}

fn status(d: &TestDaemon) -> Value {
    let mut conn = d.raw();
    conn.initialize();
    conn.request("daemon.status", json!({}))["result"].clone()
}

#[test]
fn fuzzed_input_never_panics_leaks_or_blocks_other_clients() {
    let inputs: u64 = std::env::var("GEMINID_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000);
    let mut d = TestDaemon::start_capturing_stderr();
    std::fs::write(d.workspace.join("a.txt"), "alpha\n").unwrap();
    let session = {
        let mut conn = d.raw();
        conn.initialize();
        let created = conn.request(
            "session.create",
            json!({"cwd": d.workspace.display().to_string()}),
        );
        created["result"]["sessionId"]
            .as_str()
            .expect("session")
            .to_owned()
    };
    let pid = d.pid();
    let stop = Arc::new(AtomicBool::new(false));
    let answers = Arc::new(AtomicU64::new(0));
    let control = control_client(&d.socket, stop.clone(), answers.clone());
    // Warm up lazily opened files, then take the baseline.
    let codes = Mutex::new(BTreeMap::new());
    run_batch(&d.socket, true, &[b"{}".to_vec()], &End::Answered, &codes).expect("warm-up");
    std::thread::sleep(Duration::from_millis(300));
    let base_fds = fd_count(pid);
    let base = status(&d);

    // Inputs that are too big to draw often: over-long lines and 100k-deep nesting.
    let huge = vec![b'x'; MAX_LINE_BYTES + 100];
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes();
    let deep_params = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"session.get","params":{{"sessionId":{}}}}}"#,
        "[".repeat(100_000)
    );
    run_batch(
        &d.socket,
        true,
        &[
            huge.clone(),
            deep.clone(),
            deep_params.into_bytes(),
            b"ok".to_vec(),
        ],
        &End::Answered,
        &codes,
    )
    .expect("big inputs");
    run_batch(&d.socket, true, &[huge], &End::HalfLine(deep), &codes).expect("big half line");

    let sent = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    // Batches average 24 lines (1..48): slightly more batches than that
    // make sure at least `inputs` are sent.
    let cases = (inputs / 23).max(1) as u32;
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&batch(session.clone()), |(init, lines, end)| {
        sent.fetch_add(lines.len() as u64, Ordering::Relaxed);
        run_batch(&d.socket, init, &lines, &end, &codes)
    });
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let slowest = control
        .join()
        .expect("the control client kept getting answers");
    if let Err(e) = result {
        panic!("{e}\ndaemon stderr:\n{}", d.stderr_text());
    }
    let sent = sent.load(Ordering::Relaxed);
    println!(
        "{sent} inputs in {cases} connections in {:.1} s ({:.0} inputs/s); control client: {} answers, slowest {:?}",
        elapsed.as_secs_f64(),
        sent as f64 / elapsed.as_secs_f64(),
        answers.load(Ordering::Relaxed),
        slowest
    );
    println!(
        "answers by error code (0: a result): {:?}",
        codes.lock().unwrap()
    );
    assert!(
        slowest < Duration::from_secs(2),
        "daemon.status took {slowest:?} during the fuzzing"
    );

    // Connections and descriptors go back to the baseline (requests cut
    // off by a close get 5 s to finish).
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let fds = fd_count(pid);
        let now = status(&d);
        // The control client is gone: one connection and descriptor fewer
        // than at the start.
        let settled = now["connections"].as_u64() == base["connections"].as_u64().map(|n| n - 1)
            && fds < base_fds;
        if settled {
            assert_eq!(now["sessionsLoaded"], base["sessionsLoaded"], "{now}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "leaked: status {now} (was {base}), fds {fds} (was {base_fds})"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(d.is_running(), "the daemon exited");
    let stderr = d.stderr_text();
    assert!(!stderr.contains("panicked"), "{stderr}");
}
