//! The instruction places that do not exist yet (the IO edge, before each
//! sandboxed command): a command must not be able to create them, and
//! neither a Landlock rule (it cannot refuse one name while allowing
//! others) nor a mount (it needs something to mount over, and a mount
//! point made only inside the command's namespace does not exist: the
//! tree is the user's) can hold a name that is not there. So, fail closed
//! and leave nothing in the user's tree but an empty `.gemini`:
//! * a root whose `.git` is missing (or is a link, or whose `.gemini` is
//!   a link, so the name could be swapped) is *locked*: its directory is
//!   mounted read-only in the command's namespace after each of its
//!   entries (directories and regular files) was bound writable over
//!   itself, so nothing is created, renamed or removed at its top level
//!   while everything below goes on as before;
//! * a root with a `.git` and without `.gemini`: `.gemini` is created
//!   empty (it configures nothing) and held read-only like an existing one;
//! * any other instruction place that is missing inside a writable place
//!   (the user's Gemini directory, git's user configuration): the deepest
//!   directory above it that exists is locked the same way, unless that
//!   is a temp dir (reported instead, `missing`).
//!
//! Roots are opened from the session's pinned descriptors and looked at
//! relative to them, never by path.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::tools::PinnedRoot;

/// A directory whose own entries may not change in the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locked {
    pub dir: PathBuf,
    /// Its directories and regular files, bound writable over themselves.
    pub entries: Vec<PathBuf>,
    /// The instruction place it keeps from being made.
    pub keeps: PathBuf,
    /// The directory's (device, inode): the child checks its path still
    /// leads there once mounted, so a path swapped for a link fails the
    /// command instead of leaving the real directory unlocked.
    pub identity: (u64, u64),
    /// The `MS_*` flags its read-only mount must keep.
    pub flags: libc::c_ulong,
}

/// A root's instruction place that exists.
#[derive(Debug, Clone)]
pub struct Present {
    pub path: PathBuf,
    /// The `MS_*` flags of its root's mount.
    pub flags: libc::c_ulong,
    /// The (device, inode) it leads to (a link: where it points), which
    /// the child checks its path leads to, read-only, once mounted.
    pub identity: (u64, u64),
}

/// What the roots and the missing places need beyond the plan.
#[derive(Debug, Default)]
pub struct Guard {
    pub locked: Vec<Locked>,
    /// Instruction places that do not exist and could not be guarded.
    pub missing: Vec<PathBuf>,
    /// The roots' instruction places that exist (seen through the pinned
    /// descriptor, so a root's path swapped meanwhile changes nothing),
    /// with the `MS_*` flags of their root's mount.
    pub present: Vec<Present>,
    /// The roots' instruction places that do not exist, guarded by their
    /// root's lock.
    pub guarded: Vec<PathBuf>,
}

/// Guards the roots (see the module comment). A root swapped for a link
/// to elsewhere fails here instead of getting a `.gemini` made in the
/// place the link points to.
pub fn guard_roots(roots: &[PathBuf], pinned: &[PinnedRoot]) -> io::Result<Guard> {
    let mut out = Guard::default();
    for root in roots {
        let opened = match pinned.iter().find(|p| p.path() == root.as_path()) {
            // The directory pinned at the session's start, whatever its
            // path leads to now.
            Some(p) => rustix::fs::openat(
                p.dir(),
                ".",
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(io::Error::from),
            None => open_dir(rustix::fs::CWD, root),
        };
        let dir = opened.map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot open the root {} as a directory: {e}",
                    root.display()
                ),
            )
        })?;
        let git = kind(&dir, ".git")?;
        let mut gemini = kind(&dir, ".gemini")?;
        let link = Some(FileType::Symlink);
        let flags = ms_flags(rustix::fs::fstatvfs(&dir)?.f_flag);
        if git.is_none() || git == link || gemini == link {
            out.locked.push(Locked {
                dir: root.clone(),
                entries: entries(&dir, root)?,
                keeps: root.join(".git"),
                identity: identity(&dir)?,
                flags,
            });
        } else if gemini.is_none() {
            create_dir(&dir, ".gemini")?;
            gemini = Some(FileType::Directory);
        }
        for (name, there) in [(".git", git), (".gemini", gemini)] {
            match there {
                Some(_) => {
                    let st = rustix::fs::statat(&dir, name, AtFlags::empty())?;
                    out.present.push(Present {
                        path: root.join(name),
                        flags,
                        identity: (st.st_dev, st.st_ino),
                    });
                }
                None => out.guarded.push(root.join(name)),
            }
        }
    }
    Ok(out)
}

/// Guards `place`, an instruction place that does not exist, inside a
/// writable place: locks the deepest directory above it that exists,
/// unless a lock already covers it or that directory is a writable place
/// of its own other than a root (a temp dir, an `allowWrite` entry, whose
/// top level is not ours to refuse: reported instead).
pub fn guard_place(
    place: &Path,
    writable: &[PathBuf],
    roots: &[PathBuf],
    out: &mut Guard,
) -> io::Result<()> {
    let Some(dir) = place
        .ancestors()
        .skip(1)
        .find(|a| std::fs::symlink_metadata(a).is_ok())
    else {
        out.missing.push(place.to_path_buf());
        return Ok(());
    };
    if out.locked.iter().any(|l| l.dir == dir) {
        return Ok(());
    }
    let own_place = writable.iter().any(|w| w == dir) && !roots.iter().any(|r| r == dir);
    if own_place || dir.parent().is_none() {
        out.missing.push(place.to_path_buf());
        return Ok(());
    }
    let fd = open_dir(rustix::fs::CWD, dir)?;
    out.locked.push(Locked {
        dir: dir.to_path_buf(),
        entries: entries(&fd, dir)?,
        keeps: place.to_path_buf(),
        identity: identity(&fd)?,
        flags: ms_flags(rustix::fs::fstatvfs(&fd)?.f_flag),
    });
    Ok(())
}

