//! Shared sessions: identical streams for every client, first answer wins,
//! resubscription without gaps, durability across kill -9.

use geminid_protocol::EventPayload;
use geminid_protocol::tool::{CallState, ConfirmationOutcome};
use geminid_tests::*;
use serde_json::json;

fn seqs(events: &[geminid_protocol::SessionEvent]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

#[tokio::test]
async fn two_clients_on_one_session_see_identical_event_sequences() {
    let d = TestDaemon::start();
    std::fs::write(d.workspace.join("a.txt"), "alpha\n").unwrap();
    let a = d.client().await;
    let b = d.client().await;
    let session = new_session(&a, &d.workspace).await;
    let mut sub_a = a.subscribe_session(session.clone(), None).await.unwrap();
    let mut sub_b = b.subscribe_session(session.clone(), None).await.unwrap();

    let mut last_call = String::new();
    for i in 0..5 {
        let client = if i % 2 == 0 { &a } else { &b };
        let path = d.workspace.join("a.txt").display().to_string();
        last_call = client
            .call_tool(
                session.clone(),
                "read_file".into(),
                Some(json!({"absolute_path": path})),
                None,
            )
            .await
            .unwrap()
            .call_id;
    }
    let got_a = collect_until(&mut sub_a, |e| is_final(e, &last_call)).await;
    let got_b = collect_until(&mut sub_b, |e| is_final(e, &last_call)).await;
    assert_eq!(got_a, got_b, "both clients must see the same events");
    assert_eq!(
        seqs(&got_a),
        (1..=got_a.len() as u64).collect::<Vec<_>>(),
        "seq is gapless from 1"
    );
    let successes = got_a
        .iter()
        .filter(
            |e| matches!(&e.payload, EventPayload::ToolCall(c) if c.state == CallState::Success),
        )
        .count();
    assert_eq!(successes, 5);
}

#[tokio::test]
async fn the_first_answer_to_a_confirmation_wins() {
    let d = TestDaemon::start();
    let a = d.client().await;
    let b = d.client().await;
    let session = new_session(&a, &d.workspace).await;
    let mut sub = a.subscribe_session(session.clone(), None).await.unwrap();
    let target = d.workspace.join("new.txt");
    let call = a
        .call_tool(
            session.clone(),
            "write_file".into(),
            Some(json!({"file_path": target.display().to_string(), "content": "hi\n"})),
            None,
        )
        .await
        .unwrap()
        .call_id;
    let events = wait_state(&mut sub, &call, CallState::AwaitingApproval).await;
    let EventPayload::ToolCall(waiting) = &events.last().unwrap().payload else {
        unreachable!()
    };
    assert!(
        waiting.confirmation.is_some(),
        "awaiting approval carries the confirmation details"
    );

    let first = b
        .confirm_tool(
            session.clone(),
            call.clone(),
            ConfirmationOutcome::ProceedOnce,
            None,
        )
        .await
        .unwrap();
    let second = a
        .confirm_tool(
            session.clone(),
            call.clone(),
            ConfirmationOutcome::Cancel,
            None,
        )
        .await
        .unwrap();
    assert!(first.accepted);
    assert!(!second.accepted, "a later answer must not be accepted");
    wait_state(&mut sub, &call, CallState::Success).await;
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "hi\n");

    let unknown = a
        .confirm_tool(
            session.clone(),
            "call-99999".into(),
            ConfirmationOutcome::ProceedOnce,
            None,
        )
        .await;
    assert!(unknown.is_err(), "an unknown call id is an error");
}

