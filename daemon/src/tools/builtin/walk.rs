//! Ignore-file handling shared by the tools that list or walk: `.gitignore`
//! (honoured even outside a git repository) and `.geminiignore`.

use std::path::{Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::{Match, WalkBuilder};

pub const GEMINI_IGNORE: &str = ".geminiignore";
pub const GIT_IGNORE: &str = ".gitignore";

/// Patterns read_many_files skips unless told otherwise (seed 003).
pub const DEFAULT_EXCLUDES: &[&str] = &[
    "**/node_modules/**",
    "**/.git/**",
    "**/.vscode/**",
    "**/.idea/**",
    "**/dist/**",
    "**/build/**",
    "**/coverage/**",
    "**/__pycache__/**",
    "**/*.pyc",
    "**/*.bin",
    "**/*.exe",
    "**/*.dll",
    "**/*.so",
    "**/*.dylib",
    "**/*.class",
    "**/*.jar",
    "**/*.war",
    "**/*.zip",
    "**/*.tar",
    "**/*.gz",
    "**/*.bz2",
    "**/*.rar",
    "**/*.7z",
    "**/*.doc",
    "**/*.docx",
    "**/*.xls",
    "**/*.xlsx",
    "**/*.ppt",
    "**/*.pptx",
    "**/*.odt",
    "**/*.ods",
    "**/*.odp",
    "**/*.DS_Store",
    "**/.env",
    "**/GEMINI.md",
];

/// Which ignore files apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Filtering {
    pub git: bool,
    pub gemini: bool,
}

impl Default for Filtering {
    fn default() -> Self {
        Filtering {
            git: true,
            gemini: true,
        }
    }
}

/// The ignore files that govern the entries of one directory: those in the
/// workspace root and in every directory from there down to it. Used for
/// single-path checks (read_file, list_directory) where a full walk would
/// be wasted work.
pub struct IgnoreChain {
    /// Deepest directory first, because deeper rules take precedence.
    git: Vec<Gitignore>,
    gemini: Vec<Gitignore>,
    filtering: Filtering,
}

impl IgnoreChain {
    /// `dir` must lie inside `root` (both canonical).
    pub fn for_dir(root: &Path, dir: &Path, filtering: Filtering) -> Self {
        let mut dirs: Vec<PathBuf> = dir
            .ancestors()
            .take_while(|d| d.starts_with(root))
            .map(Path::to_path_buf)
            .collect();
        if dirs.is_empty() {
            dirs.push(root.to_path_buf());
        }
        let load = |name: &str| -> Vec<Gitignore> {
            dirs.iter()
                .filter_map(|d| {
                    let file = d.join(name);
                    if !file.is_file() {
                        return None;
                    }
                    let mut builder = GitignoreBuilder::new(d);
                    // A malformed line is skipped rather than failing the call:
                    // git does the same.
                    let _ = builder.add(&file);
                    builder.build().ok()
                })
                .collect()
        };
        IgnoreChain {
            git: if filtering.git {
                load(GIT_IGNORE)
            } else {
                Vec::new()
            },
            gemini: if filtering.gemini {
                load(GEMINI_IGNORE)
            } else {
                Vec::new()
            },
            filtering,
        }
    }

    /// True when git rules (or the `.git` directory itself) hide `path`.
    pub fn git_ignored(&self, path: &Path, is_dir: bool) -> bool {
        if self.filtering.git && path.components().any(|c| c.as_os_str() == ".git") {
            return true;
        }
        first_decision(&self.git, path, is_dir)
    }

    pub fn gemini_ignored(&self, path: &Path, is_dir: bool) -> bool {
        first_decision(&self.gemini, path, is_dir)
    }

    pub fn is_ignored(&self, path: &Path, is_dir: bool) -> bool {
        self.git_ignored(path, is_dir) || self.gemini_ignored(path, is_dir)
    }
}

fn first_decision(matchers: &[Gitignore], path: &Path, is_dir: bool) -> bool {
    for m in matchers {
        if !path.starts_with(m.path()) {
            continue;
        }
        match m.matched_path_or_any_parents(path, is_dir) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => {}
        }
    }
    false
}

/// True when `.geminiignore` rules hide the file `path` (inside `root`).
pub fn gemini_ignored(root: &Path, path: &Path) -> bool {
    let dir = path.parent().unwrap_or(root);
    let filtering = Filtering {
        git: false,
        gemini: true,
    };
    IgnoreChain::for_dir(root, dir, filtering).gemini_ignored(path, false)
}

/// A walker over `base` honouring the chosen ignore files and nothing else
/// (no global git excludes, no `.ignore`), hidden files included. Does not
/// prune `.git`: see [`is_git_dir`].
pub fn walker(base: &Path, filtering: Filtering, recursive: bool) -> WalkBuilder {
    let mut b = WalkBuilder::new(base);
    b.hidden(false)
        .ignore(false)
        .git_global(false)
        .git_exclude(filtering.git)
        .git_ignore(filtering.git)
        .require_git(false)
        .parents(true)
        .follow_links(false);
    if filtering.gemini {
        b.add_custom_ignore_filename(GEMINI_IGNORE);
    }
    if !recursive {
        b.max_depth(Some(1));
    }
    b
}

/// The `.git` directory is never content, and callers prune it while
/// walking (a walker holds one entry filter, so they combine it with
/// their own).
pub fn is_git_dir(entry: &ignore::DirEntry) -> bool {
    entry.file_name() == ".git" && entry.file_type().is_some_and(|t| t.is_dir())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_applies_nested_rules() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("sub/deep")).unwrap();
        std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
        std::fs::write(root.join("sub/.gitignore"), "!keep.log\n").unwrap();
        std::fs::write(root.join("sub/.geminiignore"), "secret*\ndeep/\n").unwrap();
        let chain = IgnoreChain::for_dir(&root, &root.join("sub"), Filtering::default());
        assert!(chain.git_ignored(&root.join("sub/a.log"), false));
        assert!(!chain.git_ignored(&root.join("sub/keep.log"), false));
        assert!(chain.gemini_ignored(&root.join("sub/secret.txt"), false));
        assert!(chain.gemini_ignored(&root.join("sub/deep"), true));
        assert!(!chain.is_ignored(&root.join("sub/ok.txt"), false));
        assert!(gemini_ignored(&root, &root.join("sub/deep/x.txt")));
        let off = IgnoreChain::for_dir(
            &root,
            &root.join("sub"),
            Filtering {
                git: false,
                gemini: false,
            },
        );
        assert!(!off.is_ignored(&root.join("sub/secret.log"), false));
    }
}
