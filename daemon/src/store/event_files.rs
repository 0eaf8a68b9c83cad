//! Event files: each session's events, appended to a file of its own.
//!
//! Events are written once, in seq order, and only ever read back in
//! ranges or removed with their session, so they do not need a tree. sled
//! kept them (one key per event, later one key per block of steps) and
//! paid for it in memory: every leaf split leaves a page in sled's page
//! table for as long as the database is open, and the nodes it rewrites
//! on each insert fragment the heap of the thread that applies them. With
//! events out of sled, a 64-client load left 14 to 18 MiB less resident
//! after its sessions were deleted, and its peak was half (BENCHMARKS.md,
//! session 13).
//!
//! `events/<session id>` holds entries `seq (u64 BE) | length (u64 BE) |
//! bytes` (the codec of `event_blocks.rs`), seqs strictly increasing. The
//! bytes are the event's wire JSON or a blob marker (`blobs.rs`). Only the
//! apply thread appends (and the write-ahead log's replay, before it
//! runs), one `write(2)` per applied run of steps.
//!
//! **Crash safety.** A kill -9 can cut that write short (the kernel stops
//! a write to a file at a page boundary when a fatal signal is pending).
//! Every step whose write may have been cut is still in the write-ahead
//! log, whose segments a checkpoint deletes only after [`EventFiles::sync`]:
//! so the file may end in a torn entry, and the replay brings the step
//! again. Opening a file's index finds where its last whole entry ends;
//! the next append writes from there (the torn bytes are cut first), and
//! skips every event whose seq the file already holds, so a replayed step
//! is never stored twice.
//!
//! **Damage.** Bytes changed in the middle of a file (a disk error, a
//! stray write) do not make the rest unreadable. The walk expects each
//! entry's seq to follow the last one; where a header does not (or its
//! length runs past the end), it looks for the next offset where a header
//! with a later seq begins whose entry ends at the end of the file or at
//! the header of the seq after it, and notes the bytes between as a
//! damaged range with the seqs it lost. Reads skip damaged ranges and name
//! the lost seqs ([`EventFiles::damaged`]); an entry whose bytes are not an
//! event is reported by the reader (`reads.rs`). When nothing whole
//! follows, the end is a torn entry, as after a crash.
//!
//! **Reads** go through a small index per session (built on first use by
//! walking the entry headers): the end of the last whole entry, the last
//! seq, and a mark (seq, offset) every [`MARK_EVERY`] bytes, so a replay
//! from a late seq does not read the file from the start. A reader never
//! reads past the indexed end, so it never sees an append in progress.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::entry;
use super::types::{StoreError, be_u64};

/// Bytes between two marks of a file's index.
const MARK_EVERY: u64 = 64 * 1024;
const HEADER: u64 = 16;
/// Read buffer for replays and index walks.
const READ_BUFFER: usize = 64 * 1024;

/// The event files of every session, in `<store>/events`.
pub struct EventFiles {
    dir: PathBuf,
    indexes: Mutex<HashMap<String, Arc<Mutex<Option<Index>>>>>,
    /// Sessions appended to since the last [`EventFiles::sync`], and
    /// whether one of them got a new file (the directory then needs
    /// syncing too).
    unsynced: Mutex<(HashSet<String>, bool)>,
    /// Appends written, for tests of how steps are grouped.
    #[cfg(test)]
    writes: std::sync::atomic::AtomicU64,
}

/// What a reader or the appender needs to know of a file.
#[derive(Debug, Clone, Default, PartialEq)]
struct Index {
    /// Where the last whole entry ends.
    len: u64,
    /// The file is longer than `len` (a torn entry): cut before appending.
    torn: bool,
    last_seq: u64,
    /// `(seq, offset)` of an entry every [`MARK_EVERY`] bytes or so, the
    /// first entry's included.
    marks: Vec<(u64, u64)>,
    /// Byte ranges that hold no whole entry, in file order.
    damaged: Vec<Damaged>,
}

