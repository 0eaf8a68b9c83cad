//! `write_file`: creates or overwrites one file with given content.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::common::{self, MAX_FILE_BYTES};
use super::contract::{
    ConfirmationDetails, ContentPart, FileDiff, OutputSink, PinnedRoot, Tool, ToolContext,
    ToolDisplay, ToolError, ToolErrorKind, ToolInvocation, ToolKind, ToolLocation, ToolResult,
};
use super::path::{display_relative, metadata_confined};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteFileParams {
    pub file_path: String,
    pub content: String,
    pub modified_by_user: Option<bool>,
}

pub struct WriteFileTool {
    schema: Value,
}

impl Default for WriteFileTool {
    fn default() -> Self {
        Self::new()
    }
}

impl WriteFileTool {
    pub fn new() -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "file_path": {
                    "type": "string",
                    "description": "Absolute path of the file to write, inside the workspace. Missing parent directories are created."
                },
                "content": {
                    "type": "string",
                    "description": "The complete new content of the file. It replaces whatever the file held."
                },
                "modified_by_user": {
                    "type": "boolean",
                    "description": "Set by the client when a person edited the proposed content before approving it."
                }
            },
            "required": ["file_path", "content"]
        });
        WriteFileTool { schema }
    }
}

impl Tool for WriteFileTool {
    fn name(&self) -> &str {
        "write_file"
    }
    fn display_name(&self) -> &str {
        "WriteFile"
    }
    fn description(&self) -> &str {
        "Writes content to a file, creating it (and any missing parent directories) or replacing it entirely. The person is shown a diff against the current content before the write."
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }

    fn build(&self, ctx: &ToolContext, args: &Value) -> Result<Box<dyn ToolInvocation>, ToolError> {
        let params = WriteFileParams {
            file_path: common::req_field(args, "file_path")?,
            content: common::req_field(args, "content")?,
            modified_by_user: common::opt_field(args, "modified_by_user")?,
        };
        let (root, path) = ctx.resolve_for_write(&params.file_path, "file_path")?;
        match metadata_confined(&root, &path) {
            Ok(m) if m.is_dir() => {
                return Err(ToolError::invalid(format!(
                    "`file_path` {} is a directory; give the path of a file",
                    path.display()
                )));
            }
            Ok(m) if !m.is_file() => {
                return Err(ToolError::invalid(format!(
                    "`file_path` {} is not a regular file (a FIFO, socket or device); only regular files are written",
                    path.display()
                )));
            }
            _ => {}
        }
        // Every existing ancestor must be a directory, or the write cannot
        // create its parents; saying so now beats a confusing I/O error.
        if let Some(blocker) = path
            .ancestors()
            .skip(1)
            .take_while(|a| root.contains(a))
            .find(|a| metadata_confined(&root, a).is_ok_and(|m| !m.is_dir()))
        {
            return Err(ToolError::invalid(format!(
                "`file_path` {}: {} is a file, not a directory",
                path.display(),
                blocker.display()
            )));
        }
        Ok(Box::new(WriteFileInvocation { root, path, params }))
    }
}

pub struct WriteFileInvocation {
    root: PinnedRoot,
    path: PathBuf,
    params: WriteFileParams,
}

/// The current text of `path`, `None` when it does not exist. Content that
/// is not UTF-8 is shown lossily in the diff; it is replaced whole anyway.
pub fn current_text(root: &PinnedRoot, path: &Path) -> Result<Option<String>, ToolError> {
    match metadata_confined(root, path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(common::io_error("read", path, &e)),
        Ok(m) if m.is_dir() => Err(ToolError::invalid(format!(
            "{} is a directory, not a file",
            path.display()
        ))),
        Ok(m) if m.len() > MAX_FILE_BYTES => Err(ToolError::invalid(format!(
            "{} is {} bytes, too large to show a diff against",
            path.display(),
            m.len()
        ))),
        Ok(_) => {
            let bytes = super::path::read_confined(root, path)
                .map_err(|e| common::io_error("read", path, &e))?;
            Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
        }
    }
}

impl WriteFileInvocation {
    fn diff(&self, old: Option<String>) -> FileDiff {
        common::file_diff(
            self.root.path(),
            &self.path,
            old,
            self.params.content.clone(),
        )
    }

    fn run(self, gate: &common::CommitGate) -> Result<ToolResult, ToolError> {
        let old = current_text(&self.root, &self.path)?;
        super::atomic_write::atomic_write_in(
            &self.root,
            &self.path,
            self.params.content.as_bytes(),
            gate,
        )?;
        let mut text = match old {
            None => format!(
                "Successfully created and wrote to new file: {}",
                self.path.display()
            ),
            Some(_) => format!("Successfully overwrote file: {}", self.path.display()),
        };
        if self.params.modified_by_user == Some(true) {
            text.push_str(&format!(
                "\nThe user modified the proposed content before it was written; the file now holds:\n{}",
                self.params.content
            ));
        }
        let rel = display_relative(self.root.path(), &self.path);
        let summary = match old {
            None => format!("Created {rel}"),
            Some(_) => format!("Overwrote {rel}"),
        };
        let diff = self.diff(old);
        Ok(ToolResult {
            llm_content: vec![ContentPart::Text { text }],
            display: ToolDisplay::FileDiff(diff),
            summary: Some(summary),
            structured: None,
            session_change: None,
        })
    }
}

#[async_trait]
impl ToolInvocation for WriteFileInvocation {
    fn description(&self) -> String {
        format!(
            "Write to {}",
            display_relative(self.root.path(), &self.path)
        )
    }

