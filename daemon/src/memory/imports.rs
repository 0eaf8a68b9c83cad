//! `@path` import processing for GEMINI.md files.
//!
//! An import is replaced by the imported file's (recursively processed)
//! content between `<!-- Imported from: P -->` and `<!-- End of import
//! from: P -->` lines. Imports inside backtick code are left alone, paths
//! outside the allowed directory and unreadable files become
//! `<!-- Import failed: ... -->` comments, a file already on the current
//! import chain is not imported again, and below `max_depth` levels the text
//! is left as written.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::paths;
use super::scan::{code_regions, find_imports, in_code};
use super::source::{
    FileSource, Syscall, find_project_root, node_style_message, resolve_to_real_path,
};

/// Default nesting limit.
pub const DEFAULT_MAX_DEPTH: usize = 5;

/// Markers that identify a project root.
const ROOT_MARKERS: &[&str] = &[".git"];

/// Tree path used for the top level when the importing file is unknown.
pub const UNKNOWN_PATH: &str = "unknown";

/// Which files were pulled in, in import order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportTree {
    pub path: PathBuf,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub imports: Vec<ImportTree>,
}

impl ImportTree {
    /// Every path in the tree, depth first, the root included.
    pub fn all_paths(&self) -> Vec<&Path> {
        let mut out = vec![self.path.as_path()];
        for child in &self.imports {
            out.extend(child.all_paths());
        }
        out
    }
}

/// How imported content is laid out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImportFormat {
    /// Inline, in place of each `@path`.
    #[default]
    Tree,
    /// Every distinct file once, concatenated between `--- File: P ---`
    /// and `--- End of File: P ---` lines.
    Flat,
}

/// Options for [`process_imports`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportOptions {
    pub format: ImportFormat,
    pub max_depth: usize,
    /// The only directory imports may come from; found from `base_dir` via
    /// `.git` (falling back to `base_dir`) when `None`.
    pub project_root: Option<PathBuf>,
    /// The file whose content is processed. When set it names the tree root
    /// and counts as already on the import chain (so a file importing itself
    /// is not inlined a second time).
    pub current_file: Option<PathBuf>,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            format: ImportFormat::Tree,
            max_depth: DEFAULT_MAX_DEPTH,
            project_root: None,
            current_file: None,
        }
    }
}

/// Result of [`process_imports`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Processed {
    pub content: String,
    pub tree: ImportTree,
}

/// Why an import was replaced by a failure comment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportFailure {
    /// URL, or a path resolving outside the allowed directory.
    #[error("Path traversal attempt")]
    Disallowed,
    /// The file could not be reached or read (Node-style message).
    #[error("{0}")]
    Io(String),
}

/// Expand the `@path` imports in `content`, which lives in `base_dir`.
pub fn process_imports(
    fs: &dyn FileSource,
    content: &str,
    base_dir: &Path,
    options: &ImportOptions,
) -> Processed {
    let base = paths::normalize(&paths::path_str(base_dir));
    let root = match &options.project_root {
        Some(root) => paths::path_str(root),
        None => find_project_root(fs, &base, ROOT_MARKERS),
    };
    let current = options
        .current_file
        .as_deref()
        .map(|p| paths::normalize(&paths::path_str(p)));
    let processor = Processor {
        fs,
        allowed: vec![root],
        max_depth: options.max_depth,
    };
    if options.max_depth == 0 {
        return Processed {
            content: content.to_string(),
            tree: leaf(current.as_deref()),
        };
    }
    match options.format {
        ImportFormat::Tree => {
            let mut chain = HashSet::new();
            if let Some(file) = &current {
                chain.insert(file.clone());
            }
            let (content, tree) = processor.tree(content, &base, &chain, 0, current.as_deref());
            Processed { content, tree }
        }
        ImportFormat::Flat => {
            let root_path = current.unwrap_or_else(|| base.clone());
            let mut flat = FlatState::default();
            processor.flat(content, &base, &root_path, &mut flat);
            let content = flat
                .files
                .iter()
                .map(|(p, c)| {
                    format!(
                        "--- File: {p} ---\n{}\n--- End of File: {p} ---",
                        paths::js_trim(c)
                    )
                })
                .collect::<Vec<_>>()
                .join("\n\n");
            Processed {
                content,
                tree: leaf(Some(&root_path)),
            }
        }
    }
}

