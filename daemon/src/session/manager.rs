//! Creates, loads, lists and deletes sessions. A stored session's actor is
//! started on first use and runs until the daemon stops, the session is
//! deleted, or it has been idle for the idle period (`idle.rs`; it is
//! loaded again on the next request).

use std::sync::Mutex;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::SessionError;
use super::actor::{self, ActorDeps};
use super::handle::SessionHandle;
use super::idle::{self, Live, Unloader};
use crate::hooks::lifecycle::StartReason;
use crate::policy::ApprovalMode;
use crate::store::{self, SessionRecord};
use crate::tools::root::{self, PinnedRoot, RootId};

pub struct SessionManager {
    deps: ActorDeps,
    live: Live,
    unloader: Unloader,
    tracker: TaskTracker,
    cancel: CancellationToken,
    /// Told of each stored session loaded again (after a restart), outside
    /// every lock: its workspace's servers start then.
    on_loaded: Mutex<Option<LoadedFn>>,
    /// Told of a stored session's workspace before its actor starts, so
    /// the servers it will see are known (connecting) when its first
    /// prompt, or a prompt left queued, asks which to wait for.
    on_resuming: Mutex<Option<ResumingFn>>,
}

/// Called with a stored session's workspace root before its actor starts.
pub type ResumingFn = std::sync::Arc<dyn Fn(&std::path::Path) + Send + Sync>;

/// Called with a stored session's handle when its actor starts.
pub type LoadedFn = std::sync::Arc<dyn Fn(&SessionHandle) + Send + Sync>;

/// What a new session starts with.
pub struct NewSession {
    pub cwd: String,
    pub approval_mode: ApprovalMode,
    pub title: Option<String>,
    pub interactive: bool,
    /// Accept a root no one normally means (`/`, `/proc/...`).
    pub force: bool,
    /// Which kind of client creates it.
    pub origin: Option<String>,
    /// The session's sandbox mode, over the settings.
    pub sandbox: Option<crate::sandbox::Mode>,
    /// The session's model (`None`: the daemon's).
    pub model: Option<String>,
}

impl SessionManager {
    /// Sessions idle for `idle_after` leave memory (`None`: never).
    pub fn new(deps: ActorDeps, idle_after: Option<Duration>) -> Self {
        let live = Live::default();
        SessionManager {
            deps,
            unloader: Unloader::new(live.clone(), idle_after),
            live,
            tracker: TaskTracker::new(),
            cancel: CancellationToken::new(),
            on_loaded: Mutex::new(None),
            on_resuming: Mutex::new(None),
        }
    }

    /// From now on, `hook` is told of each stored session's workspace
    /// before its actor starts (`resuming`).
    pub fn on_resuming(&self, hook: ResumingFn) {
        *self.on_resuming.lock().unwrap_or_else(|e| e.into_inner()) = Some(hook);
    }

    /// A stored session is about to be loaded again: its workspace's MCP
    /// servers are started (or found running) now, so the first prompt
    /// waits for them as a new session's does. Call before the actor
    /// starts (outside the map's lock).
    fn resuming(&self, record: &SessionRecord) {
        let hook = self
            .on_resuming
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(hook) = hook {
            hook(std::path::Path::new(&record.cwd));
        }
    }

    /// From now on, `hook` is told of every stored session loaded again.
    pub fn on_loaded(&self, hook: LoadedFn) {
        *self.on_loaded.lock().unwrap_or_else(|e| e.into_inner()) = Some(hook);
    }

    /// From now on, `hook` is told of every session unloaded while idle
    /// (see `idle.rs::UnloadedFn`).
    pub fn on_unloaded(&self, hook: super::idle::UnloadedFn) {
        self.unloader.on_unloaded(hook);
    }

    /// The daemon's places the sandbox hides or holds read-only.
    pub fn sandbox_places(&self) -> std::sync::Arc<crate::sandbox::DaemonPlaces> {
        self.deps.sandbox_places.clone()
    }

    pub fn store(&self) -> &store::Store {
        &self.deps.store
    }

