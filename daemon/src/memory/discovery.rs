//! Finding the GEMINI.md files that make up the memory.
//!
//! Order: the global files in the user's Gemini directory, then the files
//! from the project root down to the workspace (per directory, in the order
//! of the configured names), then files below the workspace found by a
//! bounded breadth-first walk, sorted by path.

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// Default name of a memory file.
pub const DEFAULT_FILE_NAME: &str = "GEMINI.md";
/// Default cap on directories scanned below the workspace.
pub const DEFAULT_MAX_DIRS: usize = 200;
/// Default cap on how deep below the workspace the walk goes.
pub const DEFAULT_MAX_DEPTH: usize = 10;

/// Directory names never entered by the downward walk.
const SKIPPED_DIRS: &[&str] = &["node_modules", ".git"];
const GEMINI_IGNORE: &str = ".geminiignore";
const GIT_IGNORE: &str = ".gitignore";

/// Knobs for [`discover`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveryOptions {
    /// File names to look for (`context.fileName`), in priority order.
    pub file_names: Vec<String>,
    /// Directories scanned below the workspace, the workspace included.
    pub max_dirs: usize,
    /// Levels below the workspace the walk may enter.
    pub max_depth: usize,
    /// Honour `.gitignore` files (inside a git project) as well as
    /// `.geminiignore` files during the downward walk.
    pub respect_git_ignore: bool,
}

impl Default for DiscoveryOptions {
    fn default() -> Self {
        Self {
            file_names: vec![DEFAULT_FILE_NAME.to_string()],
            max_dirs: DEFAULT_MAX_DIRS,
            max_depth: DEFAULT_MAX_DEPTH,
            respect_git_ignore: true,
        }
    }
}

/// The memory files for `workspace`, in load order, without duplicates.
/// `user_gemini_dir` is `~/.gemini`; its parent is taken as the home
/// directory, above which the upward search never goes.
pub fn discover(
    workspace: &Path,
    user_gemini_dir: &Path,
    options: &DiscoveryOptions,
) -> Vec<PathBuf> {
    let names: Vec<&str> = options
        .file_names
        .iter()
        .map(String::as_str)
        .filter(|n| !n.is_empty())
        .collect();
    let workspace = canonical(workspace);
    let gemini_dir = canonical(user_gemini_dir);
    let home = gemini_dir.parent().map(Path::to_path_buf);

    let mut found: Vec<PathBuf> = names
        .iter()
        .map(|name| gemini_dir.join(name))
        .filter(|p| p.is_file())
        .collect();

    let git_root = find_git_root(&workspace, home.as_deref());
    let ceiling = match (&git_root, &home) {
        (Some(root), _) => root.clone(),
        (None, Some(home)) if workspace.starts_with(home) => home.clone(),
        _ => workspace.clone(),
    };
    let upward_dirs: Vec<&Path> = workspace
        .ancestors()
        .take_while(|dir| dir.starts_with(&ceiling))
        .collect();
    for dir in upward_dirs.iter().rev() {
        if *dir == gemini_dir.as_path() {
            continue;
        }
        found.extend(names.iter().map(|n| dir.join(n)).filter(|p| p.is_file()));
    }

    let walk = Walk {
        names: &names,
        options,
        use_git_ignore: options.respect_git_ignore && git_root.is_some(),
    };
    // Ignore files between the project root and the workspace apply too.
    let inherited: Vec<Arc<Gitignore>> = upward_dirs
        .iter()
        .rev()
        .filter(|dir| **dir != workspace.as_path())
        .flat_map(|dir| walk.ignore_files(dir))
        .collect();
    let mut below = walk.run(&workspace, inherited);
    below.sort_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
    found.extend(below);
    dedupe(found)
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Nearest ancestor of `start` (itself included) holding a `.git` entry,
/// not looking above `home` when `start` is inside it.
pub fn find_git_root(start: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let limit = home.filter(|h| start.starts_with(h));
    for dir in start.ancestors() {
        if dir.join(".git").exists() {
            return Some(dir.to_path_buf());
        }
        if Some(dir) == limit {
            break;
        }
    }
    None
}

/// Keep the first of several paths naming the same file.
fn dedupe(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut seen = HashSet::new();
    paths
        .into_iter()
        .filter(|p| seen.insert(file_identity(p)))
        .collect()
}

#[cfg(unix)]
fn file_identity(p: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(p) {
        Ok(meta) => format!("{}:{}", meta.dev(), meta.ino()),
        Err(_) => p.to_string_lossy().into_owned(),
    }
}

#[cfg(not(unix))]
fn file_identity(p: &Path) -> String {
    canonical(p).to_string_lossy().into_owned()
}

struct Walk<'a> {
    names: &'a [&'a str],
    options: &'a DiscoveryOptions,
    use_git_ignore: bool,
}

impl Walk<'_> {
    /// Matchers for the ignore files present in `dir`.
    fn ignore_files(&self, dir: &Path) -> Vec<Arc<Gitignore>> {
        let mut files = vec![GEMINI_IGNORE];
        if self.use_git_ignore {
            files.push(GIT_IGNORE);
        }
        files
            .into_iter()
            .map(|name| dir.join(name))
            .filter(|p| p.is_file())
            .filter_map(|p| {
                let mut builder = GitignoreBuilder::new(dir);
                // A partly malformed file still yields its valid patterns.
                let _partial = builder.add(&p);
                builder.build().ok().map(Arc::new)
            })
            .collect()
    }

    /// Breadth-first search below `start` for the configured names.
    fn run(&self, start: &Path, inherited: Vec<Arc<Gitignore>>) -> Vec<PathBuf> {
        let mut found = Vec::new();
        let mut queue = VecDeque::from([(start.to_path_buf(), 0usize, inherited)]);
        let mut scanned = 0;
        while let Some((dir, depth, mut matchers)) = queue.pop_front() {
            if scanned >= self.options.max_dirs {
                break;
            }
            scanned += 1;
            matchers.extend(self.ignore_files(&dir));
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
            entries.sort_by_key(|e| e.file_name());
            for entry in entries {
                let path = entry.path();
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let name = entry.file_name();
                let name = name.to_string_lossy();
                if kind.is_dir() {
                    if depth < self.options.max_depth
                        && !SKIPPED_DIRS.contains(&name.as_ref())
                        && !ignored(&matchers, &path, true)
                    {
                        queue.push_back((path, depth + 1, matchers.clone()));
                    }
                } else if self.names.contains(&name.as_ref())
                    && path.is_file()
                    && !ignored(&matchers, &path, false)
                {
                    found.push(path);
                }
            }
        }
        found
    }
}

/// The innermost matcher with an opinion decides.
fn ignored(matchers: &[Arc<Gitignore>], path: &Path, is_dir: bool) -> bool {
    for m in matchers.iter().rev() {
        match m.matched(path, is_dir) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => {}
        }
    }
    false
}
