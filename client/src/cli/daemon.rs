//! `gemctl daemon start|stop|status`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Subcommand;
use geminid_protocol::api::GeminidApiClient;

use crate::Client;
use crate::command::{Ctx, Outcome, exit, outln, print_json};
use crate::start::{Started, connect_or_start, log_path};

#[derive(Subcommand)]
pub enum DaemonCommand {
    /// Start geminid in the background unless one already answers; its
    /// log goes to the socket's path plus `.log`
    /// ($XDG_RUNTIME_DIR/geminid.sock.log)
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

fn report_running(ctx: &Ctx, client: &Client, what: &str) -> Outcome {
    if ctx.json {
        return print_json(&serde_json::json!({
            "state": what,
            "pid": client.daemon.pid,
            "socket": ctx.socket,
        }));
    }
    outln!(
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
                outln!("geminid is not running on {}", ctx.socket.display());
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
    outln!("geminid (pid {pid}) stopped");
    Ok(exit::OK)
}

async fn status(ctx: &Ctx) -> Outcome {
    let client = ctx.connect().await?;
    let status = client.status().await?;
    if ctx.json {
        return print_json(&status);
    }
    outln!("geminid {} (pid {})", status.daemon_version, status.pid);
    outln!("  socket       {}", status.socket);
    outln!("  data dir     {}", status.data_dir);
    outln!(
        "  log          {} (when started by gemctl)",
        log_path(Path::new(&status.socket)).display()
    );
    outln!("  uptime       {:.1} s", status.uptime_ms as f64 / 1000.0);
    outln!("  connections  {}", status.connections);
    outln!(
        "  sessions     {} stored, {} loaded",
        status.sessions_total,
        status.sessions_loaded
    );
    outln!("  tools        {}", status.tools);
    if let Some(rss) = status.rss_bytes {
        outln!("  memory       {:.1} MB resident", rss as f64 / 1e6);
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
        outln!(
            "  model        {} via {} at {} ({key})",
            model.model,
            model.provider,
            model.base_url
        );
        if let Some(problem) = &model.problem {
            outln!("               {problem}");
        }
        for note in &model.notes {
            println!("               not used: {note}");
        }
    }
    if let Some(error) = &status.store_error {
        println!("  store        {error}");
    }
    if !status.config_problems.is_empty() {
        println!("  configuration problems:");
        for p in &status.config_problems {
            let line = p.line.map(|l| format!(":{l}")).unwrap_or_default();
            println!("    [{}] {}{line}: {}", p.area, p.file, p.message);
            if let Some(kept) = &p.kept {
                println!("        {kept}");
            }
        }
    }
    if !status.unused_settings.is_empty() {
        println!("  unused settings (not read by geminid; a typo?):");
        for key in &status.unused_settings {
            println!("    {key}");
        }
    }
    if let Some(sandbox) = &status.sandbox {
        match &sandbox.missing {
            None => println!(
                "  sandbox      available (Landlock ABI {}, user and network namespaces)",
                sandbox.landlock_abi
            ),
            Some(why) => println!(
                "  sandbox      UNAVAILABLE: {why}; sandboxed sessions run commands unsandboxed (mode \"required\" refuses them)"
            ),
        }
    }
    Ok(exit::OK)
}
