use super::database::sled_config;
use super::types::prefixed;
use super::*;
use serde_json::value::RawValue;

fn raw(s: &str) -> Box<RawValue> {
    RawValue::from_string(s.to_owned()).unwrap()
}

fn record(id: &str) -> SessionRecord {
    SessionRecord {
        id: id.to_owned(),
        cwd: "/tmp".into(),
        title: None,
        approval_mode: crate::policy::ApprovalMode::Default,
        interactive: true,
        created_at: 1,
        root_dev: None,
        root_ino: None,
        origin: None,
        sandbox: None,
        tokens: None,
        model: None,
        compression: None,
        rewound: Vec::new(),
        allowed: Default::default(),
        todos: Vec::new(),
    }
}

/// A kill -9 while sled creates its database can cut its `conf` file
/// between its two writes, before the data file exists; sled never
/// opens such a database again, the store must.
#[test]
fn a_database_cut_while_being_created_does_not_stop_the_store_opening() {
    let made = tempfile::tempdir().unwrap();
    drop(sled_config(made.path()).open().unwrap());
    let conf = std::fs::read(made.path().join("conf")).unwrap();
    let cut = &conf[..conf.len() - 4];
    // The hazard: sled refuses a database whose conf lost its checksum.
    let broken = tempfile::tempdir().unwrap();
    std::fs::write(broken.path().join("conf"), cut).unwrap();
    assert!(sled_config(broken.path()).open().is_err());

    let dir = tempfile::tempdir().unwrap();
    let sled_dir = dir.path().join("sessions.sled");
    std::fs::create_dir_all(sled_dir.join("blobs")).unwrap();
    std::fs::write(sled_dir.join("conf"), cut).unwrap();
    let a = new_session_id();
    {
        let store = Store::open(dir.path()).unwrap();
        store.put_session(&record(&a)).unwrap();
        store.settle().unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    assert!(store.get_session(&a).unwrap().is_some());
}

#[test]
fn a_call_opened_and_closed_in_one_append_leaves_no_marker() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let a = new_session_id();
    let step = |seq: u64, open_calls: Vec<(String, Option<Vec<u8>>)>| Append {
        events: vec![Published::new(seq, raw("{}"))],
        open_calls,
        ..Append::default()
    };
    let open = |id: &str| (id.to_owned(), Some(b"[\"read_file\",{}]".to_vec()));
    let close = |id: &str| (id.to_owned(), None);
    // A quick call: opened and finished in the same step.
    store
        .commit(&a, &step(1, vec![open("call-1"), close("call-1")]))
        .unwrap();
    assert!(store.open_calls(&a).unwrap().is_empty());
    // A call that waits: open in one step, closed in a later one.
    store.commit(&a, &step(2, vec![open("call-2")])).unwrap();
    let ids: Vec<String> = store
        .open_calls(&a)
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(ids, ["call-2"]);
    store.commit(&a, &step(3, vec![close("call-2")])).unwrap();
    assert!(store.open_calls(&a).unwrap().is_empty());
}

#[test]
fn the_apply_thread_puts_every_step_in_sled_by_settle() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let a = new_session_id();
    store.put_session(&record(&a)).unwrap();
    for seq in 1..=200u64 {
        let mut append = Append {
            events: vec![Published::new(seq, raw(&format!("{{\"n\":{seq}}}")))],
            ..Append::default()
        };
        let logged = store.log(&a, &mut append).unwrap();
        store.apply_later(logged).unwrap();
    }
    store.settle().unwrap();
    // Nothing is left in the tail: every step was stored, in order.
    assert_eq!(store.tail.last_seq(&a), None);
    assert_eq!(store.last_seq(&a).unwrap(), 200);
    assert_eq!(seqs(&store, &a), (1..=200).collect::<Vec<_>>());
    // Steps found queued together went in together.
    let writes = store.files.writes();
    assert!(writes < 200, "{writes} writes for 200 steps");
    assert!(!store.is_broken());
}

