//! Large events, stored out of line.
//!
//! sled is slow with multi-megabyte values (tens of milliseconds to insert
//! an 8 MB event), and a tool result can be that large (`read_many_files`,
//! `read_file`, shell output). An event whose JSON is longer than
//! [`INLINE_MAX`] is appended to the session's blob file instead, with one
//! `write(2)`, and sled holds a small marker: a NUL byte (JSON never starts
//! with one), then the offset and the length, big-endian.
//!
//! Events of [`DIRECT_MIN`] and more are written around the page cache
//! (`O_DIRECT`), at a block-aligned offset. Such a result is written once
//! and read again only if a client replays it, so caching it would only
//! push the user's own files out of the cache; and each new page-cache page
//! is a page fault of its own. On the 2-core VM the benchmarks run on, an
//! 8 MB buffered append took 2 ms when the kernel had recently freed pages
//! at hand and up to 28 ms when it had to fault fresh ones in; written
//! directly it takes 5 to 9 ms either way. Where the file system refuses
//! `O_DIRECT`, the append is buffered.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Events longer than this (bytes of JSON) go to the blob file.
pub const INLINE_MAX: usize = 256 * 1024;

/// Events at least this long are written directly (`O_DIRECT`).
pub const DIRECT_MIN: usize = 1024 * 1024;

/// The alignment `O_DIRECT` asks of offsets, lengths and buffers: the
/// largest logical block size in use (4 KiB).
const BLOCK: usize = 4096;

const MARKER_LEN: usize = 17;

/// The blob files of every session, one per session in `dir`.
pub struct Blobs {
    dir: PathBuf,
    /// Cleared once the file system has refused a direct write.
    direct: AtomicBool,
}

impl Blobs {
    pub fn open(dir: &Path) -> std::io::Result<Blobs> {
        let dir = dir.join("blobs");
        std::fs::create_dir_all(&dir)?;
        Ok(Blobs {
            dir,
            direct: AtomicBool::new(true),
        })
    }

    fn path(&self, session: &str) -> PathBuf {
        self.dir.join(session)
    }

    /// Appends `json` to the session's blob file and returns the marker to
    /// store in its place. Only the session's actor writes its file, so its
    /// length before the write says where the bytes land: at the end, or
    /// for a direct write at the next block boundary.
    pub fn put(&self, session: &str, json: &[u8]) -> std::io::Result<Vec<u8>> {
        let path = self.path(session);
        let offset = match self.put_direct(&path, json) {
            Some(offset) => offset,
            None => append_buffered(&path, json)?,
        };
        let mut marker = Vec::with_capacity(MARKER_LEN);
        marker.push(0);
        marker.extend_from_slice(&offset.to_be_bytes());
        marker.extend_from_slice(&(json.len() as u64).to_be_bytes());
        Ok(marker)
    }

    /// Writes `json` with `O_DIRECT` at the first block boundary from the
    /// file's end (the gap before it stays a hole); the offset, or None
    /// when it is too small to be worth it or the file system refuses. A
    /// refused write leaves nothing a marker points at, and the caller
    /// appends it buffered instead.
    fn put_direct(&self, path: &Path, json: &[u8]) -> Option<u64> {
        if json.len() < DIRECT_MIN || !self.direct.load(Ordering::Relaxed) {
            return None;
        }
        let written = OpenOptions::new()
            .create(true)
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
            .and_then(|file| {
                let offset = file.metadata()?.len().next_multiple_of(BLOCK as u64);
                file.write_all_at(&aligned_copy(json), offset)?;
                Ok(offset)
            });
        match written {
            Ok(offset) => Some(offset),
            Err(e) => {
                if e.raw_os_error() == Some(libc::EINVAL) {
                    // The file system does not do direct IO (a tmpfs before
                    // Linux 6.6, some FUSE mounts): stop asking.
                    self.direct.store(false, Ordering::Relaxed);
                }
                tracing::debug!(path = %path.display(), "direct blob write failed, buffered instead: {e}");
                None
            }
        }
    }

    /// The event bytes a stored value stands for: the value itself, or what
    /// its marker points at.
    pub fn resolve(&self, session: &str, value: &[u8]) -> std::io::Result<Vec<u8>> {
        let Some((offset, len)) = parse_marker(value) else {
            return Ok(value.to_vec());
        };
        let file = File::open(self.path(session))?;
        let mut bytes = vec![0u8; len as usize];
        file.read_exact_at(&mut bytes, offset)?;
        Ok(bytes)
    }