/// Bytes of an event file that hold no whole entry, and the seqs lost in
/// them (`first_seq..=last_seq`, empty when none is known to be).
#[derive(Debug, Clone, PartialEq)]
struct Damaged {
    start: u64,
    end: u64,
    first_seq: u64,
    last_seq: u64,
}

/// The largest jump of seq the walk accepts when it looks past damage.
const MAX_SEQ_GAP: u64 = 1 << 16;

impl Index {
    /// Notes an entry written at `offset`.
    fn note(&mut self, seq: u64, offset: u64) {
        let mark_due = self
            .marks
            .last()
            .is_none_or(|(_, at)| offset - at >= MARK_EVERY);
        if mark_due {
            self.marks.push((seq, offset));
        }
        self.last_seq = seq;
    }

    /// Where to start reading for the first event after `since`.
    fn start_after(&self, since: u64) -> u64 {
        let at = self.marks.partition_point(|(seq, _)| *seq <= since);
        at.checked_sub(1).map_or(0, |i| self.marks[i].1)
    }
}

impl EventFiles {
    pub fn open(store_dir: &Path) -> std::io::Result<EventFiles> {
        let dir = store_dir.join("events");
        std::fs::create_dir_all(&dir)?;
        Ok(EventFiles {
            dir,
            indexes: Mutex::new(HashMap::new()),
            unsynced: Mutex::new((HashSet::new(), false)),
            #[cfg(test)]
            writes: std::sync::atomic::AtomicU64::new(0),
        })
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(id)
    }

    fn io(&self, id: &str, e: std::io::Error) -> StoreError {
        StoreError::Io(format!("event file of session {id}: {e}"))
    }

    fn slot(&self, id: &str) -> Arc<Mutex<Option<Index>>> {
        lock(&self.indexes)
            .entry(id.to_owned())
            .or_default()
            .clone()
    }

    /// Runs `f` on the session's index, walking the file first if this
    /// process has not yet.
    fn with_index<T>(
        &self,
        id: &str,
        f: impl FnOnce(&mut Index) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let slot = self.slot(id);
        let mut slot = lock(&slot);
        let index = match slot.take() {
            Some(index) => index,
            None => walk(&self.path(id), id).map_err(|e| self.io(id, e))??,
        };
        f(slot.insert(index))
    }

    /// Appends `events` (in seq order) with one write, skipping those the
    /// file already holds (a replayed step).
    pub fn append(&self, id: &str, events: &[(u64, &[u8])]) -> Result<(), StoreError> {
        self.with_index(id, |index| {
            let fresh: Vec<(u64, &[u8])> = events
                .iter()
                .copied()
                .filter(|(seq, _)| *seq > index.last_seq)
                .collect();
            let Some(&(first, _)) = fresh.first() else {
                return Ok(());
            };
            if fresh.windows(2).any(|w| w[0].0 >= w[1].0) {
                return Err(StoreError::Io(format!(
                    "event file of session {id}: events to append are out of order at seq {first}"
                )));
            }
            let bytes = entry::encode(fresh.iter().copied());
            let path = self.path(id);
            let created = index.len == 0 && !path.exists();
            let file = OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(false)
                .open(&path)
                .map_err(|e| self.io(id, e))?;
            if index.torn {
                file.set_len(index.len).map_err(|e| self.io(id, e))?;
                index.torn = false;
            }
            if let Err(e) = file.write_all_at(&bytes, index.len) {
                // Part of it may be on disk: cut it, or cut it next time.
                index.torn = file.set_len(index.len).is_err();
                return Err(self.io(id, e));
            }
            let mut offset = index.len;
            for (seq, event) in &fresh {
                index.note(*seq, offset);
                offset += HEADER + event.len() as u64;
            }
            index.len = offset;
            #[cfg(test)]
            self.writes
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let mut unsynced = lock(&self.unsynced);
            unsynced.0.insert(id.to_owned());
            unsynced.1 |= created;
            Ok(())
        })
    }