fn leaf(path: Option<&str>) -> ImportTree {
    ImportTree {
        path: PathBuf::from(path.unwrap_or(UNKNOWN_PATH)),
        imports: Vec::new(),
    }
}

#[derive(Default)]
struct FlatState {
    seen: HashSet<String>,
    files: Vec<(String, String)>,
}

struct Processor<'a> {
    fs: &'a dyn FileSource,
    allowed: Vec<String>,
    max_depth: usize,
}

impl Processor<'_> {
    fn tree(
        &self,
        content: &str,
        base: &str,
        chain: &HashSet<String>,
        depth: usize,
        current: Option<&str>,
    ) -> (String, ImportTree) {
        if depth >= self.max_depth {
            return (content.to_string(), leaf(current));
        }
        let regions = code_regions(content);
        let mut out = String::with_capacity(content.len());
        let mut children = Vec::new();
        let mut last = 0;
        for import in find_imports(content) {
            out.push_str(&content[last..import.start]);
            last = import.end;
            let path = import.path;
            if in_code(&regions, import.start) {
                out.push('@');
                out.push_str(path);
                continue;
            }
            if !self.allowed(path, base) {
                out.push_str(&failure_comment(path, &ImportFailure::Disallowed));
                continue;
            }
            let full = paths::resolve(base, path);
            if chain.contains(&full) {
                out.push_str(&format!("<!-- File already processed: {path} -->"));
                continue;
            }
            match self.read(&full) {
                Ok(text) => {
                    let mut next = chain.clone();
                    next.insert(full.clone());
                    let dir = paths::dirname(&full);
                    let (inner, child) = self.tree(&text, &dir, &next, depth + 1, Some(&full));
                    out.push_str(&format!(
                        "<!-- Imported from: {path} -->\n{inner}\n<!-- End of import from: {path} -->"
                    ));
                    children.push(child);
                }
                Err(failure) => out.push_str(&failure_comment(path, &failure)),
            }
        }
        out.push_str(&content[last..]);
        let mut tree = leaf(current);
        tree.imports = children;
        (out, tree)
    }

    /// Depth-first, last import first (the order the reference produces);
    /// each file appears once; failures are skipped silently.
    fn flat(&self, content: &str, base: &str, file: &str, state: &mut FlatState) {
        let file = paths::normalize(file);
        if !state.seen.insert(file.clone()) {
            return;
        }
        state.files.push((file, content.to_string()));
        let regions = code_regions(content);
        for import in find_imports(content).into_iter().rev() {
            if in_code(&regions, import.start) || !self.allowed(import.path, base) {
                continue;
            }
            let full = paths::resolve(base, import.path);
            if state.seen.contains(&full) {
                continue;
            }
            if let Ok(text) = self.read(&full) {
                self.flat(&text, &paths::dirname(&full), &full, state);
            }
        }
    }

    fn read(&self, full: &str) -> Result<String, ImportFailure> {
        let path = Path::new(full);
        self.fs
            .access(path)
            .map_err(|e| ImportFailure::Io(node_style_message(&e, Syscall::Access, full)))?;
        self.fs
            .read_to_string(path)
            .map_err(|e| ImportFailure::Io(node_style_message(&e, Syscall::Read, full)))
    }

    /// URLs are refused; anything else must resolve (through symlinks) to a
    /// place inside one of the allowed directories.
    fn allowed(&self, import_path: &str, base: &str) -> bool {
        if ["file://", "http://", "https://"]
            .iter()
            .any(|scheme| import_path.starts_with(scheme))
        {
            return false;
        }
        let Some(target) = resolve_to_real_path(self.fs, &paths::resolve(base, import_path)) else {
            return false;
        };
        self.allowed.iter().any(|dir| {
            let dir = paths::js_trim(dir);
            !dir.is_empty()
                && resolve_to_real_path(self.fs, dir)
                    .is_some_and(|real| paths::is_subpath(&real, &target))
        })
    }
}

fn failure_comment(path: &str, failure: &ImportFailure) -> String {
    format!("<!-- Import failed: {path} - {failure} -->")
}

#[cfg(test)]
mod tests;
