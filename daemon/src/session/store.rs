//! The session store: session records, open calls and history in sled,
//! events in a file per session.
//!
//! Each session's events are appended to `events/<id>` in their wire JSON
//! (`event_files.rs`). Everything else lives in one sled tree. One actor
//! step's append (its events and the open-call bookkeeping that goes with
//! them) is atomic through the write-ahead log, not a sled batch (see
//! [`apply`]). Keys:
//!
//! * `s` + session id: the [`SessionRecord`] as JSON;
//! * `o` + session id + call id: a call that has not reached a terminal
//!   state (so a restart can mark it interrupted without reading the log);
//! * `h` + session id + index (u64 big-endian): one [`Content`] of the
//!   conversation with the model, as JSON;
//! * `q` + session id + turn id: a prompt that has not finished (queued or
//!   running), so a restart can go on with the queue.
//!
//! [`Content`]: crate::model::Content
//!
//! Session ids have a fixed length ([`SESSION_ID_LEN`]), which keeps prefix
//! scans exact. Writes are durable once [`Store::flush`] returns; the actor
//! flushes before it broadcasts, so every event a client has seen survives a
//! kill -9.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use super::applier::Applier;
use super::blobs::{Blobs, INLINE_MAX};
use super::event_blocks;
use super::event_files::EventFiles;
use super::tail::{Logged, Tail};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Collector rounds per [`Store::reclaim`]: each frees up to eight bags of
/// 64 retired objects, and costs well under a microsecond when there is
/// nothing to free.
const RECLAIM_ROUNDS: usize = 512;

/// Length of a session id in bytes (hex characters).
pub const SESSION_ID_LEN: usize = 32;

/// A failure of the session store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("session store at {path}: {source}")]
    Open { path: String, source: sled::Error },
    #[error("session store: {0}")]
    Sled(#[from] sled::Error),
    #[error("session store holds a corrupt record under {key}: {source}")]
    Corrupt {
        key: String,
        source: serde_json::Error,
    },
    #[error("session id `{0}` is malformed (expected {SESSION_ID_LEN} hex characters)")]
    BadSessionId(String),
    #[error("session store: {0}")]
    Io(String),
}

/// What the store keeps about a session besides its events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    pub id: String,
    pub cwd: String,
    pub title: Option<String>,
    pub approval_mode: crate::policy::ApprovalMode,
    pub interactive: bool,
    pub created_at: u64,
}

/// An event as stored and broadcast: its seq and its wire JSON. Shared
/// (`Arc`) between the pending batch, the log and every subscriber, so a
/// large event is serialized once and never copied.
#[derive(Debug)]
pub struct Published {
    pub seq: u64,
    pub json: Box<RawValue>,
}

impl Published {
    pub fn new(seq: u64, json: Box<RawValue>) -> Arc<Published> {
        Arc::new(Published { seq, json })
    }
}

impl AsRef<RawValue> for Published {
    fn as_ref(&self) -> &RawValue {
        &self.json
    }
}

/// One append to a session's log, applied atomically.
#[derive(Debug, Default, Clone)]
pub struct Append {
    /// Events in seq order.
    pub events: Vec<Arc<Published>>,
    /// Calls that became open (`Some` of what recovery needs to describe
    /// them: their name and args as JSON) or finished (`None`).
    pub open_calls: Vec<(String, Option<Vec<u8>>)>,
    /// A new version of the session record, if it changed.
    pub record: Option<SessionRecord>,
    /// Conversation entries appended: `(index, Content JSON)`.
    pub history: Vec<(u64, String)>,
    /// Prompts queued or started (`Some` of their [`PendingPrompt`] JSON)
    /// or finished (`None`), by turn id.
    pub prompts: Vec<(String, Option<Vec<u8>>)>,
    /// The session is deleted: everything stored of it goes. Logged like
    /// any step, so that the log's replay after a crash, which brings back
    /// the session's earlier steps, deletes it again.
    pub deleted: bool,
}

