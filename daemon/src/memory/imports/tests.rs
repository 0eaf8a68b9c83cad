//! Import processing against an in-memory file source.

use std::collections::HashMap;
use std::io;

use super::*;

/// An in-memory disk: files by absolute path; their ancestors are dirs.
struct MemFs(HashMap<String, String>);

impl MemFs {
    fn new(files: &[(&str, &str)]) -> Self {
        Self(
            files
                .iter()
                .map(|(p, c)| (p.to_string(), c.to_string()))
                .collect(),
        )
    }
    fn is_dir(&self, p: &str) -> bool {
        p == "/" || self.0.keys().any(|f| f.starts_with(&format!("{p}/")))
    }
    fn exists(&self, p: &Path) -> io::Result<()> {
        let p = paths::path_str(p);
        if self.0.contains_key(&p) || self.is_dir(&p) {
            Ok(())
        } else {
            Err(io::ErrorKind::NotFound.into())
        }
    }
}

impl FileSource for MemFs {
    fn access(&self, path: &Path) -> io::Result<()> {
        self.exists(path)
    }
    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        let p = paths::path_str(path);
        match self.0.get(&p) {
            Some(text) => Ok(text.clone()),
            None if self.is_dir(&p) => Err(io::ErrorKind::IsADirectory.into()),
            None => Err(io::ErrorKind::NotFound.into()),
        }
    }
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.exists(path).map(|()| path.to_path_buf())
    }
    fn symlink_target(&self, path: &Path) -> io::Result<Option<PathBuf>> {
        self.exists(path).map(|()| None)
    }
}

fn run(fs: &MemFs, content: &str, base: &str, options: &ImportOptions) -> Processed {
    process_imports(fs, content, Path::new(base), options)
}

#[test]
fn seeded_current_file_is_on_the_chain() {
    let fs = MemFs::new(&[("/p/.git/HEAD", ""), ("/p/GEMINI.md", "me @./GEMINI.md")]);
    let options = ImportOptions {
        current_file: Some(PathBuf::from("/p/GEMINI.md")),
        ..ImportOptions::default()
    };
    let got = run(&fs, "me @./GEMINI.md", "/p", &options);
    assert_eq!(
        got.content,
        "me <!-- File already processed: ./GEMINI.md -->"
    );
    assert_eq!(got.tree.path, PathBuf::from("/p/GEMINI.md"));
    assert!(got.tree.imports.is_empty());
}

#[test]
fn project_root_comes_from_git_marker() {
    let fs = MemFs::new(&[
        ("/r/.git/HEAD", ""),
        ("/r/top.md", "TOP"),
        ("/r/sub/x.md", "x"),
        ("/elsewhere.md", "no"),
    ]);
    let got = run(
        &fs,
        "@../top.md @/elsewhere.md",
        "/r/sub",
        &ImportOptions::default(),
    );
    assert_eq!(
        got.content,
        "<!-- Imported from: ../top.md -->\nTOP\n<!-- End of import from: ../top.md --> \
         <!-- Import failed: /elsewhere.md - Path traversal attempt -->"
    );
    let paths: Vec<&Path> = got.tree.all_paths();
    assert_eq!(paths, [Path::new(UNKNOWN_PATH), Path::new("/r/top.md")]);
}

#[test]
fn explicit_root_and_missing_file_message() {
    let fs = MemFs::new(&[("/r/a/x.md", "x")]);
    let options = ImportOptions {
        project_root: Some(PathBuf::from("/r")),
        ..ImportOptions::default()
    };
    let got = run(&fs, "@../b/none.md", "/r/a", &options);
    assert_eq!(
        got.content,
        "<!-- Import failed: ../b/none.md - ENOENT: no such file or directory, access '/r/b/none.md' -->"
    );
}

#[test]
fn flat_lists_each_file_once_last_import_first() {
    let fs = MemFs::new(&[
        ("/w/a.md", "A @./c.md"),
        ("/w/b.md", "B @./a.md"),
        ("/w/c.md", "C"),
    ]);
    let options = ImportOptions {
        format: ImportFormat::Flat,
        current_file: Some(PathBuf::from("/w/GEMINI.md")),
        ..ImportOptions::default()
    };
    let got = run(&fs, "@./a.md @./b.md", "/w", &options);
    let order: Vec<&str> = got
        .content
        .lines()
        .filter_map(|l| l.strip_prefix("--- File: "))
        .collect();
    assert_eq!(
        order,
        [
            "/w/GEMINI.md ---",
            "/w/b.md ---",
            "/w/a.md ---",
            "/w/c.md ---"
        ]
    );
    assert_eq!(got.tree.path, PathBuf::from("/w/GEMINI.md"));
}

#[test]
fn tree_serializes_without_empty_imports() -> Result<(), serde_json::Error> {
    let tree = ImportTree {
        path: PathBuf::from("/a"),
        imports: vec![ImportTree {
            path: PathBuf::from("/b"),
            imports: Vec::new(),
        }],
    };
    assert_eq!(
        serde_json::to_string(&tree)?,
        r#"{"path":"/a","imports":[{"path":"/b"}]}"#
    );
    Ok(())
}
