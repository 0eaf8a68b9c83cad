//! `replace`: replaces exact text in a file (or creates a file when
//! `old_string` is empty and the file is absent).

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::common;
use super::contract::{
    ConfirmationDetails, ContentPart, OutputSink, PinnedRoot, Tool, ToolContext, ToolDisplay,
    ToolError, ToolErrorKind, ToolInvocation, ToolKind, ToolLocation, ToolResult,
};
use super::path::{display_relative, metadata_confined};
pub use super::replace_match::{EditPlan, MatchMode, plan_edit, replace_from_edited};

/// Far above read_file's limit: editing big generated files is legitimate
/// and the matching is linear.
pub const MAX_EDIT_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplaceParams {
    pub file_path: String,
    pub old_string: String,
    pub new_string: String,
    pub expected_replacements: Option<usize>,
    pub modified_by_user: Option<bool>,
}

pub struct ReplaceTool {
    schema: Value,
}

impl Default for ReplaceTool {
    fn default() -> Self {
        Self::new()
    }
}

impl ReplaceTool {
    pub fn new() -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "file_path": {
                    "type": "string",
                    "description": "Absolute path of the file to modify, inside the workspace."
                },
                "old_string": {
                    "type": "string",
                    "description": "The exact text to replace, copied from the file with its whitespace and indentation. Include a few lines of context before and after so it matches only where intended. Empty means: create a new file holding `new_string`."
                },
                "new_string": {
                    "type": "string",
                    "description": "The exact text that takes the place of `old_string`."
                },
                "expected_replacements": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "How many occurrences to replace (default 1). The edit fails unless exactly this many are found."
                },
                "modified_by_user": {
                    "type": "boolean",
                    "description": "Set by the client when a person edited the proposed change before approving it."
                }
            },
            "required": ["file_path", "old_string", "new_string"]
        });
        ReplaceTool { schema }
    }
}

impl Tool for ReplaceTool {
    fn name(&self) -> &str {
        "replace"
    }
    fn display_name(&self) -> &str {
        "Edit"
    }
    fn description(&self) -> &str {
        "Replaces text in a file. By default exactly one occurrence of `old_string` must exist; set `expected_replacements` to replace several. If the exact text is absent, a match that ignores each line's leading and trailing whitespace is tried, and the replacement is re-indented to fit. An empty `old_string` creates a new file. Line endings and the final newline of the file are kept."
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }

    fn build(&self, ctx: &ToolContext, args: &Value) -> Result<Box<dyn ToolInvocation>, ToolError> {
        let params = ReplaceParams {
            file_path: common::req_field(args, "file_path")?,
            old_string: common::req_field(args, "old_string")?,
            new_string: common::req_field(args, "new_string")?,
            expected_replacements: common::opt_field(args, "expected_replacements")?,
            modified_by_user: common::opt_field(args, "modified_by_user")?,
        };
        if params.expected_replacements == Some(0) {
            return Err(ToolError::invalid(
                "`expected_replacements` must be at least 1",
            ));
        }
        if params.old_string == params.new_string {
            return Err(ToolError::invalid(
                "`old_string` and `new_string` are identical: no change to make",
            ));
        }
        let (root, path) = ctx.resolve_for_write(&params.file_path, "file_path")?;
        match metadata_confined(&root, &path) {
            Ok(m) if m.is_dir() => {
                return Err(ToolError::invalid(format!(
                    "`file_path` {} is a directory, not a file",
                    path.display()
                )));
            }
            Ok(m) if !m.is_file() => {
                return Err(ToolError::invalid(format!(
                    "`file_path` {} is not a regular file",
                    path.display()
                )));
            }
            Ok(_) if params.old_string.is_empty() => {
                return Err(ToolError::invalid(format!(
                    "`old_string` is empty but {} already exists; an empty `old_string` only creates new files",
                    path.display()
                )));
            }
            Err(_) if !params.old_string.is_empty() => {
                return Err(ToolError::new(
                    ToolErrorKind::NotFound,
                    format!(
                        "`file_path` {}: file not found; to create it, pass an empty `old_string`",
                        path.display()
                    ),
                ));
            }
            _ => {}
        }
        Ok(Box::new(ReplaceInvocation { root, path, params }))
    }
}

pub struct ReplaceInvocation {
    root: PinnedRoot,
    path: PathBuf,
    params: ReplaceParams,
}

