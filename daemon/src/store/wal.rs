//! The write-ahead log that makes a commit durable against a crash of the
//! daemon for the price of one `write(2)`.
//!
//! sled keeps recent writes in its own buffers until a flush, and a flush
//! (fsync, sled's IO thread pool) costs far more than a tool call should.
//! So a commit is: append the batch to this log (one write: the bytes are
//! in the kernel and survive kill -9), broadcast and answer, then apply the
//! batch to sled (in memory; `tail.rs` serves reads in between). A
//! background task flushes sled every [`CHECKPOINT_EVERY`] and deletes the
//! log segments the flush covered, once every batch in them is applied
//! (each holds a [`Lease`] on its segment until then). At start-up,
//! leftover segments are replayed into sled (appends are idempotent: the
//! same keys get the same values) before anything else.
//!
//! Against power loss, what was written in the last checkpoint interval
//! may be lost (the log is not fsynced per commit).

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::types::{Append, Published, SessionRecord, StoreError};

/// How often sled is flushed and the log cut.
pub const CHECKPOINT_EVERY: Duration = Duration::from_millis(500);
/// How long a checkpoint waits for the appends of the segment it cuts to
/// reach sled (normally microseconds: actors apply right after replying).
const APPLY_WAIT: Duration = Duration::from_secs(2);

/// A hold on the segment an append was logged to: the segment is not cut
/// until the append is in sled and the lease dropped.
#[derive(Debug)]
pub struct Lease(Option<Arc<AtomicUsize>>);

