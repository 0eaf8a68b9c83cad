//! Helpers shared by the file tools: argument extraction with errors that
//! name the parameter, file classification, cancellation and atomic writes.

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
