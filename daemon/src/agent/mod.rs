//! The agent: what a session does with a prompt. The turn loop (`turn.rs`:
//! model stream, function calls through the session, responses back, step
//! and loop limits), the prompt queue (`queue.rs`), the conversation
//! history (`conversation.rs`) and what the model is sent back
//! (`responses.rs`), what is sent and its size (`context.rs`) and
//! compression (`compression.rs`), a prompt's `@path` and other
//! references (`references.rs`), the hooks around each model request
//! (`model_hooks.rs`). Plan mode belongs here too.
//!
//! It talks to its session only through [`TurnMsg`]s on the [`TurnLine`]
//! the session hands each turn, and must never name the session's actor
//! (session/ imports agent/, not the other way round). It writes nothing
//! itself: every event and history entry goes through the actor.

mod compression;
mod context;
mod conversation;
mod model_hooks;
mod queue;
pub mod references;
mod responses;
mod turn;

pub use compression::Compressed;
pub use context::Calibration;
pub use conversation::{AppendError, Conversation, MAX_HISTORY_PAGE};
pub use model_hooks::{ModelHooks, ModelSwitch};
pub use queue::PromptQueue;
pub use responses::{function_responses, not_run};
pub use turn::{
    AgentHooks, ToolsReady, TurnEnd, TurnLimits, TurnLine, TurnMsg, TurnSpec,
    compress_between_turns, run,
};
