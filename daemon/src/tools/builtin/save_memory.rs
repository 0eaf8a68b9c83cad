//! `save_memory`: appends a fact to the global GEMINI.md under a fixed
//! heading, so later sessions load it as context.
//!
//! Kind is `Other`: the tool writes a file, but outside the workspace and
//! not as a code edit, so it should neither run unasked in autoEdit mode
//! (which `Edit` would allow) nor count as read-only.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::common;
use super::contract::{
    ConfirmationDetails, ContentPart, OutputSink, Tool, ToolContext, ToolDisplay, ToolError,
    ToolInvocation, ToolKind, ToolLocation, ToolResult,
};

pub const MEMORY_HEADING: &str = "## Gemini Added Memories";

/// Serializes saves within this process; the `flock` below covers other
/// processes (two daemons, or the CLI) sharing the same file.
static MEMORY_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SaveMemoryParams {
    pub fact: String,
}

pub struct SaveMemoryTool {
    schema: Value,
    memory_path: PathBuf,
}

impl SaveMemoryTool {
    /// `global_memory_path` is the global GEMINI.md (normally
    /// `~/.gemini/GEMINI.md`); injected so tests and profiles can move it.
    pub fn new(global_memory_path: PathBuf) -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "fact": {
                    "type": "string",
                    "description": "The fact to remember, as one short self-contained statement (for example \"My preferred test runner is nextest\")."
                }
            },
            "required": ["fact"]
        });
        SaveMemoryTool {
            schema,
            memory_path: global_memory_path,
        }
    }
}

impl Tool for SaveMemoryTool {
    fn name(&self) -> &str {
        "save_memory"
    }
    fn display_name(&self) -> &str {
        "SaveMemory"
    }
    fn description(&self) -> &str {
        "Saves a fact to long-term memory (the user's global GEMINI.md), so it is available in future sessions. Use it when the user asks you to remember something, or states a lasting preference or fact about themselves or their environment. Not for information that only matters in this conversation."
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }

    fn build(
        &self,
        _ctx: &ToolContext,
        args: &Value,
    ) -> Result<Box<dyn ToolInvocation>, ToolError> {
        let raw: String = common::req_field(args, "fact")?;
        let fact = normalize_fact(&raw);
        if fact.is_empty() {
            return Err(ToolError::invalid("`fact` must be a non-empty statement"));
        }
        Ok(Box::new(SaveMemoryInvocation {
            path: self.memory_path.clone(),
            params: SaveMemoryParams { fact },
        }))
    }
}

/// One line, without list markers the model may have added itself (they
/// would double up as "- - fact").
fn normalize_fact(raw: &str) -> String {
    let one_line = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    one_line
        .trim_start_matches(|c: char| c == '-' || c == '*' || c.is_whitespace())
        .to_owned()
}

/// The file content with `fact` added as the last item under
/// [`MEMORY_HEADING`], creating the heading at the end if it is absent.
pub fn add_memory(content: &str, fact: &str) -> String {
    let item = format!("- {fact}\n");
    let lines: Vec<&str> = content.split_inclusive('\n').collect();
    let Some(h) = lines.iter().position(|l| l.trim() == MEMORY_HEADING) else {
        let body = content.trim_end();
        if body.is_empty() {
            return format!("{MEMORY_HEADING}\n{item}");
        }
        return format!("{body}\n\n{MEMORY_HEADING}\n{item}");
    };
    let end = (h + 1..lines.len())
        .find(|&i| lines[i].starts_with('#'))
        .unwrap_or(lines.len());
    // After the section's last non-blank line, so blank lines before the
    // next heading stay where they were.
    let insert_at = (h + 1..end)
        .rev()
        .find(|&i| !lines[i].trim().is_empty())
        .map_or(h + 1, |i| i + 1);
    let mut out = lines[..insert_at].concat();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&item);
    out.push_str(&lines[insert_at..].concat());
    out
}

