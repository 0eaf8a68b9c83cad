use std::fs;
use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use super::super::atomic_write::TEMP_PREFIX;
use super::super::dir_cache::{DirCache, Kind};
use super::super::walk::{self, Filtering};
use super::CachedWalk;

/// A tree with every kind of rule and precedence the walk must honour,
/// inside an outer directory whose own `.gitignore` applies to it.
fn tree() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let outer = dir.path().canonicalize().unwrap();
    let root = outer.join("ws");
    let files: &[(&str, &str)] = &[
        ("../.gitignore", "*.skip\n"),
        (".git/HEAD", "ref: refs/heads/main\n"),
        (".git/info/exclude", "excluded_by_info.txt\n"),
        (".gitignore", "*.log\nbuild/\n!keep.log\nsecret/\n"),
        (".geminiignore", "private*\n!private_ok.txt\n"),
        ("a.txt", "a"),
        ("b.log", "b"),
        ("keep.log", "k"),
        ("x.skip", "x"),
        ("excluded_by_info.txt", "e"),
        ("private.txt", "p"),
        ("private_ok.txt", "p"),
        ("build/out.txt", "o"),
        ("secret/s.txt", "s"),
        ("src/.gitignore", "!*.log\ngen/\n"),
        ("src/.geminiignore", "!private_inner.txt\n"),
        ("src/c.log", "c"),
        ("src/main.rs", "fn main() {}"),
        ("src/gen/g.rs", "g"),
        ("src/private_inner.txt", "p"),
        ("docs/.geminiignore", "*.md\n"),
        ("docs/.gitignore", "!*.md\n"),
        ("docs/readme.md", "r"),
        ("docs/guide.txt", "g"),
        ("nested/deep/deeper/file.txt", "f"),
    ];
    for (rel, text) in files {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    fs::write(root.join(format!("{TEMP_PREFIX}half")), "t").unwrap();
    fs::create_dir(root.join("empty")).unwrap();
    std::os::unix::fs::symlink("a.txt", root.join("link")).unwrap();
    std::os::unix::fs::symlink("src", root.join("dirlink")).unwrap();
    (dir, root)
}

/// The `ignore` crate's walk with the options the tools use.
fn reference(bases: &[&Path], filtering: Filtering) -> Vec<PathBuf> {
    let mut builder = walk::walker(bases[0], filtering, true);
    for b in &bases[1..] {
        builder.add(b);
    }
    builder.filter_entry(|e| {
        !walk::is_git_dir(e) && !super::super::atomic_write::is_temp_name(e.file_name())
    });
    let mut out: Vec<PathBuf> = builder
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file() || t.is_symlink()))
        .map(|e| e.into_path())
        .collect();
    out.sort();
    out
}

fn cached(cache: &DirCache, bases: &[&Path], filtering: Filtering) -> Vec<PathBuf> {
    let walk = CachedWalk {
        cache,
        top: Path::new("/"),
        filtering,
        enter: &|_| true,
        keep: &|_, _| true,
    };
    let mut out: Vec<PathBuf> = walk
        .run(bases, &CancellationToken::new())
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    out.sort();
    out
}

const ALL_FILTERINGS: [Filtering; 4] = [
    Filtering {
        git: true,
        gemini: true,
    },
    Filtering {
        git: true,
        gemini: false,
    },
    Filtering {
        git: false,
        gemini: true,
    },
    Filtering {
        git: false,
        gemini: false,
    },
];

#[test]
fn finds_what_the_ignore_crate_finds() {
    let (_dir, root) = tree();
    let cache = DirCache::new();
    for filtering in ALL_FILTERINGS {
        for bases in [
            vec![root.as_path()],
            vec![&root.join("src"), &root.join("docs")],
        ] {
            let bases: Vec<&Path> = bases.iter().map(|b| b.as_ref()).collect();
            assert_eq!(
                cached(&cache, &bases, filtering),
                reference(&bases, filtering),
                "{filtering:?} {bases:?}"
            );
        }
    }
    // Spelled out once, so a shared mistake cannot hide.
    let rel: Vec<String> = cached(&cache, &[&root], Filtering::default())
        .iter()
        .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
        .collect();
    assert_eq!(
        rel,
        [
            ".geminiignore",
            ".gitignore",
            "a.txt",
            "dirlink",
            "docs/.geminiignore",
            "docs/.gitignore",
            "docs/guide.txt",
            "keep.log",
            "link",
            "nested/deep/deeper/file.txt",
            "private_ok.txt",
            "src/.geminiignore",
            "src/.gitignore",
            "src/c.log",
            "src/main.rs",
            "src/private_inner.txt",
        ]
    );
}

#[test]
fn reports_kinds_and_prunes_where_asked() {
    let (_dir, root) = tree();
    let cache = DirCache::new();
    let walk = CachedWalk {
        cache: &cache,
        top: Path::new("/"),
        filtering: Filtering::default(),
        enter: &|p| !p.ends_with("nested/deep"),
        keep: &|p, _| p.extension().is_none_or(|e| e != "rs"),
    };
    let found = walk.run(&[&root], &CancellationToken::new());
    let kind = |name: &str| {
        found
            .iter()
            .find(|(p, _)| p.ends_with(name))
            .map(|(_, k)| *k)
    };
    assert_eq!(kind("link"), Some(Kind::Symlink));
    assert_eq!(kind("dirlink"), Some(Kind::Symlink));
    assert_eq!(kind("a.txt"), Some(Kind::File));
    assert_eq!(kind("main.rs"), None);
    assert_eq!(kind("file.txt"), None);
}

#[test]
fn rules_edited_between_walks_take_effect() {
    let (_dir, root) = tree();
    // Old enough to be cached, so the edits must be seen through the cache.
    std::thread::sleep(
        super::super::dir_cache::RACY_MARGIN + std::time::Duration::from_millis(100),
    );
    let cache = DirCache::new();
    let filtering = Filtering::default();
    let before = cached(&cache, &[&root], filtering);
    assert!(before.contains(&root.join("a.txt")));
    assert!(cache.cached_dirs() > 5);
    fs::write(root.join(".gitignore"), "a.txt\n").unwrap();
    fs::write(root.join("nested/deep/new.txt"), "n").unwrap();
    let after = cached(&cache, &[&root], filtering);
    assert!(!after.contains(&root.join("a.txt")));
    assert!(after.contains(&root.join("b.log")));
    assert!(after.contains(&root.join("nested/deep/new.txt")));
    assert_eq!(after, reference(&[&root], filtering));
}

#[test]
fn a_cancelled_walk_reports_nothing() {
    let (_dir, root) = tree();
    let cache = DirCache::new();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let walk = CachedWalk {
        cache: &cache,
        top: Path::new("/"),
        filtering: Filtering::default(),
        enter: &|_| true,
        keep: &|_, _| true,
    };
    assert!(walk.run(&[&root], &cancel).is_empty());
}