impl Append {
    /// The appends, in order, as one: what sled holds after applying them
    /// one by one, in fewer writes (a call opened in one and closed in a
    /// later one leaves no marker to write and remove).
    pub fn merged<'a>(appends: impl IntoIterator<Item = &'a Append>) -> Append {
        let mut out = Append::default();
        for append in appends {
            out.events.extend(append.events.iter().cloned());
            out.open_calls.extend(append.open_calls.iter().cloned());
            if append.record.is_some() {
                out.record.clone_from(&append.record);
            }
            out.history.extend(append.history.iter().cloned());
            out.prompts.extend(append.prompts.iter().cloned());
            out.deleted |= append.deleted;
        }
        out
    }
}

/// A prompt that has not finished, as stored under `q`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingPrompt {
    pub turn_id: String,
    pub text: String,
    /// Whether its turn had begun (a restart then ends it as interrupted).
    pub started: bool,
}

/// The sled-backed store with its write-ahead log. Cheap to clone.
///
/// sled keeps its first I/O error (a full disk, say) and fails everything
/// after it. So a failed write marks the store broken, and the next commit
/// first reopens sled and replays the write-ahead log into it (which holds
/// every commit since the last checkpoint): once space returns, the daemon
/// goes on without a restart.
#[derive(Clone)]
pub struct Store {
    sled: Arc<RwLock<Option<Sled>>>,
    dir: PathBuf,
    broken: Arc<AtomicBool>,
    /// Whether the last write to the log failed (its session retries every
    /// second until one succeeds).
    log_failing: Arc<AtomicBool>,
    wal: std::sync::Arc<super::wal::Wal>,
    blobs: std::sync::Arc<Blobs>,
    files: Arc<EventFiles>,
    /// Counts writes, so that idle periods can be told apart.
    writes: Arc<AtomicU64>,
    /// Appends logged but not yet applied to sled (`tail.rs`).
    tail: Arc<Tail>,
    /// The thread that applies them (`applier.rs`); `None` in the store
    /// that thread itself holds.
    applier: Option<Arc<Applier>>,
}

/// One open sled database and our tree in it.
#[derive(Clone)]
struct Sled {
    db: sled::Db,
    tree: sled::Tree,
}

/// Whether the data dir takes writes again: a small file written, synced
/// and removed.
fn probe_writable(dir: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let path = dir.join(".write-probe");
    let result = std::fs::File::create(&path).and_then(|mut f| {
        f.write_all(&[0u8; 64 * 1024])?;
        f.sync_all()
    });
    let _ = std::fs::remove_file(&path);
    result
}

fn open_sled(dir: &Path) -> Result<Sled, StoreError> {
    let path = dir.join("sessions.sled");
    drop_unfinished_creation(&path)
        .map_err(|e| StoreError::Io(format!("{}: {e}", path.display())))?;
    let db = open_with_retry(&path).map_err(|source| StoreError::Open {
        path: dir.display().to_string(),
        source,
    })?;
    let tree = db.open_tree("geminid")?;
    Ok(Sled { db, tree })
}

/// When sled creates a database it writes its `conf` file with two writes,
/// before it creates the data file `db`, and it never opens a database
/// whose `conf` was cut between them. The daemon listens before it opens
/// the store, so a kill -9 right after start can leave exactly that. A
/// `conf` without a `db` holds no data: it goes, and sled writes it again.
fn drop_unfinished_creation(path: &Path) -> std::io::Result<()> {
    let conf = path.join("conf");
    if conf.exists() && !path.join("db").exists() {
        tracing::warn!(path = %path.display(), "removing the config of a database whose creation was interrupted");
        std::fs::remove_file(conf)?;
    }
    Ok(())
}

