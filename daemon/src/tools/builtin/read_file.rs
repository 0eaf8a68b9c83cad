//! `read_file`: one file's content for the model, paged by lines for text
//! and as inline data for media.

use std::path::PathBuf;

use async_trait::async_trait;
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::common::{self, FileClass, MAX_FILE_BYTES};
use super::contract::{
    ConfirmationDetails, ContentPart, OutputSink, PinnedRoot, Tool, ToolContext, ToolDisplay,
    ToolError, ToolErrorKind, ToolInvocation, ToolKind, ToolLocation, ToolResult,
};
use super::path::{display_relative, metadata_confined};
use super::walk;

/// Lines returned when the call gives no `limit`.
pub const DEFAULT_LINE_LIMIT: usize = 2000;
/// Longer lines are cut so one minified line cannot flood the context.
pub const MAX_LINE_CHARS: usize = 2000;
const LINE_CUT_MARKER: &str = " ... [line truncated]";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadFileParams {
    pub absolute_path: String,
    pub offset: Option<usize>,
    pub limit: Option<usize>,
}

pub struct ReadFileTool {
    schema: Value,
}

impl Default for ReadFileTool {
    fn default() -> Self {
        Self::new()
    }
}

impl ReadFileTool {
    pub fn new() -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "absolute_path": {
                    "type": "string",
                    "description": "Absolute path of the file to read, inside the workspace (for example /home/me/project/src/main.rs). Relative paths are refused."
                },
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Text files only: the 0-based line to start from. Use it with `limit` to page through large files."
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Text files only: how many lines to return at most (default 2000)."
                }
            },
            "required": ["absolute_path"]
        });
        ReadFileTool { schema }
    }
}

impl Tool for ReadFileTool {
    fn name(&self) -> &str {
        "read_file"
    }
    fn display_name(&self) -> &str {
        "ReadFile"
    }
    fn description(&self) -> &str {
        "Reads one file from the local file system. Text comes back without line numbers; files with more than 2000 lines (or a given `limit`) are returned in part, with a note saying which lines are shown and which `offset` reads on. Images, PDF, audio and video come back as inline data. Other binary files are not displayed."
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }

    fn build(&self, ctx: &ToolContext, args: &Value) -> Result<Box<dyn ToolInvocation>, ToolError> {
        let params = ReadFileParams {
            absolute_path: common::req_field(args, "absolute_path")?,
            offset: common::opt_field(args, "offset")?,
            limit: common::opt_field(args, "limit")?,
        };
        if params.limit == Some(0) {
            return Err(ToolError::invalid("`limit` must be at least 1"));
        }
        let (root, path) = ctx.resolve(&params.absolute_path, "absolute_path")?;
        let meta = metadata_confined(&root, &path).map_err(|e| {
            ToolError::new(
                ToolErrorKind::NotFound,
                format!("`absolute_path` {}: file not found ({e})", path.display()),
            )
        })?;
        if meta.is_dir() {
            return Err(ToolError::invalid(format!(
                "`absolute_path` {} is a directory, not a file (use list_directory)",
                path.display()
            )));
        }
        // A FIFO or device would block the read or never end.
        if !meta.is_file() {
            return Err(ToolError::invalid(format!(
                "`absolute_path` {} is not a regular file",
                path.display()
            )));
        }
        if let Some(rules) = walk::ignored_by(&root, &path, &ctx.settings.filtering) {
            return Err(ToolError::new(
                ToolErrorKind::PathNotAllowed,
                format!(
                    "`absolute_path` {} is ignored by {rules} and cannot be read{}",
                    path.display(),
                    walk::opt_out_hint(&rules)
                ),
            ));
        }
        Ok(Box::new(ReadFileInvocation { root, path, params }))
    }
}

pub struct ReadFileInvocation {
    root: PinnedRoot,
    path: PathBuf,
    params: ReadFileParams,
}

/// A window of a text file, formatted for the model.
#[derive(Debug, PartialEq, Eq)]
pub struct TextWindow {
    pub text: String,
    /// 1-based first line shown and last line shown; `total` lines in all.
    pub first: usize,
    pub last: usize,
    pub total: usize,
    pub truncated: bool,
}

/// Selects lines `offset..offset+limit` of `content`, cutting long lines.
/// Errors only when `offset` lies past the end of a non-empty file.
pub fn text_window(content: &str, offset: usize, limit: usize) -> Result<TextWindow, ToolError> {
    let total = content.lines().count();
    if offset > 0 && offset >= total {
        return Err(ToolError::invalid(format!(
            "`offset` {offset} is past the end of the file, which has {total} lines"
        )));
    }
    let mut text = String::new();
    let mut shown = 0;
    let mut cut_lines = false;
    for line in content.lines().skip(offset).take(limit) {
        if shown > 0 {
            text.push('\n');
        }
        match line.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => {
                text.push_str(&line[..cut]);
                text.push_str(LINE_CUT_MARKER);
                cut_lines = true;
            }
            None => text.push_str(line),
        }
        shown += 1;
    }
    let first = if shown == 0 { 0 } else { offset + 1 };
    let last = offset + shown;
    let partial = offset > 0 || last < total;
    Ok(TextWindow {
        text,
        first,
        last,
        total,
        truncated: partial || cut_lines,
    })
}

