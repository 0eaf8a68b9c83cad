//! GEMINI.md memory: discovery of the memory files, `@path` imports, and
//! the merged text handed to the model.
//!
//! IO happens at the edges: [`discovery`] walks the real file system, and
//! [`imports`] reads through a [`FileSource`].

pub mod discovery;
pub mod imports;
pub mod live;
pub mod paths;
pub mod scan;
pub mod source;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

pub use self::discovery::{DEFAULT_FILE_NAME, DiscoveryOptions, discover};
pub use self::imports::{ImportFormat, ImportOptions, ImportTree, Processed, process_imports};
pub use self::live::MemoryCache;
pub use self::source::{FileSource, OsFiles};

/// Errors from memory configuration.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// `context.fileName` was neither a string nor an array of strings.
    #[error("context.fileName must be a string or an array of strings, got {0}")]
    BadFileName(String),
}

/// One memory file after import processing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryFile {
    pub path: PathBuf,
    /// The file's text with its imports expanded.
    pub content: String,
    pub tree: ImportTree,
}

/// Everything loaded for a workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Memory {
    pub files: Vec<MemoryFile>,
    /// All non-empty files, trimmed, each between `--- Context from: P ---`
    /// and `--- End of Context from: P ---` (P relative to the workspace),
    /// separated by blank lines.
    pub text: String,
}

/// Everything [`load_with`] can be told.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LoadOptions {
    pub discovery: DiscoveryOptions,
    pub import_format: ImportFormat,
    /// Context files of the enabled extensions: after the global files,
    /// before the workspace's (0.61's order).
    pub extension_files: Vec<PathBuf>,
    /// Include directories whose memory files load after the workspace's
    /// (`context.loadMemoryFromIncludeDirectories`), each searched as a
    /// workspace is.
    pub include_dirs: Vec<PathBuf>,
}

/// Load the memory for `workspace` from the real file system.
/// An empty `file_names` means the default `GEMINI.md`.
pub fn load(
    workspace: &Path,
    user_gemini_dir: &Path,
    file_names: &[String],
    extension_files: Vec<PathBuf>,
    include_dirs: Vec<PathBuf>,
) -> Memory {
    let mut options = LoadOptions {
        extension_files,
        include_dirs,
        ..LoadOptions::default()
    };
    if !file_names.is_empty() {
        options.discovery.file_names = file_names.to_vec();
    }
    load_with(&OsFiles, workspace, user_gemini_dir, &options)
}

/// [`load`] with explicit options; file contents and imports are read
/// through `fs`, discovery uses the real file system.
pub fn load_with(
    fs: &dyn FileSource,
    workspace: &Path,
    user_gemini_dir: &Path,
    options: &LoadOptions,
) -> Memory {
    let workspace = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let mut files = Vec::new();
    let mut paths = discover(&workspace, user_gemini_dir, &options.discovery);
    let globals = paths
        .iter()
        .take_while(|p| p.starts_with(user_gemini_dir) && !p.starts_with(&workspace))
        .count();
    for (i, extra) in options.extension_files.iter().enumerate() {
        if !paths.contains(extra) {
            paths.insert(globals + i, extra.clone());
        }
    }
    for dir in &options.include_dirs {
        for found in discover(dir, user_gemini_dir, &options.discovery) {
            if !paths.contains(&found) {
                paths.push(found);
            }
        }
    }
    for path in paths {
        // Unreadable entries (including directories named GEMINI.md) are skipped.
        let Ok(raw) = fs.read_to_string(&path) else {
            continue;
        };
        let base = path.parent().unwrap_or(Path::new("/"));
        let import_options = ImportOptions {
            format: options.import_format,
            current_file: Some(path.clone()),
            ..ImportOptions::default()
        };
        let processed = process_imports(fs, &raw, base, &import_options);
        files.push(MemoryFile {
            path,
            content: processed.content,
            tree: processed.tree,
        });
    }
    let text = merge(&workspace, &files);
    Memory { files, text }
}

/// Concatenate the files under their context headers.
fn merge(workspace: &Path, files: &[MemoryFile]) -> String {
    let ws = paths::path_str(workspace);
    files
        .iter()
        .filter_map(|file| {
            let body = paths::js_trim(&file.content);
            if body.is_empty() {
                return None;
            }
            let shown = paths::relative(&ws, &paths::path_str(&file.path));
            Some(format!(
                "--- Context from: {shown} ---\n{body}\n--- End of Context from: {shown} ---"
            ))
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Every file that contributed to `memory` (memory files and everything
/// they imported), first occurrence first. A change to any of them means
/// the memory should be reloaded.
pub fn watched_paths(memory: &Memory) -> Vec<PathBuf> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for file in &memory.files {
        let tree_paths = file.tree.all_paths();
        for p in std::iter::once(file.path.as_path()).chain(tree_paths) {
            if p != Path::new(imports::UNKNOWN_PATH) && seen.insert(p.to_path_buf()) {
                out.push(p.to_path_buf());
            }
        }
    }
    out
}

/// Read the `context.fileName` setting: absent or `null` gives the default,
/// a string gives one name, an array of strings gives several.
pub fn file_names_from_setting(
    value: Option<&serde_json::Value>,
) -> Result<Vec<String>, MemoryError> {
    use serde_json::Value;
    match value {
        None | Some(Value::Null) => Ok(vec![DEFAULT_FILE_NAME.to_string()]),
        Some(Value::String(name)) => Ok(vec![name.clone()]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(name) => Ok(name.clone()),
                other => Err(MemoryError::BadFileName(other.to_string())),
            })
            .collect(),
        Some(other) => Err(MemoryError::BadFileName(other.to_string())),
    }
}

#[cfg(test)]
mod reference_tests;
#[cfg(test)]
mod tests;