    /// How many appends were written since the store opened.
    #[cfg(test)]
    pub fn writes(&self) -> u64 {
        self.writes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sessions appended to since the last sync.
    #[cfg(test)]
    pub fn unsynced(&self) -> usize {
        lock(&self.unsynced).0.len()
    }

    /// The seq of the session's newest stored event, 0 when it has none.
    pub fn last_seq(&self, id: &str) -> Result<u64, StoreError> {
        self.with_index(id, |index| Ok(index.last_seq))
    }

    /// Calls `each` with every stored event with `since < seq <= upto`, in
    /// order.
    pub fn read(
        &self,
        id: &str,
        since: u64,
        upto: u64,
        mut each: impl FnMut(u64, &[u8]) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let (start, end, last, damaged) = self.with_index(id, |index| {
            Ok((
                index.start_after(since),
                index.len,
                index.last_seq,
                index.damaged.clone(),
            ))
        })?;
        if since >= last || since >= upto {
            return Ok(());
        }
        let file = match File::open(self.path(id)) {
            Ok(file) => file,
            // Deleted since the index was read.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(self.io(id, e)),
        };
        let mut reader = Entries::new(file, start, end).map_err(|e| self.io(id, e))?;
        let mut bytes = Vec::new();
        loop {
            if let Some(d) = damaged.iter().find(|d| d.start == reader.at) {
                reader.seek_to(d.end).map_err(|e| self.io(id, e))?;
                continue;
            }
            let Some((seq, len)) = reader.header().map_err(|e| self.io(id, e))? else {
                break;
            };
            if seq > upto {
                break;
            }
            if seq <= since {
                reader.skip(len).map_err(|e| self.io(id, e))?;
                continue;
            }
            reader.body(len, &mut bytes).map_err(|e| self.io(id, e))?;
            each(seq, &bytes)?;
        }
        Ok(())
    }

    /// The seqs with `since < seq <= upto` lost in damaged bytes of the
    /// session's file, each with what is known of the damage.
    pub fn damaged(
        &self,
        id: &str,
        since: u64,
        upto: u64,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        let path = self.path(id);
        self.with_index(id, |index| {
            let mut out = Vec::new();
            for d in &index.damaged {
                for seq in d.first_seq.max(since + 1)..=d.last_seq.min(upto) {
                    out.push((
                        seq,
                        format!(
                            "bytes {}..{} of {} are damaged (events {}..={} lost)",
                            d.start,
                            d.end,
                            path.display(),
                            d.first_seq,
                            d.last_seq
                        ),
                    ));
                }
            }
            Ok(out)
        })
    }

    /// Removes the session's file and index. Run on the apply thread, so
    /// no append races it.
    pub fn remove(&self, id: &str) -> Result<(), StoreError> {
        lock(&self.indexes).remove(id);
        lock(&self.unsynced).0.remove(id);
        match std::fs::remove_file(self.path(id)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(self.io(id, e)),
            Ok(()) | Err(_) => Ok(()),
        }
    }

    /// Makes every append so far durable (`fdatasync` of the files written
    /// since the last call, and of the directory when it has new ones).
    /// On failure they stay listed for the next call.
    pub fn sync(&self) -> Result<(), StoreError> {
        let (ids, created) = std::mem::take(&mut *lock(&self.unsynced));
        let mut failed = None;
        let mut left = HashSet::new();
        for id in ids {
            let synced = match File::open(self.path(&id)) {
                Ok(file) => file.sync_data(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(e),
            };
            if let Err(e) = synced {
                failed = Some(self.io(&id, e));
                left.insert(id);
            }
        }
        if created && failed.is_none() {
            let synced = File::open(&self.dir).and_then(|dir| dir.sync_all());
            if let Err(e) = synced {
                failed = Some(StoreError::Io(format!("{}: {e}", self.dir.display())));
            }
        }
        if let Some(e) = failed {
            let mut unsynced = lock(&self.unsynced);
            unsynced.0.extend(left);
            unsynced.1 |= created;
            return Err(e);
        }
        Ok(())
    }

    /// Puts `events` (in seq order; the stored events of a session kept
    /// elsewhere before) into the session's file, together with what the
    /// file already holds, each seq once. The new file replaces the old
    /// one by a rename, durably, so a crash leaves one or the other.
    pub fn absorb(&self, id: &str, events: &[(u64, &[u8])]) -> Result<(), StoreError> {
        // Runs while the store opens, before anything else reads or appends.
        let mut held: Vec<(u64, Vec<u8>)> = Vec::new();
        self.read(id, 0, u64::MAX, |seq, bytes| {
            held.push((seq, bytes.to_vec()));
            Ok(())
        })?;
        let mut all: Vec<(u64, &[u8])> = events.to_vec();
        all.extend(held.iter().map(|(seq, bytes)| (*seq, bytes.as_slice())));
        all.sort_by_key(|(seq, _)| *seq);
        all.dedup_by_key(|(seq, _)| *seq);
        let temp = self.dir.join(format!(".{id}.new"));
        let written = (|| {
            let file = File::create(&temp)?;
            file.write_all_at(&entry::encode(all.iter().copied()), 0)?;
            file.sync_data()?;
            std::fs::rename(&temp, self.path(id))?;
            File::open(&self.dir)?.sync_all()
        })();
        // The file changed under its index: the next use walks it again.
        lock(&self.indexes).remove(id);
        written.map_err(|e| self.io(id, e))
    }
}

/// Walks a file's entry headers: its index (damaged ranges noted, see the
/// module's comment).
fn walk(path: &Path, id: &str) -> std::io::Result<Result<Index, StoreError>> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Ok(Index::default())),
        Err(e) => return Err(e),
    };
    let size = file.metadata()?.len();
    let mut reader = Entries::new(file, 0, size)?;
    let mut index = Index::default();
    loop {
        let offset = reader.at;
        let header = reader.header()?;
        if let Some((seq, len)) = header {
            let fits = size - reader.at >= len;
            let follows =
                seq > index.last_seq && (index.last_seq == 0 || seq == index.last_seq + 1);
            if fits && follows {
                reader.skip(len)?;
                index.note(seq, offset);
                continue;
            }
        }
        if size - offset == 0 {
            break;
        }
        match resync(reader.file(), offset, size, index.last_seq)? {
            Some((at, seq, len)) => {
                if at > offset {
                    tracing::warn!(
                        session = id,
                        from = offset,
                        to = at,
                        lost = ?(index.last_seq + 1..seq),
                        "damaged bytes in a session's event file; the events after them are read"
                    );
                    index.damaged.push(Damaged {
                        start: offset,
                        end: at,
                        first_seq: index.last_seq + 1,
                        last_seq: seq - 1,
                    });
                }
                reader.seek_to(at + HEADER)?;
                reader.skip(len)?;
                index.note(seq, at);
            }
            None => match header {
                // A whole entry that does not follow, and nothing whole
                // after it: damage to the end (kept, skipped by reads).
                Some((_, len)) if size - offset - HEADER >= len => {
                    tracing::warn!(
                        session = id,
                        from = offset,
                        to = size,
                        "damaged bytes at the end of a session's event file"
                    );
                    index.damaged.push(Damaged {
                        start: offset,
                        end: size,
                        first_seq: index.last_seq + 1,
                        last_seq: index.last_seq,
                    });
                    reader.seek_to(size)?;
                    break;
                }
                // A torn last entry (cut inside its header or its bytes).
                _ => {
                    reader.at = offset;
                    break;
                }
            },
        }
    }
    index.len = reader.at;
    index.torn = reader.at < size;
    Ok(Ok(index))
}

