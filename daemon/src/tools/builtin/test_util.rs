//! Fixtures shared by the tool tests: a canonical temp workspace with a
//! sibling directory outside it, and helpers to build and run calls.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::contract::{
    ContentPart, OutputSink, Tool, ToolContext, ToolError, ToolErrorKind, ToolResult,
};

pub struct Ws {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub outside: PathBuf,
    pub ctx: ToolContext,
}

impl Ws {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("ws");
        let outside = base.join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), "top secret\n").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link_out")).unwrap();
        let ctx = ToolContext::new(&root).unwrap();
        Ws {
            _dir: dir,
            root,
            outside,
            ctx,
        }
    }

    /// Absolute path (as a string) of `rel` inside the workspace.
    pub fn p(&self, rel: &str) -> String {
        self.root.join(rel).display().to_string()
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, content).unwrap();
        path
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel)).unwrap()
    }
}

pub async fn run(tool: &dyn Tool, ctx: &ToolContext, args: Value) -> Result<ToolResult, ToolError> {
    let call = tool.build(ctx, &args)?;
    call.execute(CancellationToken::new(), OutputSink::discard())
        .await
}

pub fn text_of(r: &ToolResult) -> String {
    r.llm_content
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text { text } => Some(text.as_str()),
            ContentPart::InlineData { .. } => None,
        })
        .collect::<Vec<_>>()
        .join("")
}

pub fn err_kind(r: Result<ToolResult, ToolError>) -> ToolErrorKind {
    match r {
        Ok(ok) => panic!("expected an error, got {ok:?}"),
        Err(e) => e.kind,
    }
}

/// Every file below `dir` with its bytes, to prove nothing was written.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in walkdir(dir) {
        if e.is_file() {
            let meta = std::fs::metadata(&e).unwrap();
            // Huge (sparse) fixtures are compared by size and mtime only.
            let bytes = if meta.len() > 1 << 20 {
                format!("{} {:?}", meta.len(), meta.modified().unwrap()).into_bytes()
            } else {
                std::fs::read(&e).unwrap()
            };
            out.push((e, bytes));
        }
    }
    out.sort();
    out
}

fn walkdir(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        let ft = e.file_type().unwrap();
        if ft.is_dir() {
            out.extend(walkdir(&p));
        } else if ft.is_file() {
            out.push(p);
        }
    }
    out
}
