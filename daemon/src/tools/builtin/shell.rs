//! `run_shell_command`: runs `bash -c <command>` in its own process group.
//!
//! Lifecycle decisions:
//! * stdout and stderr go to one shared pipe, so they are merged in exactly
//!   the order written; ANSI escapes are stripped; deltas are streamed,
//!   coalesced (at most every 100 ms or 8 KiB).
//! * Background jobs are reported: the members of bash's process group
//!   left when it exits (one `killpg(pgid, 0)`, `/proc` only when the
//!   group is not empty).
//! * On normal exit, background jobs are left running (as the reference
//!   does) and their PIDs reported; we stop reading the pipes shortly after
//!   the shell exits, so a job that keeps writing may get SIGPIPE.
//! * On cancel or timeout the whole tree is killed: SIGTERM to the group and
//!   to any group a descendant moved to, then SIGKILL after a grace period.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::contract::{
    ConfirmationDetails, OutputSink, PinnedRoot, Tool, ToolContext, ToolError, ToolErrorKind,
    ToolInvocation, ToolKind, ToolLocation, ToolResult,
};
use super::params::parse;
use super::path::display_relative;
use super::shell_exec::{Ended, Outcome, ShellConfig, run_wrapped};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShellParams {
    command: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    directory: Option<String>,
    /// `false` asks to run outside the sandbox (a separate approval).
    #[serde(default)]
    sandbox: Option<bool>,
}

pub struct ShellTool {
    schema: Value,
    config: ShellConfig,
}

impl ShellTool {
    pub fn new(config: ShellConfig) -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "Exact bash command to run as `bash -c <command>`."
                },
                "description": {
                    "type": "string",
                    "description": "Short description of the command, shown to the user."
                },
                "directory": {
                    "type": "string",
                    "description": "Directory to run in, relative to the workspace root (default: the root). Must exist."
                },
                "sandbox": {
                    "type": "boolean",
                    "description": "Set to false only to run a command the sandbox refused, outside it; that always needs the user's approval."
                }
            },
            "required": ["command"]
        });
        ShellTool { schema, config }
    }
}

impl Default for ShellTool {
    fn default() -> Self {
        Self::new(ShellConfig::default())
    }
}

impl Tool for ShellTool {
    fn name(&self) -> &str {
        "run_shell_command"
    }
    fn display_name(&self) -> &str {
        "Shell"
    }
    fn description(&self) -> &str {
        "Executes a bash command as `bash -c <command>` in its own process group. \
         Background processes may be started with `&`. Returns the combined output \
         (stdout and stderr in arrival order), exit code, signal, background PIDs and \
         the process group id."
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }

    fn build(&self, ctx: &ToolContext, args: &Value) -> Result<Box<dyn ToolInvocation>, ToolError> {
        let params: ShellParams = parse(&self.schema, args)?;
        if params.command.trim().is_empty() {
            return Err(ToolError::invalid("`command` must not be empty"));
        }
        let root_commands = root_commands(&params.command);
        if root_commands.is_empty() {
            return Err(ToolError::invalid(
                "could not identify the command root of `command`",
            ));
        }
        let root = ctx.root().clone();
        let cwd = match params.directory.as_deref() {
            None | Some("") => root.path().to_path_buf(),
            Some(dir) => resolve_directory(ctx, dir)?,
        };
        // A session's long outputs are its own: saved under its id, deleted
        // with it.
        let mut config = self.config.clone();
        if let Some(session) = &ctx.session_id {
            config.spill_dir = super::shell_output::session_spill_dir(&config.spill_dir, session);
        }
        config.max_stored_bytes = ctx.settings.shell_max_stored_output;
        config.workspace = Some(ctx.root().path().to_path_buf());
        Ok(Box::new(ShellInvocation {
            root,
            cwd,
            params,
            root_commands,
            config,
            sandbox: ctx.sandbox.clone(),
            network_granted: false,
            roots: ctx.roots().to_vec(),
        }))
    }
}

/// Checks `directory`: relative, inside the root after resolving symlinks,
/// existing, and a directory.
fn resolve_directory(ctx: &ToolContext, dir: &str) -> Result<PathBuf, ToolError> {
    if Path::new(dir).is_absolute() {
        return Err(ToolError::new(
            ToolErrorKind::PathNotAllowed,
            format!("`directory` must be relative to the workspace root, got absolute path: {dir}"),
        ));
    }
    let joined = ctx.root().path().join(dir);
    let raw = joined
        .to_str()
        .ok_or_else(|| ToolError::invalid("`directory` is not valid UTF-8"))?;
    let (root, resolved) = ctx.resolve(raw, "directory")?;
    match super::path::metadata_confined(&root, &resolved) {
        Ok(m) if m.is_dir() => Ok(resolved),
        Ok(_) => Err(ToolError::invalid(format!(
            "`directory` {dir} is not a directory"
        ))),
        Err(_) => Err(ToolError::new(
            ToolErrorKind::NotFound,
            format!("`directory` {dir} does not exist"),
        )),
    }
}

