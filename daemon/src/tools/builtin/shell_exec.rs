//! Running one wrapped bash command: spawning, reading, streaming, and the
//! end of life (exit, cancel, timeout).

use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use super::contract::{OutputSink, ToolError};
use super::shell_output::{Collected, Collector, Decoder};
use super::shell_proc::{MARKER_VAR, background_members, new_marker, terminate_tree};

/// Limits for shell calls.
#[derive(Debug, Clone)]
pub struct ShellConfig {
    /// Wall-clock limit for one command.
    pub timeout: Duration,
    /// Output beyond this many bytes is cut (head and tail kept) for the model.
    pub output_cap_bytes: usize,
    /// Where the full text of over-long output is saved (the session's own
    /// directory once the tool is built for a session).
    pub spill_dir: PathBuf,
    /// The most output one call saves in its spill file
    /// (`geminid.shell.maxStoredOutputBytes`).
    pub max_stored_bytes: usize,
    /// The session's workspace root, whose `.env` its commands get
    /// (`child_env::for_child_in`); none: the daemon's environment only.
    pub workspace: Option<PathBuf>,
}

/// The most output one call streams as events (and so stores in the
/// session's event log); the rest is only in the spill file.
pub const STREAM_LIMIT: usize = 1024 * 1024;

impl Default for ShellConfig {
    fn default() -> Self {
        ShellConfig {
            timeout: Duration::from_secs(600),
            output_cap_bytes: 64 * 1024,
            spill_dir: std::env::temp_dir().join("geminid-shell-output"),
            max_stored_bytes: crate::tools::settings::DEFAULT_SHELL_MAX_STORED_OUTPUT,
            workspace: None,
        }
    }
}

/// Streamed deltas are sent at most this often...
const FLUSH_INTERVAL: Duration = Duration::from_millis(100);
/// ...unless this much is waiting.
const FLUSH_BYTES: usize = 8 * 1024;
/// After the shell exits, how long we keep reading pipes that background
/// jobs may hold open.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(250);
/// How long we wait to reap the shell after SIGKILL.
const REAP_LIMIT: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Exited,
    Cancelled,
    TimedOut,
}

pub struct Outcome {
    pub output: Collected,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub error: Option<String>,
    pub background_pids: Vec<i32>,
    pub pgid: i32,
    pub ended: Ended,
}

/// Output on its way to the collector and the stream.
struct Sinks {
    decoder: Decoder,
    collector: Collector,
    pending: String,
    stream: OutputSink,
    /// Bytes streamed so far; past [`STREAM_LIMIT`] output is no longer
    /// streamed, so a long output is stored once (in the spill file), not
    /// also in the session's events.
    streamed: usize,
}

impl Sinks {
    fn take(&mut self, text: String) {
        self.collector.push(&text);
        if self.streamed >= STREAM_LIMIT {
            return;
        }
        let room = STREAM_LIMIT - self.streamed;
        if text.len() <= room {
            self.pending.push_str(&text);
        } else {
            let cut = super::shell_output::floor_boundary(&text, room);
            self.pending.push_str(&text[..cut]);
            self.pending.push_str(&format!(
                "\n[output beyond {STREAM_LIMIT} bytes is not streamed; the result says where it is saved]\n"
            ));
            self.streamed = STREAM_LIMIT;
            self.flush();
            return;
        }
        self.streamed += text.len();
        if self.pending.len() >= FLUSH_BYTES {
            self.flush();
        }
    }
    fn bytes(&mut self, chunk: &[u8]) {
        let text = self.decoder.push(chunk);
        self.take(text);
    }
    fn flush(&mut self) {
        if !self.pending.is_empty() {
            self.stream.send(std::mem::take(&mut self.pending));
        }
    }
    fn finish(mut self) -> Collected {
        let rest = self.decoder.finish();
        self.take(rest);
        self.flush();
        self.collector.finish()
    }
}