impl Lease {
    /// A lease on no segment, for tests of what holds one.
    #[cfg(test)]
    pub fn detached() -> Lease {
        Lease(None)
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(count) = &self.0 {
            count.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// How replay applies a logged batch: the session, the batch, and the
/// `(seq, marker)` of events stored out of line.
pub type Apply<'a> = dyn Fn(&str, &Append, &[(u64, Vec<u8>)]) -> Result<(), StoreError> + 'a;

/// One line of the log, as written: one session's append, borrowed.
#[derive(Serialize)]
struct LineOut<'a> {
    s: &'a str,
    e: Vec<(u64, &'a RawValue)>,
    /// Events stored out of line: `(seq, blob marker)`.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    b: &'a [(u64, Vec<u8>)],
    o: &'a [(String, Option<Vec<u8>>)],
    r: Option<&'a SessionRecord>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    h: &'a [(u64, String)],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    q: &'a [(String, Option<Vec<u8>>)],
    /// The session is deleted ([`Append::deleted`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    d: bool,
}

/// One line of the log, as read back.
#[derive(Deserialize)]
struct Line {
    s: String,
    #[serde(default)]
    e: Vec<(u64, Box<RawValue>)>,
    #[serde(default)]
    b: Vec<(u64, Vec<u8>)>,
    #[serde(default)]
    o: Vec<(String, Option<Vec<u8>>)>,
    #[serde(default)]
    r: Option<SessionRecord>,
    #[serde(default)]
    h: Vec<(u64, String)>,
    #[serde(default)]
    q: Vec<(String, Option<Vec<u8>>)>,
    #[serde(default)]
    d: bool,
}

struct Segment {
    file: File,
    number: u64,
    /// Bytes written to this segment.
    len: u64,
    /// Appends logged here and not yet applied to sled.
    unapplied: Arc<AtomicUsize>,
}

/// A segment cut by a checkpoint whose appends were not all in sled yet.
struct Cut {
    number: u64,
    unapplied: Arc<AtomicUsize>,
}

/// What a checkpoint did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checkpoint {
    /// Everything logged before it is in sled and flushed; the segments it
    /// covered are deleted.
    Done,
    /// Appends were still on their way to sled when the wait ran out (the
    /// apply thread is behind, as under heavy load). Their segments stay
    /// on disk, and a later checkpoint deletes them once they are applied.
    Behind { unapplied: usize },
}

/// The log: numbered segments `wal.<n>` in the store's directory.
pub struct Wal {
    dir: PathBuf,
    current: Mutex<Segment>,
    /// Cut segments left by checkpoints that found the apply thread behind.
    behind: Mutex<Vec<Cut>>,
}

impl Wal {
    /// Replays leftover segments through `apply`, makes them durable with
    /// `flush`, removes them, and opens a fresh segment. Returns the log and
    /// how many batches were replayed.
    pub fn open(
        dir: &Path,
        apply: &Apply<'_>,
        flush: &dyn Fn() -> Result<(), StoreError>,
    ) -> Result<(Wal, usize), StoreError> {
        let io = |e: std::io::Error| StoreError::Io(format!("{}: {e}", dir.display()));
        let mut segments = segments(dir).map_err(io)?;
        segments.sort();
        let mut replayed = 0;
        for (_, path) in &segments {
            replayed += replay(path, apply)?;
        }
        flush()?;
        for (_, path) in &segments {
            std::fs::remove_file(path).map_err(io)?;
        }
        let number = segments.last().map(|(n, _)| n + 1).unwrap_or(1);
        let segment = open_segment(dir, number).map_err(io)?;
        Ok((
            Wal {
                dir: dir.to_path_buf(),
                current: Mutex::new(segment),
                behind: Mutex::new(Vec::new()),
            },
            replayed,
        ))
    }

    /// Appends one session's batch with a single write, and returns the
    /// lease that keeps the segment until the batch is applied to sled.
    /// Events whose seq is in `markers` are logged as their blob marker
    /// (the blob itself is already written).
    pub fn append(
        &self,
        session: &str,
        append: &Append,
        markers: &[(u64, Vec<u8>)],
    ) -> Result<Lease, StoreError> {
        let line = LineOut {
            s: session,
            e: append
                .events
                .iter()
                .filter(|e| !markers.iter().any(|(seq, _)| *seq == e.seq))
                .map(|e| (e.seq, &*e.json))
                .collect(),
            b: markers,
            o: &append.open_calls,
            r: append.record.as_ref(),
            h: &append.history,
            q: &append.prompts,
            d: append.deleted,
        };
        let mut bytes = serde_json::to_vec(&line)
            .map_err(|e| StoreError::Io(format!("write-ahead log: {e}")))?;
        bytes.push(b'\n');
        let mut segment = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let written = segment
            .file
            .write_all(&bytes)
            .map_err(|e| format!("write-ahead log: {e}"))
            .and_then(|()| still_reachable(&self.dir, &segment));
        if let Err(e) = written {
            // A torn line would swallow the next good one at replay: cut
            // the segment back to its last whole line.
            let _ = segment.file.set_len(segment.len);
            return Err(StoreError::Io(e));
        }
        segment.len += bytes.len() as u64;
        segment.unapplied.fetch_add(1, Ordering::AcqRel);
        Ok(Lease(Some(segment.unapplied.clone())))
    }

    /// Replays every segment (the current one included) through `apply`
    /// and makes it durable with `flush`, then deletes the segments before
    /// the current one: for a store reopened after a write failure.
    pub fn recover(
        &self,
        apply: &Apply<'_>,
        flush: &dyn Fn() -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let io = |e: std::io::Error| StoreError::Io(format!("{}: {e}", self.dir.display()));
        let current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let mut all = segments(&self.dir).map_err(io)?;
        all.sort();
        for (_, path) in &all {
            replay(path, apply)?;
        }
        flush()?;
        for (number, path) in &all {
            if *number < current.number {
                std::fs::remove_file(path).map_err(io)?;
            }
        }
        self.behind
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        Ok(())
    }

    /// Makes everything logged so far durable in sled and deletes the log
    /// it no longer needs. Safe to run while sessions keep appending: the
    /// segment is swapped first, then the checkpoint waits until every batch
    /// logged to it (and to segments earlier checkpoints left behind) is
    /// applied to sled, then flushes and deletes them. When that takes
    /// longer than [`APPLY_WAIT`], the segments stay for a later checkpoint
    /// ([`Checkpoint::Behind`]); a restart replays them.
    pub fn checkpoint(
        &self,
        flush: &dyn Fn() -> Result<(), StoreError>,
    ) -> Result<Checkpoint, StoreError> {
        // Taken out, not held: `flush` may recover the store, which clears
        // the list itself.
        let mut cuts = std::mem::take(&mut *self.behind.lock().unwrap_or_else(|e| e.into_inner()));
        {
            let mut segment = self.current.lock().unwrap_or_else(|e| e.into_inner());
            if segment.len > 0 {
                let next = match open_segment(&self.dir, segment.number + 1) {
                    Ok(next) => next,
                    Err(e) => {
                        drop(segment);
                        self.keep(cuts);
                        return Err(StoreError::Io(format!("write-ahead log: {e}")));
                    }
                };
                let old = std::mem::replace(&mut *segment, next);
                cuts.push(Cut {
                    number: old.number,
                    unapplied: old.unapplied,
                });
            }
        }
        if cuts.is_empty() {
            return Ok(Checkpoint::Done);
        }
        let deadline = Instant::now() + APPLY_WAIT;
        loop {
            let left: usize = cuts
                .iter()
                .map(|c| c.unapplied.load(Ordering::Acquire))
                .sum();
            if left == 0 {
                break;
            }
            if Instant::now() >= deadline {
                self.keep(cuts);
                return Ok(Checkpoint::Behind { unapplied: left });
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        if let Err(e) = flush() {
            self.keep(cuts);
            return Err(e);
        }
        let mut failed = None;
        for cut in cuts {
            let path = segment_path(&self.dir, cut.number);
            match std::fs::remove_file(&path) {
                // A recovery during the flush deleted it already.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => failed = Some(StoreError::Io(format!("{}: {e}", path.display()))),
                Ok(()) => {}
            }
        }
        failed.map_or(Ok(Checkpoint::Done), Err)
    }

    /// Puts cut segments back for the next checkpoint.
    fn keep(&self, cuts: Vec<Cut>) {
        let mut behind = self.behind.lock().unwrap_or_else(|e| e.into_inner());
        behind.extend(cuts);
        behind.sort_by_key(|c| c.number);
    }
}

/// Whether the segment written to is still the file its path names: a
/// line written to a segment that was deleted (the data directory removed
/// while the daemon runs) or replaced would be lost at the next start, so
/// it must not be acknowledged.
fn still_reachable(dir: &Path, segment: &Segment) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let path = segment_path(dir, segment.number);
    let open = segment
        .file
        .metadata()
        .map_err(|e| format!("write-ahead log: {e}"))?;
    let named = std::fs::symlink_metadata(&path).map_err(|e| {
        format!(
            "the write-ahead log {} is gone ({e}): was the data directory removed? \
             Nothing more is acknowledged; restart the daemon",
            path.display()
        )
    })?;
    if open.nlink() == 0 || (open.dev(), open.ino()) != (named.dev(), named.ino()) {
        return Err(format!(
            "the write-ahead log {} was replaced: was the data directory removed? \
             Nothing more is acknowledged; restart the daemon",
            path.display()
        ));
    }
    Ok(())
}

fn segment_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("wal.{number:010}"))
}

fn open_segment(dir: &Path, number: u64) -> std::io::Result<Segment> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(segment_path(dir, number))?;
    Ok(Segment {
        file,
        number,
        len: 0,
        unapplied: Arc::new(AtomicUsize::new(0)),
    })
}