/// The next whole entry at or after `from`: an offset where a header with
/// a seq in `(last, last + MAX_SEQ_GAP]` begins whose entry ends at the
/// end of the file or where the header of the next seq begins. Returns its
/// offset, seq and length; `None` when there is none.
fn resync(
    file: &File,
    from: u64,
    size: u64,
    last: u64,
) -> std::io::Result<Option<(u64, u64, u64)>> {
    const CHUNK: usize = 1 << 20;
    let header = HEADER as usize;
    let mut buf = vec![0u8; CHUNK + header];
    let mut base = from;
    while size.saturating_sub(base) >= HEADER {
        let want = usize::try_from(size - base)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        file.read_exact_at(&mut buf[..want], base)?;
        let starts = (want + 1 - header).min(CHUNK);
        for i in 0..starts {
            let seq = be_u64(&buf[i..i + 8]);
            if seq <= last || seq - last > MAX_SEQ_GAP {
                continue;
            }
            let len = be_u64(&buf[i + 8..i + header]);
            let at = base + i as u64;
            let Some(end) = (at + HEADER).checked_add(len).filter(|end| *end <= size) else {
                continue;
            };
            if end == size || header_of(file, end, size, seq + 1)? {
                return Ok(Some((at, seq, len)));
            }
        }
        base += CHUNK as u64;
    }
    Ok(None)
}

