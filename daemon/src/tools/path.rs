//! Workspace confinement: every path a tool touches must be absolute and,
//! after resolving symlinks and `..`, inside one of the session's pinned
//! roots ([`PinnedRoot`]). Resolution and every open start from the
//! root's descriptor, never from its path, so replacing the workspace
//! directory (or any directory in it) with a symlink cannot lead a tool
//! outside.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use super::contract::{ToolError, ToolErrorKind};
pub use super::root::PinnedRoot;

/// How many symlinks one resolution may follow (Linux's own limit).
const MAX_LINKS: usize = 40;

/// Resolves `raw` (a path argument named `param`) in `root`. The result is
/// spelled under the root's path, canonical for the part that exists (no
/// symlink, `.` or `..`), with a not-yet-existing tail appended.
pub fn resolve_in_workspace(
    root: &PinnedRoot,
    raw: &str,
    param: &str,
) -> Result<PathBuf, ToolError> {
    check_spelling(raw, param)?;
    let refuse = |why: String| ToolError::new(ToolErrorKind::PathNotAllowed, why);
    let rel = relative_to(root, raw).ok_or_else(|| {
        refuse(format!(
            "`{param}` {raw} is outside the workspace root {}",
            root.path().display()
        ))
    })?;
    let must_be_dir = raw.ends_with('/') || raw.ends_with("/.");
    let walked = walk(root, &rel, must_be_dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::PermissionDenied => refuse(format!(
            "`{param}` {raw} resolves outside the workspace root {}",
            root.path().display()
        )),
        _ => refuse(format!("cannot resolve `{param}` {raw}: {e}")),
    })?;
    Ok(join_root(root, &walked.rel))
}

/// The checks every path argument gets before it is looked at.
fn check_spelling(raw: &str, param: &str) -> Result<(), ToolError> {
    if raw.is_empty() {
        return Err(ToolError::invalid(format!("`{param}` must not be empty")));
    }
    if raw.contains('\0') {
        return Err(ToolError::invalid(format!(
            "`{param}` must not contain a NUL byte"
        )));
    }
    if !Path::new(raw).is_absolute() {
        return Err(ToolError::new(
            ToolErrorKind::PathNotAllowed,
            format!("`{param}` must be an absolute path, got relative path: {raw}"),
        ));
    }
    Ok(())
}

/// `raw` relative to the root. A path spelled under the root's name is
/// taken as it is (its `..` are resolved below, from the descriptor). Any
/// other spelling (through a symlink elsewhere that leads into the
/// workspace) is resolved by the kernel first and must land under the
/// root's name; it is then resolved again from the descriptor.
fn relative_to(root: &PinnedRoot, raw: &str) -> Option<PathBuf> {
    let path = Path::new(raw);
    if let Some(rel) = root.rel(path) {
        return Some(rel.to_path_buf());
    }
    // `/proc` spellings (`/proc/self/root/...`, `/proc/N/cwd/...`) go
    // through magic links; they are never taken for a workspace path.
    if path.starts_with("/proc") {
        return None;
    }
    let resolved = canonical_prefix(path).ok()?;
    root.rel(&resolved).map(Path::to_path_buf)
}