    /// Removes the session's blob file, if it has one.
    pub fn remove(&self, session: &str) -> std::io::Result<()> {
        match std::fs::remove_file(self.path(session)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            Ok(()) | Err(_) => Ok(()),
        }
    }
}

/// Appends `json` through the page cache; where it landed. A direct write
/// that failed part way may have grown the file: the append goes after it.
fn append_buffered(path: &Path, json: &[u8]) -> std::io::Result<u64> {
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    let at = file.metadata()?.len();
    file.write_all(json)?;
    Ok(at)
}

/// `json` in a block-aligned buffer, its length padded with zeros to whole
/// blocks, as `O_DIRECT` needs (the marker keeps the real length).
fn aligned_copy(json: &[u8]) -> AlignedBuf {
    let padded = json.len().next_multiple_of(BLOCK);
    let mut buf: Vec<u8> = Vec::with_capacity(padded + BLOCK);
    let start = buf.as_ptr().align_offset(BLOCK);
    buf.resize(start, 0);
    buf.extend_from_slice(json);
    buf.resize(start + padded, 0);
    AlignedBuf { buf, start }
}

struct AlignedBuf {
    buf: Vec<u8>,
    start: usize,
}

impl std::ops::Deref for AlignedBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

fn parse_marker(value: &[u8]) -> Option<(u64, u64)> {
    if value.len() != MARKER_LEN || value[0] != 0 {
        return None;
    }
    let offset = u64::from_be_bytes(value[1..9].try_into().ok()?);
    let len = u64::from_be_bytes(value[9..17].try_into().ok()?);
    Some((offset, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_round_trip_and_inline_values_pass_through() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::open(dir.path()).unwrap();
        let a = blobs.put("s", b"{\"first\":1}").unwrap();
        let b = blobs.put("s", b"{\"second\":2}").unwrap();
        assert_eq!(blobs.resolve("s", &a).unwrap(), b"{\"first\":1}");
        assert_eq!(blobs.resolve("s", &b).unwrap(), b"{\"second\":2}");
        assert_eq!(
            blobs.resolve("s", b"{\"inline\":3}").unwrap(),
            b"{\"inline\":3}"
        );
        blobs.remove("s").unwrap();
        assert!(blobs.resolve("s", &a).is_err());
        blobs.remove("s").unwrap();
    }

    #[test]
    fn large_blobs_between_small_ones_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::open(dir.path()).unwrap();
        let big: Vec<u8> = (0..DIRECT_MIN + 123)
            .map(|i| b'a' + (i % 26) as u8)
            .collect();
        let a = blobs.put("s", b"{\"small\":1}").unwrap();
        let b = blobs.put("s", &big).unwrap();
        let c = blobs.put("s", b"{\"small\":2}").unwrap();
        let d = blobs.put("s", &big[..DIRECT_MIN]).unwrap();
        assert_eq!(blobs.resolve("s", &a).unwrap(), b"{\"small\":1}");
        assert_eq!(blobs.resolve("s", &b).unwrap(), big);
        assert_eq!(blobs.resolve("s", &c).unwrap(), b"{\"small\":2}");
        assert_eq!(blobs.resolve("s", &d).unwrap(), &big[..DIRECT_MIN]);
        if does_direct_io(dir.path()) {
            // Written directly: on block boundaries, after what came before.
            assert!(blobs.direct.load(Ordering::Relaxed));
            let (b_at, _) = parse_marker(&b).unwrap();
            let (d_at, _) = parse_marker(&d).unwrap();
            assert_eq!(b_at, BLOCK as u64);
            assert_eq!(d_at % BLOCK as u64, 0);
            assert!(d_at > b_at + big.len() as u64);
        }
    }

    /// Whether the file system under `dir` takes an `O_DIRECT` write, asked
    /// apart from `Blobs` so that a broken direct path cannot skip the
    /// checks above.
    fn does_direct_io(dir: &Path) -> bool {
        OpenOptions::new()
            .create(true)
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(dir.join("probe"))
            .and_then(|f| f.write_all_at(&aligned_copy(&[b'x'; BLOCK]), 0))
            .is_ok()
    }
}
