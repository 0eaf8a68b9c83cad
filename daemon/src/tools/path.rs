//! Workspace confinement: every path a tool touches must be absolute and,
//! after resolving symlinks and `..`, inside the session's workspace root.

use std::ffi::OsStr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{Mode, OFlags};

use super::contract::{ToolError, ToolErrorKind};

/// Resolves `raw` (a path argument named `param`) against `root`, which must
/// be canonical. The result is canonical for the part that exists, with the
/// not-yet-existing tail appended, and is guaranteed to lie inside `root`.
pub fn resolve_in_workspace(root: &Path, raw: &str, param: &str) -> Result<PathBuf, ToolError> {
    if raw.is_empty() {
        return Err(ToolError::invalid(format!("`{param}` must not be empty")));
    }
    if raw.contains('\0') {
        return Err(ToolError::invalid(format!(
            "`{param}` must not contain a NUL byte"
        )));
    }
    let path = Path::new(raw);
    if !path.is_absolute() {
        return Err(ToolError::new(
            ToolErrorKind::PathNotAllowed,
            format!("`{param}` must be an absolute path, got relative path: {raw}"),
        ));
    }
    if let Some(plain) = plain_existing(root, path) {
        return Ok(plain);
    }
    let resolved = resolve_existing_prefix(path).map_err(|e| {
        ToolError::new(
            ToolErrorKind::PathNotAllowed,
            format!("cannot resolve `{param}` {raw}: {e}"),
        )
    })?;
    if !resolved.starts_with(root) {
        return Err(ToolError::new(
            ToolErrorKind::PathNotAllowed,
            format!(
                "`{param}` {raw} resolves to {} which is outside the workspace root {}",
                resolved.display(),
                root.display()
            ),
        ));
    }
    Ok(resolved)
}

/// The common case, decided without `realpath`'s `readlink` per component:
/// `path` is spelled under `root` with plain names only (no `.` or `..`) and
/// exists with no symlink anywhere on its way, which one `openat2` with
/// `RESOLVE_NO_SYMLINKS` checks. Such a path is its own canonical form and
/// lies inside `root`. `None` sends the caller to the full resolution.
fn plain_existing(root: &Path, path: &Path) -> Option<PathBuf> {
    let rel = plain_relative(root, path)?;
    open_plain(path, OFlags::PATH).ok()?;
    // `join("")` would add a trailing slash.
    Some(if rel.as_os_str().is_empty() {
        root.to_path_buf()
    } else {
        root.join(rel)
    })
}

/// `path` relative to `root` when it is spelled under `root` with plain
/// names only; the result has no doubled or trailing slashes.
fn plain_relative(root: &Path, path: &Path) -> Option<PathBuf> {
    let rel = path.strip_prefix(root).ok()?;
    rel.components()
        .map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect()
}

/// Opens `path` only if no component of it is a symlink (the kernel checks
/// each one, so nothing swapped in between can redirect the open).
fn open_plain(path: &Path, flags: OFlags) -> std::io::Result<OwnedFd> {
    use rustix::fs::ResolveFlags;
    Ok(rustix::fs::openat2(
        rustix::fs::CWD,
        path,
        flags | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )?)
}