    pub async fn create(&self, new: NewSession) -> Result<SessionHandle, SessionError> {
        if self.cancel.is_cancelled() {
            return Err(SessionError::ShuttingDown);
        }
        let cwd = std::path::Path::new(&new.cwd);
        if !cwd.is_absolute() {
            return Err(SessionError::InvalidCwd {
                cwd: new.cwd.clone(),
                reason: "it must be an absolute path".to_owned(),
            });
        }
        let invalid = |reason: String| SessionError::InvalidCwd {
            cwd: new.cwd.clone(),
            reason,
        };
        let canonical = cwd.canonicalize().map_err(|e| invalid(e.to_string()))?;
        if !canonical.is_dir() {
            return Err(invalid("it is not a directory".to_owned()));
        }
        if !new.force
            && let Some(why) = root::unmeant_root(&canonical)
        {
            return Err(invalid(format!(
                "{why}; no workspace is meant to be there (pass force to use it anyway)"
            )));
        }
        // Pinned now, and worked in from now on, whatever the path later
        // names (see `tools/root.rs`).
        let root = PinnedRoot::open(&canonical).map_err(|e| invalid(e.to_string()))?;
        if !new.force
            && let Some(why) = root::unmeant_file_system(&root)
        {
            return Err(invalid(format!(
                "{why}; no workspace is meant to be there (pass force to use it anyway)"
            )));
        }
        let record = SessionRecord {
            id: store::new_session_id(),
            cwd: canonical.display().to_string(),
            title: new.title,
            approval_mode: new.approval_mode,
            interactive: new.interactive,
            created_at: crate::now_ms(),
            root_dev: Some(root.id().dev),
            root_ino: Some(root.id().ino),
            origin: new.origin,
            sandbox: new.sandbox.map(|m| m.as_str().to_owned()),
            tokens: None,
            model: new.model,
            compression: None,
            rewound: Vec::new(),
            allowed: crate::policy::SessionAllowlist::new(),
            todos: Vec::new(),
        };
        // The actor writes the record with its first event and flushes both
        // before it answers anything, so a created session survives kill -9.
        self.start(record, Some(root), StartReason::Create)
    }

    /// `session.fork`: a new session in the source's workspace, mode and
    /// model, whose conversation is the source's up to the start of
    /// `at_turn` (default: all of it).
    pub async fn fork(
        &self,
        source: &str,
        at_turn: Option<String>,
        origin: Option<String>,
    ) -> Result<SessionHandle, SessionError> {
        let point = self.get(source)?.fork_point(at_turn.clone()).await?;
        let from = &point.record;
        let handle = self
            .create(NewSession {
                cwd: from.cwd.clone(),
                approval_mode: from.approval_mode,
                title: from.title.as_ref().map(|t| format!("{t} (fork)")),
                interactive: from.interactive,
                // The source's root was accepted when it was created.
                force: true,
                origin: origin.or_else(|| from.origin.clone()),
                sandbox: from
                    .sandbox
                    .as_deref()
                    .and_then(crate::sandbox::Mode::parse),
                model: from.model.clone(),
            })
            .await?;
        handle.seed_fork(source.to_owned(), at_turn, point).await?;
        Ok(handle)
    }

    /// The live handle of a session, starting its actor if needed.
    pub fn get(&self, id: &str) -> Result<SessionHandle, SessionError> {
        if self.cancel.is_cancelled() {
            return Err(SessionError::ShuttingDown);
        }
        if let Some(handle) = self.lock().get(id).filter(|h| !h.is_stopped()) {
            return Ok(handle.clone());
        }
        if id.len() != store::SESSION_ID_LEN {
            return Err(SessionError::NotFound(id.to_owned()));
        }
        let record = self
            .deps
            .store
            .get_session(id)?
            .ok_or_else(|| SessionError::NotFound(id.to_owned()))?;
        let reason = if self.unloader.was_unloaded(id) {
            StartReason::Reload
        } else {
            StartReason::Resume
        };
        // After a restart the workspace's servers start before the actor,
        // so its first prompt waits for them; an idle reload's are running.
        if reason == StartReason::Resume {
            self.resuming(&record);
        }
        self.start(record, None, reason)
    }

    /// Starts the actor of `record` in `root`, or for a stored session in
    /// its root pinned again: the directory it was created in, checked by
    /// device and inode (a record older than that check is pinned as it is
    /// now). Only a session taken up again after a restart opens its
    /// workspace (`on_loaded`): a new one's creator opens it, and an idle
    /// reload's stayed open.
    fn start(
        &self,
        record: SessionRecord,
        root: Option<PinnedRoot>,
        reason: StartReason,
    ) -> Result<SessionHandle, SessionError> {
        let mut live = self.lock();
        // Another request may have started it meanwhile.
        if let Some(handle) = live.get(&record.id).filter(|h| !h.is_stopped()) {
            return Ok(handle.clone());
        }
        let root = match root {
            Some(root) => root,
            None => repin(&record)?,
        };
        let id = record.id.clone();
        let handle = actor::spawn(
            record,
            root,
            reason,
            self.deps.clone(),
            &self.tracker,
            &self.cancel,
            self.unloader.clone(),
        )?;
        self.unloader.forget(&id);
        live.insert(id, handle.clone());
        drop(live);
        if reason == StartReason::Resume {
            let hook = self
                .on_loaded
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            if let Some(hook) = hook {
                hook(&handle);
            }
        }
        Ok(handle)
    }

