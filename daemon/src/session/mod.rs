//! Sessions: the actor per loaded session (`actor.rs`), the driver of its
//! scheduler (`driver.rs`), its side of prompts and turns (`prompts.rs`),
//! the handle other tasks use (`handle.rs`), the manager that creates,
//! loads and deletes sessions (`manager.rs`) and the idle unload
//! (`idle.rs`).
//!
//! It stands above the store (`store/`, which it commits every step to)
//! and the agent (`agent/`, whose turns it starts and serves by message);
//! neither of them ever names it.

mod actor;
mod driver;
mod handle;
mod hooks;
mod idle;
mod manager;
mod plans;
mod prompts;
mod questions;
mod resource_refs;
mod sampling;
mod undo;

pub use actor::ActorDeps;
pub use handle::{FinalCall, PolicyCheck, SessionHandle, Subscription};
pub use manager::{NewSession, SessionManager};
pub use sampling::SessionSampler;

use crate::store::StoreError;

/// Failures of session operations, mapped to JSON-RPC errors in rpc/.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("no session with id `{0}`")]
    NotFound(String),
    #[error("no tool call with id `{0}` in this session")]
    CallNotFound(String),
    #[error("cwd `{cwd}` cannot be used as a workspace: {reason}")]
    InvalidCwd { cwd: String, reason: String },
    #[error("{0}")]
    InvalidParams(String),
    #[error(
        "session `{id}` cannot be loaded: {reason}; its workspace is gone (delete the session, or put the directory back)"
    )]
    RootChanged { id: String, reason: String },
    #[error("session `{0}` has stopped (the daemon is shutting down)")]
    Stopped(String),
    #[error("the daemon is shutting down")]
    ShuttingDown,
    #[error("{0}")]
    ModelNotConfigured(String),
    #[error("{0}")]
    Busy(String),
    #[error("compression failed: {0}; the history sent to the model is unchanged")]
    CompressionFailed(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Checkpoints(String),
    /// `session.answer` for a question that is no longer open.
    #[error("{0}")]
    QuestionClosed(String),
    #[error("{}", conflict_message(.0))]
    RestoreConflict(Vec<crate::checkpoints::Conflict>),
}

/// Names each file a restore would overwrite, with its diff.
fn conflict_message(conflicts: &[crate::checkpoints::Conflict]) -> String {
    let mut out = format!(
        "not restored: {} file(s) changed on disk since this session's last edit of them; pass force to overwrite them",
        conflicts.len()
    );
    for conflict in conflicts {
        out.push_str(&format!(
            "\n{}:\n{}",
            conflict.path.display(),
            conflict.diff
        ));
    }
    out
}