/// Canonicalizes the longest existing ancestor of `path` and appends the
/// rest. The rest may not contain `..` (it cannot be resolved against a
/// directory that does not exist, and would let a path climb out).
fn resolve_existing_prefix(path: &Path) -> std::io::Result<PathBuf> {
    let mut existing = path.to_path_buf();
    let mut tail: Vec<std::ffi::OsString> = Vec::new();
    loop {
        match existing.canonicalize() {
            Ok(canonical) => {
                let mut out = canonical;
                for part in tail.iter().rev() {
                    out.push(part);
                }
                return Ok(out);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // A dangling symlink must not be treated as "not existing yet":
                // writing through it would create its target, wherever it points.
                if existing.symlink_metadata().is_ok() {
                    return Err(std::io::Error::other(
                        "it is a symlink whose target does not exist",
                    ));
                }
                let Some(name) = existing.file_name().map(|n| n.to_os_string()) else {
                    return Err(e);
                };
                if existing
                    .components()
                    .next_back()
                    .is_some_and(|c| matches!(c, Component::ParentDir))
                {
                    return Err(std::io::Error::other(
                        "`..` after a directory that does not exist",
                    ));
                }
                tail.push(name);
                if !existing.pop() {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// An error for a path that turned out to lead outside the root when it
/// was opened (a symlink swapped in after the check).
fn outside(what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        format!("{what}: it leads outside the workspace root"),
    )
}

/// Opens `path`, which must lie inside `root` (both canonical), following
/// no symlink below `root`: each component is opened with `O_NOFOLLOW`
/// relative to its parent's descriptor. A symlink swapped in after the path
/// was checked fails the open instead of leading out of the workspace, so
/// what is opened is exactly the checked path. `flags` are for the last
/// component; `O_NOFOLLOW` and `O_CLOEXEC` are added.
pub fn open_beneath(root: &Path, path: &Path, flags: OFlags) -> std::io::Result<OwnedFd> {
    let rel = path
        .strip_prefix(root)
        .map_err(|_| outside(&path.display().to_string()))?;
    let mut names: Vec<&OsStr> = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(n) => names.push(n),
            Component::CurDir => {}
            _ => return Err(outside(&path.display().to_string())),
        }
    }
    let dir_flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let Some((last, parents)) = names.split_last() else {
        return Ok(rustix::fs::open(
            root,
            flags | OFlags::CLOEXEC,
            Mode::empty(),
        )?);
    };
    let mut dir = rustix::fs::open(root, dir_flags, Mode::empty())?;
    for name in parents {
        dir = rustix::fs::openat(&dir, *name, dir_flags, Mode::empty())?;
    }
    Ok(rustix::fs::openat(
        &dir,
        *last,
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Opens an existing `path` (symlinks inside the workspace allowed) after
/// checking that it resolves inside `root`, without a window in which a
/// swapped symlink could redirect the open (see [`open_beneath`]).
pub fn open_confined(root: &Path, path: &Path, flags: OFlags) -> std::io::Result<OwnedFd> {
    OpenRoot::new(root).open(path, flags)
}

/// The workspace root opened once, for the confined opens of one call
/// ([`open_confined`] opens the root again each time). The root is opened
/// when first needed: a plain path with no symlink on its way needs no
/// descriptor of it.
pub struct OpenRoot<'a> {
    path: &'a Path,
    /// Inner `None` when the root cannot be opened: every open takes the
    /// slow path, which reports why.
    dir: std::sync::OnceLock<Option<OwnedFd>>,
}

impl<'a> OpenRoot<'a> {
    pub fn new(root: &'a Path) -> Self {
        OpenRoot {
            path: root,
            dir: std::sync::OnceLock::new(),
        }
    }

    fn dir(&self) -> Option<&OwnedFd> {
        self.dir
            .get_or_init(|| {
                rustix::fs::open(
                    self.path,
                    OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .ok()
            })
            .as_ref()
    }

    /// [`open_confined`] under this root.
    pub fn open(&self, path: &Path, flags: OFlags) -> std::io::Result<OwnedFd> {
        if plain_relative(self.path, path).is_some()
            && let Ok(fd) = open_plain(path, flags)
        {
            return Ok(fd);
        }
        if let Some(fd) = self.open_resolved_beneath(path, flags) {
            return Ok(fd);
        }
        let canonical = path.canonicalize()?;
        if !canonical.starts_with(self.path) {
            return Err(outside(&path.display().to_string()));
        }
        open_beneath(self.path, &canonical, flags)
    }

    /// [`open_confined_file`] under this root.
    pub fn open_file(
        &self,
        path: &Path,
        flags: OFlags,
    ) -> std::io::Result<(std::fs::File, std::fs::Metadata)> {
        let file = std::fs::File::from(self.open(path, flags)?);
        let meta = file.metadata()?;
        Ok((file, meta))
    }

    /// The fast path of [`open_confined`]: one `openat2(RESOLVE_BENEATH |
    /// RESOLVE_NO_MAGICLINKS)` relative to the root, where the kernel
    /// resolves every component and fails anything that would leave the
    /// root, so no swap can redirect it. `None` when it cannot decide: the
    /// path is not spelled under the root, an absolute symlink (which may
    /// well point inside) or a magic link is on the way, the kernel lacks
    /// `openat2`, or the open failed for a reason the slow path reports
    /// better.
    fn open_resolved_beneath(&self, path: &Path, flags: OFlags) -> Option<OwnedFd> {
        use rustix::fs::ResolveFlags;
        let rel = path.strip_prefix(self.path).ok()?;
        let rel = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        };
        rustix::fs::openat2(
            self.dir()?,
            rel,
            flags | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        )
        .ok()
    }
}

/// Whether `path` names something inside `root` right now. A plain
/// `canonicalize` + prefix check is not enough under a concurrent swap:
/// realpath checks one component at a time, so it can return an "inside"
/// path for a file it reached through a symlink that came and went. The
/// descriptor walk of [`open_beneath`] cannot be fooled that way.
pub fn exists_confined(root: &Path, path: &Path) -> bool {
    open_confined(root, path, OFlags::PATH).is_ok()
}

/// Opens a file confined to `root` (see [`open_confined`]) and returns it
/// with what it is now (`fstat` on the opened file, not the path).
pub fn open_confined_file(
    root: &Path,
    path: &Path,
    flags: OFlags,
) -> std::io::Result<(std::fs::File, std::fs::Metadata)> {
    OpenRoot::new(root).open_file(path, flags)
}

/// Reads a whole file confined to `root` (see [`open_confined`]).
pub fn read_confined(root: &Path, path: &Path) -> std::io::Result<Vec<u8>> {
    let (file, meta) = open_confined_file(root, path, OFlags::RDONLY)?;
    read_sized(&file, meta.len())
}

/// Reads `file` to its end, `len` being its size as just seen by `fstat`:
/// one read fills the buffer and one more finds the end. (`File`'s own
/// `read_to_end` asks the kernel for the size and position again.)
pub fn read_sized(file: &std::fs::File, len: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0).saturating_add(1));
    file.take(u64::MAX).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A path that names what `fd` refers to (`/proc/self/fd/N`), for APIs
/// that take paths: it resolves to the opened object itself, whatever
/// happens to the path it was opened by.
pub fn fd_path(fd: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// The path relative to the workspace root, for short descriptions.
pub fn display_relative(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Fixture {
        _dir: tempfile::TempDir,
        root: PathBuf,
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
        symlink(outside.join("nope"), root.join("dangling_out")).unwrap();
        Fixture {
            _dir: dir,
            root,
            outside,
        }
    }

    fn check(f: &Fixture, raw: &str) -> Result<PathBuf, ToolErrorKind> {
        resolve_in_workspace(&f.root, raw, "path").map_err(|e| e.kind)
    }

    #[test]
    fn accepts_paths_inside_the_root() {
        let f = fixture();
        let r = f.root.display().to_string();
        assert_eq!(
            check(&f, &format!("{r}/sub/a.txt")),
            Ok(f.root.join("sub/a.txt"))
        );
        assert_eq!(check(&f, &r), Ok(f.root.clone()));
        assert_eq!(
            check(&f, &format!("{r}/sub/../sub/a.txt")),
            Ok(f.root.join("sub/a.txt"))
        );
        assert_eq!(
            check(&f, &format!("{r}/link_in/a.txt")),
            Ok(f.root.join("sub/a.txt"))
        );
        assert_eq!(
            check(&f, &format!("{r}/new/dir/file")),
            Ok(f.root.join("new/dir/file"))
        );
        // Spelled loosely but plainly: the answer is still canonical.
        assert_eq!(check(&f, &format!("{r}//sub///")), Ok(f.root.join("sub")));
        assert_eq!(check(&f, &format!("{r}/")), Ok(f.root.clone()));
        assert_eq!(
            check(&f, &format!("{r}/./sub/a.txt")),
            Ok(f.root.join("sub/a.txt"))
        );
    }

    #[test]
    fn confined_opens_take_symlinks_inside_and_refuse_those_out() {
        let f = fixture();
        let root = OpenRoot::new(&f.root);
        let read = |p: &Path| {
            root.open(p, OFlags::RDONLY)
                .map(|fd| std::fs::read_to_string(format!("/proc/self/fd/{}", fd.as_raw_fd())))
        };
        assert_eq!(read(&f.root.join("sub/a.txt")).unwrap().unwrap(), "a");
        assert_eq!(read(&f.root.join("link_in/a.txt")).unwrap().unwrap(), "a");
        assert!(read(&f.root.join("link_out/secret")).is_err());
        assert!(read(&f.outside.join("secret")).is_err());
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
            format!("{r}/../outside/secret"),
            format!("{r}/sub/../../outside/secret"),
            format!("{r}/link_out/secret"),
            format!("{r}/link_out/new_file"),
            format!("{r}/dangling_out"),
            format!("{r}/missing/../../outside/x"),
            format!("{o}/secret"),
            "/etc/passwd".to_owned(),
            "/proc/self/root/etc/passwd".to_owned(),
            format!("{r}/a\0b"),
        ];
        for raw in cases {
            assert!(check(&f, &raw).is_err(), "{raw:?} should be refused");
        }
    }
}
