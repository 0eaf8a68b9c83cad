//! A workspace root pinned as an open directory.
//!
//! A session's root is opened once, when the session is created (or
//! loaded), and every path a tool touches is resolved, walked and written
//! beneath that descriptor, never through the root's path string. Whatever
//! later happens to the path (the directory renamed away, replaced by
//! another one or by a symlink to somewhere else, back and forth), the
//! session keeps working in the directory it was created in.
//!
//! The root's path stays the name people and the model use: tool arguments
//! are spelled under it, results are reported under it. Only the file
//! system is asked through the descriptor: directly (`openat2` relative to
//! it) or, for APIs that take paths, through `/proc/self/fd/N/.`, a name
//! the kernel resolves to the pinned directory itself.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags, ResolveFlags};
use serde::{Deserialize, Serialize};

/// Which directory a root is: device and inode, as `fstat` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootId {
    pub dev: u64,
    pub ino: u64,
}

impl std::fmt::Display for RootId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "device {} inode {}", self.dev, self.ino)
    }
}

/// Why a root could not be pinned.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    #[error("cannot open {path} as a directory: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} is no longer the directory the session was created in ({expected} then, {found} now); \
         it was replaced, moved or mounted over"
    )]
    Replaced {
        path: PathBuf,
        expected: RootId,
        found: RootId,
    },
}

/// A workspace root: its path (canonical when pinned) and the directory
/// it named then, held open. Cheap to clone; the descriptor is shared.
#[derive(Clone)]
pub struct PinnedRoot {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    dir: OwnedFd,
    id: RootId,
    /// `/proc/self/fd/N/.` for the descriptor above.
    fs_base: PathBuf,
}

impl std::fmt::Debug for PinnedRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedRoot")
            .field("path", &self.inner.path)
            .field("id", &self.inner.id)
            .finish()
    }
}

impl PinnedRoot {
    /// Opens `path`, which must be absolute and canonical: the open follows
    /// no symlink on the way, so what is pinned is what the path names now.
    pub fn open(path: &Path) -> Result<Self, RootError> {
        let failed = |source: std::io::Error| RootError::Open {
            path: path.to_path_buf(),
            source,
        };
        let dir = rustix::fs::openat2(
            rustix::fs::CWD,
            path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        )
        .or_else(|e| match e {
            // Kernels before 5.6: a plain open of the canonical path.
            rustix::io::Errno::NOSYS => rustix::fs::open(
                path,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            ),
            other => Err(other),
        })
        .map_err(|e| failed(e.into()))?;
        let st = rustix::fs::fstat(&dir).map_err(|e| failed(e.into()))?;
        let id = RootId {
            dev: st.st_dev,
            ino: st.st_ino,
        };
        let fs_base = PathBuf::from(format!("/proc/self/fd/{}/.", dir.as_raw_fd()));
        Ok(PinnedRoot {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                dir,
                id,
                fs_base,
            }),
        })
    }

    /// Opens `path` and checks that it is still the directory `expected`
    /// names (a session loaded after a restart).
    pub fn reopen(path: &Path, expected: RootId) -> Result<Self, RootError> {
        let root = Self::open(path)?;
        if root.id() != expected {
            return Err(RootError::Replaced {
                path: path.to_path_buf(),
                expected,
                found: root.id(),
            });
        }
        Ok(root)
    }

    /// The root's path: the name arguments and results are spelled under.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    pub fn id(&self) -> RootId {
        self.inner.id
    }

    /// The pinned directory (an `O_PATH` descriptor).
    pub fn dir(&self) -> BorrowedFd<'_> {
        self.inner.dir.as_fd()
    }

    /// `path` relative to the root when it is spelled under it.
    pub fn rel<'a>(&self, path: &'a Path) -> Option<&'a Path> {
        path.strip_prefix(&self.inner.path).ok()
    }

    /// Whether `path` is spelled under the root (or is the root).
    pub fn contains(&self, path: &Path) -> bool {
        self.rel(path).is_some()
    }

    /// A name for `path` (spelled under the root) that reaches it through
    /// the pinned directory, for APIs that take paths (walkers, `statx`).
    /// Symlinks below the root are still followed by such APIs; callers
    /// open what they read with [`super::path::open_confined`].
    pub fn fs_path(&self, path: &Path) -> Option<PathBuf> {
        let rel = self.rel(path)?;
        Some(if rel.as_os_str().is_empty() {
            self.inner.fs_base.clone()
        } else {
            self.inner.fs_base.join(rel)
        })
    }

    /// `/proc/self/fd/N/.`: the pinned directory, by name.
    pub fn fs_base(&self) -> &Path {
        &self.inner.fs_base
    }

    /// The inverse of [`PinnedRoot::fs_path`]: the path under the root's
    /// name for a path a walker produced from [`PinnedRoot::fs_base`].
    pub fn display_of(&self, fs: &Path) -> Option<PathBuf> {
        let rel = fs.strip_prefix(&self.inner.fs_base).ok()?;
        Some(if rel.as_os_str().is_empty() {
            self.inner.path.clone()
        } else {
            self.inner.path.join(rel)
        })
    }

    /// Whether the root's path still names the pinned directory (for
    /// reports; nothing depends on it).
    pub fn still_at_path(&self) -> bool {
        rustix::fs::stat(&self.inner.path)
            .is_ok_and(|st| st.st_dev == self.inner.id.dev && st.st_ino == self.inner.id.ino)
    }
}

