//! Directory walking shared by the search tools: which ignore files apply,
//! and checks of a directory argument.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::WalkBuilder;
use ignore::gitignore::Gitignore;

use super::super::sensitive::blocked_segment;
use super::super::settings::FileFiltering;
use super::contract::{PinnedRoot, ToolContext, ToolError, ToolErrorKind};
use super::path::metadata_confined;
use super::walk::{GEMINI_IGNORE, custom_rules};

/// Which ignore rules a search honours.
pub struct SearchFilter {
    pub respect_git_ignore: bool,
    pub respect_gemini_ignore: bool,
    /// The custom ignore files of the settings, read once.
    pub custom: Option<Arc<Gitignore>>,
}

impl SearchFilter {
    /// The settings' rules, the per-call `respect_git_ignore` winning.
    pub fn new(root: &PinnedRoot, settings: &FileFiltering, respect_git: Option<bool>) -> Self {
        SearchFilter {
            respect_git_ignore: respect_git.unwrap_or(settings.respect_git_ignore),
            respect_gemini_ignore: settings.respect_gemini_ignore,
            custom: custom_rules(root, &settings.custom_ignore_files).map(Arc::new),
        }
    }
}

/// A walker over `dir` (a directory under `root`) with our ignore rules:
/// `.geminiignore` and `.gitignore` (with `.git/info/exclude` and the
/// global excludes file) as `filter` says, applied whether or not `dir` is
/// in a git repository (`require_git(false)`), so results do not depend on
/// a `.git` directory, and the custom ignore files. Hidden files are
/// searched, but `.git` itself never is, nor any sensitive path
/// ([`crate::tools::sensitive`]). The walk starts from the pinned root's
/// descriptor (`/proc/self/fd/N/...`), so the paths it yields are in that
/// form: [`PinnedRoot::display_of`] names them. Symlinks are not followed.
pub fn walker(root: &PinnedRoot, dir: &Path, filter: &SearchFilter) -> WalkBuilder {
    let base = root
        .fs_path(dir)
        .unwrap_or_else(|| root.fs_base().to_path_buf());
    let mut b = WalkBuilder::new(base);
    b.hidden(false)
        .follow_links(false)
        .parents(true)
        .ignore(true)
        .git_ignore(filter.respect_git_ignore)
        .git_exclude(filter.respect_git_ignore)
        .git_global(filter.respect_git_ignore)
        .require_git(false);
    if filter.respect_gemini_ignore {
        b.add_custom_ignore_filename(GEMINI_IGNORE);
    }
    let custom = filter.custom.clone();
    let root = root.clone();
    b.filter_entry(move |e| {
        let name = e.file_name();
        if name == ".git"
            || super::atomic_write::is_temp_name(name)
            || blocked_segment(Path::new(name)).is_some()
        {
            return false;
        }
        match (&custom, root.display_of(e.path())) {
            (Some(rules), Some(shown)) => {
                let is_dir = e.file_type().is_some_and(|t| t.is_dir());
                !rules
                    .matched_path_or_any_parents(&shown, is_dir)
                    .is_ignore()
            }
            _ => true,
        }
    });
    b
}

/// Resolves an optional absolute directory argument named `param`:
/// defaults to the primary root; must be inside a root, exist, and be a
/// directory (and not a sensitive one).
pub fn resolve_dir(
    ctx: &ToolContext,
    raw: Option<&str>,
    param: &str,
) -> Result<(PinnedRoot, PathBuf), ToolError> {
    let Some(raw) = raw.filter(|r| !r.is_empty()) else {
        return Ok((ctx.root().clone(), ctx.root().path().to_path_buf()));
    };
    let (root, dir) = ctx.resolve(raw, param)?;
    match metadata_confined(&root, &dir) {
        Ok(m) if m.is_dir() => Ok((root, dir)),
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
        std::fs::write(root.join(".custom"), "skipped_custom.txt\n").unwrap();
        for f in [
            "kept.txt",
            "skipped_git.txt",
            "skipped_gemini.txt",
            "skipped_custom.txt",
            ".hidden",
            ".env",
            "gha-creds-1.json",
        ] {
            std::fs::write(root.join(f), "x").unwrap();
        }
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/config"), "x").unwrap();
        std::fs::create_dir_all(root.join("node_modules/m")).unwrap();
        std::fs::write(root.join("node_modules/m/i.js"), "x").unwrap();
        let pinned = PinnedRoot::open(&root).unwrap();
        let names = |settings: &FileFiltering, respect: Option<bool>| {
            let filter = SearchFilter::new(&pinned, settings, respect);
            let mut v: Vec<String> = walker(&pinned, &root, &filter)
                .build()
                .filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
                .map(|e| relative(&root, &pinned.display_of(e.path()).unwrap()))
                .collect();
            v.sort();
            v
        };
        let mut settings = FileFiltering::default();
        assert_eq!(
            names(&settings, None),
            [
                ".custom",
                ".geminiignore",
                ".gitignore",
                ".hidden",
                "kept.txt",
                "skipped_custom.txt"
            ]
        );
        assert_eq!(
            names(&settings, Some(false)),
            [
                ".custom",
                ".geminiignore",
                ".gitignore",
                ".hidden",
                "kept.txt",
                "skipped_custom.txt",
                "skipped_git.txt"
            ]
        );
        settings.respect_gemini_ignore = false;
        settings.custom_ignore_files = vec![".custom".to_owned()];
        assert_eq!(
            names(&settings, None),
            [
                ".custom",
                ".geminiignore",
                ".gitignore",
                ".hidden",
                "kept.txt",
                "skipped_gemini.txt"
            ]
        );
    }
}
