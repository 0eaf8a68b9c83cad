//! Helpers shared by the file tools: argument extraction with errors that
//! name the parameter, file classification, cancellation and atomic writes.

use std::io::Write;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::contract::{ToolError, ToolErrorKind};

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

/// For calls that change files: honours `cancel` until the work starts,
/// then lets it finish. The write is atomic either way, but reporting
/// "cancelled" for a change that did land would mislead the model.
pub async fn blocking_commit<T: Send + 'static>(
    cancel: &CancellationToken,
    f: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    if cancel.is_cancelled() {
        return Err(cancelled());
    }
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ToolError::execution(format!("internal error: {e}")))?
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
/// directory (same file system, so `rename` is atomic) is written, given the
/// old file's permissions (or 0644 for a new file) and renamed over `path`.
/// Readers see the old or the new content, never a mix, and a crash at any
/// point leaves the old content (plus, at worst, a hidden temp file).
/// For files outside any workspace (`save_memory`); workspace files go
/// through [`atomic_write_in`].
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<(), ToolError> {
    let dir = path
        .parent()
        .ok_or_else(|| ToolError::execution(format!("{} has no parent", path.display())))?;
    std::fs::create_dir_all(dir).map_err(|e| io_error("create directory", dir, &e))?;
    write_and_rename(dir, path, bytes)
}

/// [`atomic_write`] for `path` inside the workspace `root` (both
/// canonical): missing parents are created and the parent is opened one
/// component at a time without following symlinks, and the temp file and
/// the rename go through that descriptor. A directory swapped for a symlink
/// after the path was checked makes the write fail; it never lands outside.
pub fn atomic_write_in(root: &Path, path: &Path, bytes: &[u8]) -> Result<(), ToolError> {
    use rustix::fs::{Mode, OFlags};
    let parent = path
        .parent()
        .ok_or_else(|| ToolError::execution(format!("{} has no parent", path.display())))?;
    let refused = |e: &std::io::Error| {
        ToolError::new(
            ToolErrorKind::PathNotAllowed,
            format!("cannot open the directory of {}: {e}", path.display()),
        )
    };
    let rel = parent
        .strip_prefix(root)
        .map_err(|_| refused(&std::io::Error::other("it is outside the workspace root")))?;
    // Create what is missing, one component at a time, never through a link.
    let mut at = root.to_path_buf();
    for c in rel.components() {
        at.push(c);
        let dir = super::path::open_beneath(
            root,
            at.parent().unwrap_or(root),
            OFlags::PATH | OFlags::DIRECTORY,
        )
        .map_err(|e| refused(&e))?;
        match rustix::fs::mkdirat(&dir, c.as_os_str(), Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(io_error("create directory", &at, &std::io::Error::from(e))),
        }
    }
    let dir = super::path::open_beneath(root, parent, OFlags::PATH | OFlags::DIRECTORY)
        .map_err(|e| refused(&e))?;
    let name = path
        .file_name()
        .ok_or_else(|| ToolError::invalid(format!("{} has no file name", path.display())))?;
    let via = super::path::fd_path(&dir);
    remove_stale_temps(&via);
    write_and_rename(&via, &via.join(name), bytes)
}

/// Writes a temp file in `dir` and renames it over `target` (in `dir`).
fn write_and_rename(dir: &Path, target: &Path, bytes: &[u8]) -> Result<(), ToolError> {
    use std::os::unix::fs::PermissionsExt;
    let perms = match target.symlink_metadata() {
        Ok(m) if m.is_dir() => {
            return Err(ToolError::invalid(format!(
                "{} is a directory, not a file",
                target.display()
            )));
        }
        Ok(m) if m.is_symlink() => std::fs::metadata(target)
            .map(|m| m.permissions())
            .unwrap_or_else(|_| std::fs::Permissions::from_mode(0o644)),
        Ok(m) => m.permissions(),
        Err(_) => std::fs::Permissions::from_mode(0o644),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(dir)
        .map_err(|e| io_error("create a temp file in", dir, &e))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.flush())
        .map_err(|e| io_error("write", tmp.path(), &e))?;
    tmp.as_file()
        .set_permissions(perms)
        .map_err(|e| io_error("chmod", tmp.path(), &e))?;
    tmp.persist(target)
        .map_err(|e| io_error("replace", target, &e.error))?;
    Ok(())
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