#[tokio::test]
async fn a_resubscribing_client_gets_exactly_what_it_missed() {
    let d = TestDaemon::start();
    std::fs::write(d.workspace.join("a.txt"), "alpha\n").unwrap();
    let path = d.workspace.join("a.txt").display().to_string();
    let watcher = d.client().await;
    let session = new_session(&watcher, &d.workspace).await;
    let mut all = watcher
        .subscribe_session(session.clone(), None)
        .await
        .unwrap();

    // A client sees the first call, then goes away.
    let first_seen = {
        let c = d.client().await;
        let mut sub = c.subscribe_session(session.clone(), None).await.unwrap();
        let call = c
            .call_tool(
                session.clone(),
                "read_file".into(),
                Some(json!({"absolute_path": path})),
                None,
            )
            .await
            .unwrap()
            .call_id;
        collect_until(&mut sub, |e| is_final(e, &call)).await
    };
    let last_seen = first_seen.last().unwrap().seq;

    // Meanwhile more happens.
    let mut last_call = String::new();
    for _ in 0..3 {
        last_call = watcher
            .call_tool(
                session.clone(),
                "read_file".into(),
                Some(json!({"absolute_path": path})),
                Some(true),
            )
            .await
            .unwrap()
            .call_id;
    }
    let everything = collect_until(&mut all, |e| is_final(e, &last_call)).await;

    // It comes back and resumes from the last seq it saw.
    let c = d.client().await;
    let mut resumed = c
        .subscribe_session(session.clone(), Some(last_seen))
        .await
        .unwrap();
    let missed = collect_until(&mut resumed, |e| is_final(e, &last_call)).await;
    let expected: Vec<_> = everything
        .into_iter()
        .filter(|e| e.seq > last_seen)
        .collect();
    assert_eq!(
        missed, expected,
        "exactly the missed events, in order, no duplicates"
    );
}

#[tokio::test]
async fn kill_9_and_restart_keep_sessions_and_events() {
    let mut d = TestDaemon::start();
    std::fs::write(d.workspace.join("a.txt"), "alpha\n").unwrap();
    let path = d.workspace.join("a.txt").display().to_string();
    let (session, seen) = {
        let c = d.client().await;
        let session = new_session(&c, &d.workspace).await;
        // Counted at once, while the new record may not be in sled yet.
        assert_eq!(c.status().await.unwrap().sessions_total, 1);
        let mut sub = c.subscribe_session(session.clone(), None).await.unwrap();
        let call = c
            .call_tool(
                session.clone(),
                "read_file".into(),
                Some(json!({"absolute_path": path})),
                None,
            )
            .await
            .unwrap()
            .call_id;
        // A call left waiting for approval when the daemon dies.
        c.call_tool(
            session.clone(),
            "write_file".into(),
            Some(json!({"file_path": d.workspace.join("w.txt").display().to_string(), "content": "x"})),
            None,
        )
        .await
        .unwrap();
        let mut seen = collect_until(&mut sub, |e| is_final(e, &call)).await;
        seen.extend(collect_until(&mut sub, |e| {
            matches!(&e.payload, EventPayload::ToolCall(c) if c.state == CallState::AwaitingApproval)
        })
        .await);
        (session, seen)
    };
    d.kill9();
    d.spawn();

    let c = d.client().await;
    let sessions = c.list_sessions().await.unwrap();
    assert!(
        sessions.iter().any(|s| s.session_id == session),
        "the session survived"
    );
    assert_eq!(
        c.status().await.unwrap().sessions_total,
        sessions.len() as u64
    );
    let mut sub = c.subscribe_session(session.clone(), None).await.unwrap();
    let replayed = collect_until(&mut sub, |e| {
        matches!(&e.payload, EventPayload::SessionRecovered { .. })
    })
    .await;
    assert_eq!(
        &replayed[..seen.len()],
        &seen[..],
        "every event a client received is still there"
    );
    assert_eq!(
        seqs(&replayed),
        (1..=replayed.len() as u64).collect::<Vec<_>>(),
        "seq stays gapless"
    );
    let interrupted = replayed[seen.len()..]
        .iter()
        .filter(|e| matches!(&e.payload, EventPayload::ToolCall(c) if c.state == CallState::Interrupted))
        .count();
    assert_eq!(
        interrupted, 1,
        "the unfinished call is marked interrupted, not left waiting"
    );

    // The session is usable after the restart.
    let done = c
        .call_tool(
            session.clone(),
            "read_file".into(),
            Some(json!({"absolute_path": path})),
            Some(true),
        )
        .await
        .unwrap();
    assert_eq!(done.outcome.unwrap().state, CallState::Success);
}