    fn locations(&self) -> Vec<ToolLocation> {
        vec![ToolLocation {
            path: self.path.clone(),
            line: None,
        }]
    }

    async fn confirmation(&self) -> Result<ConfirmationDetails, ToolError> {
        let (root, path) = (self.root.clone(), self.path.clone());
        let old = tokio::task::spawn_blocking(move || current_text(&root, &path))
            .await
            .map_err(|e| ToolError::new(ToolErrorKind::Execution, e.to_string()))??;
        let verb = if old.is_some() { "Overwrite" } else { "Create" };
        Ok(ConfirmationDetails::Edit {
            title: format!(
                "Confirm write: {verb} {}",
                display_relative(self.root.path(), &self.path)
            ),
            diff: self.diff(old),
        })
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
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::tools::builtin::test_util::{Ws, run, snapshot, text_of};

    fn tool() -> WriteFileTool {
        WriteFileTool::new()
    }

    #[tokio::test]
    async fn creates_with_parents_then_overwrites_keeping_mode() {
        let ws = Ws::new();
        let args = json!({"file_path": ws.p("new/dir/f.txt"), "content": "one\n"});
        let call = tool().build(&ws.ctx, &args).unwrap();
        match call.confirmation().await.unwrap() {
            ConfirmationDetails::Edit { title, diff } => {
                assert!(title.contains("Create new/dir/f.txt"), "{title}");
                assert_eq!(diff.original_content, None);
                assert!(diff.diff.contains("+one"));
            }
            other => panic!("{other:?}"),
        }
        let r = call
            .execute(CancellationToken::new(), OutputSink::discard())
            .await
            .unwrap();
        assert!(text_of(&r).contains("created"));
        assert_eq!(ws.read("new/dir/f.txt"), "one\n");
        let path = ws.root.join("new/dir/f.txt");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o751)).unwrap();
        let r = run(
            &tool(),
            &ws.ctx,
            json!({"file_path": ws.p("new/dir/f.txt"), "content": "two\n", "modified_by_user": true}),
        )
        .await
        .unwrap();
        assert!(text_of(&r).contains("overwrote"));
        assert!(text_of(&r).contains("user modified"));
        match &r.display {
            ToolDisplay::FileDiff(d) => {
                assert_eq!(d.original_content.as_deref(), Some("one\n"));
                assert!(d.diff.contains("-one\n+two\n"), "{}", d.diff);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(ws.read("new/dir/f.txt"), "two\n");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o751);
        // No temp files are left next to the target.
        assert_eq!(
            std::fs::read_dir(ws.root.join("new/dir")).unwrap().count(),
            1
        );
    }

    #[tokio::test]
    async fn writes_through_an_inner_symlink_to_its_target() {
        let ws = Ws::new();
        ws.write("real.txt", "old");
        std::os::unix::fs::symlink(ws.root.join("real.txt"), ws.root.join("alias.txt")).unwrap();
        run(
            &tool(),
            &ws.ctx,
            json!({"file_path": ws.p("alias.txt"), "content": "new"}),
        )
        .await
        .unwrap();
        assert_eq!(ws.read("real.txt"), "new");
        assert!(
            ws.root
                .join("alias.txt")
                .symlink_metadata()
                .unwrap()
                .is_symlink()
        );
    }

    #[tokio::test]
    async fn bad_inputs_fail_and_write_nothing() {
        let ws = Ws::new();
        ws.write("dir/inner.txt", "x");
        ws.write("plain.txt", "x");
        let before = snapshot(ws.root.parent().unwrap());
        let cases = [
            (
                json!({"file_path": "rel.txt", "content": "x"}),
                ToolErrorKind::PathNotAllowed,
                "absolute",
            ),
            (
                json!({"file_path": ws.outside.join("n.txt").display().to_string(), "content": "x"}),
                ToolErrorKind::PathNotAllowed,
                "outside",
            ),
            (
                json!({"file_path": ws.p("link_out/secret.txt"), "content": "x"}),
                ToolErrorKind::PathNotAllowed,
                "outside",
            ),
            (
                json!({"file_path": ws.p("link_out/new.txt"), "content": "x"}),
                ToolErrorKind::PathNotAllowed,
                "outside",
            ),
            (
                json!({"file_path": ws.p("dir"), "content": "x"}),
                ToolErrorKind::InvalidParams,
                "directory",
            ),
            (
                json!({"file_path": ws.p("plain.txt/under"), "content": "x"}),
                ToolErrorKind::PathNotAllowed,
                "Not a directory",
            ),
            (
                json!({"file_path": ws.p("a.txt")}),
                ToolErrorKind::InvalidParams,
                "`content` is required",
            ),
            (
                json!({"file_path": ws.p("a.txt"), "content": 5}),
                ToolErrorKind::InvalidParams,
                "`content`",
            ),
        ];
        for (args, kind, needle) in cases {
            let err = run(&tool(), &ws.ctx, args.clone()).await.unwrap_err();
            assert_eq!(err.kind, kind, "{args}: {err}");
            assert!(err.message.contains(needle), "{args}: {err}");
        }
        assert_eq!(before, snapshot(ws.root.parent().unwrap()));
    }

    #[tokio::test]
    async fn cancelled_call_writes_nothing() {
        let ws = Ws::new();
        let call = tool()
            .build(
                &ws.ctx,
                &json!({"file_path": ws.p("c.txt"), "content": "x"}),
            )
            .unwrap();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let err = call
            .execute(cancel, OutputSink::discard())
            .await
            .unwrap_err();
        assert_eq!(err.kind, ToolErrorKind::Cancelled);
        assert!(!ws.root.join("c.txt").exists());
    }
}