#[tokio::test]
async fn events_survive_reopen_and_ranges_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    let a = new_session_id();
    let b = new_session_id();
    {
        let store = Store::open(dir.path()).unwrap();
        store.put_session(&record(&a)).unwrap();
        store.put_session(&record(&b)).unwrap();
        let append = Append {
            events: (1..=300)
                .map(|s| Published::new(s, raw(&format!("{{\"n\":{s}}}"))))
                .collect(),
            open_calls: vec![
                ("c1".into(), Some(b"1".to_vec())),
                ("c2".into(), Some(b"2".to_vec())),
            ],
            ..Append::default()
        };
        store.append(&a, &append).unwrap();
        store
            .append(
                &b,
                &Append {
                    events: vec![Published::new(1, raw("{}"))],
                    ..Append::default()
                },
            )
            .unwrap();
        store
            .append(
                &a,
                &Append {
                    open_calls: vec![("c1".into(), None)],
                    ..Append::default()
                },
            )
            .unwrap();
        store.flush().await.unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.last_seq(&a).unwrap(), 300);
    assert_eq!(store.last_seq(&b).unwrap(), 1);
    let got = store.events(&a, 255, 260).unwrap();
    assert_eq!(
        got.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
        vec![256, 257, 258, 259, 260]
    );
    assert_eq!(got[0].1.get(), "{\"n\":256}");
    assert_eq!(
        store.open_calls(&a).unwrap(),
        vec![("c2".to_owned(), b"2".to_vec())]
    );
    assert_eq!(store.list_sessions().unwrap().len(), 2);
    assert_eq!(store.count_sessions().unwrap(), 2);
    store.delete_session(&a).unwrap();
    assert_eq!(store.count_sessions().unwrap(), 1);
    assert_eq!(store.last_seq(&a).unwrap(), 0);
    assert!(store.get_session(&a).unwrap().is_none());
    assert_eq!(store.last_seq(&b).unwrap(), 1);
}

/// Steps of 1 to 5 events, committed one by one; every range,
/// whether it starts or ends inside a step or between two, reads
/// exactly its events, from the tail and the file alike.
#[test]
fn every_range_across_steps_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = new_session_id();
    let mut seq = 0;
    for size in [1u64, 3, 2, 5, 1, 4, 2] {
        let append = Append {
            events: (seq + 1..=seq + size)
                .map(|s| Published::new(s, raw(&format!("{{\"n\":{s}}}"))))
                .collect(),
            ..Append::default()
        };
        store.commit(&id, &append).unwrap();
        seq += size;
    }
    assert_eq!(store.files.writes(), 7);
    assert_eq!(store.last_seq(&id).unwrap(), seq);
    for since in 0..=seq + 1 {
        for upto in since..=seq + 1 {
            let got = store.events(&id, since, upto).unwrap();
            let want: Vec<u64> = (since + 1..=upto.min(seq)).collect();
            let seqs: Vec<u64> = got.iter().map(|(s, _)| *s).collect();
            assert_eq!(seqs, want, "since {since}, upto {upto}");
            for (s, json) in got {
                assert_eq!(json.get(), format!("{{\"n\":{s}}}"));
            }
        }
    }
}

/// Logs one step per seq in `seqs`, each with one event; the first
/// opens `call-a` and the last closes it; every step opens and closes
/// a call of its own, and the second opens `call-b` for good.
fn logged_steps(store: &Store, id: &str, seqs: std::ops::RangeInclusive<u64>) -> Vec<Logged> {
    let (first, last) = (*seqs.start(), *seqs.end());
    seqs.map(|seq| {
        let mut open_calls = vec![
            (format!("own-{seq}"), Some(b"[]".to_vec())),
            (format!("own-{seq}"), None),
        ];
        if seq == first {
            open_calls.push(("call-a".to_owned(), Some(b"[]".to_vec())));
        }
        if seq == first + 1 {
            open_calls.push(("call-b".to_owned(), Some(b"[]".to_vec())));
        }
        if seq == last {
            open_calls.push(("call-a".to_owned(), None));
        }
        let mut append = Append {
            events: vec![Published::new(seq, raw(&format!("{{\"n\":{seq}}}")))],
            open_calls,
            ..Append::default()
        };
        store.log(id, &mut append).unwrap()
    })
    .collect()
}

fn seqs(store: &Store, id: &str) -> Vec<u64> {
    store
        .events(id, 0, u64::MAX)
        .unwrap()
        .into_iter()
        .map(|(s, _)| s)
        .collect()
}

#[test]
fn steps_applied_together_make_one_write_and_the_same_state() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = new_session_id();
    let mut steps = logged_steps(&store, &id, 1..=5);
    store.apply_together(&mut steps).unwrap();
    drop(steps);
    assert!(!store.is_broken(), "every step was marked applied");
    assert_eq!(store.tail.last_seq(&id), None);
    assert_eq!(store.files.writes(), 1);
    assert_eq!(seqs(&store, &id), [1, 2, 3, 4, 5]);
    assert_eq!(store.last_seq(&id).unwrap(), 5);
    let open: Vec<String> = store
        .open_calls(&id)
        .unwrap()
        .into_iter()
        .map(|(c, _)| c)
        .collect();
    assert_eq!(open, ["call-b"]);
}

