//! Discovery and loading against real temp dirs.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::*;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A temp dir laid out as `<tmp>/home/.gemini` plus whatever a test adds.
struct Sandbox {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Sandbox {
    fn new() -> io::Result<Self> {
        let dir = tempfile::tempdir()?;
        let root = fs::canonicalize(dir.path())?;
        fs::create_dir_all(root.join("home/.gemini"))?;
        Ok(Self { _dir: dir, root })
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn write(&self, rel: &str, text: &str) -> io::Result<PathBuf> {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(&path, text)?;
        Ok(path)
    }

    fn mkdir(&self, rel: &str) -> io::Result<PathBuf> {
        let path = self.path(rel);
        fs::create_dir_all(&path)?;
        Ok(path)
    }

    fn gemini_dir(&self) -> PathBuf {
        self.path("home/.gemini")
    }

    fn discover(&self, workspace: &str, options: &DiscoveryOptions) -> Vec<String> {
        discover(&self.path(workspace), &self.gemini_dir(), options)
            .iter()
            .map(|p| self.rel(p))
            .collect()
    }

    fn rel(&self, p: &Path) -> String {
        p.strip_prefix(&self.root)
            .map_or_else(|_| p.display().to_string(), |r| r.display().to_string())
    }
}

fn names(list: &[&str]) -> DiscoveryOptions {
    DiscoveryOptions {
        file_names: list.iter().map(|s| s.to_string()).collect(),
        ..DiscoveryOptions::default()
    }
}

#[test]
fn upward_search_stops_at_git_root() -> TestResult {
    let sb = Sandbox::new()?;
    sb.mkdir("home/proj/.git")?;
    sb.write("home/GEMINI.md", "above the root")?;
    sb.write("home/proj/GEMINI.md", "root")?;
    sb.write("home/proj/a/GEMINI.md", "a")?;
    sb.write("home/proj/a/b/GEMINI.md", "workspace")?;
    sb.write("home/.gemini/GEMINI.md", "global")?;
    let found = sb.discover("home/proj/a/b", &DiscoveryOptions::default());
    assert_eq!(
        found,
        [
            "home/.gemini/GEMINI.md",
            "home/proj/GEMINI.md",
            "home/proj/a/GEMINI.md",
            "home/proj/a/b/GEMINI.md",
        ]
    );
    Ok(())
}

#[test]
fn without_git_the_search_stops_at_home() -> TestResult {
    let sb = Sandbox::new()?;
    sb.write("GEMINI.md", "above home")?;
    sb.write("home/GEMINI.md", "home")?;
    sb.write("home/x/ws/GEMINI.md", "ws")?;
    let found = sb.discover("home/x/ws", &DiscoveryOptions::default());
    assert_eq!(found, ["home/GEMINI.md", "home/x/ws/GEMINI.md"]);
    Ok(())
}

#[test]
fn git_above_home_is_not_a_project_root() -> TestResult {
    let sb = Sandbox::new()?;
    sb.mkdir(".git")?;
    sb.write("GEMINI.md", "outside home")?;
    sb.write("home/ws/GEMINI.md", "ws")?;
    assert_eq!(find_git_root_of(&sb, "home/ws"), None);
    assert_eq!(
        sb.discover("home/ws", &DiscoveryOptions::default()),
        ["home/ws/GEMINI.md"]
    );
    Ok(())
}

fn find_git_root_of(sb: &Sandbox, rel: &str) -> Option<PathBuf> {
    discovery::find_git_root(&sb.path(rel), Some(&sb.path("home")))
}

#[test]
fn workspace_outside_home_without_git_is_searched_alone() -> TestResult {
    let sb = Sandbox::new()?;
    sb.write("elsewhere/GEMINI.md", "parent")?;
    sb.write("elsewhere/ws/GEMINI.md", "ws")?;
    assert_eq!(
        sb.discover("elsewhere/ws", &DiscoveryOptions::default()),
        ["elsewhere/ws/GEMINI.md"]
    );
    Ok(())
}

#[test]
fn downward_walk_is_sorted_and_skips_vendor_dirs() -> TestResult {
    let sb = Sandbox::new()?;
    sb.mkdir("ws/.git")?;
    sb.write("ws/GEMINI.md", "top")?;
    sb.write("ws/b/GEMINI.md", "b")?;
    sb.write("ws/a/deeper/GEMINI.md", "a/deeper")?;
    sb.write("ws/a/GEMINI.md", "a")?;
    sb.write("ws/node_modules/pkg/GEMINI.md", "vendored")?;
    sb.write("ws/.git/GEMINI.md", "git internals")?;
    sb.write("ws/.hidden/GEMINI.md", "hidden dirs are searched")?;
    let found = sb.discover("ws", &DiscoveryOptions::default());
    assert_eq!(
        found,
        [
            "ws/GEMINI.md",
            "ws/.hidden/GEMINI.md",
            "ws/a/GEMINI.md",
            "ws/a/deeper/GEMINI.md",
            "ws/b/GEMINI.md",
        ]
    );
    Ok(())
}

#[test]
fn geminiignore_and_gitignore_prune_the_walk() -> TestResult {
    let sb = Sandbox::new()?;
    sb.mkdir("ws/.git")?;
    sb.write("ws/.geminiignore", "private/\n")?;
    sb.write("ws/.gitignore", "build/\n")?;
    sb.write("ws/private/GEMINI.md", "no")?;
    sb.write("ws/build/GEMINI.md", "no")?;
    sb.write("ws/c/.geminiignore", "GEMINI.md\n")?;
    sb.write("ws/c/GEMINI.md", "no")?;
    sb.write("ws/c/d/GEMINI.md", "no either: the pattern has no slash")?;
    sb.write("ws/keep/GEMINI.md", "yes")?;
    assert_eq!(
        sb.discover("ws", &DiscoveryOptions::default()),
        ["ws/keep/GEMINI.md"]
    );

    let no_git = DiscoveryOptions {
        respect_git_ignore: false,
        ..DiscoveryOptions::default()
    };
    assert_eq!(
        sb.discover("ws", &no_git),
        ["ws/build/GEMINI.md", "ws/keep/GEMINI.md"]
    );
    Ok(())
}

#[test]
fn geminiignore_between_root_and_workspace_applies() -> TestResult {
    let sb = Sandbox::new()?;
    sb.mkdir("repo/.git")?;
    sb.write("repo/.geminiignore", "generated/\n")?;
    sb.write("repo/ws/generated/GEMINI.md", "no")?;
    sb.write("repo/ws/src/GEMINI.md", "yes")?;
    assert_eq!(
        sb.discover("repo/ws", &DiscoveryOptions::default()),
        ["repo/ws/src/GEMINI.md"]
    );
    Ok(())
}

#[test]
fn walk_is_bounded_by_dirs_and_depth() -> TestResult {
    let sb = Sandbox::new()?;
    for d in ["a", "b", "c", "d"] {
        sb.write(&format!("ws/{d}/GEMINI.md"), d)?;
    }
    sb.write("ws/a/x/y/GEMINI.md", "deep")?;
    let few_dirs = DiscoveryOptions {
        max_dirs: 3,
        ..DiscoveryOptions::default()
    };
    // The workspace itself counts as the first directory.
    assert_eq!(
        sb.discover("ws", &few_dirs),
        ["ws/a/GEMINI.md", "ws/b/GEMINI.md"]
    );
    let shallow = DiscoveryOptions {
        max_depth: 2,
        ..DiscoveryOptions::default()
    };
    let found = sb.discover("ws", &shallow);
    assert_eq!(found.len(), 4);
    assert!(!found.contains(&"ws/a/x/y/GEMINI.md".to_string()));
    Ok(())
}

#[test]
fn custom_file_names_are_grouped_per_directory() -> TestResult {
    let sb = Sandbox::new()?;
    sb.mkdir("ws/.git")?;
    sb.write("home/.gemini/CONTEXT.md", "global context")?;
    sb.write("ws/CONTEXT.md", "ctx")?;
    sb.write("ws/AGENTS.md", "agents")?;
    sb.write("ws/GEMINI.md", "not configured")?;
    sb.write("ws/sub/AGENTS.md", "sub agents")?;
    let found = sb.discover("ws", &names(&["AGENTS.md", "CONTEXT.md"]));
    assert_eq!(
        found,
        [
            "home/.gemini/CONTEXT.md",
            "ws/AGENTS.md",
            "ws/CONTEXT.md",
            "ws/sub/AGENTS.md"
        ]
    );
    Ok(())
}

#[test]
fn global_file_alone_and_directories_named_like_memory_files() -> TestResult {
    let sb = Sandbox::new()?;
    sb.write("home/.gemini/GEMINI.md", "global")?;
    sb.mkdir("ws/GEMINI.md")?;
    assert_eq!(
        sb.discover("ws", &DiscoveryOptions::default()),
        ["home/.gemini/GEMINI.md"]
    );
    Ok(())
}

#[cfg(unix)]
#[test]
fn the_same_file_twice_is_listed_once() -> TestResult {
    let sb = Sandbox::new()?;
    sb.mkdir("ws/.git")?;
    sb.write("ws/GEMINI.md", "one")?;
    sb.mkdir("ws/sub")?;
    std::os::unix::fs::symlink(sb.path("ws/GEMINI.md"), sb.path("ws/sub/GEMINI.md"))?;
    assert_eq!(
        sb.discover("ws", &DiscoveryOptions::default()),
        ["ws/GEMINI.md"]
    );
    Ok(())
}

#[test]
fn load_merges_files_with_imports_and_headers() -> TestResult {
    let sb = Sandbox::new()?;
    sb.mkdir("home/proj/.git")?;
    sb.write("home/.gemini/GEMINI.md", "Global rules.\n")?;
    sb.write(
        "home/proj/GEMINI.md",
        "  Project.\n@./docs/style.md\n@./GEMINI.md\n",
    )?;
    sb.write("home/proj/docs/style.md", "Style @./more.md")?;
    sb.write("home/proj/docs/more.md", "More")?;
    sb.write("home/proj/sub/GEMINI.md", " \n\t")?;
    let memory = load(
        &sb.path("home/proj"),
        &sb.gemini_dir(),
        &[],
        Vec::new(),
        Vec::new(),
    );

    let files: Vec<String> = memory.files.iter().map(|f| sb.rel(&f.path)).collect();
    assert_eq!(
        files,
        [
            "home/.gemini/GEMINI.md",
            "home/proj/GEMINI.md",
            "home/proj/sub/GEMINI.md"
        ]
    );
    let expected = "--- Context from: ../.gemini/GEMINI.md ---\nGlobal rules.\n--- End of Context from: ../.gemini/GEMINI.md ---\n\n\
--- Context from: GEMINI.md ---\nProject.\n<!-- Imported from: ./docs/style.md -->\nStyle <!-- Imported from: ./more.md -->\nMore\n<!-- End of import from: ./more.md -->\n<!-- End of import from: ./docs/style.md -->\n<!-- File already processed: ./GEMINI.md -->\n--- End of Context from: GEMINI.md ---";
    assert_eq!(memory.text, expected);

    let project = &memory.files[1];
    assert_eq!(project.tree.path, sb.path("home/proj/GEMINI.md"));
    assert_eq!(project.tree.imports.len(), 1);

    let watched: Vec<String> = watched_paths(&memory).iter().map(|p| sb.rel(p)).collect();
    assert_eq!(
        watched,
        [
            "home/.gemini/GEMINI.md",
            "home/proj/GEMINI.md",
            "home/proj/docs/style.md",
            "home/proj/docs/more.md",
            "home/proj/sub/GEMINI.md",
        ]
    );
    Ok(())
}

#[test]
fn load_with_flat_format() -> TestResult {
    let sb = Sandbox::new()?;
    sb.write("ws/GEMINI.md", "Top @./a.md")?;
    sb.write("ws/a.md", "A")?;
    let options = LoadOptions {
        import_format: ImportFormat::Flat,
        ..LoadOptions::default()
    };
    let memory = load_with(&OsFiles, &sb.path("ws"), &sb.gemini_dir(), &options);
    let ws = sb.path("ws").display().to_string();
    assert_eq!(
        memory.files[0].content,
        format!(
            "--- File: {ws}/GEMINI.md ---\nTop @./a.md\n--- End of File: {ws}/GEMINI.md ---\n\n\
--- File: {ws}/a.md ---\nA\n--- End of File: {ws}/a.md ---"
        )
    );
    Ok(())
}

#[test]
fn empty_workspace_gives_empty_memory() -> TestResult {
    let sb = Sandbox::new()?;
    sb.mkdir("ws")?;
    let memory = load(
        &sb.path("ws"),
        &sb.gemini_dir(),
        &["GEMINI.md".to_string()],
        Vec::new(),
        Vec::new(),
    );
    assert_eq!(memory, Memory::default());
    assert!(watched_paths(&memory).is_empty());
    Ok(())
}

#[test]
fn file_name_setting_shapes() -> TestResult {
    use serde_json::json;
    assert_eq!(file_names_from_setting(None)?, ["GEMINI.md"]);
    assert_eq!(
        file_names_from_setting(Some(&json!("AGENTS.md")))?,
        ["AGENTS.md"]
    );
    assert_eq!(
        file_names_from_setting(Some(&json!(["A.md", "B.md"])))?,
        ["A.md", "B.md"]
    );
    assert!(file_names_from_setting(Some(&json!(3))).is_err());
    assert!(file_names_from_setting(Some(&json!(["A.md", 1]))).is_err());
    Ok(())
}
