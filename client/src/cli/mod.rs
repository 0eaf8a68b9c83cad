//! The `gemctl` command line.
//!
//! Exit status: 0 success; 1 the tool failed or another error; 2 bad usage;
//! 3 the policy denied the call; 4 the call (or turn) was cancelled; 5 the
//! model failed; 6 a turn stopped at a limit; 69 the daemon is not
//! reachable.

mod attach;
mod call;
mod confirm;
mod daemon;
mod examples;
mod extensions;
mod hooks;
mod mcp;
mod mcp_resources;
mod mcp_watch;
mod memory;
mod policy;
mod prompt;
pub(crate) mod render;
mod sandbox;
mod session;
mod undo;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use geminid_protocol::session::ApprovalMode;

use crate::command::{Ctx, Outcome, exit};

const AFTER_HELP: &str = "\
Exit status: 0 success, 1 tool error or other failure, 2 bad usage,
3 denied by policy, 4 cancelled, 5 model error, 6 turn limit reached,
69 daemon unreachable.

Examples:
  gemctl daemon start
  gemctl prompt \"what does this project do?\"
  gemctl chat                   # talk with the model here; --session $S to join
  S=$(gemctl session new --cwd .)
  gemctl call --session $S read_file '{\"absolute_path\": \"'$PWD'/README.md\"}'
  gemctl attach $S          # in another terminal: follow and approve";

/// Talk to geminid, the warm Gemini CLI tool daemon.
#[derive(Parser)]
#[command(name = "gemctl", version, about, after_help = AFTER_HELP)]
pub struct Args {
    /// The daemon's socket [default: $GEMINID_SOCKET, else $XDG_RUNTIME_DIR/geminid.sock]
    #[arg(long, global = true)]
    socket: Option<PathBuf>,
    /// Print machine-readable JSON instead of text
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start, stop or inspect the daemon
    #[command(subcommand, after_help = examples::DAEMON)]
    Daemon(daemon::DaemonCommand),
    /// Create, list, show and remove sessions
    #[command(subcommand, after_help = examples::SESSION)]
    Session(session::SessionCommand),
    /// Explain policy decisions
    #[command(subcommand, after_help = examples::POLICY)]
    Policy(policy::PolicyCommand),
    /// MCP servers and tool discovery (list, restart, rediscover, probe)
    #[command(subcommand, after_help = examples::MCP)]
    Mcp(mcp::McpCommand),
    /// Hooks from the settings: what runs, from which file
    #[command(subcommand, after_help = examples::HOOKS)]
    Hooks(hooks::HooksCommand),
    /// The GEMINI.md memory a workspace's turns get
    #[command(subcommand, after_help = examples::MEMORY)]
    Memory(memory::MemoryCommand),
    /// Installed extensions and what each contributes
    #[command(subcommand, after_help = examples::EXTENSIONS)]
    Extensions(extensions::ExtensionsCommand),
    /// What the sandbox lets commands do here, with a self-test
    #[command(subcommand, after_help = examples::SANDBOX)]
    Sandbox(sandbox::SandboxCommand),
    /// Run one prompt and exit (headless; non-interactive unless --interactive)
    #[command(after_help = PROMPT_HELP)]
    Prompt {
        /// An existing session; else a new one in --cwd
        #[arg(long, conflicts_with = "cwd")]
        session: Option<String>,
        /// The workspace of the new session [default: .]
        #[arg(long)]
        cwd: Option<String>,
        /// Approval mode for the session: default, autoEdit or yolo
        #[arg(long)]
        mode: Option<ApprovalMode>,
        /// text: the answer; json: answer, calls and stats at the end;
        /// stream-json: every event as one line as it happens
        #[arg(long, value_enum, default_value = "text")]
        output_format: prompt::OutputFormat,
        /// Ask confirmations here (a new session is otherwise
        /// non-interactive: what would ask is denied)
        #[arg(long)]
        interactive: bool,
        /// Queue the prompt and return at once (prints session and turn ids)
        #[arg(long)]
        detach: bool,
        /// The prompt [default: read from stdin]
        text: Option<String>,
    },
    /// List the tools the daemon offers
    #[command(after_help = examples::TOOLS)]
    Tools {
        /// Only the tools this session is shown (its policy denies none outright)
        #[arg(long)]
        session: Option<String>,
    },
    /// Call one tool through a session's scheduler and policy
    #[command(
        after_help = "Examples:\n  gemctl call --session $S list_directory '{\"path\": \"/home/me/project\"}'"
    )]
    Call {
        /// The session (an id or a unique prefix); without it, a one-off
        /// session in the current directory, removed afterwards
        #[arg(long)]
        session: Option<String>,
        /// The tool's name (see `gemctl tools`)
        tool: String,
        /// The arguments as a JSON object
        #[arg(default_value = "{}")]
        args: String,
    },
    /// Follow a session: replay its history, then live events; answer
    /// confirmations (y once, a session, s server, p always and saved,
    /// e edit, n no)
    #[command(after_help = examples::ATTACH)]
    Attach {
        session: String,
        /// Only replay events after this seq
        #[arg(long, default_value_t = 0)]
        since: u64,
        /// Only watch; never ask
        #[arg(long)]
        no_confirm: bool,
    },
    /// Be an Agent Client Protocol (v1) agent on stdio, for editors such
    /// as Zed; ACP sessions are daemon sessions
    #[command(after_help = examples::ACP)]
    Acp,
    /// Talk with the model interactively: a line editor, streamed answers,
    /// confirmations, slash commands
    #[command(after_help = crate::chat::CHAT_HELP)]
    Chat(crate::chat::ChatArgs),
    /// Print a shell completion script (bash, zsh, fish, ...)
    #[command(after_help = examples::COMPLETIONS)]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Take back the last turn's edits (files and conversation)
    #[command(
        after_help = "A file changed on disk since the session edited it makes undo refuse,\nshowing the diff; --force overwrites it.\n\nExamples:\n  gemctl undo\n  gemctl undo --session $S --force"
    )]
    Undo {
        /// The session [default: the most recently active one here]
        #[arg(long)]
        session: Option<String>,
        /// Overwrite files changed on disk since the session's edits
        #[arg(long)]
        force: bool,
    },
    /// List the points a session can go back to (turns with edits)
    #[command(after_help = examples::CHECKPOINTS)]
    Checkpoints {
        #[arg(long)]
        session: Option<String>,
    },
    /// Go back to a checkpoint: its edits and every later one are taken
    /// back, and the conversation goes on from before it
    #[command(after_help = examples::RESTORE)]
    Restore {
        #[arg(long)]
        session: Option<String>,
        /// A checkpoint `gemctl checkpoints` lists (turn-<n> or call-<n>)
        checkpoint: String,
        #[arg(long)]
        force: bool,
    },
    /// Start a new session from a point of an existing one; prints its id
    #[command(after_help = examples::FORK)]
    Fork {
        #[arg(long)]
        session: Option<String>,
        /// Fork from before this turn [default: after the last one]
        #[arg(long)]
        at_turn: Option<String>,
    },
}

