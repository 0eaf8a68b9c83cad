//! Atomic writes of whole files: a temp file next to the target, renamed
//! over it, through descriptors only (inside a workspace, from its pinned
//! root). Only regular files are replaced; a replaced file keeps its mode
//! without setuid and setgid; a new one follows the daemon's umask.

use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::Path;

use super::common::{CommitGate, io_error};
use super::contract::{PinnedRoot, ToolError, ToolErrorKind};

/// Names of our temp files start with this; listings and walks hide them.
pub const TEMP_PREFIX: &str = ".geminid-tmp-";

/// Whether a directory entry is one of our temp files (a write in flight,
/// or one a kill -9 interrupted).
pub fn is_temp_name(name: &std::ffi::OsStr) -> bool {
    name.as_encoded_bytes().starts_with(TEMP_PREFIX.as_bytes())
}

/// Temp files untouched for this long belong to an interrupted write.
const STALE_TEMP: std::time::Duration = std::time::Duration::from_secs(60);

/// Replaces `path` with `bytes` atomically: a temp file in the same
/// directory (same file system, so `rename` is atomic) is written and
/// renamed over `path`. Readers see the old or the new content, never a
/// mix, and a crash at any point leaves the old content (plus, at worst, a
/// hidden temp file). A replaced file keeps its permissions except the
/// setuid and setgid bits; a new file gets 0666 less the daemon's umask.
/// Only regular files are replaced: a FIFO, socket or device is refused
/// without being opened. For files outside any workspace (`save_memory`);
/// workspace files go through [`atomic_write_in`].
pub fn atomic_write(path: &Path, bytes: &[u8], gate: &CommitGate) -> Result<(), ToolError> {
    use rustix::fs::{Mode, OFlags};
    let dir = path
        .parent()
        .ok_or_else(|| ToolError::execution(format!("{} has no parent", path.display())))?;
    let name = path
        .file_name()
        .ok_or_else(|| ToolError::invalid(format!("{} has no file name", path.display())))?;
    std::fs::create_dir_all(dir).map_err(|e| io_error("create directory", dir, &e))?;
    let fd = rustix::fs::open(
        dir,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io_error("open the directory", dir, &e.into()))?;
    write_and_rename(&fd, name, path, bytes, gate)
}

/// [`atomic_write`] for `path` inside the workspace `root` (spelled under
/// it, canonical): missing parents are created with `mkdirat` and the
/// parent opened one component at a time from the root's descriptor,
/// following no symlink, and the temp file and the rename go through that
/// descriptor. A directory swapped for a symlink after the path was
/// checked makes the write fail; it never lands outside.
pub fn atomic_write_in(
    root: &PinnedRoot,
    path: &Path,
    bytes: &[u8],
    gate: &CommitGate,
) -> Result<(), ToolError> {
    use rustix::fs::{Mode, OFlags};
    let refused = |e: &std::io::Error| {
        ToolError::new(
            ToolErrorKind::PathNotAllowed,
            format!("cannot open the directory of {}: {e}", path.display()),
        )
    };
    let rel = root
        .rel(path)
        .ok_or_else(|| refused(&std::io::Error::other("it is outside the workspace root")))?;
    let name = rel
        .file_name()
        .ok_or_else(|| ToolError::invalid(format!("{} has no file name", path.display())))?;
    let dir_flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut dir = rustix::fs::openat(root.dir(), ".", dir_flags, Mode::empty())
        .map_err(|e| refused(&e.into()))?;
    // Create what is missing, one component at a time, never through a link.
    let mut at = root.path().to_path_buf();
    for c in rel.parent().into_iter().flat_map(Path::components) {
        let std::path::Component::Normal(part) = c else {
            return Err(refused(&std::io::Error::other("the path is not canonical")));
        };
        at.push(part);
        match rustix::fs::mkdirat(&dir, part, Mode::from_raw_mode(0o777)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(io_error("create directory", &at, &e.into())),
        }
        dir = rustix::fs::openat(&dir, part, dir_flags, Mode::empty())
            .map_err(|e| refused(&e.into()))?;
    }
    remove_stale_temps(&super::path::fd_path(&dir));
    write_and_rename(&dir, name, path, bytes, gate)
}

/// Writes a temp file in `dir` and renames it over `name` (in `dir`);
/// `path` names the target in messages.
fn write_and_rename(
    dir: &OwnedFd,
    name: &std::ffi::OsStr,
    path: &Path,
    bytes: &[u8],
    gate: &CommitGate,
) -> Result<(), ToolError> {
    use std::os::unix::fs::PermissionsExt;
    let kept_mode = existing_mode(dir, name, path)?;
    let via = super::path::fd_path(dir);
    let mut builder = tempfile::Builder::new();
    builder.prefix(TEMP_PREFIX);
    if kept_mode.is_none() {
        // Created with 0666: the kernel takes the umask away.
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder
        .tempfile_in(&via)
        .map_err(|e| io_error("create a temp file next to", path, &e))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.flush())
        .map_err(|e| io_error("write", path, &e))?;
    if let Some(mode) = kept_mode {
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|e| io_error("chmod the new content of", path, &e))?;
    }
    // Dropping `tmp` on the way out removes it.
    gate.enter()?;
    tmp.persist(via.join(name))
        .map_err(|e| io_error("replace", path, &e.error))?;
    Ok(())
}

/// The mode a replacement of `name` in `dir` gets: the old file's, without
/// setuid and setgid (a rewritten program must not keep privileges it was
/// granted as it was); `None` for a new file. Anything but a regular file
/// is refused here, before anything is opened for writing: a FIFO would
/// block, and a symlink can only be there if it was swapped in after the
/// path was resolved.
fn existing_mode(
    dir: &OwnedFd,
    name: &std::ffi::OsStr,
    path: &Path,
) -> Result<Option<u32>, ToolError> {
    use rustix::fs::{AtFlags, FileType};
    let st = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(e) => return Err(io_error("inspect", path, &e.into())),
    };
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => Ok(Some(st.st_mode & 0o1777)),
        FileType::Directory => Err(ToolError::invalid(format!(
            "{} is a directory, not a file",
            path.display()
        ))),
        FileType::Symlink => Err(ToolError::new(
            ToolErrorKind::PathNotAllowed,
            format!(
                "{} became a symlink after it was checked; nothing was written",
                path.display()
            ),
        )),
        FileType::Fifo
        | FileType::Socket
        | FileType::CharacterDevice
        | FileType::BlockDevice
        | FileType::Unknown => Err(ToolError::invalid(format!(
            "{} is not a regular file (a FIFO, socket or device); only regular files are written",
            path.display()
        ))),
    }
}

/// Deletes temp files of ours in `dir` that nobody has written to for
/// [`STALE_TEMP`]: leftovers of writes a kill -9 interrupted.
fn remove_stale_temps(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if !is_temp_name(&entry.file_name()) {
            continue;
        }
        let stale = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE_TEMP);
        if stale {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}
