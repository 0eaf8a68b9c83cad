//! Helpers shared by the file tools: argument extraction with errors that
//! name the parameter, file classification, cancellation and atomic writes.

use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::contract::{PinnedRoot, ToolError, ToolErrorKind};

pub use super::diff::{file_diff, unified_diff};

/// Files larger than this are never loaded whole.
pub const MAX_FILE_BYTES: u64 = 20 * 1024 * 1024;
/// How much of a file's head decides whether it is binary.
const SNIFF_BYTES: usize = 4096;

/// Reads one optional argument. Absent and `null` are both `None`; a value
/// of the wrong type is an `InvalidParams` error naming the parameter, which
/// whole-struct deserialization would not do.
pub fn opt_field<T: DeserializeOwned>(args: &Value, name: &str) -> Result<Option<T>, ToolError> {
    let Some(obj) = args.as_object() else {
        return Err(ToolError::invalid("arguments must be a JSON object"));
    };
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => serde_json::from_value(v.clone())
            .map(Some)
            .map_err(|e| ToolError::invalid(format!("`{name}` is invalid: {e}"))),
    }
}

/// Reads one required argument.
pub fn req_field<T: DeserializeOwned>(args: &Value, name: &str) -> Result<T, ToolError> {
    opt_field(args, name)?.ok_or_else(|| ToolError::invalid(format!("`{name}` is required")))
}

pub fn cancelled() -> ToolError {
    ToolError::new(ToolErrorKind::Cancelled, "the call was cancelled")
}

/// Runs blocking file work off the async threads, giving up (with a
/// `Cancelled` error) when `cancel` fires first. Work already handed to the
/// blocking pool finishes on its own; every writer here renames a complete
/// temp file into place, so an abandoned write is never half-visible.
pub async fn blocking<T: Send + 'static>(
    cancel: &CancellationToken,
    f: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    if cancel.is_cancelled() {
        return Err(cancelled());
    }
    let task = tokio::task::spawn_blocking(f);
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(cancelled()),
        joined = task => joined.map_err(|e| ToolError::execution(format!("internal error: {e}")))?,
    }
}

/// The point of no return of a change: a writer calls [`CommitGate::enter`]
/// right before it makes its change visible (the rename). Whoever comes
/// first, the writer entering or a cancel, decides: a cancelled call
/// changes nothing, and a change that landed is never reported as
/// cancelled.
#[derive(Default)]
pub struct CommitGate {
    state: std::sync::atomic::AtomicU8,
}

const GATE_OPEN: u8 = 0;
const GATE_COMMITTING: u8 = 1;
const GATE_CANCELLED: u8 = 2;

impl CommitGate {
    /// Claims the commit; fails when the call was cancelled first.
    pub fn enter(&self) -> Result<(), ToolError> {
        use std::sync::atomic::Ordering;
        match self.state.compare_exchange(
            GATE_OPEN,
            GATE_COMMITTING,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => Ok(()),
            Err(_) => Err(cancelled()),
        }
    }

    /// Cancels unless the writer has entered; true when cancelled.
    fn cancel(&self) -> bool {
        use std::sync::atomic::Ordering;
        self.state
            .compare_exchange(
                GATE_OPEN,
                GATE_CANCELLED,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
    }
}

/// For calls that change files: runs `f` off the async threads. A cancel
/// ends the call at once unless `f` has already passed its [`CommitGate`]
/// (then the change lands and is reported). A writer stuck in a slow write
/// is abandoned to finish in the background; it stops at the gate and
/// removes its temp file.
pub async fn blocking_commit<T: Send + 'static>(
    cancel: &CancellationToken,
    f: impl FnOnce(&CommitGate) -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    if cancel.is_cancelled() {
        return Err(cancelled());
    }
    let gate = std::sync::Arc::new(CommitGate::default());
    let inner = gate.clone();
    let mut task = tokio::task::spawn_blocking(move || f(&inner));
    let joined = tokio::select! {
        biased;
        joined = &mut task => joined,
        _ = cancel.cancelled() => {
            if gate.cancel() {
                return Err(cancelled());
            }
            // The change is being made: report how it went.
            task.await
        }
    };
    joined.map_err(|e| ToolError::execution(format!("internal error: {e}")))?
}

pub fn io_error(action: &str, path: &Path, e: &std::io::Error) -> ToolError {
    let kind = if e.kind() == std::io::ErrorKind::NotFound {
        ToolErrorKind::NotFound
    } else {
        ToolErrorKind::Execution
    };
    ToolError::new(kind, format!("cannot {action} {}: {e}", path.display()))
}

/// How a file's content should be handed to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileClass {
    Text,
    /// Media the model can take as inline data (image, PDF, audio, video).
    Media(&'static str),
    Binary,
}

/// The MIME type of a media file, by extension. SVG is deliberately absent:
/// it is XML text and more useful to the model as such.
pub fn media_mime(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "bmp" => "image/bmp",
        "ico" => "image/x-icon",
        "tif" | "tiff" => "image/tiff",
        "heic" => "image/heic",
        "pdf" => "application/pdf",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "ogg" => "audio/ogg",
        "flac" => "audio/flac",
        "aac" => "audio/aac",
        "m4a" => "audio/mp4",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "mov" => "video/quicktime",
        "avi" => "video/x-msvideo",
        "mkv" => "video/x-matroska",
        _ => return None,
    })
}

/// True when the head of a file looks like binary data: any NUL byte, or
/// (for bytes that are not valid UTF-8) a high share of control and high
/// bytes. Valid UTF-8 with few control bytes is text in any script.
pub fn looks_binary(head: &[u8]) -> bool {
    let head = &head[..head.len().min(SNIFF_BYTES)];
    if head.is_empty() {
        return false;
    }
    if memchr::memchr(0, head).is_some() {
        return true;
    }
    let control = head
        .iter()
        .filter(|&&b| matches!(b, 0x01..=0x08 | 0x0e..=0x1a | 0x1c..=0x1f | 0x7f))
        .count();
    if control * 10 > head.len() {
        return true;
    }
    let valid_utf8 = match std::str::from_utf8(head) {
        Ok(_) => true,
        // A multi-byte character cut by the sniff window is still text.
        Err(e) => e.error_len().is_none(),
    };
    if valid_utf8 {
        return false;
    }
    let high = head.iter().filter(|&&b| b >= 0x80).count();
    (control + high) * 10 > head.len() * 3
}

pub fn classify(path: &Path, head: &[u8]) -> FileClass {
    if let Some(mime) = media_mime(path) {
        return FileClass::Media(mime);
    }
    if looks_binary(head) {
        FileClass::Binary
    } else {
        FileClass::Text
    }
}

/// Decodes file bytes as text: a UTF-8 BOM is dropped and invalid sequences
/// become U+FFFD, so odd encodings never fail a read.
pub fn decode_text(mut bytes: Vec<u8>) -> String {
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    // Valid UTF-8 (the usual case) is taken over without a copy.
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_sniffing() {
        assert!(!looks_binary(b"hello\nworld\n"));
        assert!(!looks_binary("héllo wörld ünïcode 日本語".as_bytes()));
        assert!(looks_binary(b"ab\0cd"));
        assert!(!looks_binary(b"caf\xe9 au lait, latin-1 text\n"));
        let noise: Vec<u8> = (0..4096u32).map(|i| (i * 7919 % 255 + 1) as u8).collect();
        assert!(looks_binary(&noise));
    }
}
