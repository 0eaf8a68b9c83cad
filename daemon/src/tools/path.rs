//! Workspace confinement: every path a tool touches must be absolute and,
//! after resolving symlinks and `..`, inside one of the session's pinned
//! roots ([`PinnedRoot`]). Resolution and every open start from the
//! root's descriptor, never from its path, so replacing the workspace
//! directory (or any directory in it) with a symlink cannot lead a tool
//! outside.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::OFlags;
use rustix::io::Errno;

pub use super::beneath::{Walked, walk};
use super::beneath::{leads_outside, open_plain_beneath, plain};
use super::error::{ToolError, ToolErrorKind};
pub use super::root::PinnedRoot;

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
