//! `gemctl hooks list`: what hooks a workspace's sessions run.

use std::path::PathBuf;

use clap::Subcommand;
use geminid_protocol::api::GeminidApiClient;

use crate::command::{Ctx, Outcome, exit, outln, print_json, resolve_session};

#[derive(Subcommand)]
pub enum HooksCommand {
    /// Every configured hook in the order it runs, its source file and
    /// whether it is enabled
    #[command(after_help = super::examples::HOOKS_LIST)]
    List {
        /// The hooks of this session's workspace
        #[arg(long, conflicts_with = "cwd")]
        session: Option<String>,
        /// The workspace [default: the current directory]
        #[arg(long)]
        cwd: Option<PathBuf>,
    },
}

pub async fn run(ctx: &Ctx, cmd: HooksCommand) -> Outcome {
    let client = ctx.connect().await?;
    let HooksCommand::List { session, cwd } = cmd;
    let session = match session {
        Some(given) => Some(resolve_session(&client, &given).await?),
        None => None,
    };
    let cwd = match (&session, cwd) {
        (Some(_), _) => None,
        (None, Some(cwd)) => Some(cwd),
        (None, None) => std::env::current_dir().ok(),
    };
    let list = client
        .list_hooks(session, cwd.map(|c| c.display().to_string()))
        .await?;
    if ctx.json {
        return print_json(&list);
    }
    if !list.enabled {
        outln!("hooks are disabled (hooksConfig.enabled is false): none of these run");
    }
    if !list.workspace_trusted {
        outln!(
            "{}: not a trusted folder, its own settings' hooks are not read",
            list.cwd
        );
    }
    if list.hooks.is_empty() {
        outln!("no hooks configured");
    }
    for hook in &list.hooks {
        let matcher = hook
            .matcher
            .as_deref()
            .map(|m| format!(" matcher {m:?}"))
            .unwrap_or_default();
        let state = if hook.enabled { "on " } else { "off" };
        outln!(
            "{state} {:<20} {}{matcher}{} timeout {} ms",
            hook.event,
            hook.name,
            if hook.sequential { " sequential" } else { "" },
            hook.timeout_ms
        );
        if hook.name != hook.command {
            outln!("      command {}", hook.command);
        }
        outln!("      from {} ({})", hook.source, hook.layer);
    }
    for problem in &list.problems {
        outln!("problem: {problem}");
    }
    Ok(exit::OK)
}