pub struct SaveMemoryInvocation {
    path: PathBuf,
    params: SaveMemoryParams,
}

/// The memory file's text, empty when it does not exist. Anything but a
/// regular file is refused without blocking (a FIFO would never answer).
fn read_current(path: &Path) -> Result<String, ToolError> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(e) => return Err(common::io_error("read", path, &e)),
    };
    let meta = file
        .metadata()
        .map_err(|e| common::io_error("read", path, &e))?;
    if !meta.is_file() {
        return Err(common::io_error(
            "read",
            path,
            &super::path::not_regular(path),
        ));
    }
    let bytes = super::path::read_sized(&file, meta.len())
        .map_err(|e| common::io_error("read", path, &e))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Read, add, write atomically, all under an exclusive `flock` on the
/// file's directory (the file itself is replaced by rename, so a lock on
/// it would not outlive the write).
fn save_locked(path: &Path, fact: &str, gate: &common::CommitGate) -> Result<(), ToolError> {
    let dir = path
        .parent()
        .ok_or_else(|| ToolError::execution(format!("{} has no parent", path.display())))?;
    std::fs::create_dir_all(dir).map_err(|e| common::io_error("create directory", dir, &e))?;
    let dir_handle = std::fs::File::open(dir).map_err(|e| common::io_error("open", dir, &e))?;
    // The lock is released when `dir_handle` is closed.
    rustix::fs::flock(&dir_handle, rustix::fs::FlockOperation::LockExclusive)
        .map_err(|e| common::io_error("lock", dir, &e.into()))?;
    let current = read_current(path)?;
    // A memory file that is a symlink (dotfiles kept elsewhere) is written
    // where it points, and stays a symlink.
    let target = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    super::atomic_write::atomic_write(&target, add_memory(&current, fact).as_bytes(), gate)?;
    drop(dir_handle);
    Ok(())
}

#[async_trait]
impl ToolInvocation for SaveMemoryInvocation {
    fn description(&self) -> String {
        format!("Remember: {}", self.params.fact)
    }

    fn locations(&self) -> Vec<ToolLocation> {
        vec![ToolLocation {
            path: self.path.clone(),
            line: None,
        }]
    }

    async fn confirmation(&self) -> Result<ConfirmationDetails, ToolError> {
        let path = self.path.clone();
        let current = tokio::task::spawn_blocking(move || read_current(&path))
            .await
            .map_err(|e| ToolError::execution(format!("internal error: {e}")))??;
        let new = add_memory(&current, &self.params.fact);
        let old = if self.path.exists() {
            Some(current)
        } else {
            None
        };
        let diff = common::file_diff(
            self.path.parent().unwrap_or(Path::new("/")),
            &self.path,
            old,
            new,
        );
        Ok(ConfirmationDetails::Edit {
            title: format!("Confirm saving to memory: {}", self.path.display()),
            diff,
        })
    }

    async fn execute(
        self: Box<Self>,
        cancel: CancellationToken,
        _output: OutputSink,
    ) -> Result<ToolResult, ToolError> {
        let guard = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(common::cancelled()),
            g = MEMORY_LOCK.lock() => g,
        };
        let path = self.path.clone();
        let fact = self.params.fact.clone();
        // A cancel ends the call unless the new file is being put in
        // place (then the fact is saved and reported).
        common::blocking_commit(&cancel, move |gate| save_locked(&path, &fact, gate)).await?;
        drop(guard);
        let text = format!("Okay, I've remembered that: \"{}\"", self.params.fact);
        Ok(ToolResult {
            llm_content: vec![ContentPart::Text { text: text.clone() }],
            display: ToolDisplay::Text { text },
            summary: Some("Saved a memory".to_owned()),
            structured: None,
            session_change: None,
        })
    }
}

#[cfg(test)]
#[path = "save_memory_tests.rs"]
mod tests;