/// Why `path` (canonical) is not a workspace anyone means, if it is not:
/// the whole file system, or the kernel's own trees. `session.create`
/// refuses these unless forced.
pub fn unmeant_root(path: &Path) -> Option<&'static str> {
    if path == Path::new("/") {
        return Some("it is the root of the file system");
    }
    let under = |top: &str| path.starts_with(top);
    if under("/proc") {
        return Some("it is inside /proc, the kernel's process information");
    }
    if under("/sys") {
        return Some("it is inside /sys, the kernel's device and driver tree");
    }
    if under("/dev") {
        return Some("it is inside /dev, the device files");
    }
    None
}

/// The same question asked of the opened directory's file system, which
/// catches procfs and sysfs mounted elsewhere.
pub fn unmeant_file_system(root: &PinnedRoot) -> Option<&'static str> {
    // A descriptor opened with `O_PATH` cannot be passed to `fstatfs`;
    // its /proc name can.
    let fs = rustix::fs::statfs(root.fs_base()).ok()?;
    // `f_type` is i64 here but narrower on some targets.
    #[allow(clippy::unnecessary_cast)]
    match fs.f_type as i64 {
        0x9fa0 => Some("it is on a proc file system"),
        0x6265_6572 => Some("it is on a sysfs file system"),
        0x6367_7270 | 0x0027_e0eb => Some("it is on a cgroup file system"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_root_survives_its_path_being_swapped() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let ws = base.join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(ws.join("inside.txt"), "in").unwrap();
        let outside = base.join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("inside.txt"), "OUT").unwrap();
        let root = PinnedRoot::open(&ws).unwrap();
        assert!(root.still_at_path());
        std::fs::rename(&ws, base.join("moved")).unwrap();
        std::os::unix::fs::symlink(&outside, &ws).unwrap();
        assert!(!root.still_at_path());
        let via = root.fs_path(&ws.join("inside.txt")).unwrap();
        assert_eq!(std::fs::read_to_string(&via).unwrap(), "in");
        assert_eq!(root.display_of(&via).unwrap(), ws.join("inside.txt"));
        // The path now names a symlink: it can be neither pinned anew nor
        // taken for the session's directory.
        assert!(PinnedRoot::open(&ws).is_err());
        std::fs::remove_file(&ws).unwrap();
        std::fs::create_dir(&ws).unwrap();
        match PinnedRoot::reopen(&ws, root.id()) {
            Err(RootError::Replaced { .. }) => {}
            other => panic!("{other:?}"),
        }
        std::fs::remove_dir(&ws).unwrap();
        std::fs::rename(base.join("moved"), &ws).unwrap();
        assert_eq!(PinnedRoot::reopen(&ws, root.id()).unwrap().id(), root.id());
    }

    #[test]
    fn roots_no_one_means() {
        for p in [
            "/",
            "/proc",
            "/proc/self/cwd",
            "/sys/kernel",
            "/dev",
            "/dev/shm/x",
        ] {
            assert!(unmeant_root(Path::new(p)).is_some(), "{p}");
        }
        for p in ["/home/me", "/tmp/x", "/procfiles", "/system", "/devel"] {
            assert!(unmeant_root(Path::new(p)).is_none(), "{p}");
        }
        let proc_root = PinnedRoot::open(Path::new("/proc")).unwrap();
        assert!(unmeant_file_system(&proc_root).is_some());
        let tmp = tempfile::tempdir().unwrap();
        let ok = PinnedRoot::open(&tmp.path().canonicalize().unwrap()).unwrap();
        assert!(unmeant_file_system(&ok).is_none());
    }
}