fn segments(dir: &Path) -> std::io::Result<Vec<(u64, PathBuf)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let number = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("wal."))
            .and_then(|n| n.parse::<u64>().ok());
        if let Some(number) = number {
            out.push((number, path));
        }
    }
    Ok(out)
}

/// Applies every complete line of a segment. A torn last line (the daemon
/// died inside a write) was never acknowledged to anyone and is skipped.
fn replay(path: &Path, apply: &Apply<'_>) -> Result<usize, StoreError> {
    let file = File::open(path).map_err(|e| StoreError::Io(format!("{}: {e}", path.display())))?;
    let mut count = 0;
    for line in BufReader::new(file).split(b'\n') {
        let line = line.map_err(|e| StoreError::Io(format!("{}: {e}", path.display())))?;
        let Ok(parsed) = serde_json::from_slice::<Line>(&line) else {
            tracing::warn!(segment = %path.display(), "skipping a torn write-ahead log line");
            continue;
        };
        apply(
            &parsed.s,
            &Append {
                events: parsed
                    .e
                    .into_iter()
                    .map(|(seq, json)| Published::new(seq, json))
                    .collect(),
                open_calls: parsed.o,
                record: parsed.r,
                history: parsed.h,
                prompts: parsed.q,
                deleted: parsed.d,
            },
            &parsed.b,
        )?;
        count += 1;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Store, new_session_id};

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    /// A fresh store with one append logged and not yet applied: event 1
    /// (`json`) and `open_calls`.
    fn one_logged(
        json: &str,
        open_calls: Vec<(String, Option<Vec<u8>>)>,
    ) -> (tempfile::TempDir, String, Store, crate::store::tail::Logged) {
        let dir = tempfile::tempdir().unwrap();
        let id = new_session_id();
        let store = Store::open(dir.path()).unwrap();
        let append = Append {
            events: vec![Published::new(1, raw(json))],
            open_calls,
            ..Append::default()
        };
        let logged = store.log(&id, &mut { append }).unwrap();
        (dir, id, store, logged)
    }

    #[test]
    fn logged_batches_survive_without_a_sled_flush() {
        let dir = tempfile::tempdir().unwrap();
        let id = new_session_id();
        {
            // Log only, as if sled had lost its unflushed buffers in a crash.
            let (wal, _) = Wal::open(dir.path(), &|_, _, _| Ok(()), &|| Ok(())).unwrap();
            for seq in 1..=3 {
                let append = Append {
                    events: vec![Published::new(seq, raw(&format!("{{\"n\":{seq}}}")))],
                    open_calls: vec![(format!("call-{seq}"), Some(b"x".to_vec()))],
                    ..Append::default()
                };
                wal.append(&id, &append, &[]).unwrap();
            }
            // A torn final line from a write cut short.
            let mut f = OpenOptions::new()
                .append(true)
                .open(segment_path(dir.path(), 1))
                .unwrap();
            f.write_all(b"{\"s\":\"abc\",\"e\":[[9,").unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.last_seq(&id).unwrap(), 3);
        assert_eq!(store.open_calls(&id).unwrap().len(), 3);
        assert_eq!(
            segments(dir.path()).unwrap().len(),
            1,
            "replayed segments are removed"
        );
    }

    #[test]
    fn logged_blob_markers_replay_to_the_blob() {
        let dir = tempfile::tempdir().unwrap();
        let id = new_session_id();
        let big = format!("{{\"text\":\"{}\"}}", "y".repeat(1000));
        {
            // As after a crash: the blob and the log line were written, sled
            // kept nothing.
            let blobs = crate::store::blobs::Blobs::open(dir.path()).unwrap();
            let marker = blobs.put(&id, big.as_bytes()).unwrap();
            let (wal, _) = Wal::open(dir.path(), &|_, _, _| Ok(()), &|| Ok(())).unwrap();
            let append = Append {
                events: vec![Published::new(1, raw(&big))],
                ..Append::default()
            };
            wal.append(&id, &append, &[(1, marker)]).unwrap();
            let logged = std::fs::read_to_string(segment_path(dir.path(), 1)).unwrap();
            assert!(
                logged.len() < 200,
                "the log holds the marker, not the event"
            );
        }
        let store = Store::open(dir.path()).unwrap();
        let got = store.events(&id, 0, 1).unwrap();
        assert_eq!(got[0].1.get(), big);
    }

    #[test]
    fn checkpoint_cuts_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let id = new_session_id();
        let store = Store::open(dir.path()).unwrap();
        let append = Append {
            events: vec![Published::new(1, raw("{}"))],
            ..Append::default()
        };
        store.commit(&id, &append).unwrap();
        assert_eq!(segments(dir.path()).unwrap().len(), 1);
        store.checkpoint().unwrap();
        let left = segments(dir.path()).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(
            std::fs::metadata(&left[0].1).unwrap().len(),
            0,
            "a fresh, empty segment"
        );
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.last_seq(&id).unwrap(), 1);
    }

    #[test]
    fn a_checkpoint_waits_for_logged_appends_to_reach_sled() {
        let (dir, id, store, mut logged) = one_logged("{\"n\":1}", Vec::new());
        // Served from the tail before sled has it.
        assert_eq!(store.last_seq(&id).unwrap(), 1);
        assert_eq!(store.events(&id, 0, 1).unwrap()[0].1.get(), "{\"n\":1}");
        let checkpointing = {
            let store = store.clone();
            std::thread::spawn(move || store.checkpoint())
        };
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !checkpointing.is_finished(),
            "the segment must not be cut before its append is in sled"
        );
        store.apply_logged(&mut logged).unwrap();
        checkpointing.join().unwrap().unwrap();
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.events(&id, 0, 1).unwrap()[0].1.get(), "{\"n\":1}");
    }

    #[test]
    fn a_segment_left_behind_is_deleted_by_a_later_checkpoint() {
        let (dir, id, store, mut logged) = one_logged("{}", Vec::new());
        // Nothing applies it: the checkpoint gives up waiting, not fails.
        assert_eq!(
            store.checkpoint().unwrap(),
            Checkpoint::Behind { unapplied: 1 }
        );
        let count = || segments(dir.path()).unwrap().len();
        assert_eq!(count(), 2, "the cut segment stays beside the new one");
        store.apply_logged(&mut logged).unwrap();
        drop(logged);
        assert_eq!(store.checkpoint().unwrap(), Checkpoint::Done);
        assert_eq!(count(), 1, "only the current segment is left");
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.last_seq(&id).unwrap(), 1);
    }

    #[test]
    fn an_append_dropped_before_sled_is_replayed_by_the_next_checkpoint() {
        let (dir, id, store, logged) =
            one_logged("{}", vec![("call-1".to_owned(), Some(b"x".to_vec()))]);
        drop(logged);
        assert!(store.is_broken());
        store.checkpoint().unwrap();
        assert!(!store.is_broken(), "the checkpoint recovered");
        assert_eq!(store.open_calls(&id).unwrap().len(), 1, "read from sled");
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.last_seq(&id).unwrap(), 1);
    }
}
