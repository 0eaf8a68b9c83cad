//! Store faults, with the data directory on a small tmpfs of its own: a
//! full file system and a read-only one. While the store cannot be
//! written, `daemon.status` says why (`storeError`), the daemon stays up
//! and answers what needs no write, and calls wait (a commit is retried
//! every second; nothing is broadcast before it is durable). Once space
//! returns, a restart brings everything back and nothing that was answered
//! is lost; a daemon started on a read-only data dir exits at once saying
//! why.
//!
//! sled keeps its first I/O error and fails everything after it, so the
//! store reopens sled and replays the write-ahead log once the fault is
//! gone (`session/store.rs`); the daemon recovers without a restart.
//!
//! Needs root (mount); fails, saying so, otherwise.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::CallState;
use geminid_tests::*;
use serde_json::json;

/// A daemon whose data dir is a tmpfs mount, unmounted on drop.
struct OnTmpfs {
    d: TestDaemon,
    mount: PathBuf,
}

impl Drop for OnTmpfs {
    fn drop(&mut self) {
        self.d.kill9();
        let _ = Command::new("umount").arg("-l").arg(&self.mount).status();
    }
}

fn mount(args: &[&str], at: &Path) -> Result<(), String> {
    let out = Command::new("mount").args(args).arg(at).output();
    match out {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(String::from_utf8_lossy(&o.stderr).trim().to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

fn on_tmpfs() -> OnTmpfs {
    assert!(
        rustix::process::geteuid().is_root(),
        "the store fault tests mount a small tmpfs and need root (CI runs \
         them as root): run `cargo test -p geminid-tests --test store_faults` as root"
    );
    let mut d = TestDaemon::start();
    d.kill9();
    let data = d.data_dir.clone();
    std::fs::remove_dir_all(&data).unwrap();
    std::fs::create_dir(&data).unwrap();
    if let Err(e) = mount(&["-t", "tmpfs", "-o", "size=24m,mode=0700", "tmpfs"], &data) {
        panic!(
            "cannot mount a tmpfs at {} as root: {e} (the store fault tests need \
             mount(8) from util-linux and a kernel that lets root mount tmpfs)",
            data.display()
        );
    }
    d.spawn();
    OnTmpfs { d, mount: data }
}

/// Fills the file system of `dir` up to the last byte.
fn fill(dir: &Path) -> PathBuf {
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    let chunk = vec![7u8; 64 * 1024];
    while f.write_all(&chunk).is_ok() {}
    while f.write_all(&[7u8]).is_ok() {}
    path
}

async fn store_error(c: &Client) -> Option<String> {
    c.status()
        .await
        .expect("status answers while the store is broken")
        .store_error
}

/// Starts `tool.call … wait` in the background.
fn call_in_background(
    c: Client,
    sid: &str,
    text: &str,
) -> tokio::task::JoinHandle<geminid_protocol::tool::ToolCallStarted> {
    let (sid, text) = (sid.to_owned(), text.to_owned());
    tokio::spawn(async move {
        c.call_tool(
            sid,
            "run_shell_command".into(),
            Some(json!({"command": format!("echo {text}")})),
            Some(true),
        )
        .await
        .expect("the waiting call answers once the store recovers")
    })
}

/// Breaks the store with `break_it`, checks what clients see, repairs it
/// with `repair`, and checks that everything answered survives a crash.
async fn fault_and_recover(
    t: &mut OnTmpfs,
    what: &str,
    break_it: impl FnOnce(&Path),
    repair: impl FnOnce(&Path),
    in_process: bool,
) {
    let c = t.d.client().await;
    let sid = c
        .create_session(
            t.d.workspace.display().to_string(),
            Some(ApprovalMode::Yolo),
            None,
            None,
            None,
            None,
            None,
        )
        .await
        .unwrap()
        .session_id;
    let before = call_and_wait(
        &c,
        &sid,
        "run_shell_command",
        json!({"command": "echo before"}),
    )
    .await;
    assert_eq!(before.outcome.unwrap().state, CallState::Success);
    assert_eq!(
        store_error(&c).await,
        None,
        "{what}: healthy store reported broken"
    );
    let mut last = c.get_session(sid.clone()).await.unwrap().last_seq;

    let other = t.d.client().await;
    break_it(&t.mount);
    let problem = store_error(&c).await;
    assert!(problem.is_some(), "{what}: status does not show the fault");
    println!("{what}: storeError = {problem:?}");
    // Longer than a page: on a full tmpfs a short log line can still land
    // in the unused end of the log's last page, and rightly be answered.
    let long = format!("during-{what}-{}", "x".repeat(8 * 1024));
    let waiting = call_in_background(other, &sid, &long);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !waiting.is_finished(),
        "{what}: a call answered before it was durable"
    );
    // Still serving: reads and status answer, and the process is alive.
    assert!(c.list_sessions().await.is_ok());
    assert!(store_error(&c).await.is_some());

    let repaired = Instant::now();
    repair(&t.mount);
    let mut answered = vec!["before"];
    let during = format!("during-{what}");
    if in_process {
        let done = tokio::time::timeout(Duration::from_secs(30), waiting)
            .await
            .unwrap_or_else(|_| panic!("{what}: the waiting call never answered"))
            .unwrap();
        let snap = done.outcome.unwrap();
        assert_eq!(snap.state, CallState::Success, "{what}: {snap:#?}");
        println!("{what}: answered {:?} after the repair", repaired.elapsed());
        assert_eq!(store_error(&c).await, None);
        answered.push(&during);
        last = c.get_session(sid.clone()).await.unwrap().last_seq;
    } else {
        // Even reads of a loaded session wait for its stuck commit now.
        waiting.abort();
    }
    drop(c);

    // Nothing answered is lost across a crash.
    t.d.kill9();
    t.d.spawn();
    let c = t.d.client().await;
    let info = c.get_session(sid.clone()).await.unwrap();
    assert!(
        info.last_seq >= last,
        "{what}: lost events {} < {last}",
        info.last_seq
    );
    assert_eq!(store_error(&c).await, None);
    let after = call_and_wait(
        &c,
        &sid,
        "run_shell_command",
        json!({"command": "echo after"}),
    )
    .await;
    assert_eq!(after.outcome.unwrap().state, CallState::Success);
    answered.push("after");
    let last = c.get_session(sid.clone()).await.unwrap().last_seq;
    let mut sub = c.subscribe_session(sid, Some(0)).await.unwrap();
    let events = collect_until(&mut sub, |e| e.seq >= last).await;
    let text = serde_json::to_string(&events).unwrap();
    for word in answered {
        assert!(text.contains(word), "{what}: {word} lost after the restart");
    }
}

/// Fills the disk, and frees it again.
fn full_disk() -> (impl FnOnce(&Path), impl FnOnce(&Path)) {
    let filler = std::rc::Rc::new(std::cell::RefCell::new(PathBuf::new()));
    let f2 = filler.clone();
    (
        move |dir: &Path| *filler.borrow_mut() = fill(dir),
        move |_: &Path| std::fs::remove_file(f2.borrow().as_path()).unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_disk_waits_reports_and_a_restart_recovers() {
    let mut t = on_tmpfs();
    let (fill_it, free_it) = full_disk();
    fault_and_recover(&mut t, "full", fill_it, free_it, false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_disk_recovers_without_a_restart() {
    let mut t = on_tmpfs();
    let (fill_it, free_it) = full_disk();
    fault_and_recover(&mut t, "full", fill_it, free_it, true).await;
}

/// A read-only data dir (a remount of a busy mount is refused, so the
/// daemon is stopped first): the daemon exits at once naming the problem,
/// and starts normally once the mount is writable again.
#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_data_dir_fails_the_start_clearly() {
    let mut t = on_tmpfs();
    let c = t.d.client().await;
    let sid = new_session(&c, &t.d.workspace).await;
    drop(c);
    t.d.terminate();
    mount(&["-o", "remount,ro"], &t.mount).unwrap();
    let started = Instant::now();
    let out = Command::new(geminid_bin())
        .arg("--socket")
        .arg(&t.d.socket)
        .arg("--data-dir")
        .arg(&t.d.data_dir)
        .env("HOME", t.d.home())
        .env("GEMINID_LOG", "warn")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    println!(
        "read-only start: {:?} in {:?}: {}",
        out.status,
        started.elapsed(),
        err.trim()
    );
    assert!(!out.status.success(), "started on a read-only store");
    assert!(started.elapsed() < Duration::from_secs(10), "slow to fail");
    assert!(err.contains("Read-only file system"), "{err}");
    assert!(err.contains(&t.d.data_dir.display().to_string()), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    mount(&["-o", "remount,rw"], &t.mount).unwrap();
    t.d.spawn();
    let c = t.d.client().await;
    assert_eq!(store_error(&c).await, None);
    assert!(c.get_session(sid).await.is_ok(), "the session survived");
}

/// The data directory removed while the daemon runs: the log's file is
/// gone, so nothing written now could survive a restart, and nothing is
/// acknowledged (a call waits, its commit retried every second), while
/// `daemon.status` keeps answering and says why.
#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_data_dir_acknowledges_nothing_and_status_says_why() {
    let mut d = TestDaemon::start();
    let c = d.client().await;
    let sid = yolo_session(&c, &d.workspace).await;
    let before = call_and_wait(
        &c,
        &sid,
        "run_shell_command",
        json!({"command": "echo before"}),
    )
    .await;
    assert_eq!(before.outcome.unwrap().state, CallState::Success);

    remove_while_written(&d.data_dir);
    let waiting = call_in_background(d.client().await, &sid, "during");
    let created = {
        let c = d.client().await;
        let ws = d.workspace.display().to_string();
        tokio::spawn(async move {
            c.create_session(ws, None, None, None, None, None, None)
                .await
        })
    };
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let problem = store_error(&c).await;
        assert!(problem.is_some(), "status does not show the fault");
    }
    println!("deleted data dir: storeError = {:?}", store_error(&c).await);
    assert!(
        !waiting.is_finished(),
        "a call was answered that cannot be durable"
    );
    if created.is_finished() {
        let answer = created.await.unwrap();
        assert!(answer.is_err(), "session.create acknowledged: {answer:?}");
    }
    waiting.abort();
    d.kill9();
}

/// 64 bytes of noise over the middle of a session's event file, at eight
/// places: after a restart every intact event is replayed, each lost one
/// is an `error` event with its seq that says where the damage is (the
/// stream stays gapless), and the session goes on taking calls.
#[tokio::test(flavor = "multi_thread")]
async fn damage_in_an_event_file_loses_only_what_it_touches() {
    let mut d = TestDaemon::start();
    let c = d.client().await;
    let sid = yolo_session(&c, &d.workspace).await;
    for i in 0..40 {
        let cmd = format!("echo line-{i}");
        call_and_wait(&c, &sid, "run_shell_command", json!({"command": cmd})).await;
    }
    let last = c.get_session(sid.clone()).await.unwrap().last_seq;
    drop(c);
    d.terminate();
    let file = d.data_dir.join("events").join(&sid);
    let whole = std::fs::read(&file).unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut total_lost = 0;
    for round in 0..8 {
        let mut bytes = whole.clone();
        // Anywhere in the middle half, or (odd rounds) over an entry's
        // header (`seq u64 BE | length u64 BE | bytes`).
        let mut at = bytes.len() / 4 + (next() as usize % (bytes.len() / 2));
        if round % 2 == 1 {
            let headers = entry_offsets(&whole);
            let middle: Vec<usize> = headers
                .into_iter()
                .filter(|o| *o > whole.len() / 4 && *o < whole.len() * 3 / 4)
                .collect();
            at = middle[next() as usize % middle.len()].saturating_sub(next() as usize % 24);
        }
        for b in &mut bytes[at..at + 64] {
            *b = next() as u8;
        }
        std::fs::write(&file, &bytes).unwrap();
        d.spawn();
        let c = d.client().await;
        let info = c.get_session(sid.clone()).await.expect("the session loads");
        assert_eq!(info.last_seq, last, "round {round}");
        let mut sub = c.subscribe_session(sid.clone(), Some(0)).await.unwrap();
        let events = collect_until(&mut sub, |e| e.seq >= last).await;
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(
            seqs,
            (1..=last).collect::<Vec<_>>(),
            "round {round}: gapless"
        );
        let lost: Vec<&str> = events
            .iter()
            .filter_map(|e| match &e.payload {
                geminid_protocol::EventPayload::Error { message } => Some(message.as_str()),
                _ => None,
            })
            .collect();
        assert!(
            !lost.is_empty(),
            "round {round}: the damage was not reported"
        );
        assert!(lost.len() <= 3, "round {round}: {lost:#?}");
        assert!(
            lost.iter().all(|m| m.contains("cannot be replayed")),
            "{lost:#?}"
        );
        println!(
            "round {round}: damage at byte {at}: {} of {last} events lost: {}",
            lost.len(),
            lost[0]
        );
        total_lost += lost.len();
        // Still usable: a new call is stored and replayed after the damage.
        let done = call_and_wait(
            &c,
            &sid,
            "run_shell_command",
            json!({"command": "echo after"}),
        )
        .await;
        assert_eq!(done.outcome.unwrap().state, CallState::Success);
        let now = c.get_session(sid.clone()).await.unwrap().last_seq;
        let mut sub = c.subscribe_session(sid.clone(), Some(last)).await.unwrap();
        let after = collect_until(&mut sub, |e| e.seq >= now).await;
        assert!(serde_json::to_string(&after).unwrap().contains("after"));
        drop(c);
        d.terminate();
        std::fs::write(&file, &whole).unwrap();
    }
    println!(
        "8 rounds of 64 damaged bytes: {total_lost} events lost of {}",
        8 * last
    );
}

/// Where each entry of an event file begins.
fn entry_offsets(file: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 16 <= file.len() {
        out.push(at);
        let len = u64::from_be_bytes(file[at + 8..at + 16].try_into().unwrap()) as usize;
        at += 16 + len;
    }
    out
}

/// Removes `dir` while the daemon may still be writing in it: a file made
/// during the removal leaves it not empty, so it is tried again.
fn remove_while_written(dir: &std::path::Path) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => return,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => assert!(
                std::time::Instant::now() < deadline,
                "{} could not be removed: {e}",
                dir.display()
            ),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
