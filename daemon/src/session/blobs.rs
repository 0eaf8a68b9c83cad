//! Large events, stored out of line.
//!
//! sled is slow with multi-megabyte values (tens of milliseconds to insert
//! an 8 MB event), and a tool result can be that large (`read_many_files`,
//! `read_file`, shell output). An event whose JSON is longer than
//! [`INLINE_MAX`] is appended to the session's blob file instead, with one
//! `write(2)`, and sled holds a small marker: a NUL byte (JSON never starts
//! with one), then the offset and the length, big-endian.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Events longer than this (bytes of JSON) go to the blob file.
pub const INLINE_MAX: usize = 256 * 1024;

const MARKER_LEN: usize = 17;

/// The blob files of every session, one per session in `dir`.
pub struct Blobs {
    dir: PathBuf,
}

impl Blobs {
    pub fn open(dir: &Path) -> std::io::Result<Blobs> {
        let dir = dir.join("blobs");
        std::fs::create_dir_all(&dir)?;
        Ok(Blobs { dir })
    }

    fn path(&self, session: &str) -> PathBuf {
        self.dir.join(session)
    }

    /// Appends `json` to the session's blob file and returns the marker to
    /// store in its place. Only the session's actor writes its file, so the
    /// length before the write is where the bytes land.
    pub fn put(&self, session: &str, json: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path(session))?;
        let offset = file.metadata()?.len();
        file.write_all(json)?;
        let mut marker = Vec::with_capacity(MARKER_LEN);
        marker.push(0);
        marker.extend_from_slice(&offset.to_be_bytes());
        marker.extend_from_slice(&(json.len() as u64).to_be_bytes());
        Ok(marker)
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
}
