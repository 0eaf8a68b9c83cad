//! `gemctl mcp serve`: the daemon's tool registry as an MCP server on
//! stdio (rmcp), for any MCP client. Every call goes through one daemon
//! session's scheduler and policy: a call that needs approval waits for a
//! person in `gemctl attach`, or is denied when the session is not
//! interactive.
//!
//! Wire types are converted in `convert.rs`; `server.rs` is the handler.

mod convert;
mod server;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::session::ApprovalMode;
use rmcp::ServiceExt;

use crate::Client;
use crate::command::{Failure, Outcome, exit};
use server::DaemonTools;

/// Which session the calls run in.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// Run calls in this existing session
    #[arg(long, conflicts_with = "cwd", required_unless_present = "cwd")]
    session: Option<String>,
    /// Create a session rooted at this directory (its id goes to stderr)
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// The new session's approval mode: default, autoEdit or yolo
    #[arg(long, requires = "cwd")]
    mode: Option<ApprovalMode>,
    /// Deny, rather than wait for a person, whenever the new session would ask
    #[arg(long, requires = "cwd")]
    non_interactive: bool,
}

/// Serves MCP on stdin/stdout until the client closes the connection.
pub async fn run(socket: &Path, args: ServeArgs) -> Outcome {
    let client = Client::connect_as(socket, "gemctl-mcp-serve").await?;
    let session_id = match (args.session, args.cwd) {
        (Some(id), _) => client.get_session(id).await?.session_id,
        (None, Some(cwd)) => {
            let cwd = std::path::absolute(&cwd).unwrap_or(cwd);
            let info = client
                .create_session(
                    cwd.display().to_string(),
                    args.mode,
                    Some("MCP server".to_owned()),
                    Some(!args.non_interactive),
                    None,
                )
                .await?;
            eprintln!(
                "gemctl mcp serve: session {} (approve calls with `gemctl attach {}`)",
                info.session_id, info.session_id
            );
            info.session_id
        }
        (None, None) => return Err(Failure::new(exit::USAGE, "give --session or --cwd")),
    };
    let tools = DaemonTools {
        client: Arc::new(client),
        session_id,
    };
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