/// A crash after steps 1 to 5 were applied together, before the log
/// was cut: the replay applies steps 3 to 5 again, one by one.
#[test]
fn a_step_replayed_over_applied_steps_is_stored_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = new_session_id();
    let mut steps = logged_steps(&store, &id, 1..=5);
    store.apply_together(&mut steps).unwrap();
    let tree = store.tree().unwrap();
    let size = std::fs::metadata(dir.path().join("events").join(&id))
        .unwrap()
        .len();
    for step in &steps[2..] {
        apply(&tree, &store.files, &store.blobs, &id, &step.append, &[]).unwrap();
    }
    let after = std::fs::metadata(dir.path().join("events").join(&id))
        .unwrap()
        .len();
    assert_eq!(after, size, "nothing appended twice");
    assert_eq!(seqs(&store, &id), [1, 2, 3, 4, 5]);
    for since in 0..=5 {
        let got: Vec<u64> = store
            .events(&id, since, 5)
            .unwrap()
            .into_iter()
            .map(|(s, _)| s)
            .collect();
        assert_eq!(got, (since + 1..=5).collect::<Vec<_>>());
    }
    assert_eq!(store.last_seq(&id).unwrap(), 5);
}

/// Stores written before event blocks hold one `e` key per event.
#[test]
fn a_store_written_one_key_per_event_opens_with_its_events() {
    let dir = tempfile::tempdir().unwrap();
    let id = new_session_id();
    {
        let store = Store::open(dir.path()).unwrap();
        store.put_session(&record(&id)).unwrap();
        let tree = store.tree().unwrap();
        for seq in 1..=100u64 {
            let mut key = prefixed(b'e', &id);
            key.extend_from_slice(&seq.to_be_bytes());
            tree.insert(key, format!("{{\"n\":{seq}}}").as_bytes())
                .unwrap();
        }
        store.flush_blocking().unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.last_seq(&id).unwrap(), 100);
    let got = store.events(&id, 40, 70).unwrap();
    assert_eq!(got.len(), 30);
    assert_eq!(got[0].1.get(), "{\"n\":41}");
    assert_eq!(store.tree().unwrap().scan_prefix(b"e").count(), 0);
    assert_eq!(store.tree().unwrap().scan_prefix(b"E").count(), 0);
    assert!(dir.path().join("events").join(&id).exists());
}

/// Stores written with event blocks in sled (session 12's layout),
/// killed after a step went into a block and before the log was cut:
/// the replay appends that step to the new event file first, then the
/// blocks move in, each seq once. Blocks overlap after such a crash.
#[test]
fn a_store_with_event_blocks_in_sled_opens_with_its_events() {
    let dir = tempfile::tempdir().unwrap();
    let id = new_session_id();
    let other = new_session_id();
    let event = |seq: u64| format!("{{\"n\":{seq}}}");
    {
        let store = Store::open(dir.path()).unwrap();
        store.put_session(&record(&id)).unwrap();
        let tree = store.tree().unwrap();
        let block = |first: u64, last: u64| {
            let events: Vec<(u64, String)> = (first..=last).map(|s| (s, event(s))).collect();
            entry::encode(events.iter().map(|(s, e)| (*s, e.as_bytes())))
        };
        // Blocks 1..=4 and 5..=9, and a replayed block 8..=9 over them.
        tree.insert(migrate::block_key(&id, 1), block(1, 4))
            .unwrap();
        tree.insert(migrate::block_key(&id, 5), block(5, 9))
            .unwrap();
        tree.insert(migrate::block_key(&id, 8), block(8, 9))
            .unwrap();
        tree.insert(migrate::block_key(&other, 1), block(1, 2))
            .unwrap();
        store.flush_blocking().unwrap();
    }
    // What the log's replay appends when the store opens, before the
    // blocks move: step 9..=11.
    {
        let files = EventFiles::open(dir.path()).unwrap();
        let step: Vec<(u64, String)> = (9..=11).map(|s| (s, event(s))).collect();
        let refs: Vec<(u64, &[u8])> = step.iter().map(|(s, e)| (*s, e.as_bytes())).collect();
        files.append(&id, &refs).unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.last_seq(&id).unwrap(), 11);
    assert_eq!(seqs(&store, &id), (1..=11).collect::<Vec<_>>());
    let got = store.events(&id, 6, 8).unwrap();
    assert_eq!(got[0].1.get(), event(7));
    assert_eq!(seqs(&store, &other), [1, 2]);
    assert_eq!(store.tree().unwrap().scan_prefix(b"E").count(), 0);
}

