//! The move of events out of sled, for stores an older daemon wrote.
//!
//! Earlier stores kept events in sled. The first layout had one key per
//! event (`e` + session id + seq). sled 0.34 splits a leaf once it holds
//! more than 16 entries, so with about three events per tool call it split
//! a leaf every few calls, and every split leaves a page in sled's page
//! table for as long as the database is open. The second layout had one
//! key per block of steps (`E` + session id + the block's first seq, value
//! a run of entries): fewer splits, but sled's nodes and pages still grew
//! with the events and stayed resident after the sessions were deleted
//! (BENCHMARKS.md, sessions 10 to 13). Blocks could overlap after a crash
//! (the log replays steps one by one, over a block that held several), and
//! a seq always stands for the same event.
//!
//! When a store opens, after the write-ahead log's replay,
//! [`move_to_files`] moves both kinds of keys into the event files.

use std::collections::BTreeMap;

use super::entry::{corrupt, entries};
use super::event_files::EventFiles;
use super::types::{SESSION_ID_LEN, StoreError, prefixed, seq_of};

/// Tag of an event block's key: `E` + session id + first seq.
const BLOCK: u8 = b'E';
/// Tag of a key of one event: `e` + session id + seq.
const OLD_EVENT: u8 = b'e';

/// The sled key of a block whose first event is `first`, as stores of
/// the block layout wrote it.
#[cfg(test)]
pub(super) fn block_key(id: &str, first: u64) -> Vec<u8> {
    let mut key = prefixed(BLOCK, id);
    key.extend_from_slice(&first.to_be_bytes());
    key
}

/// Moves the events a store kept in sled (either layout) into each
/// session's event file (`event_files.rs`), then removes their keys, one
/// sled batch per session. Returns how many events moved.
///
/// Runs after the write-ahead log's replay, which appends to the files:
/// a daemon killed after a step reached sled and before the log was cut
/// leaves the step in both. Keys of both layouts can also hold the same
/// seq (an old daemon killed mid-step, then replayed into blocks), and
/// blocks can overlap (a merged block, then the replay's one-step block).
/// A seq always stands for the same event, so each is kept once. A crash
/// in the middle leaves the keys in place, and the next open moves them
/// again into the same file.
pub(super) fn move_to_files(tree: &sled::Tree, files: &EventFiles) -> Result<usize, StoreError> {
    let mut moved = 0;
    while let Some(id) = next_session(tree)? {
        let mut batch = sled::Batch::default();
        let mut events: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
        for item in tree.scan_prefix(prefixed(OLD_EVENT, &id)) {
            let (key, event) = item?;
            events.entry(seq_of(&key)).or_insert_with(|| event.to_vec());
            batch.remove(key);
        }
        for item in tree.scan_prefix(prefixed(BLOCK, &id)) {
            let (key, block) = item?;
            for entry in entries(&block, || describe(&key)) {
                let (seq, event) = entry?;
                events.entry(seq).or_insert_with(|| event.to_vec());
            }
            batch.remove(key);
        }
        let events: Vec<(u64, &[u8])> = events.iter().map(|(s, e)| (*s, e.as_slice())).collect();
        files.absorb(&id, &events)?;
        moved += events.len();
        tree.apply_batch(batch)?;
    }
    Ok(moved)
}

/// The session of the first event key left in sled, of either layout.
fn next_session(tree: &sled::Tree) -> Result<Option<String>, StoreError> {
    for tag in [OLD_EVENT, BLOCK] {
        if let Some(key) = tree.scan_prefix([tag]).keys().next().transpose()? {
            let id = key
                .get(1..1 + SESSION_ID_LEN)
                .and_then(|id| std::str::from_utf8(id).ok())
                .filter(|id| id.bytes().all(|b| b.is_ascii_hexdigit()))
                .ok_or_else(|| corrupt(describe(&key), "an event key names no session"))?;
            return Ok(Some(id.to_owned()));
        }
    }
    Ok(None)
}

/// A key as session id and seq, for errors.
fn describe(key: &[u8]) -> String {
    let id = key.get(1..1 + SESSION_ID_LEN).unwrap_or_default();
    format!("{}/{}", String::from_utf8_lossy(id), seq_of(key))
}

