//! `read_many_files`: the concatenated text of many files chosen by paths,
//! directories and globs, each under a `--- <path> ---` header.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::super::sensitive::blocked_segment;
use super::common;
use super::contract::{
    ConfirmationDetails, OutputSink, PinnedRoot, Tool, ToolContext, ToolError, ToolInvocation,
    ToolKind, ToolLocation, ToolResult,
};
use super::dir_cache::DirCache;
use super::path::{metadata_confined, resolve_in_workspace};
use super::walk::DEFAULT_EXCLUDES;

#[path = "read_many_files_collect.rs"]
mod collect;

/// Text beyond this total is left out (and named) so one call cannot flood
/// the model's context.
pub const MAX_TOTAL_TEXT_BYTES: usize = 10 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadManyFilesParams {
    pub paths: Vec<String>,
    pub include: Option<Vec<String>>,
    pub exclude: Option<Vec<String>>,
    pub recursive: Option<bool>,
    #[serde(rename = "useDefaultExcludes")]
    pub use_default_excludes: Option<bool>,
    pub respect_git_ignore: Option<bool>,
}

pub struct ReadManyFilesTool {
    schema: Value,
    /// Listings kept between calls: a repeated read of a large tree skips
    /// the directories that did not change.
    listings: Arc<DirCache>,
}

impl Default for ReadManyFilesTool {
    fn default() -> Self {
        Self::new()
    }
}

impl ReadManyFilesTool {
    pub fn new() -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "paths": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "minItems": 1,
                    "description": "Files, directories or glob patterns, relative to the workspace root or absolute inside it (for example [\"src/main.rs\", \"docs\", \"src/**/*.ts\"]). A directory stands for the files below it."
                },
                "include": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "description": "More glob patterns to read, merged with `paths` (for example [\"**/*.md\"])."
                },
                "exclude": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "description": "Glob patterns to leave out, on top of the default excludes. A pattern without '/' matches file names at any depth."
                },
                "recursive": {
                    "type": "boolean",
                    "description": "Whether a directory in `paths` includes its subdirectories (default true). Globs decide for themselves with `**`."
                },
                "useDefaultExcludes": {
                    "type": "boolean",
                    "description": "Leave out the usual noise: node_modules, .git, build outputs, archives and binaries, .env, GEMINI.md (default true)."
                },
                "respect_git_ignore": {
                    "type": "boolean",
                    "description": "Leave out files matched by .gitignore (default true, or the context.fileFiltering.respectGitIgnore setting). .geminiignore is honoured unless the settings turn it off."
                }
            },
            "required": ["paths"]
        });
        ReadManyFilesTool {
            schema,
            listings: Arc::new(DirCache::new()),
        }
    }
}

impl Tool for ReadManyFilesTool {
    fn name(&self) -> &str {
        "read_many_files"
    }
    fn display_name(&self) -> &str {
        "ReadManyFiles"
    }
    fn description(&self) -> &str {
        "Reads many text files at once, chosen by paths, directories or glob patterns inside the workspace, and returns them concatenated, each under a '--- <absolute path> ---' line, ending with '--- End of content ---'. Binary files are skipped; images, PDF, audio and video are included only when named explicitly (by path or by their extension in a pattern)."
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }

    fn build(&self, ctx: &ToolContext, args: &Value) -> Result<Box<dyn ToolInvocation>, ToolError> {
        let params = ReadManyFilesParams {
            paths: common::req_field(args, "paths")?,
            include: common::opt_field(args, "include")?,
            exclude: common::opt_field(args, "exclude")?,
            recursive: common::opt_field(args, "recursive")?,
            use_default_excludes: common::opt_field(args, "useDefaultExcludes")?,
            respect_git_ignore: common::opt_field(args, "respect_git_ignore")?,
        };
        if params.paths.is_empty() {
            return Err(ToolError::invalid(
                "`paths` must name at least one path or pattern",
            ));
        }
        let plan = plan(ctx, &params)?;
        Ok(Box::new(ReadManyFilesInvocation {
            plan,
            params,
            listings: self.listings.clone(),
        }))
    }
}

pub use collect::{Gathered, GatheredFile, gather};

/// What `params` asks to read in the session's primary root: literal
/// paths and directories resolved (confined), patterns compiled.
pub fn plan(ctx: &ToolContext, params: &ReadManyFilesParams) -> Result<Plan, ToolError> {
    {
        let root = ctx.root().clone();
        let recursive = params.recursive.unwrap_or(true);
        let filtering = &ctx.settings.filtering;
        let mut plan = Plan {
            root: root.clone(),
            explicit: Vec::new(),
            globs: Vec::new(),
            missing: Vec::new(),
            sensitive: Vec::new(),
            media_exts: Vec::new(),
            exclude: GlobSet::empty(),
            respect_git: params
                .respect_git_ignore
                .unwrap_or(filtering.respect_git_ignore),
            respect_gemini: filtering.respect_gemini_ignore,
            custom_ignore_files: filtering.custom_ignore_files.clone(),
        };
        let named = params.paths.iter().map(|p| ("paths", p));
        let included = params.include.iter().flatten().map(|p| ("include", p));
        for (param, raw) in named.chain(included) {
            plan.add_target(param, raw, recursive)?;
        }
        let mut excludes = GlobSetBuilder::new();
        if params.use_default_excludes.unwrap_or(true) {
            for p in DEFAULT_EXCLUDES {
                excludes.add(glob("useDefaultExcludes", p)?);
            }
        }
        for raw in params.exclude.iter().flatten() {
            let rel = relative_pattern(root.path(), "exclude", raw)?;
            excludes.add(glob("exclude", &rel)?);
            if !rel.contains('/') {
                excludes.add(glob("exclude", &format!("**/{rel}"))?);
            }
        }
        plan.exclude = excludes
            .build()
            .map_err(|e| ToolError::invalid(format!("`exclude` patterns are invalid: {e}")))?;
        Ok(plan)
    }
}