#[test]
fn a_delete_comes_after_the_sessions_queued_steps() {
    let dir = tempfile::tempdir().unwrap();
    let id = new_session_id();
    let store = Store::open(dir.path()).unwrap();
    store.put_session(&record(&id)).unwrap();
    for seq in 1..=300 {
        let mut append = Append {
            events: vec![Published::new(seq, raw(&format!("{{\"n\":{seq}}}")))],
            ..Append::default()
        };
        let logged = store.log(&id, &mut append).unwrap();
        store.apply_later(logged).unwrap();
    }
    store.delete_session(&id).unwrap();
    store.settle().unwrap();
    assert!(
        !dir.path().join("events").join(&id).exists(),
        "events applied after the delete"
    );
    assert_eq!(store.last_seq(&id).unwrap(), 0);
    assert!(store.get_session(&id).unwrap().is_none());
}

#[test]
fn large_events_are_stored_out_of_line_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let id = new_session_id();
    let big = format!("{{\"text\":\"{}\"}}", "x".repeat(INLINE_MAX + 10));
    {
        let store = Store::open(dir.path()).unwrap();
        let append = Append {
            events: vec![
                Published::new(1, raw("{\"small\":1}")),
                Published::new(2, raw(&big)),
                Published::new(3, raw("{\"small\":3}")),
            ],
            ..Append::default()
        };
        store.commit(&id, &append).unwrap();
        let got = store.events(&id, 0, 3).unwrap();
        assert_eq!(got[1].1.get(), big);
        // The large event went to the blob file; the event file holds
        // a marker.
        let blob = dir.path().join("blobs").join(&id);
        assert_eq!(std::fs::metadata(&blob).unwrap().len(), big.len() as u64);
        let mut stored = Vec::new();
        store
            .files
            .read(&id, 0, 3, |_, bytes| {
                stored.push(bytes.len());
                Ok(())
            })
            .unwrap();
        assert_eq!(stored.len(), 3);
        assert!(
            stored[1] < 64,
            "the event file holds a marker, not {} bytes",
            stored[1]
        );
    }
    let store = Store::open(dir.path()).unwrap();
    let got = store.events(&id, 0, 3).unwrap();
    let texts: Vec<&str> = got.iter().map(|(_, j)| j.get()).collect();
    assert_eq!(texts, vec!["{\"small\":1}", big.as_str(), "{\"small\":3}"]);
    store.delete_session(&id).unwrap();
    assert!(!dir.path().join("blobs").join(&id).exists());
}

/// A kill -9 after a delete and before the next checkpoint leaves the
/// session's steps in the log: the replay must not bring it back.
#[test]
fn a_deleted_session_stays_deleted_when_the_log_is_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let id = new_session_id();
    let kept = new_session_id();
    {
        let store = Store::open(dir.path()).unwrap();
        for session in [&id, &kept] {
            let append = Append {
                events: vec![Published::new(1, raw("{}"))],
                open_calls: vec![("call-1".into(), Some(b"[]".to_vec()))],
                record: Some(record(session)),
                prompts: vec![("turn-1".into(), Some(b"{}".to_vec()))],
                ..Append::default()
            };
            store.commit(session, &append).unwrap();
        }
        store.delete_session(&id).unwrap();
        store.flush_blocking().unwrap();
        assert!(store.get_session(&id).unwrap().is_none());
        // No checkpoint: the log keeps every line.
    }
    let store = Store::open(dir.path()).unwrap();
    assert!(store.get_session(&id).unwrap().is_none(), "came back");
    assert_eq!(store.last_seq(&id).unwrap(), 0);
    assert!(store.open_calls(&id).unwrap().is_empty());
    assert!(store.pending_prompts(&id).unwrap().is_empty());
    assert!(!dir.path().join("events").join(&id).exists());
    assert_eq!(
        store.sessions_with_pending_prompts().unwrap(),
        std::slice::from_ref(&kept)
    );
    assert!(store.get_session(&kept).unwrap().is_some());
    assert_eq!(store.last_seq(&kept).unwrap(), 1);
}

/// A checkpoint cuts the log only once what it covered is durable,
/// the event files included.
#[test]
fn a_checkpoint_syncs_the_event_files_before_it_cuts_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = new_session_id();
    let append = Append {
        events: vec![Published::new(1, raw("{}"))],
        ..Append::default()
    };
    store.commit(&id, &append).unwrap();
    assert_eq!(store.files.unsynced(), 1);
    assert_eq!(store.checkpoint().unwrap(), Checkpoint::Done);
    assert_eq!(store.files.unsynced(), 0);
}

#[test]
fn malformed_ids_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    assert!(matches!(
        store.last_seq("../x"),
        Err(StoreError::BadSessionId(_))
    ));
}
