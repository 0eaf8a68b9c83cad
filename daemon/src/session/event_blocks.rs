//! The entry codec of event files, and the move of events out of sled.
//!
//! An entry is `seq (u64 BE) | length (u64 BE) | bytes`; a run of them is
//! what `event_files.rs` appends in one write.
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
//! When a store opens, after the write-ahead log's replay: [`migrate`]
//! turns `e` keys into blocks, and [`move_to_files`] moves the blocks into
//! the event files.

use super::store::{SESSION_ID_LEN, StoreError, prefixed};

/// Tag of an event block's key.
const BLOCK: u8 = b'E';
/// Tag of a pre-block event key: `e` + session id + seq.
const OLD_EVENT: u8 = b'e';
/// Events per block made from old keys.
const MIGRATED_BLOCK: usize = 64;
const HEADER: usize = 8 + 8;

/// The key of the block whose first event is `first`.
pub(super) fn key(id: &str, first: u64) -> Vec<u8> {
    let mut key = prefix(id);
    key.extend_from_slice(&first.to_be_bytes());
    key
}

/// The prefix of every block of the session.
pub(super) fn prefix(id: &str) -> Vec<u8> {
    prefixed(BLOCK, id)
}

/// Encodes `entries` (in seq order) as one block.
pub(super) fn encode<'a>(entries: impl IntoIterator<Item = (u64, &'a [u8])>) -> Vec<u8> {
    let mut out = Vec::new();
    for (seq, bytes) in entries {
        out.extend_from_slice(&seq.to_be_bytes());
        out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
        out.extend_from_slice(bytes);
    }
    out
}

/// The entries of a block, in order. A block that does not parse is
/// reported as corrupt, under `what` (its session and first seq).
pub(super) fn entries<'a>(
    block: &'a [u8],
    what: impl Fn() -> String + 'a,
) -> impl Iterator<Item = Result<(u64, &'a [u8]), StoreError>> + 'a {
    let mut rest = block;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let Some((seq, len)) = rest
            .get(..HEADER)
            .map(|h| (be_u64(&h[..8]), be_u64(&h[8..])))
        else {
            rest = &[];
            return Some(Err(corrupt(what(), "an event block ends inside a header")));
        };
        let end = usize::try_from(len)
            .ok()
            .and_then(|len| len.checked_add(HEADER));
        let Some(bytes) = end.and_then(|end| rest.get(HEADER..end)) else {
            rest = &[];
            return Some(Err(corrupt(what(), "an event block ends inside an event")));
        };
        rest = &rest[HEADER + bytes.len()..];
        Some(Ok((seq, bytes)))
    })
}

/// The session's last block that starts at or before `seq`: the one that
/// holds `seq`, if any does.
fn at_or_before(
    tree: &sled::Tree,
    id: &str,
    seq: u64,
) -> Result<Option<(sled::IVec, sled::IVec)>, StoreError> {
    Ok(tree
        .range(key(id, 0)..=key(id, seq))
        .next_back()
        .transpose()?)
}

