//! Hooks (Gemini CLI 0.61's contract): commands from the `hooks` section
//! of the settings that see, block or change tool calls, model requests
//! and turns. Pure core: `config.rs` (a settings file's hooks),
//! `plan.rs` (which hooks run for one firing), `output.rs` (what a hook
//! said, and one firing's outputs merged); `tool.rs` what BeforeTool and
//! AfterTool mean for a call, `lifecycle.rs` what SessionStart and
//! SessionEnd mean for a session, `model.rs` what BeforeModel, AfterModel
//! and BeforeToolSelection do to a model request; IO edge: `runner.rs` (processes), `book.rs`
//! (the settings files, per workspace).

mod book;
mod config;
pub mod lifecycle;
pub mod model;
mod output;
mod plan;
mod runner;
pub mod tool;

pub use book::{HookBook, TrustCheck};
pub use config::{DEFAULT_TIMEOUT_MS, HookEntry, HookEvent, HookSource};
pub use output::{HookResult, Merged};
pub use plan::{HookSet, Plan, Subject};
pub use runner::{Fired, HookEnv, HookRun, fire};