/// What to read, worked out from the arguments. Paths are spelled under
/// the (primary) root.
pub struct Plan {
    pub root: PinnedRoot,
    /// Files named literally (read unless ignore files hide them).
    pub explicit: Vec<PathBuf>,
    /// Glob patterns relative to the root, with the directory to walk.
    pub globs: Vec<(PathBuf, globset::GlobMatcher)>,
    /// Literal paths that do not exist.
    pub missing: Vec<String>,
    /// Literal paths no file tool reads ([`crate::tools::sensitive`]).
    pub sensitive: Vec<String>,
    /// Extensions mentioned in patterns: media of these kinds were asked for.
    pub media_exts: Vec<String>,
    pub exclude: GlobSet,
    pub respect_git: bool,
    pub respect_gemini: bool,
    pub custom_ignore_files: Vec<String>,
}

fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

fn glob(param: &str, pattern: &str) -> Result<globset::Glob, ToolError> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| ToolError::invalid(format!("`{param}` pattern {pattern:?} is invalid: {e}")))
}

/// A pattern relative to the root. Absolute patterns must start inside the
/// root; `..` is refused outright since a glob cannot be canonicalized.
fn relative_pattern(root: &Path, param: &str, raw: &str) -> Result<String, ToolError> {
    if raw.trim().is_empty() {
        return Err(ToolError::invalid(format!(
            "`{param}` entries must not be empty"
        )));
    }
    let path = Path::new(raw);
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(ToolError::new(
            super::contract::ToolErrorKind::PathNotAllowed,
            format!("`{param}` entry {raw:?} must not contain `..`"),
        ));
    }
    if path.is_absolute() {
        return match path.strip_prefix(root) {
            Ok(rel) => Ok(rel.to_string_lossy().into_owned()),
            Err(_) => Err(ToolError::new(
                super::contract::ToolErrorKind::PathNotAllowed,
                format!(
                    "`{param}` entry {raw} is outside the workspace root {}",
                    root.display()
                ),
            )),
        };
    }
    Ok(raw.trim_start_matches("./").to_owned())
}

impl Plan {
    fn add_target(&mut self, param: &str, raw: &str, recursive: bool) -> Result<(), ToolError> {
        let root_path = self.root.path().to_path_buf();
        let rel = relative_pattern(&root_path, param, raw)?;
        if let Some(ext) = Path::new(&rel).extension() {
            self.media_exts
                .push(ext.to_string_lossy().to_ascii_lowercase());
        }
        if is_glob(&rel) {
            // Walk from the literal directories before the first wildcard.
            let base: PathBuf = Path::new(&rel)
                .components()
                .take_while(|c| !is_glob(&c.as_os_str().to_string_lossy()))
                .collect();
            let base =
                resolve_in_workspace(&self.root, &root_path.join(base).to_string_lossy(), param)?;
            self.globs
                .push((base, glob(param, &rel)?.compile_matcher()));
            return Ok(());
        }
        let full = root_path.join(&rel);
        let path = resolve_in_workspace(&self.root, &full.to_string_lossy(), param)?;
        let rel_path = path.strip_prefix(&root_path).unwrap_or(Path::new(""));
        if blocked_segment(rel_path).is_some() {
            // As in the reference: skipped and named, not an error.
            self.sensitive.push(raw.to_owned());
            return Ok(());
        }
        let meta = metadata_confined(&self.root, &path).ok();
        if meta.as_ref().is_some_and(std::fs::Metadata::is_file) {
            self.explicit.push(path);
        } else if meta.as_ref().is_some_and(std::fs::Metadata::is_dir) {
            let dir_rel = rel_path;
            let dir = dir_rel.to_string_lossy();
            let tail = if recursive { "**" } else { "*" };
            let pattern = if dir.is_empty() {
                tail.to_owned()
            } else {
                format!("{dir}/{tail}")
            };
            self.globs
                .push((path, glob(param, &pattern)?.compile_matcher()));
        } else {
            self.missing.push(raw.to_owned());
        }
        Ok(())
    }
}

pub struct ReadManyFilesInvocation {
    plan: Plan,
    params: ReadManyFilesParams,
    listings: Arc<DirCache>,
}

#[async_trait]
impl ToolInvocation for ReadManyFilesInvocation {
    fn description(&self) -> String {
        let mut all = self.params.paths.join(", ");
        if let Some(inc) = &self.params.include {
            all.push_str(&format!(" (include: {})", inc.join(", ")));
        }
        if let Some(exc) = &self.params.exclude {
            all.push_str(&format!(" (exclude: {})", exc.join(", ")));
        }
        format!("Read files: {all}")
    }

    fn locations(&self) -> Vec<ToolLocation> {
        let explicit = self.plan.explicit.iter();
        let bases = self.plan.globs.iter().map(|(b, _)| b);
        explicit
            .chain(bases)
            .map(|p| ToolLocation {
                path: p.clone(),
                line: None,
            })
            .collect()
    }

    async fn confirmation(&self) -> Result<ConfirmationDetails, ToolError> {
        Ok(ConfirmationDetails::Info {
            title: "Confirm reading files".to_owned(),
            prompt: self.description(),
            urls: Vec::new(),
        })
    }

    async fn execute(
        self: Box<Self>,
        cancel: CancellationToken,
        _output: OutputSink,
    ) -> Result<ToolResult, ToolError> {
        let token = cancel.clone();
        common::blocking(&cancel, move || {
            collect::run(&self.plan, &self.listings, &token)
        })
        .await
    }
}

#[cfg(test)]
#[path = "read_many_files_tests.rs"]
mod tests;
