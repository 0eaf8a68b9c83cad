//! Ignore-file handling shared by the tools that list or walk: `.gitignore`
//! (honoured even outside a git repository) and `.geminiignore`.

use std::path::{Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::{Match, WalkBuilder};

use super::super::settings::FileFiltering;
use super::contract::PinnedRoot;

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
/// workspace root and in every directory from there down to it, the root's
/// `.git/info/exclude`, and the custom ignore files of the settings. Used
/// for single-path checks (read_file, list_directory) where a full walk
/// would be wasted work. Every file is read through the pinned root.
pub struct IgnoreChain {
    /// Deepest directory first, because deeper rules take precedence.
    git: Vec<Gitignore>,
    gemini: Vec<Gitignore>,
    /// The custom files, in their order of precedence.
    custom: Vec<(String, Gitignore)>,
    filtering: Filtering,
}

impl IgnoreChain {
    /// `dir` must lie inside `root` (spelled under it, canonical).
    pub fn for_dir(root: &PinnedRoot, dir: &Path, filtering: Filtering, custom: &[String]) -> Self {
        let mut dirs: Vec<PathBuf> = dir
            .ancestors()
            .take_while(|d| d.starts_with(root.path()))
            .map(Path::to_path_buf)
            .collect();
        if dirs.is_empty() {
            dirs.push(root.path().to_path_buf());
        }
        let load = |name: &str| -> Vec<Gitignore> {
            dirs.iter()
                .filter_map(|d| rules_of(root, d, &d.join(name)))
                .collect()
        };
        let mut git = Vec::new();
        if filtering.git {
            git = load(GIT_IGNORE);
            git.extend(rules_of(
                root,
                root.path(),
                &root.path().join(".git/info/exclude"),
            ));
        }
        IgnoreChain {
            git,
            gemini: if filtering.gemini {
                load(GEMINI_IGNORE)
            } else {
                Vec::new()
            },
            custom: custom
                .iter()
                .filter_map(|file| {
                    let rules = rules_of(root, root.path(), &root.path().join(file))?;
                    Some((file.clone(), rules))
                })
                .collect(),
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

    /// The custom ignore file that hides `path`, if one does (the first
    /// file with a rule about it decides).
    pub fn custom_ignored(&self, path: &Path, is_dir: bool) -> Option<&str> {
        for (file, rules) in &self.custom {
            match rules.matched_path_or_any_parents(path, is_dir) {
                Match::Ignore(_) => return Some(file),
                Match::Whitelist(_) => return None,
                Match::None => {}
            }
        }
        None
    }

    pub fn is_ignored(&self, path: &Path, is_dir: bool) -> bool {
        self.git_ignored(path, is_dir)
            || self.gemini_ignored(path, is_dir)
            || self.custom_ignored(path, is_dir).is_some()
    }
}

/// The rules of the ignore file `file` (under `root`), governing `base`;
/// `None` when it is not a readable regular file. A malformed line is
/// skipped rather than failing the call: git does the same.
fn rules_of(root: &PinnedRoot, base: &Path, file: &Path) -> Option<Gitignore> {
    let bytes = super::path::read_confined(root, file).ok()?;
    let mut builder = GitignoreBuilder::new(base);
    for line in String::from_utf8_lossy(&bytes).lines() {
        let _ = builder.add_line(Some(file.to_path_buf()), line);
    }
    builder.build().ok()
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

/// Which ignore rules hide the file `path` (inside `root`) under the
/// session's settings, if any do: `.gitignore` (and `.git/info/exclude`),
/// `.geminiignore`, or a custom ignore file (named as the settings name
/// it). `read_file` refuses such files, as Gemini CLI 0.61 does.
pub fn ignored_by(root: &PinnedRoot, path: &Path, settings: &FileFiltering) -> Option<String> {
    let dir = path.parent().unwrap_or(root.path());
    let filtering = Filtering {
        git: settings.respect_git_ignore,
        gemini: settings.respect_gemini_ignore,
    };
    let chain = IgnoreChain::for_dir(root, dir, filtering, &settings.custom_ignore_files);
    if let Some(file) = chain.custom_ignored(path, false) {
        return Some(file.to_owned());
    }
    if chain.gemini_ignored(path, false) {
        return Some(GEMINI_IGNORE.to_owned());
    }
    if chain.git_ignored(path, false) {
        return Some(GIT_IGNORE.to_owned());
    }
    None
}

/// The custom ignore files (relative to the root) as one matcher for
/// walks, an earlier file taking precedence over a later one; `None` when
/// there are none or none can be read.
pub fn custom_rules(root: &PinnedRoot, files: &[String]) -> Option<Gitignore> {
    let mut builder = GitignoreBuilder::new(root.path());
    let mut any = false;
    // In a gitignore the last matching line wins: the first file goes last.
    for file in files.iter().rev() {
        let path = root.path().join(file);
        let Ok(bytes) = super::path::read_confined(root, &path) else {
            continue;
        };
        any = true;
        for line in String::from_utf8_lossy(&bytes).lines() {
            let _ = builder.add_line(Some(path.clone()), line);
        }
    }
    any.then(|| builder.build().ok()).flatten()
}

/// How to read files hidden by `rules` anyway, for refusal messages.
pub fn opt_out_hint(rules: &str) -> &'static str {
    match rules {
        GIT_IGNORE => {
            " (set context.fileFiltering.respectGitIgnore to false in settings.json to read git-ignored files)"
        }
        GEMINI_IGNORE => {
            " (set context.fileFiltering.respectGeminiIgnore to false in settings.json to read them)"
        }
        _ => " (it is listed in context.fileFiltering.customIgnoreFilePaths)",
    }
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
        std::fs::create_dir_all(root.join(".git/info")).unwrap();
        std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
        std::fs::write(root.join(".git/info/exclude"), "*.tmp\n").unwrap();
        std::fs::write(root.join("sub/.gitignore"), "!keep.log\n").unwrap();
        std::fs::write(root.join("sub/.geminiignore"), "secret*\ndeep/\n").unwrap();
        std::fs::write(root.join(".myignore"), "*.secret\n").unwrap();
        let pinned = PinnedRoot::open(&root).unwrap();
        let custom = [".myignore".to_owned()];
        let chain = IgnoreChain::for_dir(&pinned, &root.join("sub"), Filtering::default(), &custom);
        assert!(chain.git_ignored(&root.join("sub/a.log"), false));
        assert!(chain.git_ignored(&root.join("sub/a.tmp"), false));
        assert!(!chain.git_ignored(&root.join("sub/keep.log"), false));
        assert!(chain.gemini_ignored(&root.join("sub/secret.txt"), false));
        assert!(chain.gemini_ignored(&root.join("sub/deep"), true));
        assert_eq!(
            chain.custom_ignored(&root.join("sub/k.secret"), false),
            Some(".myignore")
        );
        assert!(!chain.is_ignored(&root.join("sub/ok.txt"), false));
        let off = IgnoreChain::for_dir(
            &pinned,
            &root.join("sub"),
            Filtering {
                git: false,
                gemini: false,
            },
            &[],
        );
        assert!(!off.is_ignored(&root.join("sub/secret.log"), false));
        // read_file's question, under the settings.
        let mut settings = FileFiltering::default();
        let by = |s: &FileFiltering, rel: &str| ignored_by(&pinned, &root.join(rel), s);
        assert_eq!(
            by(&settings, "sub/deep/x.txt").as_deref(),
            Some(".geminiignore")
        );
        assert_eq!(by(&settings, "a.log").as_deref(), Some(".gitignore"));
        assert_eq!(by(&settings, "ok.txt"), None);
        settings.respect_git_ignore = false;
        settings.respect_gemini_ignore = false;
        assert_eq!(by(&settings, "a.log"), None);
        assert_eq!(by(&settings, "sub/deep/x.txt"), None);
        settings.custom_ignore_files = custom.to_vec();
        assert_eq!(by(&settings, "x.secret").as_deref(), Some(".myignore"));
    }
}
