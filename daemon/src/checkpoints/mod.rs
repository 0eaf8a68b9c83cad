//! Checkpoints: owns what the daemon keeps so that edits can be undone.
//! Before an edit call (kind edit, delete or move) changes anything, the
//! prior bytes (or absence) of each file it touches are written to a
//! record of that call; after it, the SHA-256 of what it left. A restore
//! puts the first prior bytes back, and refuses (unless forced) a file
//! someone else changed since the session's last edit of it.
//!
//! Layout, per session under `<data>/checkpoints/<session id>/`:
//! `calls/<seq, 20 digits>` (`record.rs`, written to a temporary name and
//! renamed, so a kill -9 leaves a whole record or none), `calls/<seq>.after`
//! (JSON) and `turns` (one line per turn started: seq, turn id, history
//! index). The cost of a checkpoint is the size of the files the call
//! touches, never the size of the workspace (see ARCHITECTURE.md for why
//! this is not 0.61's shadow git repository).
//!
//! IO edge; `record.rs` and `plan.rs` are pure.

mod outcome;
pub mod plan;
pub mod record;

use crate::tools::PinnedRoot;
use std::collections::BTreeMap;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

pub use outcome::{Conflict, Restored};
pub use plan::{Checkpoint, FileAction, FilePlan, RestorePlan, TurnStart};
pub use record::{CallRecord, FileAfter, FileBefore};

/// Where every session's checkpoints are kept.
#[derive(Debug, Clone)]
pub struct CheckpointStore {
    dir: PathBuf,
}

/// The checkpoint store failed.
#[derive(Debug, thiserror::Error)]
#[error("checkpoint store: {0}")]
pub struct CheckpointError(pub String);

fn io(what: &Path) -> impl Fn(std::io::Error) -> CheckpointError + '_ {
    move |e| CheckpointError(format!("{}: {e}", what.display()))
}

impl CheckpointStore {
    pub fn new(dir: PathBuf) -> Self {
        CheckpointStore { dir }
    }

    fn session_dir(&self, session: &str) -> PathBuf {
        self.dir.join(session)
    }

    fn calls_dir(&self, session: &str) -> PathBuf {
        self.session_dir(session).join("calls")
    }

    fn record_path(&self, session: &str, seq: u64) -> PathBuf {
        self.calls_dir(session).join(format!("{seq:020}"))
    }

    /// Records the files `paths` as they are now, before call `call_id`
    /// (seq `seq`) changes them. Directories are not kept (an edit tool
    /// that names one changes nothing in it that a restore could put back).
    pub fn record_before(
        &self,
        session: &str,
        seq: u64,
        call_id: &str,
        turn_id: Option<&str>,
        tool: &str,
        touched: Touched<'_>,
    ) -> Result<(), CheckpointError> {
        let Touched { roots, paths } = touched;
        let mut files = Vec::with_capacity(paths.len());
        for path in paths {
            // Only what lies beneath the session's roots is kept (edit
            // tools write nowhere else), and it is read from the pinned
            // root's descriptor: a directory swapped for a link cannot make
            // a checkpoint hold a file from outside.
            let Ok(root) = root_of(roots, path) else {
                continue;
            };
            match crate::tools::path::metadata_confined(root, path) {
                Ok(meta) if meta.is_dir() => continue,
                Ok(meta) => files.push(FileBefore {
                    path: path.clone(),
                    bytes: Some(crate::tools::path::read_confined(root, path).map_err(io(path))?),
                    mode: Some(meta.permissions().mode() & 0o7777),
                }),
                Err(e) if e.kind() == ErrorKind::NotFound => files.push(FileBefore {
                    path: path.clone(),
                    bytes: None,
                    mode: None,
                }),
                Err(e) => return Err(io(path)(e)),
            }
        }
        let record = CallRecord {
            seq,
            call_id: call_id.to_owned(),
            turn_id: turn_id.map(str::to_owned),
            tool: tool.to_owned(),
            time: crate::now_ms(),
            files,
        };
        let bytes = record
            .encode()
            .map_err(|e| CheckpointError(e.to_string()))?;
        let dir = self.calls_dir(session);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        write_whole(&self.record_path(session, seq), &bytes)
    }

