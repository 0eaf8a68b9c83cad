//! Crash consistency: kill -9 at random moments while 8 clients stream
//! tool calls (reads and `sleep` shell commands, so some are executing at
//! the kill), restart, and check that the store opens, every event any
//! client received is in the replay with the same content, seq stays
//! gapless, calls left open are marked `interrupted` (listed by a
//! `sessionRecovered` event) and never left executing, and each session
//! takes a new call.
//!
//! 3 trials here; `GEMINID_LONG=1` runs 50 (`GEMINID_CRASH_TRIALS` sets the
//! count, `GEMINID_CRASH_SEED` replays a run's random kill points).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use geminid_protocol::EventPayload;
use geminid_protocol::event::SessionEvent;
use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::CallState;
use geminid_tests::*;
use serde_json::json;

const CLIENTS: usize = 8;

/// What the clients saw before the kill: per session, every event by seq,
/// and every call id a `tool.call` answer revealed.
#[derive(Default)]
struct Seen {
    events: HashMap<String, BTreeMap<u64, SessionEvent>>,
    answered: HashMap<String, Vec<String>>,
}

fn trials() -> usize {
    let long = std::env::var_os("GEMINID_LONG").is_some_and(|v| v == "1");
    let default = if long { 50 } else { 3 };
    std::env::var("GEMINID_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// xorshift64*: enough randomness for kill points, reproducible by seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// One client: subscribes to its session from `since` and streams calls
/// (`wait: false`) until the daemon dies.
async fn stream(
    d_socket: std::path::PathBuf,
    session: String,
    since: u64,
    file: String,
    seen: Arc<Mutex<Seen>>,
) {
    let Ok(c) = Client::connect(&d_socket).await else {
        return;
    };
    let Ok(mut sub) = c.subscribe_session(session.clone(), Some(since)).await else {
        return;
    };
    let reader = {
        let (seen, session) = (seen.clone(), session.clone());
        tokio::spawn(async move {
            while let Ok(Some(Ok(event))) =
                tokio::time::timeout(Duration::from_secs(20), sub.next()).await
            {
                let mut seen = seen.lock().unwrap();
                let map = seen.events.entry(session.clone()).or_default();
                assert!(
                    map.insert(event.seq, event).is_none(),
                    "a subscriber got a seq twice"
                );
            }
        })
    };
    for i in 0u64.. {
        let (tool, args) = match i % 3 {
            0 => ("read_file", json!({"absolute_path": file})),
            1 => ("run_shell_command", json!({"command": "sleep 0.3"})),
            _ => ("run_shell_command", json!({"command": "echo hi"})),
        };
        match c
            .call_tool(session.clone(), tool.into(), Some(args), None)
            .await
        {
            Ok(started) => seen
                .lock()
                .unwrap()
                .answered
                .entry(session.clone())
                .or_default()
                .push(started.call_id),
            Err(_) => break,
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    reader.await.expect("the subscriber saw each seq once");
}

/// Whether a client has seen a shell call executing.
fn shell_running(seen: &Mutex<Seen>) -> bool {
    seen.lock().unwrap().events.values().any(|events| {
        events.values().any(|e| {
            matches!(&e.payload, EventPayload::ToolCall(c)
                if c.name == "run_shell_command" && c.state == CallState::Executing)
        })
    })
}

/// Replays a whole session and checks it against what clients saw.
/// Returns the interrupted calls this restart recovered and the last seq.
async fn verify(c: &Client, session: &str, seen: &Seen, from: u64) -> (usize, u64) {
    let mut sub = c.subscribe_session(session.to_owned(), None).await.unwrap();
    // Subscribing loads the session: recovery has been appended by now.
    let last = c.get_session(session.to_owned()).await.unwrap().last_seq;
    let replay = collect_until(&mut sub, |e| e.seq >= last).await;
    let seqs: Vec<u64> = replay.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=last).collect::<Vec<_>>(),
        "{session}: seq is gapless"
    );
    for (seq, event) in seen.events.get(session).into_iter().flatten() {
        assert_eq!(
            &replay[*seq as usize - 1],
            event,
            "{session}: seq {seq} as a client received it is in the store"
        );
    }
    let calls: HashSet<&str> = replay
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::ToolCall(c) => Some(c.call_id.as_str()),
            _ => None,
        })
        .collect();
    for id in seen.answered.get(session).into_iter().flatten() {
        assert!(
            calls.contains(id.as_str()),
            "{session}: answered call {id} is stored"
        );
    }
    // Walk the log: each call ends exactly once; a sessionRecovered comes
    // right after its calls were marked interrupted, and nothing stays open.
    let mut state: HashMap<&str, CallState> = HashMap::new();
    let mut recovered = 0;
    for event in &replay {
        match &event.payload {
            EventPayload::ToolCall(c) => {
                let before = state.insert(&c.call_id, c.state);
                assert!(
                    !before.is_some_and(CallState::is_terminal),
                    "{session}: {} changed after it ended: {before:?} -> {:?}",
                    c.call_id,
                    c.state
                );
            }
            EventPayload::SessionRecovered { interrupted_calls } => {
                let open: Vec<&&str> = state
                    .iter()
                    .filter(|(_, s)| !s.is_terminal())
                    .map(|(id, _)| id)
                    .collect();
                assert!(
                    open.is_empty(),
                    "{session}: still open at recovery: {open:?}"
                );
                for id in interrupted_calls {
                    assert_eq!(
                        state.get(id.as_str()),
                        Some(&CallState::Interrupted),
                        "{session}: {id}"
                    );
                }
                if event.seq > from {
                    recovered += interrupted_calls.len();
                }
            }
            _ => {}
        }
    }
    let open: Vec<_> = state.iter().filter(|(_, s)| !s.is_terminal()).collect();
    assert!(
        open.is_empty(),
        "{session}: calls left open after restart: {open:?}"
    );
    (recovered, last)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_at_random_moments_loses_nothing_and_interrupts_open_calls() {
    let seed = std::env::var("GEMINID_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    println!("GEMINID_CRASH_SEED={seed}");
    let mut rng = Rng(seed);
    // Recovery warns once per session per kill; keep the output readable.
    let mut d = TestDaemon::start_with_env(&[("GEMINID_LOG", "error")]);
    std::fs::write(d.workspace.join("a.txt"), "alpha\n").unwrap();
    let file = d.workspace.join("a.txt").display().to_string();
    let c = d.client().await;
    let mut sessions = Vec::new();
    for _ in 0..CLIENTS {
        let info = c
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
            .unwrap();
        sessions.push((info.session_id, info.last_seq));
    }
    drop(c);
    let started = Instant::now();
    let (mut interrupted, mut received) = (0, 0);
    let trials = trials();
    for trial in 0..trials {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let clients: Vec<_> = sessions
            .iter()
            .map(|(s, last)| {
                tokio::spawn(stream(
                    d.socket.clone(),
                    s.clone(),
                    *last,
                    file.clone(),
                    seen.clone(),
                ))
            })
            .collect();
        // The clients are under way (a shell call runs) before the random
        // wait starts: on a loaded machine they may take longer to start
        // than the wait, and a kill before any call tests little.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !shell_running(&seen) {
            assert!(Instant::now() < deadline, "trial {trial}: no call started");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let wait = 150 + rng.below(1200);
        tokio::time::sleep(Duration::from_millis(wait)).await;
        d.kill9();
        for client in clients {
            tokio::time::timeout(Duration::from_secs(20), client)
                .await
                .expect("clients notice the daemon is gone")
                .expect("client task");
        }
        d.spawn();
        let c = match Client::connect(&d.socket).await {
            Ok(c) => c,
            Err(e) => panic!(
                "trial {trial}: connect after restart: {e}; daemon running: {}",
                d.is_running()
            ),
        };
        let seen = std::mem::take(&mut *seen.lock().unwrap());
        received += seen.events.values().map(BTreeMap::len).sum::<usize>();
        for (session, last) in &mut sessions {
            let (n, now) = verify(&c, session, &seen, *last).await;
            interrupted += n;
            let done =
                call_and_wait(&c, session, "read_file", json!({"absolute_path": file})).await;
            assert_eq!(
                done.outcome.unwrap().state,
                CallState::Success,
                "trial {trial}: {session} is usable"
            );
            *last = c.get_session(session.clone()).await.unwrap().last_seq;
            assert!(*last > now);
        }
    }
    println!(
        "{trials} kills in {:.1} s: {received} events received by clients, all in the store; {interrupted} calls interrupted",
        started.elapsed().as_secs_f64()
    );
    assert!(
        interrupted > 0,
        "some kills must land while `sleep` calls execute"
    );
}
