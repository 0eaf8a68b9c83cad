//! `gemctl memory show|reload`: the GEMINI.md memory a workspace's turns get.

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::turn::{ImportNode, MemoryInfo};

use crate::command::{Ctx, Outcome, exit, outln, print_json};

#[derive(clap::Subcommand)]
pub enum MemoryCommand {
    /// Print the merged memory text and each file's import tree
    #[command(after_help = super::examples::MEMORY_SHOW)]
    Show {
        /// A session (its workspace); else --cwd
        #[arg(long)]
        session: Option<String>,
        /// A workspace directory [default: .]
        #[arg(long)]
        cwd: Option<String>,
    },
    /// Read the memory again (also finds new GEMINI.md files)
    #[command(after_help = super::examples::MEMORY_RELOAD)]
    Reload {
        #[arg(long)]
        session: Option<String>,
        #[arg(long)]
        cwd: Option<String>,
    },
}

pub async fn run(ctx: &Ctx, cmd: MemoryCommand) -> Outcome {
    let client = ctx.connect().await?;
    let (reload, session, cwd) = match cmd {
        MemoryCommand::Show { session, cwd } => (false, session, cwd),
        MemoryCommand::Reload { session, cwd } => (true, session, cwd),
    };
    let session = match session {
        Some(given) => Some(crate::command::resolve_session(&client, &given).await?),
        None => None,
    };
    let cwd = match (&session, cwd) {
        (Some(_), cwd) => cwd,
        (None, cwd) => Some(
            std::path::absolute(cwd.as_deref().unwrap_or("."))
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| ".".to_owned()),
        ),
    };
    let info = if reload {
        client.reload_memory(session, cwd).await?
    } else {
        client.show_memory(session, cwd).await?
    };
    if ctx.json {
        return print_json(&info);
    }
    print_memory(&info);
    Ok(exit::OK)
}

fn print_memory(info: &MemoryInfo) {
    if info.files.is_empty() {
        outln!("no memory files for {}", info.workspace);
        return;
    }
    outln!("memory for {}:", info.workspace);
    for file in &info.files {
        print_tree(file, 1);
    }
    outln!();
    outln!("{}", info.text);
}

fn print_tree(node: &ImportNode, depth: usize) {
    outln!("{}{}", "  ".repeat(depth), node.path);
    for child in &node.imports {
        print_tree(child, depth + 1);
    }
}
