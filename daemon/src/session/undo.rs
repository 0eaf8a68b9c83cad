//! The actor's side of checkpoints: which calls are checkpointed (and
//! with what turn), where each turn began, `session.restore` (files back,
//! the conversation rewound, an event for every subscriber) and the two
//! halves of `session.fork` (the source's conversation up to a point; the
//! new session seeded with it).

use std::path::PathBuf;
use std::sync::Arc;

use geminid_protocol::event::EventPayload;

use super::SessionError;
use super::actor::Actor;
use super::handle::ForkPoint;
use crate::checkpoints::{
    Checkpoint, CheckpointError, CheckpointStore, Conflict, FileAction, FilePlan, Restored,
    read_current,
};
use crate::tools::ToolInvocation;

/// A checkpoint to take around one edit call: `before` runs first and
/// must succeed, `after` notes what the call left.
pub(super) struct PendingCheckpoint {
    store: Arc<CheckpointStore>,
    session: String,
    seq: u64,
    call_id: String,
    turn_id: Option<String>,
    tool: String,
    roots: Vec<crate::tools::PinnedRoot>,
    paths: Vec<PathBuf>,
}

impl PendingCheckpoint {
    fn touched(&self) -> crate::checkpoints::Touched<'_> {
        crate::checkpoints::Touched {
            roots: &self.roots,
            paths: &self.paths,
        }
    }

    pub(super) fn before(&self) -> Result<(), CheckpointError> {
        self.store.record_before(
            &self.session,
            self.seq,
            &self.call_id,
            self.turn_id.as_deref(),
            &self.tool,
            self.touched(),
        )
    }

    pub(super) fn after(&self) {
        if let Err(e) = self
            .store
            .record_after(&self.session, self.seq, self.touched())
        {
            // Without it a restore takes these files for changed by
            // someone else, and asks: stricter, never looser.
            tracing::warn!(session = %self.session, call = %self.call_id, error = %e, "could not note what an edit left");
        }
    }
}

impl Actor {
    /// The checkpoint an edit call needs (kinds edit, delete and move),
    /// with the files its locations name.
    pub(super) fn checkpoint_for(
        &mut self,
        call_id: &str,
        invocation: &dyn ToolInvocation,
    ) -> Option<PendingCheckpoint> {
        let call = self.scheduler.call(call_id)?;
        let root = std::path::Path::new(&self.record.cwd);
        let tool = self.deps.registry.get_in(&call.name, root)?;
        if !tool.tool.kind().is_edit() {
            return None;
        }
        let seq = call_id.strip_prefix("call-")?.parse().ok()?;
        let mut paths: Vec<PathBuf> = Vec::new();
        for location in invocation.locations() {
            if !paths.contains(&location.path) {
                paths.push(location.path);
            }
        }
        Some(PendingCheckpoint {
            store: self.deps.checkpoints.clone(),
            session: self.record.id.clone(),
            seq,
            call_id: call_id.to_owned(),
            turn_id: self.call_turns.get(call_id).cloned(),
            tool: call.name.clone(),
            roots: self.ctx.roots().to_vec(),
            paths,
        })
    }

    /// Notes where turn `turn_id` (started at `seq`) begins in the stored
    /// history, so a restore can rewind to it and a fork start there.
    pub(super) fn note_turn_start(&mut self, seq: u64, turn_id: &str) {
        let noted = self
            .conversation
            .stored_len(&self.deps.store, &self.record.id)
            .map_err(|e| e.to_string())
            .and_then(|len| {
                self.deps
                    .checkpoints
                    .turn_started(&self.record.id, seq, turn_id, len)
                    .map_err(|e| e.to_string())
            });
        if let Err(message) = noted {
            self.emit(EventPayload::Error {
                message: format!(
                    "{turn_id}: where it starts could not be noted ({message}); restoring or forking at it will not rewind the conversation"
                ),
            });
        }
    }

    /// `session.checkpoints`.
    pub(super) fn checkpoints(&self) -> Result<Vec<Checkpoint>, SessionError> {
        self.deps
            .checkpoints
            .list(&self.record.id)
            .map_err(|e| SessionError::Checkpoints(e.to_string()))
    }

    fn busy(&self) -> Option<SessionError> {
        if self.prompts.is_running() || self.scheduler.active().next().is_some() {
            return Some(SessionError::Busy(
                "a turn or a call is running; restore between turns (cancel it first)".to_owned(),
            ));
        }
        None
    }