    /// Records what call `seq` left in `paths`.
    pub fn record_after(
        &self,
        session: &str,
        seq: u64,
        touched: Touched<'_>,
    ) -> Result<(), CheckpointError> {
        let Touched { roots, paths } = touched;
        let mut files = Vec::with_capacity(paths.len());
        for path in paths {
            let Some(text) = path.to_str() else { continue };
            if root_of(roots, path).is_err() {
                continue;
            }
            files.push(FileAfter {
                path: text.to_owned(),
                sha256: read_current(roots, path)?.as_deref().map(record::sha256),
            });
        }
        let json = serde_json::to_vec(&files).map_err(|e| CheckpointError(e.to_string()))?;
        let mut path = self.record_path(session, seq).into_os_string();
        path.push(".after");
        write_whole(Path::new(&path), &json)
    }

    /// Notes that turn `turn_id` started at `seq` with the stored history
    /// `history_start` entries long.
    pub fn turn_started(
        &self,
        session: &str,
        seq: u64,
        turn_id: &str,
        history_start: u64,
    ) -> Result<(), CheckpointError> {
        let dir = self.session_dir(session);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let path = dir.join("turns");
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io(&path))?;
        file.write_all(format!("{seq} {turn_id} {history_start}\n").as_bytes())
            .map_err(io(&path))
    }

    /// Every turn start noted for `session`. A line that does not read
    /// (a torn last line after a kill -9) is left out.
    pub fn turns(&self, session: &str) -> Result<Vec<TurnStart>, CheckpointError> {
        let path = self.session_dir(session).join("turns");
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(&path)(e)),
        };
        Ok(text
            .lines()
            .filter_map(|line| {
                let mut words = line.split(' ');
                let seq = words.next()?.parse().ok()?;
                let turn_id = words.next()?.to_owned();
                let history_start = words.next()?.parse().ok()?;
                Some(TurnStart {
                    seq,
                    turn_id,
                    history_start,
                })
            })
            .collect())
    }

    /// The seqs of the session's records, oldest first.
    fn record_seqs(&self, session: &str) -> Result<Vec<u64>, CheckpointError> {
        let dir = self.calls_dir(session);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(&dir)(e)),
        };
        let mut seqs: Vec<u64> = entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect();
        seqs.sort_unstable();
        Ok(seqs)
    }

    /// Reads the records from `from_seq` on; `full` with their bytes.
    fn records(
        &self,
        session: &str,
        from_seq: u64,
        full: bool,
    ) -> Result<Vec<CallRecord>, CheckpointError> {
        let mut out = Vec::new();
        for seq in self
            .record_seqs(session)?
            .into_iter()
            .filter(|s| *s >= from_seq)
        {
            let path = self.record_path(session, seq);
            let data = std::fs::read(&path).map_err(io(&path))?;
            let decoded = if full {
                CallRecord::decode(&data)
            } else {
                CallRecord::decode_summary(&data)
            };
            // A record we cannot read is never skipped: a restore that
            // left it out would leave that call's edits in place.
            out.push(decoded.map_err(|e| CheckpointError(format!("{}: {e}", path.display())))?);
        }
        Ok(out)
    }

    /// The session's checkpoints, oldest first.
    pub fn list(&self, session: &str) -> Result<Vec<Checkpoint>, CheckpointError> {
        let records = self.records(session, 0, false)?;
        Ok(plan::checkpoints(&records, &self.turns(session)?))
    }

    /// What restoring checkpoint `id` means; `None`: no such checkpoint.
    pub fn plan(
        &self,
        session: &str,
        id: &str,
    ) -> Result<Option<(Checkpoint, RestorePlan)>, CheckpointError> {
        let Some(checkpoint) = self.list(session)?.into_iter().find(|c| c.id == id) else {
            return Ok(None);
        };
        let records = self.records(session, checkpoint.seq, true)?;
        let mut afters = BTreeMap::new();
        for record in &records {
            let mut path = self.record_path(session, record.seq).into_os_string();
            path.push(".after");
            match std::fs::read(&path) {
                Ok(data) => {
                    let files: Vec<FileAfter> = serde_json::from_slice(&data).map_err(|e| {
                        CheckpointError(format!("{}: {e}", Path::new(&path).display()))
                    })?;
                    afters.insert(record.seq, files);
                }
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(io(Path::new(&path))(e)),
            }
        }
        let turns = self.turns(session)?;
        let plan = plan::restore_plan(checkpoint.seq, &records, &afters, &turns);
        Ok(Some((checkpoint, plan)))
    }

    /// Forgets every record from `seq` on (they were restored).
    pub fn drop_from(&self, session: &str, seq: u64) -> Result<(), CheckpointError> {
        for found in self.record_seqs(session)?.into_iter().filter(|s| *s >= seq) {
            let path = self.record_path(session, found);
            let mut after = path.clone().into_os_string();
            after.push(".after");
            for path in [path, PathBuf::from(after)] {
                match std::fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::NotFound => {}
                    Err(e) => return Err(io(&path)(e)),
                }
            }
        }
        Ok(())
    }

    /// Removes everything kept for `session` (it was deleted).
    pub fn delete_session(&self, session: &str) {
        let dir = self.session_dir(session);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(session, dir = %dir.display(), error = %e, "cannot remove the session's checkpoints");
            }
        }
    }
}

