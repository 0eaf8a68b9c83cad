//! Directory walking shared by the search tools: which ignore files apply,
//! and checks of a directory argument.

use std::path::{Path, PathBuf};

use ignore::WalkBuilder;

use super::contract::{ToolError, ToolErrorKind};
use super::path::resolve_in_workspace;

/// Ignore rules for our own files, read in every directory like `.gitignore`.
pub const GEMINI_IGNORE: &str = ".geminiignore";

/// A walker over `dir` with our ignore rules: `.geminiignore` always,
/// `.gitignore` (and `.git/info/exclude`, the global excludes file) when
/// `respect_git_ignore`, applied whether or not `dir` is in a git repository
/// (`require_git(false)`), so results do not depend on a `.git` directory.
/// Hidden files are searched, but `.git` itself never is. Symlinks are not
/// followed, so a link cannot lead the walk out of the workspace.
pub fn walker(dir: &Path, respect_git_ignore: bool) -> WalkBuilder {
    let mut b = WalkBuilder::new(dir);
    b.hidden(false)
        .follow_links(false)
        .parents(true)
        .ignore(true)
        .git_ignore(respect_git_ignore)
        .git_exclude(respect_git_ignore)
        .git_global(respect_git_ignore)
        .require_git(false)
        .add_custom_ignore_filename(GEMINI_IGNORE)
        .filter_entry(|e| e.file_name() != ".git" && !super::common::is_temp_name(e.file_name()));
    b
}

/// Resolves an optional absolute directory argument named `param`:
/// defaults to `root`; must be inside it, exist, and be a directory.
pub fn resolve_dir(root: &Path, raw: Option<&str>, param: &str) -> Result<PathBuf, ToolError> {
    let Some(raw) = raw.filter(|r| !r.is_empty()) else {
        return Ok(root.to_path_buf());
    };
    let dir = resolve_in_workspace(root, raw, param)?;
    match std::fs::metadata(&dir) {
        Ok(m) if m.is_dir() => Ok(dir),
        Ok(_) => Err(ToolError::invalid(format!(
            "`{param}` {raw} is not a directory"
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ToolError::new(
            ToolErrorKind::NotFound,
            format!("`{param}` {raw} does not exist"),
        )),
        Err(e) => Err(ToolError::new(
            ToolErrorKind::NotFound,
            format!("`{param}` {raw} cannot be read: {e}"),
        )),
    }
}

/// `path` relative to `base` with `/` separators, for output.
pub fn relative(base: &Path, path: &Path) -> String {
    match path.strip_prefix(base) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_string_lossy().into_owned(),
        Ok(_) => ".".to_owned(),
        Err(_) => path.to_string_lossy().into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applies_gitignore_without_git_and_geminiignore_always() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join(".gitignore"), "skipped_git.txt\n").unwrap();
        std::fs::write(root.join(GEMINI_IGNORE), "skipped_gemini.txt\n").unwrap();
        for f in [
            "kept.txt",
            "skipped_git.txt",
            "skipped_gemini.txt",
            ".hidden",
        ] {
            std::fs::write(root.join(f), "x").unwrap();
        }
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/config"), "x").unwrap();
        let names = |respect: bool| {
            let mut v: Vec<String> = walker(&root, respect)
                .build()
                .filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
                .map(|e| relative(&root, e.path()))
                .collect();
            v.sort();
            v
        };
        assert_eq!(
            names(true),
            [".geminiignore", ".gitignore", ".hidden", "kept.txt"]
        );
        assert_eq!(
            names(false),
            [
                ".geminiignore",
                ".gitignore",
                ".hidden",
                "kept.txt",
                "skipped_git.txt"
            ]
        );
    }
}