/// Runs `command` in `cwd` (a path to a directory, possibly a
/// `/proc/self/fd/N` one; `pwd` is what `$PWD` should say).
pub async fn run_wrapped(
    command: &str,
    cwd: &Path,
    pwd: &Path,
    config: &ShellConfig,
    sandbox: Option<crate::sandbox::Prepared>,
    cancel: CancellationToken,
    stream: OutputSink,
) -> Result<Outcome, ToolError> {
    let env = match &config.workspace {
        Some(root) => crate::child_env::for_child_in(root),
        None => crate::child_env::for_child(),
    };
    // The newline before `}` ends a trailing comment or `&` in the command.
    // Background jobs are the members of bash's process group once it has
    // exited (`background_members`).
    let script = format!("{{ {command}\n}}");
    // stdout and stderr share one pipe, so the merged output keeps exactly
    // the order of the writes (two pipes read concurrently can reorder
    // writes that come close together).
    let (reader, writer) =
        std::io::pipe().map_err(|e| ToolError::execution(format!("cannot create a pipe: {e}")))?;
    let writer2 = writer
        .try_clone()
        .map_err(|e| ToolError::execution(format!("cannot duplicate a pipe: {e}")))?;
    let marker = new_marker();
    let mut command = tokio::process::Command::new("bash");
    command
        .arg("-c")
        .arg(script)
        // The daemon's environment and the workspace's `.env`, without
        // secrets (`child_env::for_child_in`).
        .env_clear()
        .envs(env)
        .current_dir(cwd)
        .env("PWD", pwd)
        .env(MARKER_VAR, &marker)
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(writer2))
        .process_group(0)
        .env("GEMINI_CLI", "1")
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat");
    if let Some(prepared) = sandbox {
        crate::sandbox::install(&mut command, prepared);
    }
    let mut child = command
        .spawn()
        .map_err(|e| ToolError::execution(format!("failed to start bash: {e}")))?;
    // Our copies of the pipe's write end go with the Command, so only bash
    // and its children hold it.
    drop(command);
    let pgid = child
        .id()
        .and_then(|p| i32::try_from(p).ok())
        .ok_or_else(|| ToolError::execution("bash exited before its pid was known"))?;
    let receiver = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))
        .map_err(|e| ToolError::execution(format!("cannot read the pipe: {e}")))?;

    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(64);
    let pump_task = tokio::spawn(pump(receiver, tx));

    let mut sinks = Sinks {
        decoder: Decoder::default(),
        collector: Collector::new(
            config.output_cap_bytes,
            &config.spill_dir,
            config.max_stored_bytes,
        ),
        pending: String::new(),
        stream,
        streamed: 0,
    };
    let deadline = tokio::time::sleep(config.timeout);
    tokio::pin!(deadline);
    let mut tick = tokio::time::interval(FLUSH_INTERVAL);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut pipes_open = true;

    let (ended, status) = loop {
        tokio::select! {
            biased;
            _ = cancel.cancelled() => break (Ended::Cancelled, None),
            _ = &mut deadline => break (Ended::TimedOut, None),
            chunk = rx.recv(), if pipes_open => match chunk {
                Some(c) => sinks.bytes(&c),
                None => pipes_open = false,
            },
            status = child.wait() => break (Ended::Exited, Some(status)),
            _ = tick.tick() => sinks.flush(),
        }
    };

    let mut error = None;
    let mut exit_code = None;
    let mut signal = None;
    let mut background_pids = Vec::new();
    match ended {
        Ended::Exited => {
            // The group's members as bash exits, before they may end.
            background_pids = background_members(pgid);
            // Pipes may still hold output; background jobs may hold them open.
            let until = Instant::now() + DRAIN_AFTER_EXIT;
            while pipes_open {
                match tokio::time::timeout_at(until, rx.recv()).await {
                    Ok(Some(c)) => sinks.bytes(&c),
                    Ok(None) | Err(_) => pipes_open = false,
                }
            }
            match status {
                Some(Ok(st)) => {
                    exit_code = st.code();
                    signal = st.signal();
                }
                Some(Err(e)) => error = Some(format!("waiting for bash failed: {e}")),
                None => {}
            }
        }
        Ended::Cancelled | Ended::TimedOut => {
            terminate_tree(pgid, &marker).await;
            match tokio::time::timeout(REAP_LIMIT, child.wait()).await {
                Ok(Ok(st)) => {
                    exit_code = st.code();
                    signal = st.signal();
                }
                Ok(Err(e)) => error = Some(format!("waiting for bash failed: {e}")),
                Err(_) => error = Some("bash did not exit after SIGKILL".to_owned()),
            }
            // Keep whatever output had already arrived.
            while let Ok(c) = rx.try_recv() {
                sinks.bytes(&c);
            }
        }
    }
    pump_task.abort();
    Ok(Outcome {
        output: sinks.finish(),
        exit_code,
        signal,
        error,
        background_pids,
        pgid,
        ended,
    })
}

/// Reads one pipe to its end, sending each chunk on `tx`.
async fn pump<R: tokio::io::AsyncRead + Unpin>(mut r: R, tx: mpsc::Sender<Vec<u8>>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if tx.send(buf[..n].to_vec()).await.is_err() {
                    return;
                }
            }
        }
    }
}
