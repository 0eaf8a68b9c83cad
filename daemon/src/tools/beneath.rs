//! Walking a relative path below a pinned root's descriptor, one component
//! at a time, the way `realpath` would but without ever leaving the root
//! or trusting a path string: the resolution behind
//! [`super::path::resolve_in_workspace`] and every confined open.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use super::root::PinnedRoot;

/// How many symlinks one resolution may follow (Linux's own limit).
const MAX_LINKS: usize = 40;

/// Where a relative path leads below a root.
#[derive(Debug, PartialEq, Eq)]
pub struct Walked {
    /// Canonical: plain names only.
    pub rel: PathBuf,
    /// Whether all of it exists (else the last names are still to create).
    pub exists: bool,
}

/// One step still to take.
enum Step {
    Cur,
    Parent,
    Name(OsString),
}

/// Resolves `rel` below `root`, one component at a time from the root's
/// descriptor: each name is opened (`O_PATH | O_NOFOLLOW`) relative to its
/// parent's descriptor, symlinks are read and their targets walked the same
/// way, and `..` goes back to the parent walked through. Nothing can make a
/// step leave the root: `..` at the root, an absolute symlink target not
/// spelled under the root's path, and a dangling symlink (writing through
/// it would create its target) are errors. Fails with `PermissionDenied`
/// for paths that lead outside.
pub fn walk(root: &PinnedRoot, rel: &Path, must_be_dir: bool) -> std::io::Result<Walked> {
    if let Some(walked) = walk_plain(root, rel, must_be_dir) {
        return Ok(walked);
    }
    let mut pending: VecDeque<(Step, bool)> = steps(rel, false).collect();
    let mut stack: Vec<(OwnedFd, OsString)> = Vec::new();
    let mut links = 0;
    while let Some((step, from_link)) = pending.pop_front() {
        let name = match step {
            Step::Cur => continue,
            Step::Parent => {
                if stack.pop().is_none() {
                    return Err(leads_outside("`..` climbs above the workspace root"));
                }
                continue;
            }
            Step::Name(name) => name,
        };
        let parent = stack.last().map_or(root.dir(), |(fd, _)| fd.as_fd());
        let fd = match rustix::fs::openat(
            parent,
            &name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => {
                if from_link || pending.iter().any(|(_, l)| *l) {
                    return Err(std::io::Error::other(
                        "it is a symlink whose target does not exist",
                    ));
                }
                let mut out = names(&stack);
                out.push(name);
                for (step, _) in pending {
                    match step {
                        Step::Cur => {}
                        Step::Parent => {
                            return Err(std::io::Error::other(
                                "`..` after a directory that does not exist",
                            ));
                        }
                        Step::Name(n) => out.push(n),
                    }
                }
                return Ok(Walked {
                    rel: out,
                    exists: false,
                });
            }
            Err(e) => return Err(e.into()),
        };
        let st = rustix::fs::fstat(&fd)?;
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Symlink => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(Errno::LOOP.into());
                }
                let target = rustix::fs::readlinkat(&fd, "", Vec::new())?;
                let target = PathBuf::from(OsStr::from_bytes(target.as_bytes()));
                let target = if target.is_absolute() {
                    let inside = root.rel(&target).ok_or_else(|| {
                        leads_outside("a symlink on the way points outside the workspace")
                    })?;
                    stack.clear();
                    inside.to_path_buf()
                } else {
                    target
                };
                for step in steps(&target, true).collect::<Vec<_>>().into_iter().rev() {
                    pending.push_front(step);
                }
            }
            FileType::Directory => stack.push((fd, name)),
            _ => {
                if pending.iter().any(|(s, _)| !matches!(s, Step::Cur)) || must_be_dir {
                    return Err(Errno::NOTDIR.into());
                }
                let mut out = names(&stack);
                out.push(name);
                return Ok(Walked {
                    rel: out,
                    exists: true,
                });
            }
        }
    }
    Ok(Walked {
        rel: names(&stack),
        exists: true,
    })
}

/// The common case, decided with one `openat2`: `rel` holds plain names
/// only and exists with no symlink anywhere on its way, so it is its own
/// canonical form. `None` sends the caller to the full walk.
fn walk_plain(root: &PinnedRoot, rel: &Path, must_be_dir: bool) -> Option<Walked> {
    let plain = plain(rel)?;
    let flags = if must_be_dir {
        OFlags::PATH | OFlags::DIRECTORY
    } else {
        OFlags::PATH
    };
    open_plain_beneath(root.dir(), &plain, flags).ok()?;
    Some(Walked {
        rel: plain,
        exists: true,
    })
}

/// `rel` as plain names (`.` dropped), or `None` if it has `..` or a root.
pub(super) fn plain(rel: &Path) -> Option<PathBuf> {
    rel.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect()
}

fn steps(path: &Path, from_link: bool) -> impl Iterator<Item = (Step, bool)> + '_ {
    path.components().filter_map(move |c| {
        let step = match c {
            Component::CurDir => Step::Cur,
            Component::ParentDir => Step::Parent,
            Component::Normal(n) => Step::Name(n.to_os_string()),
            Component::RootDir | Component::Prefix(_) => return None,
        };
        Some((step, from_link))
    })
}

fn names(stack: &[(OwnedFd, OsString)]) -> PathBuf {
    stack.iter().map(|(_, n)| n.as_os_str()).collect()
}

pub(super) fn leads_outside(why: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::PermissionDenied, why.to_owned())
}

/// Opens `rel` (plain names) below `dir` following no symlink: one
/// `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, or on kernels without
/// it one `openat(O_NOFOLLOW)` per component. `O_CLOEXEC` is added.
pub(super) fn open_plain_beneath(
    dir: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlags,
) -> std::io::Result<OwnedFd> {
    let target = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    match rustix::fs::openat2(
        dir,
        target,
        flags | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    ) {
        Err(Errno::NOSYS) => {}
        other => return Ok(other?),
    }
    let names: Vec<&OsStr> = rel.iter().collect();
    let Some((last, parents)) = names.split_last() else {
        return Ok(rustix::fs::openat(
            dir,
            ".",
            flags | OFlags::CLOEXEC,
            Mode::empty(),
        )?);
    };
    let dir_flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut at = rustix::fs::openat(dir, ".", dir_flags, Mode::empty())?;
    for name in parents {
        at = rustix::fs::openat(&at, *name, dir_flags, Mode::empty())?;
    }
    Ok(rustix::fs::openat(
        &at,
        *last,
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}