/// Opens sled at `path`, waiting (up to 5 s) while a just-dropped instance
/// still holds the database's file lock: sled releases it from background
/// threads a moment after the last handle goes.
fn open_with_retry(path: &Path) -> Result<sled::Db, sled::Error> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match sled_config(path).open() {
            Err(sled::Error::Io(e))
                if e.kind() == std::io::ErrorKind::WouldBlock
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

fn sled_config(path: &Path) -> sled::Config {
    sled::Config::new()
        .path(path)
        // sled's default cache is 1 GiB; sessions are append-mostly and
        // replays read sequentially, so a small cache is enough.
        .cache_capacity(8 * 1024 * 1024)
        // Checkpoints flush; sled's own timer would only add wakeups.
        .flush_every_ms(None)
}

impl Store {
    /// Opens (or creates) the store in `dir`.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let Sled { db, tree } = open_sled(dir)?;
        let io = |e: std::io::Error| StoreError::Io(format!("{}: {e}", dir.display()));
        let blobs = Blobs::open(dir).map_err(io)?;
        let files = EventFiles::open(dir).map_err(io)?;
        let (wal, replayed) = super::wal::Wal::open(
            dir,
            &|id, append, markers| apply(&tree, &files, &blobs, id, append, markers),
            &|| {
                files.sync()?;
                db.flush().map(drop).map_err(StoreError::from)
            },
        )?;
        if replayed > 0 {
            tracing::info!(
                batches = replayed,
                "replayed the write-ahead log after an unclean stop"
            );
        }
        let moved = event_blocks::move_to_files(&tree, &files)?;
        if moved > 0 {
            db.flush()?;
            tracing::info!(
                events = moved,
                "moved events stored in sled into event files"
            );
        }
        let mut store = Store {
            sled: Arc::new(RwLock::new(Some(Sled { db, tree }))),
            dir: dir.to_path_buf(),
            broken: Arc::new(AtomicBool::new(false)),
            log_failing: Arc::new(AtomicBool::new(false)),
            wal: std::sync::Arc::new(wal),
            blobs: std::sync::Arc::new(blobs),
            files: Arc::new(files),
            writes: Arc::new(AtomicU64::new(0)),
            tail: Arc::new(Tail::default()),
            applier: None,
        };
        let applier = Applier::spawn(store.clone())
            .map_err(|e| StoreError::Io(format!("cannot start the store's apply thread: {e}")))?;
        store.applier = Some(Arc::new(applier));
        Ok(store)
    }

    fn sled(&self) -> Result<Sled, StoreError> {
        self.sled
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(|| {
                StoreError::Io(
                    "the session store is being reopened after a write failure".to_owned(),
                )
            })
    }

    fn tree(&self) -> Result<sled::Tree, StoreError> {
        Ok(self.sled()?.tree)
    }

    /// Notes a failure: a sled error poisons the database until reopened.
    fn failed<T>(&self, e: StoreError) -> Result<T, StoreError> {
        if matches!(e, StoreError::Sled(_) | StoreError::Io(_)) {
            self.broken.store(true, Ordering::Release);
        }
        Err(e)
    }

    /// Reopens sled and replays the write-ahead log into it, after a write
    /// failure. Fails (and stays broken) while the fault lasts.
    fn recover(&self) -> Result<(), StoreError> {
        // While the fault lasts, keep the broken instance: it still reads.
        probe_writable(&self.dir)
            .map_err(|e| StoreError::Io(format!("{}: {e}", self.dir.display())))?;
        let mut slot = self.sled.write().unwrap_or_else(|e| e.into_inner());
        // Ours must go first: sled holds a lock on its files.
        *slot = None;
        let fresh = open_sled(&self.dir)?;
        self.wal.recover(
            &|id, append, markers| {
                apply(&fresh.tree, &self.files, &self.blobs, id, append, markers)
            },
            &|| {
                self.files.sync()?;
                fresh.db.flush().map(drop).map_err(StoreError::from)
            },
        )?;
        *slot = Some(fresh);
        self.broken.store(false, Ordering::Release);
        tracing::info!(
            "session store reopened after a write failure; the write-ahead log was replayed"
        );
        Ok(())
    }

    /// Whether a write failed and the store waits to be reopened.
    pub fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Acquire)
    }

    /// Whether the last write to the log failed: a session's commit then
    /// waits for its retry. (A full file system can still take a short
    /// line in the unused end of a page the log already has, so free space
    /// alone does not tell.)
    pub fn log_failing(&self) -> bool {
        self.log_failing.load(Ordering::Acquire)
    }

    /// Logs `append` and applies it to sled at once: once this returns, the
    /// batch survives a crash of the daemon. Actors use the two halves
    /// apart ([`Store::log`], then [`Store::apply_later`] once they have
    /// answered).
    pub fn commit(&self, id: &str, append: &Append) -> Result<(), StoreError> {
        let mut logged = self.log(id, &mut append.clone())?;
        self.apply_logged(&mut logged)
    }

    /// Makes `append` durable: large events go to the session's blob file
    /// (`blobs.rs`), then the batch is written to the write-ahead log in one
    /// write, and from then on it survives a crash of the daemon and may be
    /// broadcast. Until [`Store::apply_logged`] it is served from the tail.
    /// The append is taken on success; on failure nothing was logged and
    /// it is left in place.
    pub fn log(&self, id: &str, append: &mut Append) -> Result<Logged, StoreError> {
        let logged = self.log_once(id, append);
        let failed = logged.is_err();
        if failed != self.log_failing.load(Ordering::Relaxed) {
            self.log_failing.store(failed, Ordering::Release);
        }
        logged
    }

    fn log_once(&self, id: &str, append: &mut Append) -> Result<Logged, StoreError> {
        check_id(id)?;
        self.writes.fetch_add(1, Ordering::Relaxed);
        let mut markers = Vec::new();
        for event in append
            .events
            .iter()
            .filter(|e| e.json.get().len() > INLINE_MAX)
        {
            let marker = self
                .blobs
                .put(id, event.json.get().as_bytes())
                .map_err(|e| StoreError::Io(format!("blob file of session {id}: {e}")))?;
            markers.push((event.seq, marker));
        }
        let lease = self.wal.append(id, append, &markers)?;
        Ok(Logged::new(
            id,
            std::mem::take(append),
            markers,
            lease,
            &self.tail,
            &self.broken,
        ))
    }

    /// Hands a logged append to the apply thread (in the order of calls).
    pub fn apply_later(&self, logged: Logged) -> Result<(), StoreError> {
        match &self.applier {
            Some(applier) => applier.apply(self, logged),
            None => self.apply_logged(&mut { logged }),
        }
    }

    /// Waits until every append handed to [`Store::apply_later`] is in sled.
    pub fn settle(&self) -> Result<(), StoreError> {
        match &self.applier {
            Some(applier) => applier.settle(),
            None => Ok(()),
        }
    }

    /// Applies a logged append to sled (see [`apply`]). On failure the
    /// store is marked broken and the append stays in the tail: apply it
    /// again later, before anything logged after it.
    pub fn apply_logged(&self, logged: &mut Logged) -> Result<(), StoreError> {
        let applied = (|| {
            if self.is_broken() {
                self.recover()?;
            }
            let tree = self.tree()?;
            apply(
                &tree,
                &self.files,
                &self.blobs,
                &logged.id,
                &logged.append,
                &logged.markers,
            )
        })();
        match applied {
            Ok(()) => {
                logged.applied();
                Ok(())
            }
            Err(e) => self.failed(e),
        }
    }

    /// Applies logged appends of one session, in log order, to sled as
    /// one (see [`Append::merged`]): their events go in as one block.
    /// On failure none is marked applied and the store is marked broken;
    /// apply them again one by one ([`Store::apply_logged`]).
    pub fn apply_together(&self, steps: &mut [Logged]) -> Result<(), StoreError> {
        let Some(id) = steps.first().map(|s| s.id.clone()) else {
            return Ok(());
        };
        if steps.iter().any(|s| s.id != id) {
            // A caller's mistake, not the store's: nothing is marked broken.
            return Err(StoreError::Io(
                "steps of different sessions cannot be applied together".to_owned(),
            ));
        }
        let applied = (|| {
            if self.is_broken() {
                self.recover()?;
            }
            let tree = self.tree()?;
            let markers: Vec<(u64, Vec<u8>)> = steps
                .iter()
                .flat_map(|s| s.markers.iter().cloned())
                .collect();
            let merged = Append::merged(steps.iter().map(|s| &s.append));
            apply(&tree, &self.files, &self.blobs, &id, &merged, &markers)
        })();
        match applied {
            Ok(()) => {
                for step in steps {
                    step.applied();
                }
                Ok(())
            }
            Err(e) => self.failed(e),
        }
    }

    /// How many writes the store has taken since it was opened.
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    /// Frees what sled retired and has not freed yet.
    ///
    /// sled frees replaced tree nodes and its IO buffers (one per 512 KiB
    /// segment) through crossbeam-epoch, whose collector frees at most
    /// eight bags of garbage each time some thread pins 128 times. Under a
    /// steady write load garbage is retired faster than that, and when the
    /// load stops nothing pins any more, so it stays: the daemon kept about
    /// 3 KiB per tool call ever made, even after deleting the sessions.
    /// Each round here pins, moves this thread's garbage to the global
    /// queue and collects from it (advancing the epoch when no one else is
    /// pinned), so a few hundred rounds after a burst drain it.
    pub fn reclaim(&self) {
        for _ in 0..RECLAIM_ROUNDS {
            crossbeam_epoch::pin().flush();
        }
    }

    /// Flushes sled and cuts the write-ahead log (blocking: run it off the
    /// async workers). A broken store is reopened first.
    pub fn checkpoint(&self) -> Result<super::wal::Checkpoint, StoreError> {
        if self.is_broken() {
            self.recover()?;
        }
        self.wal.checkpoint(&|| {
            // An append dropped before it reached sled marked the store
            // broken: the replay puts it there before the log is cut.
            if self.is_broken() {
                self.recover()?;
            }
            self.flush_blocking()
        })
    }

    pub fn put_session(&self, record: &SessionRecord) -> Result<(), StoreError> {
        check_id(&record.id)?;
        let value = serde_json::to_vec(record).map_err(|source| StoreError::Corrupt {
            key: record.id.clone(),
            source,
        })?;
        self.tree()?.insert(record_key(&record.id), value)?;
        Ok(())
    }

    pub fn get_session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        check_id(id)?;
        if let Some(record) = self.tail.record(id) {
            return Ok(Some(record));
        }
        match self.tree()?.get(record_key(id))? {
            Some(bytes) => decode_record(id, &bytes).map(Some),
            None => Ok(None),
        }
    }

    pub fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        let mut newer: std::collections::HashMap<String, SessionRecord> = self
            .tail
            .records()
            .into_iter()
            .map(|r| (r.id.clone(), r))
            .collect();
        let mut out = Vec::new();
        for item in self.tree()?.scan_prefix(b"s") {
            let (key, value) = item?;
            let id = String::from_utf8_lossy(&key[1..]).into_owned();
            match newer.remove(&id) {
                Some(record) => out.push(record),
                None => out.push(decode_record(&id, &value)?),
            }
        }
        out.extend(newer.into_values());
        Ok(out)
    }

    /// How many sessions the store holds, without reading their records.
    pub fn count_sessions(&self) -> Result<usize, StoreError> {
        let mut newer: std::collections::HashSet<String> =
            self.tail.records().into_iter().map(|r| r.id).collect();
        let mut count = 0;
        for key in self.tree()?.scan_prefix(b"s").keys() {
            let key = key?;
            newer.remove(String::from_utf8_lossy(&key[1..]).as_ref());
            count += 1;
        }
        Ok(count + newer.len())
    }

    /// Removes a session, its events and its open calls. The deletion is
    /// logged, then applied by the apply thread after the session's last
    /// logged steps (so none of them lands after it, and the tree nodes
    /// sled rewrites stay in that thread's heap arena); this returns once
    /// it is applied.
    pub fn delete_session(&self, id: &str) -> Result<(), StoreError> {
        let mut deletion = Append {
            deleted: true,
            ..Append::default()
        };
        let logged = self.log(id, &mut deletion)?;
        self.apply_later(logged)?;
        self.settle()
    }

    /// Applies one append to sled and the event file only, every event
    /// inline (not durable until a flush; [`Store::commit`] is the durable
    /// path).
    pub fn append(&self, id: &str, append: &Append) -> Result<(), StoreError> {
        apply(&self.tree()?, &self.files, &self.blobs, id, append, &[])
    }

    /// Events with `since < seq <= upto`, in order.
    pub fn events(
        &self,
        id: &str,
        since: u64,
        upto: u64,
    ) -> Result<Vec<(u64, Box<RawValue>)>, StoreError> {
        check_id(id)?;
        let mut out = Vec::new();
        if since >= upto {
            return Ok(out);
        }
        // The tail first: an append leaves it only once it is stored.
        let unapplied = self.tail.events(id, since, upto);
        self.files.read(id, since, upto, |seq, value| {
            out.push((seq, self.event_json(id, seq, value)?));
            Ok(())
        })?;
        for event in unapplied {
            if let Err(at) = out.binary_search_by_key(&event.seq, |(seq, _)| *seq) {
                out.insert(at, (event.seq, event.json.clone()));
            }
        }
        Ok(out)
    }

    /// One stored event's JSON: `value` itself, or the blob it marks.
    fn event_json(&self, id: &str, seq: u64, value: &[u8]) -> Result<Box<RawValue>, StoreError> {
        let bytes = self
            .blobs
            .resolve(id, value)
            .map_err(|e| StoreError::Io(format!("blob file of session {id}, event {seq}: {e}")))?;
        let text = String::from_utf8(bytes).map_err(|_| StoreError::Corrupt {
            key: format!("{id}/{seq}"),
            source: serde::de::Error::custom("event is not UTF-8"),
        })?;
        RawValue::from_string(text).map_err(|source| StoreError::Corrupt {
            key: format!("{id}/{seq}"),
            source,
        })
    }

    /// The seq of the session's newest event, 0 when it has none.
    pub fn last_seq(&self, id: &str) -> Result<u64, StoreError> {
        check_id(id)?;
        let unapplied = self.tail.last_seq(id).unwrap_or(0);
        Ok(self.files.last_seq(id)?.max(unapplied))
    }

    /// Calls of the session that had not finished when last written.
    pub fn open_calls(&self, id: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        check_id(id)?;
        let prefix = prefixed(b'o', id);
        let mut out = Vec::new();
        for item in self.tree()?.scan_prefix(&prefix) {
            let (key, value) = item?;
            let call_id = String::from_utf8_lossy(&key[prefix.len()..]).into_owned();
            out.push((call_id, value.to_vec()));
        }
        Ok(out)
    }

    /// The conversation with the model, in order.
    pub fn history(&self, id: &str) -> Result<Vec<crate::model::Content>, StoreError> {
        check_id(id)?;
        let mut out = Vec::new();
        for item in self.tree()?.scan_prefix(prefixed(b'h', id)) {
            let (key, value) = item?;
            let content = serde_json::from_slice(&value).map_err(|source| StoreError::Corrupt {
                key: format!("{id}/history/{}", event_blocks::seq_of(&key)),
                source,
            })?;
            out.push(content);
        }
        Ok(out)
    }

    /// Prompts that had not finished when last written, in turn order.
    pub fn pending_prompts(&self, id: &str) -> Result<Vec<PendingPrompt>, StoreError> {
        check_id(id)?;
        let mut out: Vec<PendingPrompt> = Vec::new();
        for item in self.tree()?.scan_prefix(prefixed(b'q', id)) {
            let (key, value) = item?;
            let prompt = serde_json::from_slice(&value).map_err(|source| StoreError::Corrupt {
                key: String::from_utf8_lossy(&key).into_owned(),
                source,
            })?;
            out.push(prompt);
        }
        // Turn ids are `turn-<seq>`: order by the number, not the text.
        out.sort_by_key(|p| turn_number(&p.turn_id));
        Ok(out)
    }

    /// Sessions with prompts that had not finished.
    pub fn sessions_with_pending_prompts(&self) -> Result<Vec<String>, StoreError> {
        let mut out: Vec<String> = Vec::new();
        for key in self.tree()?.scan_prefix(b"q").keys() {
            let key = key?;
            let id = String::from_utf8_lossy(&key[1..1 + SESSION_ID_LEN.min(key.len() - 1)])
                .into_owned();
            if out.last() != Some(&id) {
                out.push(id);
            }
        }
        Ok(out)
    }

    /// Makes every write so far durable (they are already durable against
    /// a crash of the daemon; this is against power loss).
    pub async fn flush(&self) -> Result<(), StoreError> {
        self.settle()?;
        let files = self.files.clone();
        match tokio::task::spawn_blocking(move || files.sync()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return self.failed(e),
            Err(e) => return Err(StoreError::Io(format!("syncing event files: {e}"))),
        }
        let db = self.sled()?.db;
        match db.flush_async().await {
            Ok(_) => Ok(()),
            Err(e) => self.failed(e.into()),
        }
    }

    /// Blocking flush, for shutdown paths outside the runtime.
    pub fn flush_blocking(&self) -> Result<(), StoreError> {
        if let Err(e) = self.files.sync() {
            return self.failed(e);
        }
        match self.sled()?.db.flush() {
            Ok(_) => Ok(()),
            Err(e) => self.failed(e.into()),
        }
    }
}

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
fn apply(
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

fn turn_number(turn_id: &str) -> u64 {
    turn_id
        .strip_prefix("turn-")
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX)
}

