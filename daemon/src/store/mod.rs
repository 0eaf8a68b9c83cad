//! The store: the durable log under everything. Session records, open
//! calls, pending prompts and history in sled, events in a file per
//! session, every step made durable first by the write-ahead log.
//!
//! It owns `wal.rs` (the log), `tail.rs` (steps logged, not yet applied),
//! `applier.rs` (the thread that applies them), `apply.rs` (one step into
//! sled and the event file), `event_files.rs` and `entry.rs` (events on
//! disk), `blobs.rs` (large events), `event_json.rs` (an event's JSON),
//! `database.rs` (sled), `migrate.rs` (layouts of older daemons),
//! `maintenance.rs` (checkpoints and upkeep) and `reads.rs`.
//!
//! It must never know of actors, turns, tools or the protocol's methods:
//! the rest of the daemon uses only what this file exports.
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

mod applier;
mod apply;
mod blobs;
mod database;
mod entry;
mod event_files;
pub mod event_json;
mod maintenance;
mod migrate;
mod reads;
mod tail;
mod types;
mod wal;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use applier::{Applier, ApplySteps};
use apply::apply;
use blobs::{Blobs, INLINE_MAX};
use database::{Sled, open_sled, probe_writable};
use event_files::EventFiles;
use tail::Tail;
use wal::Wal;

pub use maintenance::Maintenance;
pub use tail::Logged;
pub use types::{
    Append, PendingPrompt, Published, SESSION_ID_LEN, SessionRecord, StoreError, new_session_id,
};
pub use wal::{CHECKPOINT_EVERY, Checkpoint};

use types::check_id;

/// Collector rounds per [`Store::reclaim`]: each frees up to eight bags of
/// 64 retired objects, and costs well under a microsecond when there is
/// nothing to free.
const RECLAIM_ROUNDS: usize = 512;

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
    wal: Arc<Wal>,
    blobs: Arc<Blobs>,
    files: Arc<EventFiles>,
    /// Counts writes, so that idle periods can be told apart.
    writes: Arc<AtomicU64>,
    /// Appends logged but not yet applied to sled (`tail.rs`).
    tail: Arc<Tail>,
    /// The thread that applies them (`applier.rs`); `None` in the store
    /// that thread itself holds.
    applier: Option<Arc<Applier>>,
}

impl Store {
    /// Opens (or creates) the store in `dir`.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let Sled { db, tree } = open_sled(dir)?;
        let io = |e: std::io::Error| StoreError::Io(format!("{}: {e}", dir.display()));
        let blobs = Blobs::open(dir).map_err(io)?;
        let files = EventFiles::open(dir).map_err(io)?;
        let (wal, replayed) = Wal::open(
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
        let moved = migrate::move_to_files(&tree, &files)?;
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
            wal: Arc::new(wal),
            blobs: Arc::new(blobs),
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
    pub fn checkpoint(&self) -> Result<Checkpoint, StoreError> {
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

impl ApplySteps for Store {
    fn apply_logged(&self, logged: &mut Logged) -> Result<(), StoreError> {
        Store::apply_logged(self, logged)
    }

    fn apply_together(&self, steps: &mut [Logged]) -> Result<(), StoreError> {
        Store::apply_together(self, steps)
    }
}

#[cfg(test)]
mod tests;