    /// `session.restore`: every file back as it was at `checkpoint`, the
    /// conversation rewound to the start of its turn. Files changed on
    /// disk since the session's last edit make it refuse, unless `force`;
    /// a refusal writes nothing.
    pub(super) fn restore(
        &mut self,
        checkpoint: &str,
        force: bool,
    ) -> Result<Restored, SessionError> {
        if let Some(busy) = self.busy() {
            return Err(busy);
        }
        let store_error = |e: CheckpointError| SessionError::Checkpoints(e.to_string());
        let Some((found, plan)) = self
            .deps
            .checkpoints
            .plan(&self.record.id, checkpoint)
            .map_err(store_error)?
        else {
            let known: Vec<String> = self.checkpoints()?.into_iter().map(|c| c.id).collect();
            return Err(SessionError::InvalidParams(if known.is_empty() {
                format!("no checkpoint `{checkpoint}`: this session has none")
            } else {
                format!(
                    "no checkpoint `{checkpoint}`; this session has `{}`",
                    known.join("`, `")
                )
            }));
        };
        let mut actions = Vec::with_capacity(plan.files.len());
        let mut conflicts = Vec::new();
        for file in &plan.files {
            let current = read_current(self.ctx.roots(), &file.path).map_err(store_error)?;
            let action = file.action(current.as_deref());
            if action == FileAction::Conflict {
                conflicts.push(Conflict {
                    path: file.path.clone(),
                    diff: diff_of(file, current.as_deref()),
                });
            }
            actions.push(action);
        }
        if !conflicts.is_empty() && !force {
            return Err(SessionError::RestoreConflict(conflicts));
        }
        let mut done = Restored {
            checkpoint: found.id.clone(),
            restored: Vec::new(),
            removed: Vec::new(),
            unchanged: Vec::new(),
            rewound_entries: 0,
        };
        for (file, action) in plan.files.iter().zip(actions) {
            if action == FileAction::Keep {
                done.unchanged.push(file.path.clone());
                continue;
            }
            crate::checkpoints::put_back(self.ctx.roots(), file).map_err(store_error)?;
            match file.target {
                Some(_) => done.restored.push(file.path.clone()),
                None => done.removed.push(file.path.clone()),
            }
        }
        self.deps
            .checkpoints
            .drop_from(&self.record.id, plan.from_seq)
            .map_err(store_error)?;
        if let Some(start) = plan.history_start {
            done.rewound_entries = self.rewind_to(start)?;
        }
        let names = |paths: &[PathBuf]| -> Vec<String> {
            paths.iter().map(|p| p.display().to_string()).collect()
        };
        self.emit(EventPayload::CheckpointRestored {
            checkpoint: done.checkpoint.clone(),
            restored: names(&done.restored),
            removed: names(&done.removed),
            rewound_entries: done.rewound_entries,
            forced: force && !conflicts.is_empty(),
        });
        Ok(done)
    }

    /// Cuts the stored history from `start` on out of what goes on (the
    /// record keeps the cut, as it keeps a compression); a compression
    /// that summarized entries past the cut no longer applies. Returns how
    /// many visible entries were taken back.
    fn rewind_to(&mut self, start: u64) -> Result<u64, SessionError> {
        let (store, id) = (&self.deps.store, self.record.id.clone());
        let len = self.conversation.stored_len(store, &id)?;
        if start >= len {
            return Ok(0);
        }
        let before = self.conversation.visible_before(len);
        let kept = self.conversation.visible_before(start);
        self.record.rewound.push((start, len));
        self.conversation.cuts = self.record.rewound.clone();
        if self
            .record
            .compression
            .as_ref()
            .is_some_and(|prefix| prefix.upto > kept)
        {
            self.record.compression = None;
        }
        self.pending.record = Some(self.record.clone());
        Ok(before - kept)
    }

    /// The conversation a fork of this session starts with: everything
    /// visible before the start of `at_turn` (default: all of it).
    pub(super) fn fork_point(&mut self, at_turn: Option<&str>) -> Result<ForkPoint, SessionError> {
        let id = self.record.id.clone();
        let mut history = self.conversation.visible(&self.deps.store, &id)?;
        if let Some(turn) = at_turn {
            let turns = self
                .deps
                .checkpoints
                .turns(&id)
                .map_err(|e| SessionError::Checkpoints(e.to_string()))?;
            let Some(start) = turns.iter().find(|t| t.turn_id == turn) else {
                return Err(SessionError::InvalidParams(format!(
                    "no turn `{turn}` in this session (turns are named in `turnStarted` events)"
                )));
            };
            let keep = self.conversation.visible_before(start.history_start) as usize;
            history.truncate(keep);
        }
        let compression = self
            .record
            .compression
            .clone()
            .filter(|p| p.upto as usize <= history.len());
        Ok(ForkPoint {
            record: self.record.clone(),
            history,
            compression,
        })
    }

    /// A fresh fork takes its source's conversation.
    pub(super) fn seed_fork(&mut self, from: String, at_turn: Option<String>, point: ForkPoint) {
        let entries = point.history.len() as u64;
        for content in point.history {
            self.append_history(content);
        }
        if point.compression.is_some() {
            self.record.compression = point.compression;
            self.pending.record = Some(self.record.clone());
        }
        self.emit(EventPayload::SessionForked {
            from_session: from,
            at_turn,
            history_entries: entries,
        });
    }
}

/// What a person is shown of a conflict: the change from the file as it
/// is now to what the restore would write.
fn diff_of(file: &FilePlan, current: Option<&[u8]>) -> String {
    let label = file.path.display().to_string();
    let text = |bytes: Option<&[u8]>| bytes.map(|b| std::str::from_utf8(b).map(str::to_owned));
    match (text(current), text(file.target.as_deref())) {
        (Some(Err(_)), _) | (_, Some(Err(_))) => format!(
            "binary file {label} differs: {} now, {} at the checkpoint",
            describe(current),
            describe(file.target.as_deref())
        ),
        (now, then) => {
            let now = now.and_then(Result::ok).unwrap_or_default();
            let then = then.and_then(Result::ok).unwrap_or_default();
            let mut diff = crate::tools::builtin::diff::unified_diff(&label, &now, &then);
            if current.is_none() {
                diff.insert_str(0, &format!("({label} is gone now)\n"));
            }
            if file.target.is_none() {
                diff.insert_str(0, &format!("(the restore removes {label})\n"));
            }
            diff
        }
    }
}

fn describe(bytes: Option<&[u8]>) -> String {
    match bytes {
        Some(b) => format!("{} bytes", b.len()),
        None => "no file".to_owned(),
    }
}