/// Whether a header of `seq` whose entry fits in the file begins at `at`.
fn header_of(file: &File, at: u64, size: u64, seq: u64) -> std::io::Result<bool> {
    if size - at < HEADER {
        return Ok(false);
    }
    let mut header = [0u8; HEADER as usize];
    file.read_exact_at(&mut header, at)?;
    let fits = (at + HEADER)
        .checked_add(be_u64(&header[8..]))
        .is_some_and(|end| end <= size);
    Ok(be_u64(&header[..8]) == seq && fits)
}

/// Entries of a file between two offsets, read through a buffer.
struct Entries {
    reader: BufReader<File>,
    at: u64,
    end: u64,
}

impl Entries {
    fn new(mut file: File, start: u64, end: u64) -> std::io::Result<Entries> {
        file.seek(SeekFrom::Start(start))?;
        Ok(Entries {
            reader: BufReader::with_capacity(READ_BUFFER, file),
            at: start,
            end,
        })
    }

    /// The next entry's seq and length, `None` at the end (or where an
    /// entry's header is cut).
    fn header(&mut self) -> std::io::Result<Option<(u64, u64)>> {
        if self.end - self.at < HEADER {
            return Ok(None);
        }
        let mut header = [0u8; HEADER as usize];
        self.reader.read_exact(&mut header)?;
        self.at += HEADER;
        let seq = be_u64(&header[..8]);
        let len = be_u64(&header[8..]);
        Ok(Some((seq, len)))
    }

    fn file(&self) -> &File {
        self.reader.get_ref()
    }

    fn seek_to(&mut self, at: u64) -> std::io::Result<()> {
        self.reader.seek(SeekFrom::Start(at))?;
        self.at = at;
        Ok(())
    }

    fn skip(&mut self, len: u64) -> std::io::Result<()> {
        let len = i64::try_from(len).map_err(std::io::Error::other)?;
        self.reader.seek_relative(len)?;
        self.at += len as u64;
        Ok(())
    }

