use super::*;
use rustix::fs::{FileType, Mode};
use std::os::unix::fs::symlink;

struct Fixture {
    _dir: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
    pinned: PinnedRoot,
    outside: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("ws");
    let outside = base.join("outside");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("sub/a.txt"), "a").unwrap();
    std::fs::write(outside.join("secret"), "s").unwrap();
    symlink(&outside, root.join("link_out")).unwrap();
    symlink(root.join("sub"), root.join("link_in")).unwrap();
    symlink("sub/a.txt", root.join("rel_in")).unwrap();
    symlink(outside.join("nope"), root.join("dangling_out")).unwrap();
    symlink("nope", root.join("dangling_in")).unwrap();
    let pinned = PinnedRoot::open(&root).unwrap();
    Fixture {
        _dir: dir,
        base,
        root,
        pinned,
        outside,
    }
}

fn check(f: &Fixture, raw: &str) -> Result<PathBuf, ToolErrorKind> {
    resolve_in_workspace(&f.pinned, raw, "path").map_err(|e| e.kind)
}

#[test]
fn accepts_paths_inside_the_root() {
    let f = fixture();
    let r = f.root.display().to_string();
    let cases = [
        (format!("{r}/sub/a.txt"), "sub/a.txt"),
        (r.clone(), ""),
        (format!("{r}/sub/../sub/a.txt"), "sub/a.txt"),
        (format!("{r}/link_in/a.txt"), "sub/a.txt"),
        (format!("{r}/rel_in"), "sub/a.txt"),
        (format!("{r}/new/dir/file"), "new/dir/file"),
        (format!("{r}/link_in/new"), "sub/new"),
        // Spelled loosely but plainly: the answer is still canonical.
        (format!("{r}//sub///"), "sub"),
        (format!("{r}/"), ""),
        (format!("{r}/./sub/a.txt"), "sub/a.txt"),
    ];
    for (raw, rel) in cases {
        let want = if rel.is_empty() {
            f.root.clone()
        } else {
            f.root.join(rel)
        };
        assert_eq!(check(&f, &raw), Ok(want), "{raw}");
    }
}

#[test]
fn refuses_escapes() {
    let f = fixture();
    let r = f.root.display().to_string();
    let o = f.outside.display().to_string();
    let cases = [
        "relative/path".to_owned(),
        "./sub/a.txt".to_owned(),
        String::new(),
        format!("{r}/.."),
        format!("{r}/../outside/secret"),
        format!("{r}/sub/../../outside/secret"),
        format!("{r}/../ws/sub/a.txt"),
        format!("{r}/link_out/secret"),
        format!("{r}/link_out/new_file"),
        format!("{r}/dangling_out"),
        format!("{r}/dangling_in"),
        format!("{r}/missing/../../outside/x"),
        format!("{r}/sub/a.txt/"),
        format!("{r}/sub/a.txt/x"),
        format!("{o}/secret"),
        "/etc/passwd".to_owned(),
        "/proc/self/root/etc/passwd".to_owned(),
        format!("/proc/self/root{r}/sub/a.txt"),
        format!("{r}/a\0b"),
    ];
    for raw in cases {
        assert!(check(&f, &raw).is_err(), "{raw:?} should be refused");
    }
}

#[test]
fn a_spelling_through_an_outside_alias_is_resolved_from_the_root() {
    let f = fixture();
    let alias = f.base.join("alias");
    symlink(&f.root, &alias).unwrap();
    let raw = alias.join("sub/a.txt").display().to_string();
    assert_eq!(check(&f, &raw), Ok(f.root.join("sub/a.txt")));
}

#[test]
fn confined_opens_take_symlinks_inside_and_refuse_those_out() {
    let f = fixture();
    let read = |p: &Path| {
        open_confined(&f.pinned, p, OFlags::RDONLY)
            .map(|fd| std::fs::read_to_string(fd_path(&fd)).unwrap())
    };
    assert_eq!(read(&f.root.join("sub/a.txt")).unwrap(), "a");
    assert_eq!(read(&f.root.join("link_in/a.txt")).unwrap(), "a");
    assert_eq!(read(&f.root.join("rel_in")).unwrap(), "a");
    assert!(read(&f.root.join("link_out/secret")).is_err());
    assert!(read(&f.outside.join("secret")).is_err());
}

/// The workspace directory itself replaced by a symlink to the outside:
/// resolution and opens keep working in the pinned directory.
#[test]
fn the_pinned_directory_is_used_after_the_root_path_is_swapped() {
    let f = fixture();
    std::fs::rename(&f.root, f.base.join("moved")).unwrap();
    symlink(&f.outside, &f.root).unwrap();
    std::fs::write(f.outside.join("a.txt"), "OUT").unwrap();
    let r = f.root.display().to_string();
    assert_eq!(
        check(&f, &format!("{r}/sub/a.txt")),
        Ok(f.root.join("sub/a.txt"))
    );
    // `secret` exists only outside: not found here, and a write would
    // create it in the pinned directory.
    let new = check(&f, &format!("{r}/secret")).unwrap();
    assert!(!exists_confined(&f.pinned, &new));
    let fd = open_confined(&f.pinned, &f.root.join("sub/a.txt"), OFlags::RDONLY).unwrap();
    assert_eq!(std::fs::read_to_string(fd_path(&fd)).unwrap(), "a");
    assert!(read_confined(&f.pinned, &f.root.join("a.txt")).is_err());
}

#[test]
fn non_regular_files_are_refused_without_blocking() {
    let f = fixture();
    let fifo = f.root.join("fifo");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        FileType::Fifo,
        Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let err = read_confined(&f.pinned, &fifo).unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
}
