//! `gemctl mcp serve`: the daemon's tool registry as an MCP server on
//! stdio (rmcp), for any MCP client. Every call goes through one daemon
//! session's scheduler and policy: a call that needs approval waits for a
//! person in `gemctl attach`, or is denied when the session is not
//! interactive.
//!
//! Wire types are converted in `convert.rs`; `server.rs` is the handler;
//! `link.rs` keeps the daemon connection (started and reconnected as
//! needed) and the session; `notify.rs` makes a call's snapshots progress
//! and log messages; `paging.rs` pages `tools/list`; `resources.rs` says
//! what the session offers as resources and `watch.rs` follows its history
//! for subscribers.

mod convert;
pub(crate) mod elicit;
mod link;
mod notify;
mod paging;
mod resources;
mod server;
mod tools_watch;
mod watch;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use geminid_protocol::session::ApprovalMode;
use rmcp::ServiceExt;

use crate::command::{Failure, Outcome, exit};
use link::{Link, Target};
use server::DaemonTools;

/// Which session the calls run in.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// Run calls in this existing session (an id or a unique prefix)
    #[arg(long, conflicts_with = "cwd", required_unless_present = "cwd")]
    session: Option<String>,
    /// Run calls in a session rooted at this directory: the one `mcp
    /// serve` used there before (same mode and interactivity), else a new
    /// one (its id goes to stderr)
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// With --cwd: always create a new session
    #[arg(long, requires = "cwd")]
    new_session: bool,
    /// The new session's approval mode: default, autoEdit or yolo
    #[arg(long, requires = "cwd")]
    mode: Option<ApprovalMode>,
    /// Deny, rather than wait for a person, whenever the new session would ask
    #[arg(long, requires = "cwd")]
    non_interactive: bool,
    /// Tools per `tools/list` page (clients follow `nextCursor` for more)
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..))]
    page_size: u16,
}

/// Serves MCP on stdin/stdout until the client closes the connection.
/// The daemon is reached on first use (started when none answers) and
/// again after it restarted; when it cannot be reached, each request is
/// answered with an error saying why.
pub async fn run(socket: &Path, args: ServeArgs) -> Outcome {
    let target = match (args.session, args.cwd) {
        (Some(id), _) => Target::Session(id),
        (None, Some(cwd)) => Target::Cwd {
            cwd,
            mode: args.mode,
            interactive: !args.non_interactive,
            fresh: args.new_session,
        },
        (None, None) => return Err(Failure::new(exit::USAGE, "give --session or --cwd")),
    };
    let link = Arc::new(Link::new(socket.to_path_buf(), target));
    // Early, so the session id is on stderr before the first request; a
    // failure here is told again with every request.
    if let Err(e) = link.get().await {
        eprintln!("gemctl mcp serve: {}", e.message);
    }
    let tools = DaemonTools::new(link, usize::from(args.page_size));
    let running = tools
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| Failure::new(exit::FAILED, format!("MCP handshake failed: {e}")))?;
    running
        .waiting()
        .await
        .map_err(|e| Failure::new(exit::FAILED, format!("MCP server stopped: {e}")))?;
    Ok(exit::OK)
}
