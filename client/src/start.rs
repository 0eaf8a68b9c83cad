//! Reaching the daemon, starting it first when none answers (`gemctl
//! daemon start`, `mcp probe`, `acp`, `mcp serve`): in the background, in
//! its own process group, its output appended to `<socket>.log`.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::Client;
use crate::command::{Ctx, Failure, exit};

/// Whether [`connect_or_start`] started the daemon.
pub(crate) enum Started {
    Now,
    Before,
}

/// A client of the daemon on `ctx.socket`, started first (in the
/// background, its output in `<socket>.log`) when none answers there.
pub(crate) async fn connect_or_start(
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

pub(crate) fn log_path(socket: &Path) -> PathBuf {
    let mut path = socket.as_os_str().to_owned();
    path.push(".log");
    PathBuf::from(path)
}
