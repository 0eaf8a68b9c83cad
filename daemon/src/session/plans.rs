//! The actor's side of plan mode: every change of the session's approval
//! mode goes through [`Actor::switch_mode`], which keeps the tools'
//! context in step (the sandbox's yolo, plan mode's write confinement)
//! and, on the way into plan mode, creates and pins the session's plans
//! directory (`tools/plans.rs`) as one of its roots.

use std::path::PathBuf;

use geminid_protocol::event::EventPayload;

use super::actor::Actor;
use crate::policy::ApprovalMode;
use crate::wire;

impl Actor {
    /// The user's `general.plan.directory` (inside the project) when it is
    /// set and safe, else `~/.gemini/tmp/<project>/<session id>/plans`
    /// (a refused setting is reported by the daemon, `daemon.rs`).
    pub(super) fn plans_dir(&self) -> PathBuf {
        if let Some(Ok(dir)) = self.configured_plans_dir() {
            return dir;
        }
        let gemini = self
            .deps
            .user_settings
            .parent()
            .map(PathBuf::from)
            .unwrap_or_default();
        crate::tools::plans::plans_dir(&gemini, &self.ctx.workspace_root, &self.record.id)
    }

    fn configured_plans_dir(&self) -> Option<Result<PathBuf, String>> {
        crate::tools::plans::configured_dir_in(&self.deps.user_settings, &self.ctx.workspace_root)
    }

    /// Sets the tools' view of `mode`; in plan mode (or when a plan was
    /// written before) pins the plans directory. A directory that cannot
    /// be made leaves plan mode writing nothing, said in an `error` event.
    pub(super) fn apply_mode(&mut self, mode: ApprovalMode) {
        self.ctx.sandbox.yolo = mode == ApprovalMode::Yolo;
        self.ctx.plan_mode = mode == ApprovalMode::Plan;
        if self.ctx.plans().is_some() {
            return;
        }
        let dir = self.plans_dir();
        if mode != ApprovalMode::Plan && !dir.is_dir() {
            return;
        }
        // A configured directory is pinned only where it was checked: a
        // link made on its way meanwhile leaves plan mode writing nothing.
        let configured = matches!(self.configured_plans_dir(), Some(Ok(_)));
        match crate::tools::plans::pin(&dir) {
            Ok(root) if configured && root.path() != dir => {
                let why = format!(
                    "the plans directory {} resolves to {}",
                    dir.display(),
                    root.path().display()
                );
                tracing::warn!(session = %self.record.id, "{why}");
                self.emit(EventPayload::Error {
                    message: format!("plan mode: {why}; nothing can be written until it is fixed"),
                });
            }
            Ok(root) => self.ctx.set_plans(root),
            Err(why) => {
                tracing::warn!(session = %self.record.id, "{why}");
                self.emit(EventPayload::Error {
                    message: format!("plan mode: {why}; nothing can be written until it can be"),
                });
            }
        }
    }

    /// Switches the session's approval mode: the record, the tools'
    /// context and an `approvalModeChanged` event for every client.
    pub(super) fn switch_mode(&mut self, mode: ApprovalMode) {
        self.record.approval_mode = mode;
        self.apply_mode(mode);
        self.pending.record = Some(self.record.clone());
        self.emit(EventPayload::ApprovalModeChanged {
            approval_mode: wire::approval_mode(mode),
        });
    }
}
