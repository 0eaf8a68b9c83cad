//! Large events, stored out of line.
//!
//! sled is slow with multi-megabyte values (tens of milliseconds to insert
//! an 8 MB event), and a tool result can be that large (`read_many_files`,
//! `read_file`, shell output). An event whose JSON is longer than
//! [`INLINE_MAX`] is appended to the session's blob file instead, with one
//! `write(2)`, and sled holds a small marker: a NUL byte (JSON never starts
//! with one), then the offset and the length, big-endian.
//!
//! The append goes through the page cache, which is all a kill -9 needs.
//! The apply thread then [settles](Blobs::settle) the file before the
//! marker goes into sled: `fdatasync`, so that a checkpoint never makes a
//! marker durable ahead of its bytes, then `POSIX_FADV_DONTNEED`, so the
//! clean pages go back to the kernel. A result is read again only if a
//! client replays it, so caching it would only push the user's own files
//! out; and the next append reuses those freed pages. On the 2-core VM the
//! benchmarks run on, an 8 MB append into recycled pages took 2.8 to 3.4
//! ms; into pages the kernel had to fault in fresh, 20 to 29 ms; written
//! with `O_DIRECT` (what this module did before), 6.7 to 7.8 ms plus the
//! copy into an aligned buffer.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
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
    /// store in its place. Only the session's actor writes its file, so its
    /// length before the write says where the bytes land.
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

    /// Makes the session's blob file durable and drops its pages from the
    /// page cache. Run before markers into it reach sled. A file already
    /// removed (the session was deleted) is fine.
    pub fn settle(&self, session: &str) -> std::io::Result<()> {
        let file = match File::open(self.path(session)) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        file.sync_data()?;
        #[allow(unsafe_code)]
        // SAFETY: a plain syscall on a descriptor we own; it only advises
        // the kernel about the file's cached pages, now clean.
        let _ = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        Ok(())
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

    #[test]
    fn large_blobs_between_small_ones_round_trip_and_settle() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::open(dir.path()).unwrap();
        let big: Vec<u8> = (0..3 * 1024 * 1024 + 123)
            .map(|i| b'a' + (i % 26) as u8)
            .collect();
        let a = blobs.put("s", b"{\"small\":1}").unwrap();
        let b = blobs.put("s", &big).unwrap();
        blobs.settle("s").unwrap();
        let c = blobs.put("s", b"{\"small\":2}").unwrap();
        assert_eq!(blobs.resolve("s", &a).unwrap(), b"{\"small\":1}");
        assert_eq!(blobs.resolve("s", &b).unwrap(), big);
        assert_eq!(blobs.resolve("s", &c).unwrap(), b"{\"small\":2}");
        let (b_at, b_len) = parse_marker(&b).unwrap();
        assert_eq!((b_at, b_len), (11, big.len() as u64), "appended end to end");
        blobs.settle("gone").unwrap();
    }

    #[test]
    fn a_settled_blob_file_leaves_the_page_cache() {
        let dir = tempfile::tempdir().unwrap();
        if on_tmpfs(dir.path()) {
            // tmpfs pages are the file itself: nothing to drop.
            return;
        }
        let blobs = Blobs::open(dir.path()).unwrap();
        blobs.put("s", &vec![b'x'; 1024 * 1024]).unwrap();
        let path = blobs.path("s");
        assert!(resident_pages(&path) > 0, "just written, so cached");
        blobs.settle("s").unwrap();
        assert_eq!(resident_pages(&path), 0);
    }

    fn on_tmpfs(path: &Path) -> bool {
        let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        #[allow(unsafe_code)]
        // SAFETY: statfs fills the zeroed struct we own from a valid C path.
        unsafe {
            let mut fs: libc::statfs = std::mem::zeroed();
            libc::statfs(c_path.as_ptr(), &mut fs) == 0 && fs.f_type == libc::TMPFS_MAGIC
        }
    }

    /// Pages of the file in the page cache (`mincore` over a mapping).
    fn resident_pages(path: &Path) -> usize {
        let file = File::open(path).unwrap();
        let len = file.metadata().unwrap().len() as usize;
        let pages = len.div_ceil(4096);
        let mut vec = vec![0u8; pages];
        #[allow(unsafe_code)]
        // SAFETY: a read-only shared mapping of a file we hold open, only
        // passed to mincore (never read) and unmapped before returning.
        unsafe {
            let map = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            );
            assert_ne!(map, libc::MAP_FAILED);
            assert_eq!(libc::mincore(map, len, vec.as_mut_ptr()), 0);
            libc::munmap(map, len);
        }
        vec.iter().filter(|&&b| b & 1 == 1).count()
    }
}
