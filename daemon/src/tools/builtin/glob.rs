//! `glob`: finds files whose path (relative to the search directory)
//! matches a glob pattern. Recently modified files come first, newest
//! first, so the model sees what the user is working on; the rest follow
//! alphabetically.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::contract::{
    ConfirmationDetails, OutputSink, PinnedRoot, Tool, ToolContext, ToolError, ToolErrorKind,
    ToolInvocation, ToolKind, ToolLocation, ToolResult,
};
use super::glob_walk::{Hit, find};
use super::params::parse;
use super::path::display_relative;
use super::search_walk::{SearchFilter, resolve_dir};

/// Files modified more recently than this are listed first.
const RECENT: Duration = Duration::from_secs(24 * 60 * 60);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GlobParams {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    case_sensitive: Option<bool>,
    #[serde(default)]
    respect_git_ignore: Option<bool>,
}

pub struct GlobTool {
    schema: Value,
}

impl GlobTool {
    pub fn new() -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Glob matched against paths relative to the search directory, e.g. `**/*.rs` or `src/**/*.{ts,tsx}`."
                },
                "path": {
                    "type": "string",
                    "description": "Absolute path of the directory to search in. Defaults to the workspace root."
                },
                "case_sensitive": {
                    "type": "boolean",
                    "description": "Match case-sensitively. Default false."
                },
                "respect_git_ignore": {
                    "type": "boolean",
                    "description": "Skip files ignored by .gitignore. Default true. (.geminiignore always applies.)"
                }
            },
            "required": ["pattern"]
        });
        GlobTool { schema }
    }
}

impl Default for GlobTool {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for GlobTool {
    fn name(&self) -> &str {
        "glob"
    }
    fn display_name(&self) -> &str {
        "FindFiles"
    }
    fn description(&self) -> &str {
        "Finds files matching a glob pattern (e.g. `**/*.rs`), returning absolute paths: \
         files modified in the last 24 hours first (newest first), then the rest \
         alphabetically. Respects .gitignore (optional) and .geminiignore."
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }

    fn build(&self, ctx: &ToolContext, args: &Value) -> Result<Box<dyn ToolInvocation>, ToolError> {
        let params: GlobParams = parse(&self.schema, args)?;
        if params.pattern.trim().is_empty() {
            return Err(ToolError::invalid("`pattern` must not be empty"));
        }
        let (root, dir) = resolve_dir(ctx, params.path.as_deref(), "path")?;
        let filter = SearchFilter::new(&root, &ctx.settings.filtering, params.respect_git_ignore);
        let relative = relative_pattern(&dir, &params.pattern)?;
        let matcher = GlobBuilder::new(&relative)
            .case_insensitive(!params.case_sensitive.unwrap_or(false))
            // `*` stays within one path component, as in shells and fast-glob.
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| {
                ToolError::invalid(format!(
                    "`pattern` is not a valid glob: {}: {e}",
                    params.pattern
                ))
            })?
            .compile_matcher();
        Ok(Box::new(GlobInvocation {
            root,
            dir,
            params,
            matcher,
            filter: Arc::new(filter),
        }))
    }
}

/// The pattern relative to `dir`. An absolute pattern is accepted only when
/// it lies under `dir`; `..` components are refused since a pattern must not
/// reach outside the directory searched.
fn relative_pattern(dir: &Path, pattern: &str) -> Result<String, ToolError> {
    let refuse = |why: &str| {
        ToolError::new(
            ToolErrorKind::PathNotAllowed,
            format!("`pattern` {pattern} {why}"),
        )
    };
    let rel = if pattern.starts_with('/') {
        let base = dir.to_string_lossy();
        let base = base.trim_end_matches('/');
        match pattern.strip_prefix(base) {
            Some(rest) if rest.starts_with('/') => rest.trim_start_matches('/').to_owned(),
            _ => return Err(refuse(&format!("is absolute and not inside {base}"))),
        }
    } else {
        pattern.trim_start_matches("./").to_owned()
    };
    if rel.split('/').any(|c| c == "..") {
        return Err(refuse("must not contain `..`"));
    }
    if rel.is_empty() {
        return Err(ToolError::invalid("`pattern` names no files"));
    }
    Ok(rel)
}