/// The directories and regular files directly in `dir` (opened for
/// reading), as paths under `path`. Links and special files are left
/// out: a read-only top level keeps the links as they are, and special
/// files need no writable mount.
fn entries(dir: &OwnedFd, path: &Path) -> io::Result<Vec<PathBuf>> {
    let listed = rustix::fs::openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut out = Vec::new();
    for entry in rustix::fs::Dir::read_from(&listed)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let name = std::ffi::OsStr::from_bytes(name);
        if let Some(FileType::Directory | FileType::RegularFile) = kind(dir, name)? {
            out.push(path.join(name));
        }
    }
    out.sort();
    Ok(out)
}

fn identity(dir: &OwnedFd) -> io::Result<(u64, u64)> {
    let st = rustix::fs::fstat(dir)?;
    Ok((st.st_dev, st.st_ino))
}

/// What `name` in `dir` is, not following a link; `None` when absent.
fn kind<P: rustix::path::Arg>(dir: &OwnedFd, name: P) -> io::Result<Option<FileType>> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(FileType::from_raw_mode(st.st_mode))),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// A directory opened for reading beneath `at`, its last component not
/// followed.
fn open_dir<Fd: AsFd>(at: Fd, path: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat(
        at,
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// `mkdir` of one name in `dir`; one that appeared meanwhile is fine.
fn create_dir(dir: &OwnedFd, name: &str) -> io::Result<()> {
    match rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(0o755)) {
        Ok(()) | Err(rustix::io::Errno::EXIST) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The `MS_*` flags of `statvfs` flags `f`.
pub(super) fn ms_flags(f: rustix::fs::StatVfsMountFlags) -> libc::c_ulong {
    use rustix::fs::StatVfsMountFlags as S;
    let mut out: libc::c_ulong = 0;
    for (st, ms) in [
        (S::NOSUID, libc::MS_NOSUID),
        (S::NODEV, libc::MS_NODEV),
        (S::NOEXEC, libc::MS_NOEXEC),
        (S::NOATIME, libc::MS_NOATIME),
        (S::NODIRATIME, libc::MS_NODIRATIME),
        (S::RELATIME, libc::MS_RELATIME),
    ] {
        if f.contains(st) {
            out |= ms;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_without_git_are_locked_and_get_nothing_made() {
        let tmp = tempfile::tempdir().unwrap();
        let plain = tmp.path().join("plain");
        let repo = tmp.path().join("repo");
        let linked = tmp.path().join("linked");
        for dir in [&plain.join("src"), &repo.join(".git"), &linked] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(plain.join("a.txt"), "").unwrap();
        std::os::unix::fs::symlink("/etc", plain.join("etc")).unwrap();
        std::os::unix::fs::symlink(repo.join(".git"), linked.join(".git")).unwrap();
        let g = guard_roots(&[plain.clone(), repo.clone(), linked.clone()], &[]).unwrap();
        let dirs: Vec<_> = g.locked.iter().map(|l| l.dir.clone()).collect();
        assert_eq!(dirs, vec![plain.clone(), linked.clone()]);
        assert_eq!(
            g.locked[0].entries,
            vec![plain.join("a.txt"), plain.join("src")]
        );
        assert_eq!(g.locked[0].keeps, plain.join(".git"));
        assert!(repo.join(".gemini").is_dir());
        // Nothing is left in a locked root.
        assert!(!plain.join(".gemini").exists() && !plain.join(".git").exists());
        assert!(!linked.join(".gemini").exists());
    }

    #[test]
    fn a_missing_place_locks_the_deepest_directory_above_it_but_not_a_temp_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(home.join(".config/other")).unwrap();
        let mut g = Guard::default();
        guard_place(&home.join(".config/git/config"), &[], &[], &mut g).unwrap();
        assert_eq!(g.locked.len(), 1);
        assert_eq!(g.locked[0].dir, home.join(".config"));
        assert_eq!(g.locked[0].entries, vec![home.join(".config/other")]);
        guard_place(&home.join(".config/git/ignore"), &[], &[], &mut g).unwrap();
        assert_eq!(g.locked.len(), 1);
        let writable = [home.clone()];
        guard_place(&home.join(".gitconfig"), &writable, &[], &mut g).unwrap();
        assert_eq!(g.missing, vec![home.join(".gitconfig")]);
        // A root is locked, though writable.
        guard_place(&home.join(".gitconfig"), &writable, &writable, &mut g).unwrap();
        assert_eq!(g.locked.len(), 2);
        assert_eq!(g.locked[1].dir, home);
    }

    #[test]
    fn a_root_swapped_for_a_link_gets_nothing_made_where_it_points() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        let root = tmp.path().join("ws");
        std::os::unix::fs::symlink(&outside, &root).unwrap();
        assert!(guard_roots(std::slice::from_ref(&root), &[]).is_err());
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    }
}