/// The file's text, `None` if absent. Binary and non-UTF-8 files are
/// refused: a lossy round trip would corrupt the bytes the edit never
/// touched.
fn load(root: &PinnedRoot, path: &Path) -> Result<Option<String>, ToolError> {
    let meta = match metadata_confined(root, path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(common::io_error("read", path, &e)),
        Ok(m) => m,
    };
    if meta.len() > MAX_EDIT_BYTES {
        return Err(ToolError::invalid(format!(
            "`file_path` {} is {} bytes, over the {} MB limit for edits",
            path.display(),
            meta.len(),
            MAX_EDIT_BYTES / (1024 * 1024)
        )));
    }
    let bytes =
        super::path::read_confined(root, path).map_err(|e| common::io_error("read", path, &e))?;
    if common::looks_binary(&bytes) {
        return Err(ToolError::invalid(format!(
            "`file_path` {} is a binary file and cannot be edited as text",
            path.display()
        )));
    }
    String::from_utf8(bytes).map(Some).map_err(|_| {
        ToolError::invalid(format!(
            "`file_path` {} is not valid UTF-8 text; editing it would corrupt it",
            path.display()
        ))
    })
}

impl ReplaceInvocation {
    fn plan(&self) -> Result<(Option<String>, EditPlan), ToolError> {
        let current = load(&self.root, &self.path)?;
        let plan = plan_edit(
            current.as_deref(),
            &self.params.old_string,
            &self.params.new_string,
            self.params.expected_replacements.unwrap_or(1),
        )
        .map_err(|mut e| {
            e.message = format!("{}: {}", self.path.display(), e.message);
            e
        })?;
        Ok((current, plan))
    }

    fn run(self, gate: &common::CommitGate) -> Result<ToolResult, ToolError> {
        let (current, plan) = self.plan()?;
        super::atomic_write::atomic_write_in(
            &self.root,
            &self.path,
            plan.new_content.as_bytes(),
            gate,
        )?;
        let shown = self.path.display();
        let mut text = match plan.mode {
            MatchMode::Create => format!("Created new file: {shown} with the provided content."),
            MatchMode::Exact => {
                format!(
                    "Successfully modified file: {shown} ({} replacement(s)).",
                    plan.occurrences
                )
            }
            MatchMode::Flexible => format!(
                "Successfully modified file: {shown} ({} replacement(s)). The exact text was not found; it matched after ignoring each line's surrounding whitespace, and the new text was re-indented to fit.",
                plan.occurrences
            ),
        };
        if self.params.modified_by_user == Some(true) {
            text.push_str(&format!(
                "\nThe user modified the proposed change; `new_string` was: {}",
                self.params.new_string
            ));
        }
        let rel = display_relative(self.root.path(), &self.path);
        let diff = common::file_diff(self.root.path(), &self.path, current, plan.new_content);
        Ok(ToolResult {
            llm_content: vec![ContentPart::Text { text }],
            display: ToolDisplay::FileDiff(diff),
            summary: Some(format!("Edited {rel}")),
            structured: None,
            session_change: None,
        })
    }
}

#[async_trait]
impl ToolInvocation for ReplaceInvocation {
    fn description(&self) -> String {
        let first = |s: &str| {
            s.lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(30)
                .collect::<String>()
        };
        format!(
            "Edit {}: {} => {}",
            display_relative(self.root.path(), &self.path),
            first(&self.params.old_string),
            first(&self.params.new_string)
        )
    }

    fn locations(&self) -> Vec<ToolLocation> {
        vec![ToolLocation {
            path: self.path.clone(),
            line: None,
        }]
    }

    async fn confirmation(&self) -> Result<ConfirmationDetails, ToolError> {
        let me = ReplaceInvocation {
            root: self.root.clone(),
            path: self.path.clone(),
            params: self.params.clone(),
        };
        tokio::task::spawn_blocking(move || {
            let (current, plan) = me.plan()?;
            Ok(ConfirmationDetails::Edit {
                title: format!(
                    "Confirm edit: {}",
                    display_relative(me.root.path(), &me.path)
                ),
                diff: common::file_diff(me.root.path(), &me.path, current, plan.new_content),
            })
        })
        .await
        .map_err(|e| ToolError::execution(format!("internal error: {e}")))?
    }

    async fn execute(
        self: Box<Self>,
        cancel: CancellationToken,
        _output: OutputSink,
    ) -> Result<ToolResult, ToolError> {
        common::blocking_commit(&cancel, move |gate| self.run(gate)).await
    }
}

#[cfg(test)]
#[path = "replace_tests.rs"]
mod tests;
