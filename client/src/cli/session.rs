//! `gemctl session new|list|show|rm`.

use std::path::PathBuf;

use clap::Subcommand;
use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::session::{ApprovalMode, SessionInfo};

use crate::command::{Ctx, Failure, Outcome, exit, print_json};

#[derive(Subcommand)]
pub enum SessionCommand {
    /// Create a session and print its id
    #[command(after_help = super::examples::SESSION_NEW)]
    New {
        /// The workspace directory [default: the current directory]
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// default, autoEdit or yolo
        #[arg(long, default_value = "default")]
        mode: ApprovalMode,
        #[arg(long)]
        title: Option<String>,
        /// Deny instead of asking when a call needs approval
        #[arg(long)]
        non_interactive: bool,
        /// Accept a workspace no one normally means (/, or under /proc, /sys, /dev)
        #[arg(long)]
        force: bool,
    },
    /// List sessions, newest first
    #[command(after_help = super::examples::SESSION_LIST)]
    List,
    /// Show one session
    #[command(after_help = super::examples::SESSION_SHOW)]
    Show { id: String },
    /// Delete a session and its history
    #[command(after_help = super::examples::SESSION_RM)]
    Rm { id: String },
}

pub async fn run(ctx: &Ctx, cmd: SessionCommand) -> Outcome {
    let client = ctx.connect().await?;
    match cmd {
        SessionCommand::New {
            cwd,
            mode,
            title,
            non_interactive,
            force,
        } => {
            let cwd = match cwd {
                Some(cwd) => cwd,
                None => std::env::current_dir().map_err(|e| {
                    Failure::new(exit::FAILED, format!("no current directory: {e}"))
                })?,
            };
            let cwd = std::path::absolute(&cwd)
                .map_err(|e| Failure::new(exit::FAILED, format!("{}: {e}", cwd.display())))?;
            let info = client
                .create_session(
                    cwd.display().to_string(),
                    Some(mode),
                    title,
                    Some(!non_interactive),
                    Some(force),
                )
                .await?;
            if ctx.json {
                return print_json(&info);
            }
            println!("{}", info.session_id);
            Ok(exit::OK)
        }
        SessionCommand::List => {
            let sessions = client.list_sessions().await?;
            if ctx.json {
                return print_json(&sessions);
            }
            if sessions.is_empty() {
                println!("no sessions (create one with `gemctl session new`)");
            }
            for s in &sessions {
                println!(
                    "{}  {:<8} {:>6} events  {}{}",
                    s.session_id,
                    s.approval_mode,
                    s.last_seq,
                    s.cwd,
                    s.title
                        .as_deref()
                        .map(|t| format!("  \"{t}\""))
                        .unwrap_or_default()
                );
            }
            Ok(exit::OK)
        }
        SessionCommand::Show { id } => {
            let info = client.get_session(id).await?;
            if ctx.json {
                return print_json(&info);
            }
            show(&info);
            Ok(exit::OK)
        }
        SessionCommand::Rm { id } => {
            client.delete_session(id.clone()).await?;
            if ctx.json {
                return print_json(&serde_json::json!({"deleted": id}));
            }
            println!("deleted {id}");
            Ok(exit::OK)
        }
    }
}

fn show(info: &SessionInfo) {
    println!("session      {}", info.session_id);
    println!("cwd          {}", info.cwd);
    if let Some(title) = &info.title {
        println!("title        {title}");
    }
    println!("mode         {}", info.approval_mode);
    println!("interactive  {}", info.interactive);
    println!("events       {}", info.last_seq);
}
