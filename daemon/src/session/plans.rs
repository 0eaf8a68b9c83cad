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
    /// `~/.gemini/tmp/<project>/<session id>/plans` of this session.
    pub(super) fn plans_dir(&self) -> PathBuf {
        let gemini = self
            .deps
            .user_settings
            .parent()
            .map(PathBuf::from)
            .unwrap_or_default();
        crate::tools::plans::plans_dir(&gemini, &self.ctx.workspace_root, &self.record.id)
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
        match crate::tools::plans::pin(&dir) {
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
