//! `list_directory`: the entries of one directory, directories first.

use std::path::PathBuf;

use async_trait::async_trait;
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::common;
use super::contract::{
    ConfirmationDetails, OutputSink, PinnedRoot, Tool, ToolContext, ToolError, ToolErrorKind,
    ToolInvocation, ToolKind, ToolLocation, ToolResult,
};
use super::path::{display_relative, metadata_confined};
use super::walk::{Filtering, IgnoreChain};

/// Whether a directory entry's own name is sensitive (see
/// [`crate::tools::sensitive`]).
fn is_blocked_name(name: &std::ffi::OsStr) -> bool {
    crate::tools::sensitive::blocked_segment(std::path::Path::new(name)).is_some()
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileFilteringOptions {
    pub respect_git_ignore: Option<bool>,
    pub respect_gemini_ignore: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListDirectoryParams {
    pub path: String,
    pub ignore: Option<Vec<String>>,
    pub file_filtering_options: Option<FileFilteringOptions>,
}

pub struct ListDirectoryTool {
    schema: Value,
}

impl Default for ListDirectoryTool {
    fn default() -> Self {
        Self::new()
    }
}

impl ListDirectoryTool {
    pub fn new() -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Absolute path of the directory to list, inside the workspace."
                },
                "ignore": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Glob patterns; entries whose name matches one are left out (for example [\"*.log\", \"tmp*\"])."
                },
                "file_filtering_options": {
                    "type": "object",
                    "description": "Which ignore files to honour. Both default to true.",
                    "properties": {
                        "respect_git_ignore": {
                            "type": "boolean",
                            "description": "Leave out entries matched by .gitignore files (and the .git directory)."
                        },
                        "respect_gemini_ignore": {
                            "type": "boolean",
                            "description": "Leave out entries matched by .geminiignore files."
                        }
                    }
                }
            },
            "required": ["path"]
        });
        ListDirectoryTool { schema }
    }
}

impl Tool for ListDirectoryTool {
    fn name(&self) -> &str {
        "list_directory"
    }
    fn display_name(&self) -> &str {
        "ReadFolder"
    }
    fn description(&self) -> &str {
        "Lists the files and subdirectories directly inside a directory: directories first (marked [DIR]), then files with their sizes, each sorted by name. Entries hidden by ignore patterns, .gitignore or .geminiignore are counted but not listed."
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }

    fn build(&self, ctx: &ToolContext, args: &Value) -> Result<Box<dyn ToolInvocation>, ToolError> {
        let params = ListDirectoryParams {
            path: common::req_field(args, "path")?,
            ignore: common::opt_field(args, "ignore")?,
            file_filtering_options: common::opt_field(args, "file_filtering_options")?,
        };
        let (root, dir) = ctx.resolve(&params.path, "path")?;
        match metadata_confined(&root, &dir) {
            Err(e) => {
                return Err(ToolError::new(
                    ToolErrorKind::NotFound,
                    format!("`path` {}: directory not found ({e})", dir.display()),
                ));
            }
            Ok(m) if !m.is_dir() => {
                return Err(ToolError::invalid(format!(
                    "`path` {} is a file, not a directory",
                    dir.display()
                )));
            }
            Ok(_) => {}
        }
        let mut globs = GlobSetBuilder::new();
        for pattern in params.ignore.iter().flatten() {
            let glob = Glob::new(pattern).map_err(|e| {
                ToolError::invalid(format!("`ignore` pattern {pattern:?} is invalid: {e}"))
            })?;
            globs.add(glob);
        }
        let ignore = globs
            .build()
            .map_err(|e| ToolError::invalid(format!("`ignore` patterns are invalid: {e}")))?;
        let opts = params.file_filtering_options.clone().unwrap_or_default();
        let defaults = &ctx.settings.filtering;
        let filtering = Filtering {
            git: opts
                .respect_git_ignore
                .unwrap_or(defaults.respect_git_ignore),
            gemini: opts
                .respect_gemini_ignore
                .unwrap_or(defaults.respect_gemini_ignore),
        };
        Ok(Box::new(ListDirectoryInvocation {
            root,
            dir,
            ignore,
            filtering,
            custom_ignore_files: defaults.custom_ignore_files.clone(),
        }))
    }
}