/// Canonicalizes the longest existing ancestor of `path` (outside any
/// root) and appends the rest, which must not contain `..`.
fn canonical_prefix(path: &Path) -> std::io::Result<PathBuf> {
    let mut existing = path.to_path_buf();
    let mut tail: Vec<OsString> = Vec::new();
    loop {
        match existing.canonicalize() {
            Ok(mut out) => {
                out.extend(tail.iter().rev());
                return Ok(out);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if existing.symlink_metadata().is_ok()
                    || matches!(
                        existing.components().next_back(),
                        Some(Component::ParentDir)
                    )
                {
                    return Err(e);
                }
                let Some(name) = existing.file_name().map(OsStr::to_os_string) else {
                    return Err(e);
                };
                tail.push(name);
                if !existing.pop() {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

fn join_root(root: &PinnedRoot, rel: &Path) -> PathBuf {
    // `join("")` would add a trailing slash.
    if rel.as_os_str().is_empty() {
        root.path().to_path_buf()
    } else {
        root.path().join(rel)
    }
}

/// Where a relative path leads below a root.
#[derive(Debug, PartialEq, Eq)]
pub struct Walked {
    /// Canonical: plain names only.
    pub rel: PathBuf,
    /// Whether all of it exists (else the last names are still to create).
    pub exists: bool,
}

/// One step still to take.
enum Step {
    Cur,
    Parent,
    Name(OsString),
}

/// Resolves `rel` below `root`, one component at a time from the root's
/// descriptor: each name is opened (`O_PATH | O_NOFOLLOW`) relative to its
/// parent's descriptor, symlinks are read and their targets walked the same
/// way, and `..` goes back to the parent walked through. Nothing can make a
/// step leave the root: `..` at the root, an absolute symlink target not
/// spelled under the root's path, and a dangling symlink (writing through
/// it would create its target) are errors. Fails with `PermissionDenied`
/// for paths that lead outside.
pub fn walk(root: &PinnedRoot, rel: &Path, must_be_dir: bool) -> std::io::Result<Walked> {
    if let Some(walked) = walk_plain(root, rel, must_be_dir) {
        return Ok(walked);
    }
    let mut pending: VecDeque<(Step, bool)> = steps(rel, false).collect();
    let mut stack: Vec<(OwnedFd, OsString)> = Vec::new();
    let mut links = 0;
    while let Some((step, from_link)) = pending.pop_front() {
        let name = match step {
            Step::Cur => continue,
            Step::Parent => {
                if stack.pop().is_none() {
                    return Err(leads_outside("`..` climbs above the workspace root"));
                }
                continue;
            }
            Step::Name(name) => name,
        };
        let parent = stack.last().map_or(root.dir(), |(fd, _)| fd.as_fd());
        let fd = match rustix::fs::openat(
            parent,
            &name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => {
                if from_link || pending.iter().any(|(_, l)| *l) {
                    return Err(std::io::Error::other(
                        "it is a symlink whose target does not exist",
                    ));
                }
                let mut out = names(&stack);
                out.push(name);
                for (step, _) in pending {
                    match step {
                        Step::Cur => {}
                        Step::Parent => {
                            return Err(std::io::Error::other(
                                "`..` after a directory that does not exist",
                            ));
                        }
                        Step::Name(n) => out.push(n),
                    }
                }
                return Ok(Walked {
                    rel: out,
                    exists: false,
                });
            }
            Err(e) => return Err(e.into()),
        };
        let st = rustix::fs::fstat(&fd)?;
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Symlink => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(Errno::LOOP.into());
                }
                let target = rustix::fs::readlinkat(&fd, "", Vec::new())?;
                let target = PathBuf::from(OsStr::from_bytes(target.as_bytes()));
                let target = if target.is_absolute() {
                    let inside = root.rel(&target).ok_or_else(|| {
                        leads_outside("a symlink on the way points outside the workspace")
                    })?;
                    stack.clear();
                    inside.to_path_buf()
                } else {
                    target
                };
                for step in steps(&target, true).collect::<Vec<_>>().into_iter().rev() {
                    pending.push_front(step);
                }
            }
            FileType::Directory => stack.push((fd, name)),
            _ => {
                if pending.iter().any(|(s, _)| !matches!(s, Step::Cur)) || must_be_dir {
                    return Err(Errno::NOTDIR.into());
                }
                let mut out = names(&stack);
                out.push(name);
                return Ok(Walked {
                    rel: out,
                    exists: true,
                });
            }
        }
    }
    Ok(Walked {
        rel: names(&stack),
        exists: true,
    })
}

/// The common case, decided with one `openat2`: `rel` holds plain names
/// only and exists with no symlink anywhere on its way, so it is its own
/// canonical form. `None` sends the caller to the full walk.
fn walk_plain(root: &PinnedRoot, rel: &Path, must_be_dir: bool) -> Option<Walked> {
    let plain = plain(rel)?;
    let flags = if must_be_dir {
        OFlags::PATH | OFlags::DIRECTORY
    } else {
        OFlags::PATH
    };
    open_plain_beneath(root.dir(), &plain, flags).ok()?;
    Some(Walked {
        rel: plain,
        exists: true,
    })
}

/// `rel` as plain names (`.` dropped), or `None` if it has `..` or a root.
fn plain(rel: &Path) -> Option<PathBuf> {
    rel.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect()
}

fn steps(path: &Path, from_link: bool) -> impl Iterator<Item = (Step, bool)> + '_ {
    path.components().filter_map(move |c| {
        let step = match c {
            Component::CurDir => Step::Cur,
            Component::ParentDir => Step::Parent,
            Component::Normal(n) => Step::Name(n.to_os_string()),
            Component::RootDir | Component::Prefix(_) => return None,
        };
        Some((step, from_link))
    })
}

fn names(stack: &[(OwnedFd, OsString)]) -> PathBuf {
    stack.iter().map(|(_, n)| n.as_os_str()).collect()
}

fn leads_outside(why: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::PermissionDenied, why.to_owned())
}