const PROMPT_HELP: &str = "\
Exit status: 0 completed, 3 completed but the policy denied a call,
4 cancelled or interrupted, 5 model error, 6 step or loop limit, 69 daemon
unreachable.

Examples:
  gemctl prompt \"summarize README.md\"
  git diff | gemctl prompt --output-format json
  gemctl prompt --session $S --detach \"run the tests and fix what fails\"
  gemctl attach $S           # later: everything that happened";

/// Runs `gemctl` with the process's arguments.
pub fn main() -> ExitCode {
    let args = Args::parse();
    let client = match &args.command {
        Command::Chat(_) => "gemctl chat",
        Command::Prompt { .. } => "gemctl prompt",
        Command::Call { .. } => "gemctl call",
        Command::Acp => "gemctl acp",
        Command::Mcp(mcp::McpCommand::Serve(_)) => "gemctl mcp serve",
        _ => "gemctl",
    };
    let ctx = Ctx {
        socket: args.socket.clone().unwrap_or_else(crate::default_socket),
        json: args.json,
        client,
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("gemctl: cannot start the async runtime: {e}");
            return ExitCode::from(exit::FAILED);
        }
    };
    let outcome = runtime.block_on(dispatch(&ctx, args.command));
    // A read of stdin may still wait in the blocking pool (a question
    // answered from another terminal): leave it, do not wait for Enter.
    runtime.shutdown_background();
    match outcome {
        Ok(status) => ExitCode::from(status),
        Err(failure) if ctx.json => {
            // --json: errors are JSON too, on stdout where scripts read.
            crate::command::out(format_args!(
                "{}\n",
                serde_json::json!({"error": {"message": failure.message, "exitStatus": failure.status}})
            ));
            ExitCode::from(failure.status)
        }
        Err(failure) => {
            eprintln!("gemctl: {}", failure.message);
            ExitCode::from(failure.status)
        }
    }
}

async fn dispatch(ctx: &Ctx, command: Command) -> Outcome {
    match command {
        Command::Daemon(cmd) => daemon::run(ctx, cmd).await,
        Command::Session(cmd) => session::run(ctx, cmd).await,
        Command::Policy(cmd) => policy::run(ctx, cmd).await,
        Command::Mcp(cmd) => mcp::run(ctx, cmd).await,
        Command::Hooks(cmd) => hooks::run(ctx, cmd).await,
        Command::Memory(cmd) => memory::run(ctx, cmd).await,
        Command::Extensions(cmd) => extensions::run(ctx, cmd).await,
        Command::Sandbox(cmd) => sandbox::run(ctx, cmd).await,
        Command::Prompt {
            session,
            cwd,
            mode,
            output_format,
            interactive,
            detach,
            text,
        } => {
            let args = prompt::PromptArgs {
                session,
                cwd,
                mode,
                format: output_format,
                interactive,
                detach,
                text,
            };
            prompt::prompt(ctx, args).await
        }
        Command::Tools { session } => call::tools(ctx, session).await,
        Command::Call {
            session,
            tool,
            args,
        } => call::call(ctx, session.as_deref(), &tool, &args).await,
        Command::Attach {
            session,
            since,
            no_confirm,
        } => attach::attach(ctx, &session, since, !no_confirm).await,
        Command::Acp => crate::acp::run(&ctx.socket).await,
        Command::Chat(args) => crate::chat::chat(ctx, args).await,
        Command::Undo { session, force } => undo::undo(ctx, session, force).await,
        Command::Checkpoints { session } => undo::checkpoints(ctx, session).await,
        Command::Restore {
            session,
            checkpoint,
            force,
        } => undo::restore(ctx, session, checkpoint, force).await,
        Command::Fork { session, at_turn } => undo::fork(ctx, session, at_turn).await,
        Command::Completions { shell } => {
            let mut command = <Args as clap::CommandFactory>::command();
            // Into memory first: `generate` panics on a write error
            // (`gemctl completions bash | head` closes the pipe).
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut command, "gemctl", &mut script);
            use std::io::Write;
            let _ = std::io::stdout().write_all(&script);
            Ok(exit::OK)
        }
    }
}