#[tokio::test]
async fn large_results_survive_kill_9_unchanged() {
    let mut d = TestDaemon::start();
    // Results of about 3 MB and 400 KB, both stored out of line: the large
    // ones with direct writes where the file system allows them (blobs.rs
    // tests that they are), the middle one buffered between them.
    let line = "the quick brown fox \"jumps\" over the lazy dog\n";
    for (dir, files, lines) in [("big", 3, 24_000), ("mid", 1, 9_000)] {
        std::fs::create_dir_all(d.workspace.join(dir)).unwrap();
        for i in 0..files {
            std::fs::write(
                d.workspace.join(format!("{dir}/{i}.txt")),
                line.repeat(lines),
            )
            .unwrap();
        }
    }
    let (session, seen) = {
        let c = d.client().await;
        let session = new_session(&c, &d.workspace).await;
        let mut sub = c.subscribe_session(session.clone(), None).await.unwrap();
        let mut seen = Vec::new();
        for dir in ["big", "mid", "big"] {
            let call = c
                .call_tool(
                    session.clone(),
                    "read_many_files".into(),
                    Some(json!({"paths": [format!("{dir}/*.txt")]})),
                    None,
                )
                .await
                .unwrap()
                .call_id;
            seen.extend(collect_until(&mut sub, |e| is_final(e, &call)).await);
        }
        (session, seen)
    };
    let sizes: Vec<usize> = seen
        .iter()
        .filter(
            |e| matches!(&e.payload, EventPayload::ToolCall(c) if c.state == CallState::Success),
        )
        .map(|e| serde_json::to_string(e).unwrap().len())
        .collect();
    assert_eq!(sizes.len(), 3, "three calls succeeded");
    assert!(sizes[0] > 3_000_000 && sizes[2] > 3_000_000, "{sizes:?}");
    assert!((300_000..1_000_000).contains(&sizes[1]), "{sizes:?}");
    d.kill9();
    d.spawn();

    let c = d.client().await;
    let mut sub = c.subscribe_session(session.clone(), None).await.unwrap();
    let replayed = collect_until(&mut sub, |e| e.seq == seen.last().unwrap().seq).await;
    assert_eq!(
        &replayed[replayed.len() - seen.len()..],
        &seen[..],
        "every large result reads back as it was sent"
    );
}

#[tokio::test]
async fn the_running_daemon_checkpoints_and_cuts_its_log() {
    let d = TestDaemon::start();
    std::fs::write(d.workspace.join("a.txt"), "alpha\n").unwrap();
    let c = d.client().await;
    let session = new_session(&c, &d.workspace).await;
    c.call_tool(
        session,
        "read_file".into(),
        Some(json!({"absolute_path": d.workspace.join("a.txt").display().to_string()})),
        Some(true),
    )
    .await
    .unwrap();
    // The newest segment holds the call (a cut segment the apply thread
    // has not caught up with may still be there too, on a loaded machine).
    let logged = wal_files(&d.data_dir);
    let current = logged.last().cloned().expect("a current segment");
    // Checkpoints come every 500 ms: the segment holding the call is cut
    // and deleted, and a fresh one takes its place, without a restart.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let now = wal_files(&d.data_dir);
        if now.len() == 1 && !now.contains(&current) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the log was never cut: {logged:?}, now {now:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A kill -9 right after `session.delete` answered (before the next
/// checkpoint cut the log that still holds the session's steps): after
/// the restart the session is gone, and the other one is intact.
#[tokio::test]
async fn a_session_deleted_just_before_kill_9_stays_deleted() {
    let mut d = TestDaemon::start();
    std::fs::write(d.workspace.join("a.txt"), "alpha\n").unwrap();
    let path = d.workspace.join("a.txt").display().to_string();
    let (deleted, kept) = {
        let c = d.client().await;
        let deleted = yolo_session(&c, &d.workspace).await;
        let kept = yolo_session(&c, &d.workspace).await;
        for session in [&deleted, &kept] {
            let done =
                call_and_wait(&c, session, "read_file", json!({"absolute_path": path})).await;
            assert_eq!(done.outcome.unwrap().state, CallState::Success);
        }
        c.delete_session(deleted.clone()).await.unwrap();
        (deleted, kept)
    };
    d.kill9();
    d.spawn();

    let c = d.client().await;
    let ids: Vec<String> = c
        .list_sessions()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.session_id)
        .collect();
    assert_eq!(
        ids,
        std::slice::from_ref(&kept),
        "the deleted session came back"
    );
    assert!(c.subscribe_session(deleted, None).await.is_err());
    let mut sub = c.subscribe_session(kept, None).await.unwrap();
    let replayed = collect_until(
        &mut sub,
        |e| matches!(&e.payload, EventPayload::ToolCall(c) if c.state == CallState::Success),
    )
    .await;
    assert!(!replayed.is_empty());
}
