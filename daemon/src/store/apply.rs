//! One logged step written to sled and the session's event file, key by
//! key, in an order where even a prefix of it is sensible.

use super::blobs::Blobs;
use super::event_files::EventFiles;
use super::types::{Append, StoreError, check_id, prefixed, record_key};

/// Removes the session's keys, event file and blob file.
fn remove(
    tree: &sled::Tree,
    files: &EventFiles,
    blobs: &Blobs,
    id: &str,
) -> Result<(), StoreError> {
    let mut batch = sled::Batch::default();
    batch.remove(record_key(id));
    for prefix in [b'o', b'h', b'q'].map(|tag| prefixed(tag, id)) {
        for key in tree.scan_prefix(prefix).keys() {
            batch.remove(key?);
        }
    }
    tree.apply_batch(batch)?;
    files.remove(id)?;
    blobs
        .remove(id)
        .map_err(|e| StoreError::Io(format!("blob file of session {id}: {e}")))
}

/// Settles the session's blob file (see `blobs.rs`) when `markers` point
/// into it, before they go into sled.
fn settle_blobs(blobs: &Blobs, id: &str, markers: &[(u64, Vec<u8>)]) -> Result<(), StoreError> {
    if markers.is_empty() {
        return Ok(());
    }
    blobs
        .settle(id)
        .map_err(|e| StoreError::Io(format!("blob file of session {id}: {e}")))
}

/// One append, key by key. Not a sled batch: each batch costs a log write
/// on sled's IO threads (about 280 µs of CPU and 20 context switches per
/// tool call), while the write-ahead log line, written before this, is
/// what makes the append atomic: its segment is not cut until this has
/// run to the end (the lease), and replay applies the line whole. So sled
/// holds a prefix of these writes only while the line is still in the log.
/// The order keeps even such a prefix sensible on its own: calls and
/// prompts are marked open before their events are written, and unmarked
/// only after them. The events go to the session's event file with one
/// write (`event_files.rs`); those stored out of line (in `markers`) as
/// their marker, once the blob file they point into is settled.
pub(super) fn apply(
    tree: &sled::Tree,
    files: &EventFiles,
    blobs: &Blobs,
    id: &str,
    append: &Append,
    markers: &[(u64, Vec<u8>)],
) -> Result<(), StoreError> {
    check_id(id)?;
    if append.deleted {
        // Whatever else it holds would go with the session.
        return remove(tree, files, blobs, id);
    }
    settle_blobs(blobs, id, markers)?;
    let open_call_key = |call_id: &str| {
        let mut key = prefixed(b'o', id);
        key.extend_from_slice(call_id.as_bytes());
        key
    };
    let prompt_key = |turn_id: &str| {
        let mut key = prefixed(b'q', id);
        key.extend_from_slice(turn_id.as_bytes());
        key
    };
    // A call opened and closed in the same append (a quick call) never
    // needs its marker: no prefix of this append leaves it executing.
    // Whether this append also opens (`true`) or closes (`false`) the call.
    let also = |call_id: &str, opens: bool| {
        append
            .open_calls
            .iter()
            .any(|(id, open)| id == call_id && open.is_some() == opens)
    };
    for (call_id, open) in &append.open_calls {
        if let Some(saved) = open
            && !also(call_id, false)
        {
            tree.insert(open_call_key(call_id), saved.as_slice())?;
        }
    }
    for (turn_id, pending) in &append.prompts {
        if let Some(saved) = pending {
            tree.insert(prompt_key(turn_id), saved.as_slice())?;
        }
    }
    if let Some(record) = &append.record {
        let value = serde_json::to_vec(record).map_err(|source| StoreError::Corrupt {
            key: id.to_owned(),
            source,
        })?;
        tree.insert(record_key(id), value)?;
    }
    for (index, content) in &append.history {
        let mut key = prefixed(b'h', id);
        key.extend_from_slice(&index.to_be_bytes());
        tree.insert(key, content.as_bytes())?;
    }
    // In seq order. (A replayed line carries out-of-line events as
    // markers only.)
    let mut events: Vec<(u64, &[u8])> = append
        .events
        .iter()
        .filter(|e| !markers.iter().any(|(seq, _)| *seq == e.seq))
        .map(|e| (e.seq, e.json.get().as_bytes()))
        .chain(
            markers
                .iter()
                .map(|(seq, marker)| (*seq, marker.as_slice())),
        )
        .collect();
    events.sort_unstable_by_key(|(seq, _)| *seq);
    files.append(id, &events)?;
    for (call_id, open) in &append.open_calls {
        if open.is_none() && !also(call_id, true) {
            tree.remove(open_call_key(call_id))?;
        }
    }
    for (turn_id, pending) in &append.prompts {
        if pending.is_none() {
            tree.remove(prompt_key(turn_id))?;
        }
    }
    Ok(())
}
