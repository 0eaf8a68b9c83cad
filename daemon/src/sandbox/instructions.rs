//! The instruction places of a workspace root that do not exist yet (the
//! IO edge, before each sandboxed command): a command must not be able to
//! create them, and a Landlock rule cannot refuse one name while allowing
//! others. So, fail closed:
//! * `.gemini` missing: created empty, then held read-only like an
//!   existing one (an empty `.gemini` configures nothing);
//! * `.git` a directory without `hooks`: `hooks` created empty and held
//!   (git's own template has one); without `config`: `.git` held whole.
//!
//! A root without `.git` stays as it was: a placeholder `.git` would
//! change how git, ripgrep and memory discovery see the workspace, and
//! refusing new entries at the root's top level refuses ordinary work.
//! The call's result warns when a command created one (`Preparation::
//! missing`, `tools/builtin/shell_sandbox.rs`).

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::tools::PinnedRoot;

/// What one root needs beyond the plan.
#[derive(Debug, Default)]
pub struct RootGuard {
    /// Places to hold read-only besides the plan's.
    pub hold: Vec<PathBuf>,
    /// Roots' `.git` that does not exist (reported if a command makes one).
    pub absent: Vec<PathBuf>,
}

/// Prepares the instruction places of `roots` (see the module comment).
/// Each root is opened without following a symlink and everything below
/// is made and looked at relative to that descriptor, never by path: a
/// root swapped for a link to elsewhere fails here instead of getting a
/// `.gemini` made in the place the link points to.
pub fn guard(roots: &[PathBuf], pinned: &[PinnedRoot]) -> io::Result<RootGuard> {
    let mut out = RootGuard::default();
    for root in roots {
        let opened = match pinned.iter().find(|p| p.path() == root.as_path()) {
            // The directory pinned at the session's start, whatever its
            // path leads to now.
            Some(p) => rustix::fs::openat(
                p.dir(),
                ".",
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
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
        if is_missing(&dir, ".gemini")? {
            create_dir(&dir, ".gemini")?;
        }
        let git = root.join(".git");
        match rustix::fs::statat(&dir, ".git", AtFlags::SYMLINK_NOFOLLOW) {
            Err(rustix::io::Errno::NOENT) => out.absent.push(git),
            Err(e) => return Err(e.into()),
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => {
                let git_dir = open_dir(&dir, Path::new(".git"))?;
                if is_missing(&git_dir, "hooks")? {
                    create_dir(&git_dir, "hooks")?;
                }
                if is_missing(&git_dir, "config")? {
                    out.hold.push(git);
                }
            }
            // A `.git` file is held by the plan (`read_only_files`); a
            // symlink is held where it points.
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
                out.hold.push(git)
            }
            Ok(_) => {}
        }
    }
    Ok(out)
}

/// A directory opened beneath `at`, its last component not followed.
fn open_dir<Fd: AsFd>(at: Fd, path: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat(
        at,
        path,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

fn is_missing(dir: &OwnedFd, name: &str) -> io::Result<bool> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(_) => Ok(false),
        Err(rustix::io::Errno::NOENT) => Ok(true),
        Err(e) => Err(e.into()),
    }
}

/// `mkdir` of one name in `dir`; one that appeared meanwhile is fine.
fn create_dir(dir: &OwnedFd, name: &str) -> io::Result<()> {
    match rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(0o755)) {
        Ok(()) | Err(rustix::io::Errno::EXIST) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::guard;

    #[test]
    fn missing_places_are_made_or_held() {
        let tmp = tempfile::tempdir().unwrap();
        let plain = tmp.path().join("plain");
        let repo = tmp.path().join("repo");
        let bare = tmp.path().join("bare");
        for dir in [&plain, &repo.join(".git"), &bare.join(".git")] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(repo.join(".git/config"), "").unwrap();
        let g = guard(&[plain.clone(), repo.clone(), bare.clone()], &[]).unwrap();
        assert_eq!(g.hold, vec![bare.join(".git")]);
        for made in [
            plain.join(".gemini"),
            repo.join(".gemini"),
            repo.join(".git/hooks"),
            bare.join(".git/hooks"),
        ] {
            assert!(made.is_dir(), "{}", made.display());
        }
        assert!(!plain.join(".git").exists());
        assert_eq!(g.absent, vec![plain.join(".git")]);
    }

    #[test]
    fn a_root_swapped_for_a_link_gets_nothing_made_where_it_points() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        let root = tmp.path().join("ws");
        std::os::unix::fs::symlink(&outside, &root).unwrap();
        assert!(guard(std::slice::from_ref(&root), &[]).is_err());
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    }
}