impl ReadFileInvocation {
    /// Opens the file (confined) and checks what it is now: the file seen
    /// at validation may have been replaced since.
    fn open(&self) -> Result<(std::fs::File, u64), ToolError> {
        // Non-blocking: a FIFO swapped in since validation must not hang
        // the open (for a regular file the flag changes nothing).
        let flags = rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK;
        let (file, meta) = super::path::open_confined_file(&self.root, &self.path, flags)
            .map_err(|e| common::io_error("read", &self.path, &e))?;
        if !meta.is_file() {
            return Err(ToolError::invalid(format!(
                "`absolute_path` {} is not a regular file",
                self.path.display()
            )));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(ToolError::invalid(format!(
                "`absolute_path` {} is {} bytes, over the {} MB limit for read_file",
                self.path.display(),
                meta.len(),
                MAX_FILE_BYTES / (1024 * 1024)
            )));
        }
        Ok((file, meta.len()))
    }

    fn run(self, file: std::fs::File, len: u64) -> Result<ToolResult, ToolError> {
        let rel = display_relative(self.root.path(), &self.path);
        let bytes = super::path::read_sized(&file, len)
            .map_err(|e| common::io_error("read", &self.path, &e))?;
        match common::classify(&self.path, &bytes) {
            FileClass::Media(mime) => {
                let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
                let note = format!("Read {mime} file {rel} ({} bytes)", bytes.len());
                Ok(ToolResult {
                    llm_content: vec![ContentPart::InlineData {
                        mime_type: mime.to_owned(),
                        data,
                    }],
                    display: ToolDisplay::Text { text: note.clone() },
                    summary: Some(note),
                    structured: None,
                    session_change: None,
                })
            }
            FileClass::Binary => {
                let mut r = ToolResult::text(format!(
                    "Cannot display content of binary file: {}",
                    self.path.display()
                ));
                r.summary = Some(format!("Skipped binary file {rel}"));
                Ok(r)
            }
            FileClass::Text => {
                let content = common::decode_text(bytes);
                let offset = self.params.offset.unwrap_or(0);
                let limit = self.params.limit.unwrap_or(DEFAULT_LINE_LIMIT);
                let w = text_window(&content, offset, limit)?;
                let (llm, summary) = if w.truncated {
                    let note = if w.last < w.total {
                        format!(
                            "[File content truncated: showing lines {}-{} of {} total lines. To read more, call read_file again with offset={}.]",
                            w.first, w.last, w.total, w.last
                        )
                    } else {
                        format!(
                            "[File content truncated: showing lines {}-{} of {} total lines; some long lines were cut.]",
                            w.first, w.last, w.total
                        )
                    };
                    (
                        format!("{note}\n\n{}", w.text),
                        format!(
                            "Read lines {}-{} of {} from {rel}",
                            w.first, w.last, w.total
                        ),
                    )
                } else {
                    (w.text, format!("Read {rel}"))
                };
                Ok(ToolResult {
                    llm_content: vec![ContentPart::Text { text: llm }],
                    display: ToolDisplay::Text {
                        text: summary.clone(),
                    },
                    summary: Some(summary),
                    structured: None,
                    session_change: None,
                })
            }
        }
    }
}

#[async_trait]
impl ToolInvocation for ReadFileInvocation {
    fn description(&self) -> String {
        format!("Read {}", display_relative(self.root.path(), &self.path))
    }

    fn locations(&self) -> Vec<ToolLocation> {
        vec![ToolLocation {
            path: self.path.clone(),
            line: self.params.offset.map(|o| o as u64 + 1),
        }]
    }

    async fn confirmation(&self) -> Result<ConfirmationDetails, ToolError> {
        Ok(ConfirmationDetails::Info {
            title: "Confirm file read".to_owned(),
            prompt: format!("Read {}", self.path.display()),
            urls: Vec::new(),
        })
    }

    async fn execute(
        self: Box<Self>,
        cancel: CancellationToken,
        _output: OutputSink,
    ) -> Result<ToolResult, ToolError> {
        if cancel.is_cancelled() {
            return Err(common::cancelled());
        }
        let (file, len) = self.open()?;
        // A small file reads in microseconds (page cache): cheaper inline
        // than the two thread hops of the blocking pool.
        if len <= INLINE_READ_MAX {
            return self.run(file, len);
        }
        common::blocking(&cancel, move || self.run(file, len)).await
    }
}

/// Files up to this size are read on the async worker.
const INLINE_READ_MAX: u64 = 64 * 1024;

#[cfg(test)]
#[path = "read_file_tests.rs"]
mod tests;