/// Whether some block of the session holds `seq`.
fn holds(tree: &sled::Tree, id: &str, seq: u64) -> Result<bool, StoreError> {
    let Some((block_key, block)) = at_or_before(tree, id, seq)? else {
        return Ok(false);
    };
    for entry in entries(&block, || describe(&block_key)) {
        if entry?.0 == seq {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Turns the pre-block `e` keys of every session into blocks of up to
/// [`MIGRATED_BLOCK`] events, one sled batch per session (so a crash
/// leaves each session either migrated or not, and the next open goes
/// on). Returns how many events moved.
///
/// Runs after the write-ahead log's replay, which writes blocks: an old
/// daemon killed in the middle of applying a step left part of its events
/// as `e` keys, and the replay wrote the whole step as a block. Such
/// events are dropped here, and a block made here ends before any seq a
/// block already holds, so blocks never overlap.
pub(super) fn migrate(tree: &sled::Tree) -> Result<usize, StoreError> {
    let mut moved = 0;
    while let Some(first) = tree.scan_prefix([OLD_EVENT]).keys().next().transpose()? {
        let id_bytes = first
            .get(1..1 + SESSION_ID_LEN)
            .ok_or_else(|| corrupt(describe(&first), "an event key is too short"))?;
        let id = std::str::from_utf8(id_bytes)
            .map_err(|_| corrupt(describe(&first), "an event key names no session"))?
            .to_owned();
        let old_prefix = prefixed(OLD_EVENT, &id);
        let mut batch = sled::Batch::default();
        let mut block: Vec<(u64, sled::IVec)> = Vec::new();
        let end_block = |block: &mut Vec<(u64, sled::IVec)>, batch: &mut sled::Batch| {
            if let Some((first, _)) = block.first() {
                let value = encode(block.iter().map(|(seq, v)| (*seq, v.as_ref())));
                batch.insert(key(&id, *first), value);
                block.clear();
            }
        };
        for item in tree.scan_prefix(&old_prefix) {
            let (old_key, value) = item?;
            batch.remove(old_key.clone());
            let seq = seq_of(&old_key);
            if holds(tree, &id, seq)? {
                end_block(&mut block, &mut batch);
                continue;
            }
            moved += 1;
            block.push((seq, value));
            if block.len() == MIGRATED_BLOCK {
                end_block(&mut block, &mut batch);
            }
        }
        end_block(&mut block, &mut batch);
        tree.apply_batch(batch)?;
    }
    Ok(moved)
}

/// Moves every session's blocks into its event file (`event_files.rs`),
/// then removes them, one sled batch per session. Returns how many events
/// moved. Runs after the write-ahead log's replay, which appends to the
/// files: the file and the blocks may then share seqs, each kept once.
pub(super) fn move_to_files(
    tree: &sled::Tree,
    files: &super::event_files::EventFiles,
) -> Result<usize, StoreError> {
    let mut moved = 0;
    while let Some(first) = tree.scan_prefix([BLOCK]).keys().next().transpose()? {
        let id_bytes = first
            .get(1..1 + SESSION_ID_LEN)
            .ok_or_else(|| corrupt(describe(&first), "an event block key is too short"))?;
        let id = std::str::from_utf8(id_bytes)
            .map_err(|_| corrupt(describe(&first), "an event block key names no session"))?
            .to_owned();
        let mut batch = sled::Batch::default();
        let mut blocks = Vec::new();
        for item in tree.scan_prefix(prefix(&id)) {
            let (block_key, block) = item?;
            batch.remove(block_key.clone());
            blocks.push((block_key, block));
        }
        // Blocks can overlap after a crash; a seq always stands for the
        // same event, so one passed is skipped.
        let mut events: Vec<(u64, &[u8])> = Vec::new();
        for (block_key, block) in &blocks {
            for entry in entries(block, || describe(block_key)) {
                let (seq, bytes) = entry?;
                if events.last().is_none_or(|(last, _)| seq > *last) {
                    events.push((seq, bytes));
                }
            }
        }
        files.absorb(&id, &events)?;
        moved += events.len();
        tree.apply_batch(batch)?;
    }
    Ok(moved)
}

/// The seq (or index) at the end of a key.
pub(super) fn seq_of(key: &[u8]) -> u64 {
    be_u64(key)
}

/// The last (up to) eight bytes as a big-endian number.
pub(super) fn be_u64(bytes: &[u8]) -> u64 {
    let mut out = [0u8; 8];
    let bytes = &bytes[bytes.len().saturating_sub(8)..];
    out[8 - bytes.len()..].copy_from_slice(bytes);
    u64::from_be_bytes(out)
}

/// A key as session id and seq, for errors.
pub(super) fn describe(key: &[u8]) -> String {
    let id = key.get(1..1 + SESSION_ID_LEN).unwrap_or_default();
    format!("{}/{}", String::from_utf8_lossy(id), seq_of(key))
}

fn corrupt(key: String, why: &'static str) -> StoreError {
    StoreError::Corrupt {
        key,
        source: serde::de::Error::custom(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0123456789abcdef0123456789abcdef";

    fn old_key(seq: u64) -> Vec<u8> {
        let mut k = prefixed(OLD_EVENT, ID);
        k.extend_from_slice(&seq.to_be_bytes());
        k
    }

    fn temp_tree() -> (tempfile::TempDir, sled::Tree) {
        let dir = tempfile::tempdir().unwrap();
        let tree = sled::Config::new()
            .path(dir.path())
            .open()
            .unwrap()
            .open_tree("t")
            .unwrap();
        (dir, tree)
    }

    /// Every stored entry: its block's first seq, its seq, its bytes.
    fn all(tree: &sled::Tree) -> Vec<(u64, u64, Vec<u8>)> {
        tree.scan_prefix(prefix(ID))
            .flat_map(|item| {
                let (k, v) = item.unwrap();
                let first = seq_of(&k);
                entries(&v, String::new)
                    .map(|e| {
                        let (seq, bytes) = e.unwrap();
                        (first, seq, bytes.to_vec())
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
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

    #[test]
    fn old_event_keys_become_blocks() {
        let (_dir, tree) = temp_tree();
        for seq in 1..=150u64 {
            tree.insert(old_key(seq), format!("{{\"n\":{seq}}}").as_bytes())
                .unwrap();
        }
        assert_eq!(migrate(&tree).unwrap(), 150);
        assert_eq!(tree.scan_prefix([OLD_EVENT]).count(), 0);
        let got = all(&tree);
        assert_eq!(got.len(), 150);
        for (i, (_, seq, bytes)) in got.iter().enumerate() {
            let n = i as u64 + 1;
            assert_eq!(*seq, n);
            assert_eq!(bytes, format!("{{\"n\":{n}}}").as_bytes());
        }
        // Blocks of 64: keyed 1, 65 and 129.
        let firsts: Vec<u64> = tree
            .scan_prefix(prefix(ID))
            .keys()
            .map(|k| seq_of(&k.unwrap()))
            .collect();
        assert_eq!(firsts, [1, 65, 129]);
        // Nothing left to do the second time.
        assert_eq!(migrate(&tree).unwrap(), 0);
    }

    /// An old daemon killed while applying step 10..=14 left 10..=12 as
    /// keys; the replay wrote the step as a block. No seq may come twice.
    #[test]
    fn events_a_replayed_block_holds_are_dropped_not_doubled() {
        let (_dir, tree) = temp_tree();
        for seq in 1..=12u64 {
            tree.insert(old_key(seq), &b"{}"[..]).unwrap();
        }
        let step: Vec<(u64, &[u8])> = (10..=14).map(|s| (s, &b"{}"[..])).collect();
        tree.insert(key(ID, 10), encode(step)).unwrap();
        assert_eq!(migrate(&tree).unwrap(), 9);
        let got = all(&tree);
        let seqs: Vec<u64> = got.iter().map(|(_, s, _)| *s).collect();
        assert_eq!(seqs, (1..=14).collect::<Vec<_>>());
        let firsts: Vec<u64> = got.iter().map(|(f, _, _)| *f).collect();
        assert_eq!(firsts, [[1; 9].as_slice(), &[10; 5]].concat());
    }
}