    fn body(&mut self, len: u64, into: &mut Vec<u8>) -> std::io::Result<()> {
        if self.end - self.at < len {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "an event ends past the end of the file",
            ));
        }
        into.clear();
        into.resize(len as usize, 0);
        self.reader.read_exact(into)?;
        self.at += len;
        Ok(())
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0123456789abcdef0123456789abcdef";

    fn event(seq: u64, pad: usize) -> Vec<u8> {
        format!("{{\"n\":{seq},\"pad\":\"{}\"}}", "x".repeat(pad)).into_bytes()
    }

    fn append(files: &EventFiles, seqs: std::ops::RangeInclusive<u64>, pad: usize) {
        let events: Vec<(u64, Vec<u8>)> = seqs.map(|s| (s, event(s, pad))).collect();
        let refs: Vec<(u64, &[u8])> = events.iter().map(|(s, e)| (*s, e.as_slice())).collect();
        files.append(ID, &refs).unwrap();
    }

    fn append_to(files: &EventFiles, seqs: std::ops::RangeInclusive<u64>, pad: usize) {
        append(files, seqs, pad)
    }

    fn read(files: &EventFiles, since: u64, upto: u64) -> Vec<(u64, Vec<u8>)> {
        let mut out = Vec::new();
        files
            .read(ID, since, upto, |seq, bytes| {
                out.push((seq, bytes.to_vec()));
                Ok(())
            })
            .unwrap();
        out
    }

    /// Events of 9 KiB or so, so that the index holds several marks;
    /// every range, from a fresh index and from the appender's, reads
    /// exactly its events.
    #[test]
    fn every_range_reads_exactly_its_events_through_the_marks() {
        let dir = tempfile::tempdir().unwrap();
        let files = EventFiles::open(dir.path()).unwrap();
        let mut last = 0;
        for size in [1u64, 3, 2, 5, 1, 4, 2, 6] {
            append(&files, last + 1..=last + size, 9_000);
            last += size;
        }
        let reopened = EventFiles::open(dir.path()).unwrap();
        for files in [&files, &reopened] {
            assert_eq!(files.last_seq(ID).unwrap(), last);
            let marks = files.with_index(ID, |i| Ok(i.marks.len())).unwrap();
            assert!(marks >= 3, "{marks} marks");
            for since in 0..=last + 1 {
                for upto in since..=last + 1 {
                    let got = read(files, since, upto);
                    let want: Vec<u64> = (since + 1..=upto.min(last)).collect();
                    let seqs: Vec<u64> = got.iter().map(|(s, _)| *s).collect();
                    assert_eq!(seqs, want, "since {since}, upto {upto}");
                    for (seq, bytes) in got {
                        assert_eq!(bytes, event(seq, 9_000));
                    }
                }
            }
        }
        assert_eq!(
            files.with_index(ID, |i| Ok(i.clone())).unwrap(),
            reopened.with_index(ID, |i| Ok(i.clone())).unwrap(),
            "the appender's index is the one a walk builds"
        );
    }

    #[test]
    fn a_replayed_step_is_stored_once() {
        let dir = tempfile::tempdir().unwrap();
        let files = EventFiles::open(dir.path()).unwrap();
        append(&files, 1..=5, 10);
        let size = std::fs::metadata(files.path(ID)).unwrap().len();
        append(&files, 3..=5, 10);
        append(&files, 5..=5, 10);
        assert_eq!(std::fs::metadata(files.path(ID)).unwrap().len(), size);
        // A step that straddles what the file holds keeps its new part.
        append(&files, 4..=7, 10);
        let seqs: Vec<u64> = read(&files, 0, u64::MAX).iter().map(|(s, _)| *s).collect();
        assert_eq!(seqs, [1, 2, 3, 4, 5, 6, 7]);
    }

    /// A kill -9 in the middle of an append leaves a torn entry: the file
    /// reads as if it ended before it, and the next append replaces it.
    #[test]
    fn a_torn_entry_is_not_read_and_the_next_append_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let files = EventFiles::open(dir.path()).unwrap();
        append(&files, 1..=3, 10);
        let whole = std::fs::read(files.path(ID)).unwrap();
        // The torn entry is longer than what replaces it.
        let next = entry::encode([(4, event(4, 200).as_slice())]);
        let (four, five) = (event(4, 10), event(5, 10));
        let replacement = entry::encode([(4, four.as_slice()), (5, five.as_slice())]);
        for cut in [1, 15, 16, 17, next.len() - 1] {
            let mut torn = whole.clone();
            torn.extend_from_slice(&next[..cut]);
            std::fs::write(files.path(ID), &torn).unwrap();
            let after = EventFiles::open(dir.path()).unwrap();
            assert_eq!(after.last_seq(ID).unwrap(), 3, "cut at {cut}");
            assert_eq!(read(&after, 0, 10).len(), 3);
            append(&after, 4..=5, 10);
            let seqs: Vec<u64> = read(&after, 0, 10).iter().map(|(s, _)| *s).collect();
            assert_eq!(seqs, [1, 2, 3, 4, 5]);
            let size = std::fs::metadata(files.path(ID)).unwrap().len() as usize;
            assert_eq!(size, whole.len() + replacement.len(), "cut at {cut}");
            let again = EventFiles::open(dir.path()).unwrap();
            assert_eq!(read(&again, 0, 10), read(&after, 0, 10));
            std::fs::write(files.path(ID), &whole).unwrap();
        }
    }

    #[test]
    fn seqs_out_of_order_are_refused_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let files = EventFiles::open(dir.path()).unwrap();
        let err = files
            .append(ID, &[(2, &b"{}"[..]), (1, &b"{}"[..])])
            .unwrap_err();
        assert!(err.to_string().contains("out of order"), "{err}");
        let bad = entry::encode([(2, &b"{}"[..]), (1, &b"{}"[..])]);
        std::fs::write(files.path(ID), bad).unwrap();
        let reopened = EventFiles::open(dir.path()).unwrap();
        assert_eq!(reopened.last_seq(ID).unwrap(), 2);
        assert_eq!(
            read(&reopened, 0, 10).len(),
            1,
            "what follows is kept apart"
        );
        append_to(&reopened, 3..=3, 10);
        let seqs: Vec<u64> = read(&reopened, 0, 10).iter().map(|(s, _)| *s).collect();
        assert_eq!(seqs, vec![2, 3]);
    }

    /// 64 random bytes over the middle of a file: every event they do not
    /// touch is read, the lost seqs are named, and appends go on.
    #[test]
    fn damage_in_the_middle_loses_only_what_it_touches() {
        let dir = tempfile::tempdir().unwrap();
        let files = EventFiles::open(dir.path()).unwrap();
        append(&files, 1..=200, 40);
        let mut bytes = std::fs::read(files.path(ID)).unwrap();
        let mid = bytes.len() / 2;
        for (i, b) in bytes[mid..mid + 64].iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(151).wrapping_add(7);
        }
        std::fs::write(files.path(ID), &bytes).unwrap();
        let reopened = EventFiles::open(dir.path()).unwrap();
        assert_eq!(reopened.last_seq(ID).unwrap(), 200);
        let got = read(&reopened, 0, 200);
        let lost: Vec<u64> = reopened
            .damaged(ID, 0, 200)
            .unwrap()
            .iter()
            .map(|(s, _)| *s)
            .collect();
        assert!(!lost.is_empty() && lost.len() <= 3, "{lost:?}");
        assert!(got.len() >= 200 - 3, "{} read", got.len());
        let mut seqs: Vec<u64> = got.iter().map(|(s, _)| *s).collect();
        seqs.extend(&lost);
        seqs.sort();
        assert_eq!(
            seqs,
            (1..=200).collect::<Vec<_>>(),
            "each seq read or named lost"
        );
        append_to(&reopened, 201..=201, 40);
        assert_eq!(read(&reopened, 200, 201)[0].1, event(201, 40));
    }

    #[test]
    fn absorbed_events_merge_with_the_file_each_seq_once() {
        let dir = tempfile::tempdir().unwrap();
        let files = EventFiles::open(dir.path()).unwrap();
        // The replay wrote 8..=10; sled's blocks held 1..=9.
        append(&files, 8..=10, 10);
        let old: Vec<(u64, Vec<u8>)> = (1..=9).map(|s| (s, event(s, 10))).collect();
        let refs: Vec<(u64, &[u8])> = old.iter().map(|(s, e)| (*s, e.as_slice())).collect();
        files.absorb(ID, &refs).unwrap();
        let got = read(&files, 0, u64::MAX);
        assert_eq!(
            got.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
            (1..=10).collect::<Vec<_>>()
        );
        assert!(got.iter().all(|(s, e)| *e == event(*s, 10)));
        assert_eq!(files.last_seq(ID).unwrap(), 10);
        append(&files, 11..=11, 10);
        assert_eq!(read(&files, 9, 20).len(), 2);
    }

    #[test]
    fn removed_files_read_empty_and_sync_forgets_them() {
        let dir = tempfile::tempdir().unwrap();
        let files = EventFiles::open(dir.path()).unwrap();
        append(&files, 1..=2, 10);
        files.remove(ID).unwrap();
        assert!(!files.path(ID).exists());
        assert_eq!(files.last_seq(ID).unwrap(), 0);
        assert!(read(&files, 0, 10).is_empty());
        files.sync().unwrap();
        files.remove(ID).unwrap();
    }
}
