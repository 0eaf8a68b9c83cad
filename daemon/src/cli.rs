//! The `geminid` command line: parse arguments, set up logging, run.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::DaemonConfig;
use crate::server::{ListenError, RunError};
use clap::Parser;

/// Exit status when another daemon already serves the socket.
pub const EXIT_ALREADY_RUNNING: u8 = 3;

/// The geminid daemon: the Gemini CLI tool system, warm, for every client.
#[derive(Parser)]
#[command(version, about)]
struct Args {
    /// Unix socket to listen on [default: $XDG_RUNTIME_DIR/geminid.sock]
    #[arg(long, env = "GEMINID_SOCKET")]
    socket: Option<PathBuf>,
    /// Directory for the session store [default: $XDG_DATA_HOME/geminid]
    #[arg(long, env = "GEMINID_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Log filter (tracing-subscriber EnvFilter syntax)
    #[arg(long, env = "GEMINID_LOG", default_value = "info")]
    log: String,
}

/// Runs the daemon with the process's arguments.
pub fn main() -> ExitCode {
    crate::heap::share_arenas();
    raise_open_file_limit();
    let args = Args::parse();
    {
        use tracing_subscriber::Layer;
        use tracing_subscriber::layer::SubscriberExt;
        use tracing_subscriber::util::SubscriberInitExt;
        tracing_subscriber::registry()
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_ansi(std::io::stderr().is_terminal())
                    .with_filter(crate::log_quiet::QuietAuthRequired)
                    .with_filter(tracing_subscriber::EnvFilter::new(&args.log)),
            )
            .init();
    }
    let mut config = DaemonConfig::from_env();
    if let Some(socket) = args.socket {
        config.socket = socket;
    }
    if let Some(dir) = args.data_dir {
        config.data_dir = dir;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("geminid: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(crate::run(config));
    // A blocking file operation that never returns (a file system that
    // hangs) must not keep a stopped daemon alive: its thread is left
    // behind after a grace period instead of being waited for.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(RunError::Listen(e @ ListenError::AlreadyRunning(_))) => {
            eprintln!("geminid: {e}; stop it first (gemctl daemon stop) or pick another --socket");
            ExitCode::from(EXIT_ALREADY_RUNNING)
        }
        Err(e) => {
            eprintln!("geminid: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Every loaded session holds its workspace root open (`tools/root.rs`),
/// beside every connection's socket: the soft limit on open files (often
/// 1024) goes up to the hard one, as daemons do.
fn raise_open_file_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        limit.current = limit.maximum;
        if let Err(e) = setrlimit(Resource::Nofile, limit) {
            eprintln!("geminid: could not raise the open-file limit: {e}");
        }
    }
}