/// The first word of each simple command, split naively on `&&`, `||`,
/// `;`, `|`, `&` and newlines. Leading `VAR=value` assignments are skipped.
/// The policy engine parses properly; this only feeds "always allow" choices.
pub fn root_commands(command: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in command.split(['&', '|', ';', '\n']) {
        let word = part
            .split_whitespace()
            .map(|w| w.trim_start_matches(['(', '{', '!']))
            .find(|w| !w.is_empty() && !is_assignment(w));
        if let Some(w) = word
            && !out.iter().any(|o| o == w)
        {
            out.push(w.to_owned());
        }
    }
    out
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

struct ShellInvocation {
    root: PinnedRoot,
    cwd: PathBuf,
    params: ShellParams,
    root_commands: Vec<String>,
    config: ShellConfig,
    sandbox: crate::sandbox::SessionSandbox,
    /// A policy rule granted the network (`sandboxNetwork`).
    network_granted: bool,
    /// The session's roots, pinned: the sandbox prepares them from their
    /// descriptors, whatever their paths lead to now.
    roots: Vec<PinnedRoot>,
}

impl ShellInvocation {
    fn directory_label(&self) -> String {
        match self.params.directory.as_deref() {
            None | Some("") => "(root)".to_owned(),
            Some(_) => display_relative(self.root.path(), &self.cwd),
        }
    }
}

#[async_trait]
impl ToolInvocation for ShellInvocation {
    fn grant_network(&mut self) {
        self.network_granted = true;
    }

    fn description(&self) -> String {
        let mut d = self.params.command.clone();
        if self.params.directory.is_some() {
            d.push_str(&format!(" [in {}]", self.directory_label()));
        }
        if let Some(desc) = self.params.description.as_deref().filter(|s| !s.is_empty()) {
            d.push_str(&format!(" ({desc})"));
        }
        d
    }

    fn locations(&self) -> Vec<ToolLocation> {
        vec![ToolLocation {
            path: self.cwd.clone(),
            line: None,
        }]
    }

    async fn confirmation(&self) -> Result<ConfirmationDetails, ToolError> {
        Ok(ConfirmationDetails::Exec {
            title: "Confirm Shell Command".to_owned(),
            command: self.params.command.clone(),
            root_commands: self.root_commands.clone(),
        })
    }

    async fn execute(
        self: Box<Self>,
        cancel: CancellationToken,
        output: OutputSink,
    ) -> Result<ToolResult, ToolError> {
        // The directory is opened from the pinned root without following
        // symlinks and bash starts in what was opened: a directory (or the
        // root) swapped for a link after the check cannot move the command
        // outside.
        let dir = super::path::open_confined(
            &self.root,
            &self.cwd,
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY,
        )
        .map_err(|e| {
            ToolError::new(
                ToolErrorKind::PathNotAllowed,
                format!("cannot open the directory {}: {e}", self.cwd.display()),
            )
        })?;
        let opened = rustix::fs::fstat(&dir).map_err(|e| {
            ToolError::execution(format!("cannot stat {}: {e}", self.cwd.display()))
        })?;
        let mut sandbox = self.sandbox.clone();
        if self.network_granted {
            sandbox.settings.network = true;
        }
        let jail = super::shell_sandbox::Jail::decide(
            &sandbox,
            &self.roots,
            &self.cwd,
            (opened.st_dev, opened.st_ino),
            self.params.sandbox == Some(false),
        )?;
        let outcome = run_wrapped(
            &self.params.command,
            &super::path::fd_path(&dir),
            &self.cwd,
            &self.config,
            jail.prepared,
            cancel,
            output,
        )
        .await?;
        let mut report = format_report(&self.params.command, &self.directory_label(), &outcome);
        report.push_str(&jail.report.finish(&outcome.output.text));
        match outcome.ended {
            Ended::Exited => {
                let mut result = ToolResult::text(report);
                result.summary = Some(format!("Ran: {}", self.params.command));
                Ok(result)
            }
            Ended::Cancelled => Err(ToolError::new(
                ToolErrorKind::Cancelled,
                format!(
                    "Command was cancelled before it completed; its processes were killed.\n{report}"
                ),
            )),
            Ended::TimedOut => Err(ToolError::new(
                ToolErrorKind::Timeout,
                format!(
                    "Command timed out after {} s; its processes were killed.\n{report}",
                    self.config.timeout.as_secs_f64()
                ),
            )),
        }
    }
}

/// Ends every process a command of this daemon started that is still
/// running (background jobs of finished commands included); for shutdown.
pub async fn terminate_leftovers() -> usize {
    super::shell_proc::terminate_all_marked().await
}

/// The result text, field by field like the reference's.
fn format_report(command: &str, directory: &str, o: &Outcome) -> String {
    let none = || "(none)".to_owned();
    let output = if o.output.text.is_empty() {
        "(empty)".to_owned()
    } else {
        o.output.text.trim_end_matches('\n').to_owned()
    };
    let mut s = format!("Command: {command}\nDirectory: {directory}\nOutput: {output}\n");
    s.push_str(&format!(
        "Error: {}\n",
        o.error.clone().unwrap_or_else(none)
    ));
    s.push_str(&format!(
        "Exit Code: {}\n",
        o.exit_code.map(|c| c.to_string()).unwrap_or_else(none)
    ));
    s.push_str(&format!(
        "Signal: {}\n",
        o.signal.map(|c| c.to_string()).unwrap_or_else(none)
    ));
    let pids = if o.background_pids.is_empty() {
        none()
    } else {
        let v: Vec<String> = o.background_pids.iter().map(|p| p.to_string()).collect();
        v.join(", ")
    };
    s.push_str(&format!("Background PIDs: {pids}\n"));
    s.push_str(&format!("Process Group PGID: {}", o.pgid));
    if let Some(p) = &o.output.spill_path {
        if o.output.stored_bytes < o.output.total_bytes {
            s.push_str(&format!(
                "\nOutput was {} bytes; its first {} bytes (the most a call may store, \
                 `geminid.shell.maxStoredOutputBytes`) are saved in: {}",
                o.output.total_bytes,
                o.output.stored_bytes,
                p.display()
            ));
        } else {
            s.push_str(&format!(
                "\nOutput was {} bytes; the full output is saved in: {}",
                o.output.total_bytes,
                p.display()
            ));
        }
    } else if let Some(e) = &o.output.spill_error {
        s.push_str(&format!(
            "\nOutput was truncated; saving the full output failed: {e}"
        ));
    }
    s
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod tests;