/// Opens `rel` (plain names) below `dir` following no symlink: one
/// `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, or on kernels without
/// it one `openat(O_NOFOLLOW)` per component. `O_CLOEXEC` is added.
fn open_plain_beneath(dir: BorrowedFd<'_>, rel: &Path, flags: OFlags) -> std::io::Result<OwnedFd> {
    let target = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    match rustix::fs::openat2(
        dir,
        target,
        flags | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    ) {
        Err(Errno::NOSYS) => {}
        other => return Ok(other?),
    }
    let names: Vec<&OsStr> = rel.iter().collect();
    let Some((last, parents)) = names.split_last() else {
        return Ok(rustix::fs::openat(
            dir,
            ".",
            flags | OFlags::CLOEXEC,
            Mode::empty(),
        )?);
    };
    let dir_flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut at = rustix::fs::openat(dir, ".", dir_flags, Mode::empty())?;
    for name in parents {
        at = rustix::fs::openat(&at, *name, dir_flags, Mode::empty())?;
    }
    Ok(rustix::fs::openat(
        &at,
        *last,
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// An error for a path that turned out to lead outside the root.
fn outside(path: &Path) -> std::io::Error {
    leads_outside(&format!(
        "{}: it leads outside the workspace root",
        path.display()
    ))
}

/// Opens an existing `path` (spelled under `root`; symlinks inside the
/// workspace allowed) from the root's descriptor. A plain path is opened
/// with one `openat2` that follows no symlink; otherwise the path is walked
/// ([`walk`]) and its canonical form opened the same way, so a symlink
/// swapped in between fails the open instead of leading anywhere. `flags`
/// are for the last component; `O_CLOEXEC` is added.
pub fn open_confined(root: &PinnedRoot, path: &Path, flags: OFlags) -> std::io::Result<OwnedFd> {
    let rel = root.rel(path).ok_or_else(|| outside(path))?;
    if let Some(plain) = plain(rel) {
        match open_plain_beneath(root.dir(), &plain, flags) {
            Ok(fd) => return Ok(fd),
            // A symlink on the way (or a rename racing the lookup): walk.
            Err(e) if needs_walk(&e) => {}
            Err(e) => return Err(e),
        }
    }
    let walked = walk(root, rel, false)?;
    if !walked.exists {
        return Err(Errno::NOENT.into());
    }
    open_plain_beneath(root.dir(), &walked.rel, flags)
}

/// Whether a plain open failed for a reason the full walk can get past.
fn needs_walk(e: &std::io::Error) -> bool {
    matches!(
        Errno::from_io_error(e),
        Some(Errno::LOOP | Errno::XDEV | Errno::AGAIN)
    )
}

/// Whether `path` names something inside `root` right now. (`realpath`
/// and a prefix check are not enough under a concurrent swap: realpath
/// checks one component at a time and can return an "inside" spelling for
/// a file it reached through a symlink that came and went.)
pub fn exists_confined(root: &PinnedRoot, path: &Path) -> bool {
    open_confined(root, path, OFlags::PATH).is_ok()
}

/// Opens a file confined to `root` (see [`open_confined`]) and returns it
/// with what it is now (`fstat` on the opened file, not the path).
pub fn open_confined_file(
    root: &PinnedRoot,
    path: &Path,
    flags: OFlags,
) -> std::io::Result<(std::fs::File, std::fs::Metadata)> {
    let file = std::fs::File::from(open_confined(root, path, flags)?);
    let meta = file.metadata()?;
    Ok((file, meta))
}

/// What `path` (under `root`, symlinks inside followed) is now, or the
/// error of reaching it.
pub fn metadata_confined(root: &PinnedRoot, path: &Path) -> std::io::Result<std::fs::Metadata> {
    open_confined_file(root, path, OFlags::PATH).map(|(_, meta)| meta)
}

/// Reads a whole regular file confined to `root`. Anything else (a FIFO,
/// socket or device) is refused without blocking: it is opened
/// non-blocking and checked before it is read.
pub fn read_confined(root: &PinnedRoot, path: &Path) -> std::io::Result<Vec<u8>> {
    let (file, meta) = open_confined_file(root, path, OFlags::RDONLY | OFlags::NONBLOCK)?;
    if !meta.is_file() {
        return Err(not_regular(path));
    }
    read_sized(&file, meta.len())
}

/// The error for a FIFO, socket or device where a file was expected.
pub fn not_regular(path: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!(
            "{} is not a regular file (a FIFO, socket or device)",
            path.display()
        ),
    )
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
#[path = "path_tests.rs"]
mod tests;
