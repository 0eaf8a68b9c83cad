//! `search_file_content`: regex search over file contents, in-process with
//! ripgrep's own crates (no `rg` binary), so it behaves the same everywhere.
//!
//! Like the reference, the search is case-insensitive, respects `.gitignore`
//! and `.geminiignore`, and stops once the match cap is reached: which
//! matches are kept when capped depends on the walk order, but the output is
//! always sorted by file and line.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use ignore::overrides::{Override, OverrideBuilder};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::contract::{
    ConfirmationDetails, OutputSink, PinnedRoot, Tool, ToolContext, ToolError, ToolErrorKind,
    ToolInvocation, ToolKind, ToolLocation, ToolResult,
};
use super::grep_search::{FileHits, Found, search};
use super::params::parse;
use super::path::display_relative;
use super::search_walk::{SearchFilter, relative, resolve_dir};

/// The reference's cap on matches returned to the model.
pub const DEFAULT_MAX_MATCHES: usize = 100;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GrepParams {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    include: Option<String>,
}

pub struct GrepTool {
    schema: Value,
    max_matches: usize,
}

impl GrepTool {
    pub fn new(max_matches: usize) -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Regular expression to search for in file contents (case-insensitive)."
                },
                "path": {
                    "type": "string",
                    "description": "Absolute path of the directory to search in. Defaults to the workspace root."
                },
                "include": {
                    "type": "string",
                    "description": "Glob selecting the files to search, e.g. `*.rs` or `src/**/*.{ts,tsx}`."
                }
            },
            "required": ["pattern"]
        });
        GrepTool {
            schema,
            max_matches: max_matches.max(1),
        }
    }
}

impl Default for GrepTool {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_MATCHES)
    }
}

impl Tool for GrepTool {
    fn name(&self) -> &str {
        "search_file_content"
    }
    fn display_name(&self) -> &str {
        "SearchText"
    }
    fn description(&self) -> &str {
        "Searches file contents for a regular expression (case-insensitive) under a \
         directory, respecting .gitignore and .geminiignore. Returns matching lines \
         grouped by file with line numbers, at most 100 matches."
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }

    fn build(&self, ctx: &ToolContext, args: &Value) -> Result<Box<dyn ToolInvocation>, ToolError> {
        let params: GrepParams = parse(&self.schema, args)?;
        if params.pattern.is_empty() {
            return Err(ToolError::invalid("`pattern` must not be empty"));
        }
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(true)
            // Line-oriented search lets the searcher skip to candidate lines.
            .line_terminator(Some(b'\n'))
            .build(&params.pattern)
            .map_err(|e| {
                ToolError::invalid(format!(
                    "`pattern` is not a valid regular expression: {}: {e}",
                    params.pattern
                ))
            })?;
        let (root, dir) = resolve_dir(ctx, params.path.as_deref(), "path")?;
        // Overrides match the walker's paths, which go through the root's
        // descriptor.
        let walk_dir = root.fs_path(&dir).unwrap_or_else(|| dir.clone());
        let include = match params.include.as_deref().filter(|s| !s.is_empty()) {
            None => None,
            Some(glob) => Some(include_override(&walk_dir, glob)?),
        };
        let filter = SearchFilter::new(&root, &ctx.settings.filtering, None);
        Ok(Box::new(GrepInvocation {
            root,
            filter: Arc::new(filter),
            dir,
            params,
            matcher,
            include,
            max_matches: self.max_matches,
        }))
    }
}

/// A whitelist override: only files matching `glob` are searched.
fn include_override(dir: &Path, glob: &str) -> Result<Override, ToolError> {
    let bad = |e: ignore::Error| {
        ToolError::invalid(format!("`include` is not a valid glob: {glob}: {e}"))
    };
    let mut b = OverrideBuilder::new(dir);
    b.add(glob).map_err(bad)?;
    b.build().map_err(bad)
}

struct GrepInvocation {
    root: PinnedRoot,
    filter: Arc<SearchFilter>,
    dir: PathBuf,
    params: GrepParams,
    matcher: RegexMatcher,
    include: Option<Override>,
    max_matches: usize,
}

impl GrepInvocation {
    fn filter_note(&self) -> String {
        match self.params.include.as_deref().filter(|s| !s.is_empty()) {
            Some(g) => format!(" (filter: \"{g}\")"),
            None => String::new(),
        }
    }
}

#[async_trait]
impl ToolInvocation for GrepInvocation {
    fn description(&self) -> String {
        format!(
            "'{}' in {}{}",
            self.params.pattern,
            display_relative(self.root.path(), &self.dir),
            self.filter_note()
        )
    }

    fn locations(&self) -> Vec<ToolLocation> {
        vec![ToolLocation {
            path: self.dir.clone(),
            line: None,
        }]
    }

    async fn confirmation(&self) -> Result<ConfirmationDetails, ToolError> {
        Ok(ConfirmationDetails::Info {
            title: "Confirm text search".to_owned(),
            prompt: self.description(),
            urls: Vec::new(),
        })
    }

    async fn execute(
        self: Box<Self>,
        cancel: CancellationToken,
        _output: OutputSink,
    ) -> Result<ToolResult, ToolError> {
        let stop = Arc::new(AtomicBool::new(false));
        let (root, dir, matcher, include, filter, max) = (
            self.root.clone(),
            self.dir.clone(),
            self.matcher.clone(),
            self.include.clone(),
            self.filter.clone(),
            self.max_matches,
        );
        let stop2 = stop.clone();
        let mut job = tokio::task::spawn_blocking(move || {
            search(&root, &dir, &matcher, include, &filter, max, &stop2)
        });
        let found = tokio::select! {
            r = &mut job => r.map_err(|e| ToolError::execution(format!("search failed: {e}")))?,
            _ = cancel.cancelled() => {
                stop.store(true, Ordering::Relaxed);
                let _ = job.await;
                return Err(ToolError::new(ToolErrorKind::Cancelled, "search was cancelled"));
            }
        };
        let text = self.format(found);
        Ok(ToolResult::text(text))
    }
}

impl GrepInvocation {
    fn format(&self, mut found: Found) -> String {
        let where_ = format!(
            "for pattern \"{}\" in path \"{}\"{}",
            self.params.pattern,
            self.dir.display(),
            self.filter_note()
        );
        let n: usize = found.files.iter().map(|f| f.lines.len()).sum();
        if n == 0 {
            return format!("No matches found {where_}.");
        }
        found.files.sort_by(|a, b| a.path.cmp(&b.path));
        let mut out = if found.capped {
            format!(
                "Found at least {n} matches {where_} (results limited to {} matches; \
                 narrow the pattern, path or include to see the rest):\n---\n",
                self.max_matches
            )
        } else {
            let noun = if n == 1 { "match" } else { "matches" };
            format!("Found {n} {noun} {where_}:\n---\n")
        };
        for FileHits { path, lines } in &found.files {
            out.push_str(&format!("File: {}\n", relative(&self.dir, path)));
            for (line_no, text) in lines {
                out.push_str(&format!("L{line_no}: {text}\n"));
            }
            out.push_str("---\n");
        }
        out.truncate(out.trim_end().len());
        out
    }
}

#[cfg(test)]
#[path = "grep_tests.rs"]
mod tests;