fn check_id(id: &str) -> Result<(), StoreError> {
    if id.len() == SESSION_ID_LEN && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err(StoreError::BadSessionId(id.to_owned()))
    }
}

/// `tag` + session id: the prefix of one kind of a session's keys.
pub(super) fn prefixed(tag: u8, id: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + SESSION_ID_LEN + 8);
    key.push(tag);
    key.extend_from_slice(id.as_bytes());
    key
}

fn record_key(id: &str) -> Vec<u8> {
    prefixed(b's', id)
}

fn decode_record(id: &str, bytes: &[u8]) -> Result<SessionRecord, StoreError> {
    serde_json::from_slice(bytes).map_err(|source| StoreError::Corrupt {
        key: id.to_owned(),
        source,
    })
}

/// A fresh random session id.
pub fn new_session_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

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
                event_blocks::encode(events.iter().map(|(s, e)| (*s, e.as_bytes())))
            };
            // Blocks 1..=4 and 5..=9, and a replayed block 8..=9 over them.
            tree.insert(event_blocks::block_key(&id, 1), block(1, 4))
                .unwrap();
            tree.insert(event_blocks::block_key(&id, 5), block(5, 9))
                .unwrap();
            tree.insert(event_blocks::block_key(&id, 8), block(8, 9))
                .unwrap();
            tree.insert(event_blocks::block_key(&other, 1), block(1, 2))
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
        assert_eq!(
            store.checkpoint().unwrap(),
            super::super::wal::Checkpoint::Done
        );
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
}
