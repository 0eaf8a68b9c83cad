//! `gemctl daemon start|stop|status`.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use clap::Subcommand;
use geminid_protocol::api::GeminidApiClient;

use crate::Client;
use crate::command::{Ctx, Failure, Outcome, exit, print_json};

#[derive(Subcommand)]
pub enum DaemonCommand {
    /// Start geminid in the background unless one already answers
    #[command(after_help = super::examples::DAEMON_START)]
    Start {
        /// The geminid binary [default: $GEMINID_BIN, else next to gemctl,
        /// else on PATH]
        #[arg(long)]
        bin: Option<PathBuf>,
        /// Directory for the session store (passed to geminid)
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
    /// Ask the daemon to shut down and wait until it has
    #[command(after_help = super::examples::DAEMON_STOP)]
    Stop,
    /// Show the daemon's health and counters
    #[command(after_help = super::examples::DAEMON_STATUS)]
    Status,
}

pub async fn run(ctx: &Ctx, cmd: DaemonCommand) -> Outcome {
    match cmd {
        DaemonCommand::Start { bin, data_dir } => start(ctx, bin, data_dir).await,
        DaemonCommand::Stop => stop(ctx).await,
        DaemonCommand::Status => status(ctx).await,
    }
}

async fn start(ctx: &Ctx, bin: Option<PathBuf>, data_dir: Option<PathBuf>) -> Outcome {
    let (client, started) = connect_or_start(ctx, bin, data_dir).await?;
    let what = match started {
        Started::Now => "started",
        Started::Before => "already running",
    };
    report_running(ctx, &client, what)
}

/// Whether [`connect_or_start`] started the daemon.
pub(super) enum Started {
    Now,
    Before,
}

/// A client of the daemon on `ctx.socket`, started first (in the
/// background, its output in `<socket>.log`) when none answers there.
pub(super) async fn connect_or_start(
    ctx: &Ctx,
    bin: Option<PathBuf>,
    data_dir: Option<PathBuf>,
) -> Result<(Client, Started), Failure> {
    if let Ok(client) = ctx.connect().await {
        return Ok((client, Started::Before));
    }
    let bin = bin.unwrap_or_else(geminid_binary);
    let log_path = log_path(&ctx.socket);
    if let Some(dir) = ctx.socket.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| {
            Failure::new(
                exit::FAILED,
                format!("cannot open log {}: {e}", log_path.display()),
            )
        })?;
    let log_err = log
        .try_clone()
        .map_err(|e| Failure::new(exit::FAILED, e.to_string()))?;
    let mut command = std::process::Command::new(&bin);
    command
        .arg("--socket")
        .arg(&ctx.socket)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        // Its own process group: a Ctrl-C in this terminal must not reach it.
        .process_group(0);
    if let Some(dir) = data_dir {
        command.arg("--data-dir").arg(dir);
    }
    let mut child = command
        .spawn()
        .map_err(|e| Failure::new(exit::FAILED, format!("cannot start {}: {e}", bin.display())))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(client) = ctx.connect().await {
            return Ok((client, Started::Now));
        }
        if let Ok(Some(status)) = child.try_wait() {
            // Lost a race with another `daemon start`: that one serves now.
            if let Ok(client) = ctx.connect().await {
                return Ok((client, Started::Before));
            }
            return Err(Failure::new(
                exit::FAILED,
                format!("geminid exited with {status}; see {}", log_path.display()),
            ));
        }
        if Instant::now() > deadline {
            return Err(Failure::new(
                exit::FAILED,
                format!(
                    "geminid did not answer within 10 s; see {}",
                    log_path.display()
                ),
            ));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn report_running(ctx: &Ctx, client: &Client, what: &str) -> Outcome {
    if ctx.json {
        return print_json(&serde_json::json!({
            "state": what,
            "pid": client.daemon.pid,
            "socket": ctx.socket,
        }));
    }
    println!(
        "geminid {what} (pid {}) on {}",
        client.daemon.pid,
        ctx.socket.display()
    );
    Ok(exit::OK)
}

async fn stop(ctx: &Ctx) -> Outcome {
    let client = match ctx.connect().await {
        Ok(client) => client,
        Err(_) => {
            if !ctx.json {
                println!("geminid is not running on {}", ctx.socket.display());
            }
            return Ok(exit::OK);
        }
    };
    let pid = client.daemon.pid;
    client.shutdown().await?;
    drop(client);
    let deadline = Instant::now() + Duration::from_secs(15);
    while Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if ctx.json {
        return print_json(&serde_json::json!({"state": "stopped", "pid": pid}));
    }
    println!("geminid (pid {pid}) stopped");
    Ok(exit::OK)
}

async fn status(ctx: &Ctx) -> Outcome {
    let client = ctx.connect().await?;
    let status = client.status().await?;
    if ctx.json {
        return print_json(&status);
    }
    println!("geminid {} (pid {})", status.daemon_version, status.pid);
    println!("  socket       {}", status.socket);
    println!("  data dir     {}", status.data_dir);
    println!("  uptime       {:.1} s", status.uptime_ms as f64 / 1000.0);
    println!("  connections  {}", status.connections);
    println!(
        "  sessions     {} stored, {} loaded",
        status.sessions_total, status.sessions_loaded
    );
    println!("  tools        {}", status.tools);
    if let Some(rss) = status.rss_bytes {
        println!("  memory       {:.1} MB resident", rss as f64 / 1e6);
    }
    if let Some(model) = &status.model {
        let what = if model.provider == "vertex-ai" {
            "credentials"
        } else {
            "key"
        };
        let key = if model.key_present {
            format!("{what} from {}", model.key_source)
        } else {
            format!("no {what} ({} not found)", model.key_source)
        };
        println!(
            "  model        {} via {} at {} ({key})",
            model.model, model.provider, model.base_url
        );
        if let Some(problem) = &model.problem {
            println!("               {problem}");
        }
        for note in &model.notes {
            println!("               not used: {note}");
        }
    }
    Ok(exit::OK)
}

/// `$GEMINID_BIN`, else `geminid` next to this executable (a cargo build
/// or an install puts them together), else whatever PATH finds.
fn geminid_binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("GEMINID_BIN").filter(|v| !v.is_empty()) {
        return PathBuf::from(bin);
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("geminid")))
        .filter(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from("geminid"))
}

fn log_path(socket: &Path) -> PathBuf {
    let mut path = socket.as_os_str().to_owned();
    path.push(".log");
    PathBuf::from(path)
}
