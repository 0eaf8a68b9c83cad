//! Checkpoints, undo, restore and fork through a real daemon and the fake
//! model: a turn's edits (CRLF, binary, a created file) are taken back
//! byte for byte by `gemctl undo` from another client, after a kill -9;
//! a file changed on disk since makes undo refuse with the diff; the
//! conversation sent to the model is rewound; a fork goes on alone.

use std::path::Path;

use geminid_protocol::event::{EventPayload, SessionEvent};
use geminid_tests::fake_model::{FakeModel, Reply, gemini};
use geminid_tests::*;
use serde_json::{Value, json};

async fn daemon_with(replies: Vec<Reply>) -> (TestDaemon, FakeModel) {
    let fake = FakeModel::scripted(replies).await;
    let d = TestDaemon::start_with_env(&[
        ("GEMINI_API_KEY", "test-key"),
        ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
        ("GEMINI_MODEL", "gemini-2.5-flash"),
    ]);
    fake.set_var("WS", &d.workspace.display().to_string());
    (d, fake)
}

fn gemctl(d: &TestDaemon, args: &[&str]) -> (i32, String, String) {
    let out = d.gemctl(args).output().expect("gemctl runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn finished_ok(events: &[SessionEvent]) {
    let reason = events.iter().find_map(|e| match &e.payload {
        EventPayload::TurnFinished { reason, .. } => Some(reason.clone()),
        _ => None,
    });
    assert_eq!(reason.as_deref(), Some("completed"), "{events:#?}");
}

/// The `contents` of the `n`th request the model got.
fn contents_of(fake: &FakeModel, n: usize) -> Vec<Value> {
    fake.seen()[n].body["contents"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

const CRLF: &[u8] = b"first line\r\nsecond line\r\nthird\r\n";
const BINARY: &[u8] = &[
    0x89, b'P', b'N', b'G', 0, 0, 0xff, 0xfe, b'\r', b'\n', 0x1a, 0,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_restores_a_turns_edits_exactly_from_another_client_after_kill9() {
    let (mut d, fake) = daemon_with(vec![
        gemini::call_reply(&[
            (
                "replace",
                json!({"file_path": "{WS}/crlf.txt", "old_string": "second line", "new_string": "2nd line"}),
            ),
            (
                "write_file",
                json!({"file_path": "{WS}/data.bin", "content": "now text\n"}),
            ),
            (
                "write_file",
                json!({"file_path": "{WS}/sub/new.txt", "content": "created\n"}),
            ),
        ]),
        gemini::answer(&["edited three files"]),
        gemini::answer(&["a fresh start"]),
    ])
    .await;
    let ws = d.workspace.clone();
    std::fs::write(ws.join("crlf.txt"), CRLF).unwrap();
    std::fs::write(ws.join("data.bin"), BINARY).unwrap();
    let c = d.client().await;
    let session = yolo_session(&c, &ws).await;
    let events = run_turn(&c, &session, "edit them").await;
    finished_ok(&events);
    assert_ne!(std::fs::read(ws.join("crlf.txt")).unwrap(), CRLF);
    assert_eq!(std::fs::read(ws.join("data.bin")).unwrap(), b"now text\n");
    assert!(ws.join("sub/new.txt").exists());

    let (status, out, err) = gemctl(&d, &["checkpoints", "--session", &session]);
    assert_eq!(status, 0, "{err}");
    assert!(out.contains("turn-") && out.contains("3 call(s)"), "{out}");
    assert!(
        out.contains("data.bin") && out.contains("crlf.txt"),
        "{out}"
    );

    // The daemon dies without a word; the checkpoint must have survived.
    drop(c);
    d.kill9();
    d.spawn();
    let watcher = d.client().await;
    let mut sub = watcher
        .subscribe_session(session.clone(), None)
        .await
        .unwrap();

    let (status, out, err) = gemctl(&d, &["undo", "--session", &session]);
    assert_eq!(status, 0, "undo failed: {out} {err}");
    assert!(out.contains("removed") && out.contains("new.txt"), "{out}");
    assert_eq!(std::fs::read(ws.join("crlf.txt")).unwrap(), CRLF);
    assert_eq!(std::fs::read(ws.join("data.bin")).unwrap(), BINARY);
    assert!(!ws.join("sub/new.txt").exists());

    // The other client sees it.
    let seen = collect_until(&mut sub, |e| {
        matches!(e.payload, EventPayload::CheckpointRestored { .. })
    })
    .await;
    match &seen.last().unwrap().payload {
        EventPayload::CheckpointRestored {
            restored,
            removed,
            rewound_entries,
            forced,
            ..
        } => {
            assert_eq!(restored.len(), 2, "{restored:?}");
            assert_eq!(removed.len(), 1, "{removed:?}");
            // The user's prompt, the calls, the responses, the answer.
            assert_eq!(*rewound_entries, 4);
            assert!(!forced);
        }
        other => panic!("{other:?}"),
    }

    // Nothing left to undo; the conversation starts afresh.
    let (status, out, _) = gemctl(&d, &["checkpoints", "--session", &session]);
    assert_eq!(status, 0);
    assert!(out.contains("no checkpoints"), "{out}");
    let history = watcher.history(session.clone(), None, None).await.unwrap();
    assert_eq!(history.total, 0, "{history:?}");
    let events = run_turn(&watcher, &session, "start over").await;
    finished_ok(&events);
    let sent = contents_of(&fake, 2);
    assert_eq!(sent.len(), 1, "only the new prompt is sent: {sent:#?}");
    assert!(sent[0].to_string().contains("start over"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_refuses_a_file_changed_on_disk_since_and_shows_the_diff() {
    let (d, _fake) = daemon_with(vec![
        gemini::call_reply(&[(
            "write_file",
            json!({"file_path": "{WS}/a.txt", "content": "the model's\n"}),
        )]),
        gemini::answer(&["done"]),
    ])
    .await;
    let ws = d.workspace.clone();
    let a = ws.join("a.txt");
    std::fs::write(&a, "original\n").unwrap();
    let c = d.client().await;
    let session = yolo_session(&c, &ws).await;
    finished_ok(&run_turn(&c, &session, "write a").await);
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "the model's\n");
    // Someone else edits the file after the turn.
    std::fs::write(&a, "someone else's\n").unwrap();

    let (status, _, err) = gemctl(&d, &["undo", "--session", &session]);
    assert_eq!(status, 1, "{err}");
    assert!(err.contains("changed on disk"), "{err}");
    assert!(err.contains(&a.display().to_string()), "{err}");
    assert!(
        err.contains("-someone else's") && err.contains("+original"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "someone else's\n");

    // The refusal reaches JSON-RPC clients with the conflicts as data.
    let mut raw = d.raw();
    raw.initialize();
    let list = raw.request("session.checkpoints", json!({"sessionId": session}));
    let checkpoint = list["result"]["checkpoints"][0]["checkpoint"]
        .as_str()
        .unwrap()
        .to_owned();
    let refused = raw.request(
        "session.restore",
        json!({"sessionId": session, "checkpoint": checkpoint}),
    );
    assert_eq!(refused["error"]["code"], -32043, "{refused}");
    let conflicts = &refused["error"]["data"]["conflicts"];
    assert_eq!(conflicts[0]["path"], a.display().to_string(), "{refused}");
    assert!(conflicts[0]["diff"].as_str().unwrap().contains("+original"));

    let (status, _, err) = gemctl(&d, &["undo", "--session", &session, "--force"]);
    assert_eq!(status, 0, "{err}");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "original\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_continues_independently() {
    let (d, fake) = daemon_with(vec![
        gemini::answer(&["one"]),
        gemini::answer(&["two in the fork"]),
        gemini::answer(&["two in the source"]),
        gemini::answer(&["fresh fork"]),
    ])
    .await;
    let c = d.client().await;
    let ws = d.workspace.clone();
    let source = new_session(&c, &ws).await;
    let first = run_turn(&c, &source, "first question").await;
    finished_ok(&first);
    let first_turn = first
        .iter()
        .find_map(|e| match &e.payload {
            EventPayload::TurnStarted { turn_id } => Some(turn_id.clone()),
            _ => None,
        })
        .unwrap();

    let (status, out, err) = gemctl(&d, &["fork", "--session", &source]);
    assert_eq!(status, 0, "{err}");
    let fork = out.trim().to_owned();
    assert_eq!(fork.len(), 32, "{out}");
    assert_ne!(fork, source);

    finished_ok(&run_turn(&c, &fork, "in the fork").await);
    let sent = contents_of(&fake, 1);
    assert_eq!(
        sent.len(),
        3,
        "the source's turn, then the fork's: {sent:#?}"
    );
    assert!(sent[0].to_string().contains("first question"));
    assert!(sent[2].to_string().contains("in the fork"));

    finished_ok(&run_turn(&c, &source, "in the source").await);
    let sent = contents_of(&fake, 2);
    assert_eq!(sent.len(), 3, "{sent:#?}");
    assert!(
        !Value::Array(sent.clone())
            .to_string()
            .contains("in the fork")
    );
    assert_eq!(
        c.history(source.clone(), None, None).await.unwrap().total,
        4
    );
    assert_eq!(c.history(fork.clone(), None, None).await.unwrap().total, 4);

    // A fork before the first turn starts with nothing.
    let empty = c.fork(source.clone(), Some(first_turn)).await.unwrap();
    assert_eq!(
        c.history(empty.session_id.clone(), None, None)
            .await
            .unwrap()
            .total,
        0
    );
    finished_ok(&run_turn(&c, &empty.session_id, "hello again").await);
    assert_eq!(contents_of(&fake, 3).len(), 1);
    let info = c.get_session(empty.session_id.clone()).await.unwrap();
    assert_eq!(Path::new(&info.cwd), ws.as_path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_own_edit_is_a_checkpoint_and_deleted_files_are_reported() {
    let (d, _fake) = daemon_with(Vec::new()).await;
    let ws = d.workspace.clone();
    let kept = ws.join("kept.txt");
    std::fs::write(&kept, "line one\r\nline two\r\n").unwrap();
    let c = d.client().await;
    let session = yolo_session(&c, &ws).await;
    let made = ws.join("made.txt");
    let first = call_and_wait(
        &c,
        &session,
        "write_file",
        json!({"file_path": made.display().to_string(), "content": "made\n"}),
    )
    .await;
    call_and_wait(
        &c,
        &session,
        "replace",
        json!({"file_path": kept.display().to_string(), "old_string": "line two", "new_string": "line 2"}),
    )
    .await;
    // A read is no checkpoint.
    call_and_wait(
        &c,
        &session,
        "read_file",
        json!({"absolute_path": kept.display().to_string()}),
    )
    .await;
    let list = c.checkpoints(session.clone()).await.unwrap().checkpoints;
    let ids: Vec<&str> = list.iter().map(|c| c.checkpoint.as_str()).collect();
    assert_eq!(ids.len(), 2, "{list:?}");
    assert_eq!(ids[0], first.call_id, "{list:?}");
    assert!(list.iter().all(|c| c.turn_id.is_none()));

    // Someone deletes both files: the created one is already as the
    // checkpoint had it; the edited one is a change made since.
    std::fs::remove_file(&made).unwrap();
    std::fs::remove_file(&kept).unwrap();
    let refused = c
        .restore(session.clone(), first.call_id.clone(), None)
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("is gone now"), "{refused}");
    assert!(refused.contains(&kept.display().to_string()), "{refused}");
    assert!(!kept.exists());

    let done = c
        .restore(session.clone(), first.call_id.clone(), Some(true))
        .await
        .unwrap();
    assert_eq!(done.unchanged, vec![made.display().to_string()]);
    assert_eq!(done.restored, vec![kept.display().to_string()]);
    assert_eq!(done.rewound_entries, 0);
    assert_eq!(std::fs::read(&kept).unwrap(), b"line one\r\nline two\r\n");
    assert!(!made.exists());
    assert!(
        c.checkpoints(session.clone())
            .await
            .unwrap()
            .checkpoints
            .is_empty()
    );

    // An unknown checkpoint names the ones there are.
    let unknown = c
        .restore(session.clone(), "turn-999".into(), None)
        .await
        .unwrap_err()
        .to_string();
    assert!(unknown.contains("has none"), "{unknown}");
}

/// `/rewind` and `/undo` in `gemctl chat`, in a real terminal (tmux).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_lists_checkpoints_and_undoes_the_last_turn() {
    let (d, _fake) = daemon_with(vec![
        gemini::call_reply(&[(
            "write_file",
            json!({"file_path": "{WS}/hello.txt", "content": "hi\n"}),
        )]),
        gemini::answer(&["Wrote hello.txt."]),
    ])
    .await;
    let ws = d.workspace.clone();
    let c = d.client().await;
    let session = yolo_session(&c, &ws).await;
    let tmux = geminid_tests::tmux::Tmux::new(d.dir.path());
    let home = d.home();
    tmux.start(
        "a",
        &format!(
            "cd '{ws}' && env HOME='{home}' XDG_STATE_HOME='{home}/state' TERM=tmux-256color '{bin}' --socket '{socket}' chat --session {session}",
            ws = ws.display(),
            home = home.display(),
            bin = gemctl_bin().display(),
            socket = d.socket.display(),
        ),
    );
    tmux.wait_for("a", "gemctl chat session").await;
    tmux.line("a", "write hello");
    tmux.wait_for("a", "Wrote hello.txt.").await;
    assert_eq!(
        std::fs::read_to_string(ws.join("hello.txt")).unwrap(),
        "hi\n"
    );
    tmux.line("a", "/rewind");
    tmux.wait_for("a", "/rewind <checkpoint> goes back to one")
        .await;
    tmux.line("a", "/undo");
    tmux.wait_for("a", "conversation goes on from before it")
        .await;
    assert!(!ws.join("hello.txt").exists());
    tmux.line("a", "/undo");
    tmux.wait_for("a", "nothing to undo").await;
    tmux.line("a", "/quit");
}

/// A directory of the workspace swapped for a link to elsewhere after the
/// edit, with the same bytes waiting there (so the file looks untouched):
/// undo, even forced, writes and removes nothing outside. Every step of a
/// restore goes from the pinned root's descriptor, never by path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_never_writes_through_a_directory_swapped_for_a_link() {
    let (d, _fake) = daemon_with(vec![
        gemini::call_reply(&[
            (
                "write_file",
                json!({"file_path": "{WS}/sub/kept.txt", "content": "edited\n"}),
            ),
            (
                "write_file",
                json!({"file_path": "{WS}/sub/made.txt", "content": "made\n"}),
            ),
        ]),
        gemini::answer(&["done"]),
    ])
    .await;
    let ws = d.workspace.clone();
    std::fs::create_dir(ws.join("sub")).unwrap();
    std::fs::write(ws.join("sub/kept.txt"), "original\n").unwrap();
    let c = d.client().await;
    let session = yolo_session(&c, &ws).await;
    finished_ok(&run_turn(&c, &session, "edit").await);

    // Outside: the same bytes the edits left, so nothing looks changed.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("kept.txt"), "edited\n").unwrap();
    std::fs::write(outside.path().join("made.txt"), "made\n").unwrap();
    std::fs::rename(ws.join("sub"), ws.join("sub-moved")).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.join("sub")).unwrap();

    for args in [
        vec!["undo", "--session", session.as_str()],
        vec!["undo", "--session", session.as_str(), "--force"],
    ] {
        let (status, out, err) = gemctl(&d, &args);
        assert_ne!(status, 0, "undo went through a link: {out} {err}");
        assert_eq!(
            std::fs::read_to_string(outside.path().join("kept.txt")).unwrap(),
            "edited\n",
            "a file outside was overwritten"
        );
        assert!(
            outside.path().join("made.txt").exists(),
            "a file outside was removed"
        );
    }
}