pub struct ListDirectoryInvocation {
    root: PinnedRoot,
    dir: PathBuf,
    ignore: GlobSet,
    filtering: Filtering,
    custom_ignore_files: Vec<String>,
}

struct Entry {
    name: String,
    size: u64,
}

impl ListDirectoryInvocation {
    fn run(self) -> Result<ToolResult, ToolError> {
        let chain = IgnoreChain::for_dir(
            &self.root,
            &self.dir,
            self.filtering,
            &self.custom_ignore_files,
        );
        // Listed through a descriptor opened from the pinned root without
        // following symlinks: a directory swapped for a link after the
        // check fails here instead of listing what lies outside.
        let fd = super::path::open_confined(
            &self.root,
            &self.dir,
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
        )
        .map_err(|e| common::io_error("list", &self.dir, &e))?;
        let via = super::path::fd_path(&fd);
        let read = std::fs::read_dir(&via).map_err(|e| common::io_error("list", &self.dir, &e))?;
        let mut dirs = Vec::new();
        let mut files = Vec::new();
        let mut ignored = 0usize;
        for item in read {
            let item = item.map_err(|e| common::io_error("list", &self.dir, &e))?;
            if super::atomic_write::is_temp_name(&item.file_name()) {
                continue;
            }
            // Sensitive entries are left out without a word, as in the
            // reference: not even counted as ignored.
            if is_blocked_name(&item.file_name()) {
                continue;
            }
            let name = item.file_name().to_string_lossy().into_owned();
            let path = self.dir.join(item.file_name());
            // Follow symlinks for the type and size; a dangling one is
            // listed as a file of its own (link) size.
            let meta = match std::fs::metadata(item.path()) {
                Ok(m) => m,
                Err(_) => match item.metadata() {
                    Ok(m) => m,
                    Err(_) => continue,
                },
            };
            let is_dir = meta.is_dir();
            if self.ignore.is_match(&name) || chain.is_ignored(&path, is_dir) {
                ignored += 1;
                continue;
            }
            let entry = Entry {
                name,
                size: meta.len(),
            };
            if is_dir {
                dirs.push(entry);
            } else {
                files.push(entry);
            }
        }
        dirs.sort_by(|a, b| a.name.cmp(&b.name));
        files.sort_by(|a, b| a.name.cmp(&b.name));
        let shown = dirs.len() + files.len();
        let mut text = if shown == 0 {
            format!("Directory {} is empty.", self.dir.display())
        } else {
            format!("Directory listing for {}:", self.dir.display())
        };
        for d in &dirs {
            text.push_str(&format!("\n[DIR] {}", d.name));
        }
        for f in &files {
            text.push_str(&format!("\n{} ({})", f.name, human_size(f.size)));
        }
        if ignored > 0 {
            text.push_str(&format!("\n\n({ignored} ignored)"));
        }
        let rel = display_relative(self.root.path(), &self.dir);
        let mut summary = format!("Listed {shown} item(s) in {rel}");
        if ignored > 0 {
            summary.push_str(&format!(" ({ignored} ignored)"));
        }
        let mut r = ToolResult::text(text);
        r.summary = Some(summary);
        Ok(r)
    }
}

fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[async_trait]
impl ToolInvocation for ListDirectoryInvocation {
    fn description(&self) -> String {
        format!("List {}", display_relative(self.root.path(), &self.dir))
    }

    fn locations(&self) -> Vec<ToolLocation> {
        vec![ToolLocation {
            path: self.dir.clone(),
            line: None,
        }]
    }

    async fn confirmation(&self) -> Result<ConfirmationDetails, ToolError> {
        Ok(ConfirmationDetails::Info {
            title: "Confirm directory listing".to_owned(),
            prompt: format!("List {}", self.dir.display()),
            urls: Vec::new(),
        })
    }

    async fn execute(
        self: Box<Self>,
        cancel: CancellationToken,
        _output: OutputSink,
    ) -> Result<ToolResult, ToolError> {
        common::blocking(&cancel, move || self.run()).await
    }
}

#[cfg(test)]
#[path = "list_directory_tests.rs"]
mod tests;