/// The files an edit call names and the session roots they lie beneath
/// (read and written only from those roots' descriptors).
#[derive(Clone, Copy)]
pub struct Touched<'a> {
    pub roots: &'a [PinnedRoot],
    pub paths: &'a [PathBuf],
}

/// The session root `path` lies beneath (spelled under its path).
fn root_of<'a>(roots: &'a [PinnedRoot], path: &Path) -> Result<&'a PinnedRoot, CheckpointError> {
    roots.iter().find(|r| r.contains(path)).ok_or_else(|| {
        CheckpointError(format!(
            "{}: not beneath the session's workspace roots",
            path.display()
        ))
    })
}

/// The file's bytes now (`None`: there is none), read from the pinned
/// root's descriptor (symlinks inside the workspace followed, none that
/// leads outside).
pub fn read_current(roots: &[PinnedRoot], path: &Path) -> Result<Option<Vec<u8>>, CheckpointError> {
    let root = root_of(roots, path)?;
    match crate::tools::path::read_confined(root, path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path)(e)),
    }
}

/// Puts `plan`'s target back: the bytes (and mode) through a temporary
/// file renamed over the path, or no file; every step from the pinned
/// root's descriptor, never by path, so a directory swapped for a link
/// since the edit makes the restore fail instead of writing elsewhere. A
/// directory now at the path is left alone (an error).
pub fn put_back(roots: &[PinnedRoot], plan: &FilePlan) -> Result<(), CheckpointError> {
    use rustix::fs::{AtFlags, Mode, OFlags};
    let path = &plan.path;
    let root = root_of(roots, path)?;
    match &plan.target {
        None => {
            let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
                return Err(CheckpointError(format!("{}: no file name", path.display())));
            };
            let dir = match crate::tools::path::open_confined(
                root,
                parent,
                OFlags::PATH | OFlags::DIRECTORY,
            ) {
                Ok(dir) => dir,
                Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(io(parent)(e)),
            };
            match rustix::fs::unlinkat(&dir, name, AtFlags::empty()) {
                Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
                Err(e) => Err(io(path)(e.into())),
            }
        }
        Some(bytes) => {
            let gate = crate::tools::builtin::common::CommitGate::default();
            crate::tools::builtin::atomic_write::atomic_write_in(root, path, bytes, &gate)
                .map_err(|e| CheckpointError(format!("{}: {}", path.display(), e.message)))?;
            if let Some(mode) = plan.mode {
                let file = crate::tools::path::open_confined(
                    root,
                    path,
                    OFlags::RDONLY | OFlags::NONBLOCK,
                )
                .map_err(io(path))?;
                rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))
                    .map_err(|e| io(path)(e.into()))?;
            }
            Ok(())
        }
    }
}

/// Writes `bytes` to a temporary file beside `path`, then renames it over
/// `path`: readers (and a kill -9) see the old file or the new one.
fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut temp = tempfile::Builder::new()
        // The file tools' temp prefix: listings hide it, stale ones are swept.
        .prefix(".geminid-tmp-")
        .tempfile_in(dir)
        .map_err(io(dir))?;
    temp.write_all(bytes).map_err(io(path))?;
    temp.persist(path)
        .map_err(|e| CheckpointError(format!("{}: {}", path.display(), e.error)))?;
    Ok(())
}
