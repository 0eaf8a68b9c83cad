//! Sessions: the actor per loaded session, its handle, the manager that
//! loads and creates them, and the sled store behind them.

mod actor;
mod applier;
mod blobs;
mod driver;
mod event_blocks;
mod event_files;
mod event_json;
mod handle;
mod maintenance;
mod manager;
pub mod prompts;
pub mod store;
mod tail;
pub mod turn;
mod wal;

pub use actor::ActorDeps;
pub use handle::{FinalCall, PolicyCheck, Published, SessionHandle, Subscription};
pub use maintenance::Maintenance;
pub use manager::{NewSession, SessionManager};
pub use store::{SessionRecord, Store, StoreError};
pub use wal::{CHECKPOINT_EVERY, Checkpoint};

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
    #[error("session `{0}` has stopped (the daemon is shutting down)")]
    Stopped(String),
    #[error("the daemon is shutting down")]
    ShuttingDown,
    #[error("{0}")]
    ModelNotConfigured(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}