struct GlobInvocation {
    root: PinnedRoot,
    dir: PathBuf,
    params: GlobParams,
    matcher: GlobMatcher,
    filter: Arc<SearchFilter>,
}

#[async_trait]
impl ToolInvocation for GlobInvocation {
    fn description(&self) -> String {
        format!(
            "'{}' in {}",
            self.params.pattern,
            display_relative(self.root.path(), &self.dir)
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
            title: "Confirm file search".to_owned(),
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
        let (root, dir, matcher, filter) = (
            self.root.clone(),
            self.dir.clone(),
            self.matcher.clone(),
            self.filter.clone(),
        );
        let stop2 = stop.clone();
        let mut job =
            tokio::task::spawn_blocking(move || find(&root, &dir, &matcher, &filter, &stop2));
        let hits = tokio::select! {
            r = &mut job => r.map_err(|e| ToolError::execution(format!("glob failed: {e}")))?,
            _ = cancel.cancelled() => {
                stop.store(true, Ordering::Relaxed);
                let _ = job.await;
                return Err(ToolError::new(ToolErrorKind::Cancelled, "glob was cancelled"));
            }
        };
        Ok(ToolResult::text(self.format(hits, SystemTime::now())))
    }
}

impl GlobInvocation {
    fn format(&self, hits: Vec<Hit>, now: SystemTime) -> String {
        let dir = self.dir.display();
        let pattern = &self.params.pattern;
        if hits.is_empty() {
            return format!("No files found matching pattern \"{pattern}\" within {dir}");
        }
        let n = hits.len();
        let sorted = sort_hits(hits, now);
        let mut out = format!(
            "Found {n} file(s) matching \"{pattern}\" within {dir}, sorted by modification \
             time (newest first):\n"
        );
        for p in sorted {
            out.push_str(&p.to_string_lossy());
            out.push('\n');
        }
        out.pop();
        out
    }
}

/// The file a prompt's `@name` means when nothing is at that path, found
/// as 0.61's at-command processor finds it: the first hit of the glob
/// `**/*<name>*` over the primary root, in `glob`'s order, under the
/// session's ignore settings (the name's own glob characters taken
/// literally).
pub fn find_by_name(ctx: &ToolContext, name: &str, stop: &AtomicBool) -> Option<PathBuf> {
    let name = name.trim().trim_start_matches("./");
    if name.is_empty() || name.split('/').any(|c| c == "..") {
        return None;
    }
    let matcher = GlobBuilder::new(&format!("**/*{}*", globset::escape(name)))
        .case_insensitive(true)
        .literal_separator(true)
        .build()
        .ok()?
        .compile_matcher();
    let root = ctx.root();
    let filter = SearchFilter::new(root, &ctx.settings.filtering, None);
    let hits = find(root, root.path(), &matcher, &filter, stop);
    sort_hits(hits, SystemTime::now()).into_iter().next()
}

/// Recent files (newest first), then the others by path.
fn sort_hits(hits: Vec<Hit>, now: SystemTime) -> Vec<PathBuf> {
    let cutoff = now.checked_sub(RECENT).unwrap_or(SystemTime::UNIX_EPOCH);
    let (mut recent, mut old): (Vec<Hit>, Vec<Hit>) = hits
        .into_iter()
        .partition(|h| h.modified.is_some_and(|m| m > cutoff));
    recent.sort_by(|a, b| {
        b.modified
            .cmp(&a.modified)
            .then_with(|| a.path.cmp(&b.path))
    });
    old.sort_by(|a, b| a.path.cmp(&b.path));
    recent.into_iter().chain(old).map(|h| h.path).collect()
}

#[cfg(test)]
#[path = "glob_tests.rs"]
mod tests;