    /// Every stored session with its last seq and whether it is loaded,
    /// newest first.
    pub fn list(&self) -> Result<Vec<(SessionRecord, u64, bool)>, SessionError> {
        let live = self.lock().clone();
        let mut out = Vec::new();
        for record in self.deps.store.list_sessions()? {
            let last_seq = self.deps.store.last_seq(&record.id)?;
            let loaded = live.get(&record.id).is_some_and(|h| !h.is_stopped());
            out.push((record, last_seq, loaded));
        }
        out.sort_by(|a, b| {
            b.0.created_at
                .cmp(&a.0.created_at)
                .then(a.0.id.cmp(&b.0.id))
        });
        Ok(out)
    }

    /// Loads every session with prompts a previous run left unfinished,
    /// so their queues go on without waiting for a client.
    pub fn resume_pending_prompts(&self) {
        let ids = match self.deps.store.sessions_with_pending_prompts() {
            Ok(ids) => ids,
            Err(e) => {
                tracing::error!(error = %e, "could not look for unfinished prompts");
                return;
            }
        };
        for id in ids {
            if let Err(e) = self.get(&id) {
                tracing::error!(session = %id, error = %e, "could not resume unfinished prompts");
            }
        }
    }

    pub fn loaded_count(&self) -> usize {
        self.lock().values().filter(|h| !h.is_stopped()).count()
    }

    /// Records `message` as an `error` event in every loaded session.
    pub fn announce(&self, message: String) {
        for handle in self.lock().values() {
            handle.announce(geminid_protocol::event::EventPayload::Error {
                message: message.clone(),
            });
        }
    }

    /// Records `payload` in every loaded session whose workspace (`cwd`)
    /// `to` accepts (without waiting; a busy session drops it). Used for
    /// news such as MCP server status changes.
    pub fn announce_payload_where(
        &self,
        payload: geminid_protocol::event::EventPayload,
        to: impl Fn(&str) -> bool,
    ) {
        for handle in self.lock().values().filter(|h| to(&h.cwd)) {
            handle.announce(payload.clone());
        }
    }

    /// Stops the session's actor (cancelling its calls), then removes it
    /// and its events. Its subscribers get `session.closed`.
    pub async fn delete(&self, id: &str) -> Result<(), SessionError> {
        let handle = self.get(id)?;
        let plans = self.plans_of(id, &handle.cwd);
        handle.stop("session deleted").await?;
        self.lock().remove(id);
        self.unloader.forget(id);
        self.deps.store.delete_session(id)?;
        self.deps.store.flush().await?;
        // What the session's calls saved outside the store goes with it.
        let spill =
            crate::tools::builtin::shell_output::session_spill_dir(&self.deps.shell_output, id);
        match std::fs::remove_dir_all(&spill) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(session = %id, dir = %spill.display(), error = %e, "cannot remove the session's saved shell output");
            }
        }
        self.deps.checkpoints.delete_session(id);
        // Its plans too, as 0.61 removes them with the session.
        if let Some(dir) = plans.parent().filter(|d| d.ends_with(id)) {
            match std::fs::remove_dir_all(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    tracing::warn!(session = %id, dir = %dir.display(), error = %e, "cannot remove the session's plans");
                }
            }
        }
        Ok(())
    }

    /// The session's plans directory (`tools/plans.rs`).
    fn plans_of(&self, id: &str, cwd: &str) -> std::path::PathBuf {
        let gemini = self
            .deps
            .user_settings
            .parent()
            .map(std::path::PathBuf::from)
            .unwrap_or_default();
        let root = std::path::Path::new(cwd);
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        crate::tools::plans::plans_dir(&gemini, &root, id)
    }

    /// Stops every actor: running calls are cancelled and their outcome
    /// persisted. New requests are refused from now on.
    pub async fn shutdown(&self) {
        self.cancel.cancel();
        let handles: Vec<SessionHandle> = self.lock().drain().map(|(_, h)| h).collect();
        for handle in handles {
            if let Err(e) = handle.stop("the daemon is shutting down").await {
                tracing::debug!(session = %handle.id, error = %e, "session already stopped");
            }
        }
        self.tracker.close();
        self.tracker.wait().await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, SessionHandle>> {
        idle::lock(&self.live)
    }
}

/// Pins a stored session's root again, refusing a directory that is not
/// the one the session was created in: replaced, moved away, or turned
/// into a symlink (the open follows none).
fn repin(record: &SessionRecord) -> Result<PinnedRoot, SessionError> {
    let path = std::path::Path::new(&record.cwd);
    match (record.root_dev, record.root_ino) {
        (Some(dev), Some(ino)) => {
            PinnedRoot::reopen(path, RootId { dev, ino }).map_err(|e| SessionError::RootChanged {
                id: record.id.clone(),
                reason: e.to_string(),
            })
        }
        _ => PinnedRoot::open(path).map_err(|e| SessionError::InvalidCwd {
            cwd: record.cwd.clone(),
            reason: e.to_string(),
        }),
    }
}
