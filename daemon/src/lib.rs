//! `geminid`: a warm local daemon that runs the Gemini CLI tool system for
//! every client on the machine.
//!
//! The binary (`main.rs`) only calls [`cli::main`]. See
//! ARCHITECTURE.md for the map.

pub mod agent;
pub mod checkpoints;
pub mod child_env;
pub mod cli;
pub mod config;
pub mod daemon;
pub mod discovery;
pub mod extension_id;
pub mod extension_settings;
pub mod extensions;
pub mod heap;
pub mod hooks;
pub mod jsonc;
pub mod keychain;
pub mod log_quiet;
pub mod memory;
pub mod model;
pub mod policy;
pub mod problems;
pub mod questions;
pub mod rpc;
pub mod safety;
pub mod sandbox;
pub mod scheduler;
pub mod server;
pub mod session;
pub mod settings_merge;
pub mod sse;
pub mod store;
pub mod tools;
pub mod trust;
pub mod watch;
pub mod wire;

pub use config::DaemonConfig;
pub use daemon::Daemon;
pub use server::run;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