#[cfg(test)]
mod tests {
    use super::super::entry::encode;
    use super::*;

    const ID: &str = "0123456789abcdef0123456789abcdef";

    fn old_key(id: &str, seq: u64) -> Vec<u8> {
        let mut k = prefixed(OLD_EVENT, id);
        k.extend_from_slice(&seq.to_be_bytes());
        k
    }

    /// A sled tree and event files in a fresh directory.
    fn temp_store() -> (tempfile::TempDir, sled::Tree, EventFiles) {
        let dir = tempfile::tempdir().unwrap();
        let tree = sled::Config::new()
            .path(dir.path().join("db"))
            .open()
            .unwrap()
            .open_tree("t")
            .unwrap();
        let files = EventFiles::open(dir.path()).unwrap();
        (dir, tree, files)
    }

    fn event(seq: u64) -> Vec<u8> {
        format!("{{\"n\":{seq}}}").into_bytes()
    }

    fn block(seqs: std::ops::RangeInclusive<u64>) -> Vec<u8> {
        let events: Vec<(u64, Vec<u8>)> = seqs.map(|s| (s, event(s))).collect();
        encode(events.iter().map(|(s, e)| (*s, e.as_slice())))
    }

    #[test]
    fn a_block_reads_back_its_entries() {
        let big = vec![b'x'; 70_000];
        let block = encode([(7, &b"{}"[..]), (8, &big[..]), (9, &b""[..])]);
        let got: Vec<(u64, usize)> = entries(&block, String::new)
            .map(|e| e.map(|(s, b)| (s, b.len())).unwrap())
            .collect();
        assert_eq!(got, [(7, 2), (8, 70_000), (9, 0)]);
    }

    #[test]
    fn a_cut_block_is_reported_corrupt() {
        let block = encode([(1, &b"{\"a\":1}"[..]), (2, &b"{}"[..])]);
        for cut in [3, 17, block.len() - 1] {
            let read: Result<Vec<_>, _> = entries(&block[..cut], || "s/1".to_owned()).collect();
            let err = read.unwrap_err();
            assert!(
                matches!(&err, StoreError::Corrupt { key, .. } if key == "s/1"),
                "{err}"
            );
        }
    }

    /// Every way a crash leaves one seq in two places, at once: one key
    /// per event (1..=12), a block over part of them (10..=14), a block
    /// overlapping it (13..=20), and the replay's append to the file
    /// (19..=22). Each seq comes out once, with its bytes.
    #[test]
    fn events_of_both_layouts_move_to_the_file_each_seq_once() {
        let (_dir, tree, files) = temp_store();
        for seq in 1..=12u64 {
            tree.insert(old_key(ID, seq), event(seq)).unwrap();
        }
        tree.insert(block_key(ID, 10), block(10..=14)).unwrap();
        tree.insert(block_key(ID, 13), block(13..=20)).unwrap();
        let replayed: Vec<(u64, Vec<u8>)> = (19..=22).map(|s| (s, event(s))).collect();
        let refs: Vec<(u64, &[u8])> = replayed.iter().map(|(s, e)| (*s, e.as_slice())).collect();
        files.append(ID, &refs).unwrap();

        assert_eq!(move_to_files(&tree, &files).unwrap(), 20);
        assert_eq!(tree.len(), 0, "no event key is left in sled");
        let mut got = Vec::new();
        files
            .read(ID, 0, u64::MAX, |seq, bytes| {
                got.push((seq, bytes.to_vec()));
                Ok(())
            })
            .unwrap();
        let want: Vec<(u64, Vec<u8>)> = (1..=22).map(|s| (s, event(s))).collect();
        assert_eq!(got, want);
        assert_eq!(move_to_files(&tree, &files).unwrap(), 0);
    }

    #[test]
    fn an_event_key_that_names_no_session_is_reported() {
        let (_dir, tree, files) = temp_store();
        tree.insert(b"e../../etc/passwd", &b"{}"[..]).unwrap();
        let err = move_to_files(&tree, &files).unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    }
}
