//! Applying a [`Plan`] to a command (the IO edge): everything that can
//! allocate or fail slowly is prepared in the daemon (the Landlock ruleset,
//! C strings, mount flags); the child, between fork and exec, only makes
//! system calls. In order: new user and mount namespaces (and a network
//! namespace with loopback alone when the network is off), the entries of
//! locked directories bound writable over themselves, hidden places
//! covered by an empty inaccessible tmpfs (files by `/dev/null`),
//! instruction files bind-mounted read-only over themselves, locked
//! directories made read-only (and checked to be the same), the working
//! directory entered again through the new mounts (and checked to be the
//! same directory), resource limits, `no_new_privs`, and Landlock last
//! (a Landlocked process may not mount).
//!
//! The only module of the sandbox with `unsafe`: `pre_exec` and raw
//! system calls; each block says why it is sound.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
    Scope,
};

use super::plan::Plan;

/// Device files every command may write (and use terminal ioctls on).
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
];
/// Directories of devices likewise (pseudo-terminals).
const DEVICE_DIRS: &[&str] = &["/dev/pts"];

/// `SIOCSIFFLAGS`, `IFF_UP`, `IFF_RUNNING`.
const SIOCSIFFLAGS: libc::c_ulong = 0x8914;
const IFF_UP_RUNNING: libc::c_short = 0x1 | 0x40;

/// `struct ifreq` with the flags member (40 bytes on Linux).
#[repr(C)]
struct IfreqFlags {
    name: [u8; 16],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// The Landlock ABI of the running kernel (0 without Landlock).
pub fn landlock_abi() -> i32 {
    // SAFETY: landlock_create_ruleset with a null attribute, size 0 and the
    // VERSION flag only returns a number; it reads and writes no memory.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32,
        )
    };
    i32::try_from(v).unwrap_or(0).max(0)
}

/// A place to hide: a directory gets an inaccessible tmpfs, a file
/// `/dev/null`.
struct Hidden {
    path: CString,
    dir: bool,
}

/// A place held read-only, with the flags its mount already has (a mount
/// in a user namespace must keep them).
struct Held {
    path: CString,
    flags: libc::c_ulong,
}

/// Everything the child needs, ready before the fork.
pub struct Prepared {
    ruleset: OwnedFd,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    hidden: Vec<Hidden>,
    held: Vec<Held>,
    /// The entries of locked directories, bound writable over themselves
    /// before their directory is made read-only (`instructions.rs`).
    writable_binds: Vec<CString>,
    /// Locked directories, children first, with the (device, inode)
    /// each path must still lead to.
    locked: Vec<(Held, (u64, u64))>,
    /// Roots' instruction places held by path, with the (device, inode)
    /// each path must lead to once held.
    checked: Vec<(CString, (u64, u64))>,
    network: bool,
    processes: Option<u64>,
    file_size: Option<u64>,
    /// The working directory by path, and the (device, inode) it must be.
    cwd: Option<(CString, u64, u64)>,
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)
}

/// `statvfs` flags → the `MS_*` flags a read-only remount must keep.
fn locked_flags(path: &Path) -> io::Result<libc::c_ulong> {
    Ok(super::instructions::ms_flags(
        rustix::fs::statvfs(path)?.f_flag,
    ))
}

/// What could not be held read-only because it does not exist (the call
/// reports these).
pub struct Preparation {
    pub prepared: Prepared,
    pub missing: Vec<std::path::PathBuf>,
    /// Directories whose own entries the command may not change.
    pub locked: Vec<super::instructions::Locked>,
}

/// Where a command starts: a path the child enters again through its new
/// mounts, and the directory (device, inode) it must turn out to be. The
/// identity comes from the directory the daemon opened beneath the pinned
/// root, so a path swapped for a link to elsewhere fails the check instead
/// of moving the command outside.
#[derive(Debug, Clone, Copy)]
pub struct WorkDir<'a> {
    pub path: &'a Path,
    /// `None`: the path's directory now (self-tests only).
    pub identity: Option<(u64, u64)>,
    /// The roots as pinned when the session began: their instruction
    /// places are made from these descriptors (a root whose path is now a
    /// link is still the pinned directory).
    pub pinned: &'a [crate::tools::PinnedRoot],
}

/// Prepares `plan` for a command that will run in `cwd`.
pub fn prepare(plan: &Plan, abi: i32, cwd: Option<WorkDir<'_>>) -> io::Result<Preparation> {
    let abi = ABI::from(abi);
    if abi == ABI::Unsupported {
        return Err(io::Error::other("Landlock is not available"));
    }
    let write = AccessFs::from_write(abi);
    let ll = |e: landlock::RulesetError| io::Error::other(format!("Landlock: {e}"));
    let mut ruleset = Ruleset::default().handle_access(write).map_err(ll)?;
    if abi >= ABI::V6 {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(ll)?;
    }
    let mut created = ruleset.create().map_err(ll)?;
    // Missing instruction places of the roots: see `instructions.rs`.
    let mut guard =
        super::instructions::guard_roots(&plan.roots, cwd.map_or(&[][..], |c| c.pinned))?;
    for dir in &plan.writable {
        if let Ok(fd) = PathFd::new(dir) {
            created = created.add_rule(PathBeneath::new(fd, write)).map_err(ll)?;
        }
    }
    let file_rights: BitFlags<AccessFs> = AccessFs::from_file(abi) & write;
    for dev in DEVICES.iter().chain(DEVICE_DIRS) {
        if let Ok(fd) = PathFd::new(dev) {
            created = created
                .add_rule(PathBeneath::new(fd, file_rights))
                .map_err(ll)?;
        }
    }
    let ruleset: Option<OwnedFd> = created.into();
    let ruleset = ruleset.ok_or_else(|| io::Error::other("Landlock created no ruleset"))?;

    let uid = rustix::process::geteuid().as_raw();
    let gid = rustix::process::getegid().as_raw();
    let mut hidden = Vec::new();
    for path in &plan.hidden {
        // What does not exist needs no hiding; a symlink is hidden where
        // it points (mount follows it).
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        hidden.push(Hidden {
            path: c_path(path)?,
            dir: meta.is_dir(),
        });
    }
    let mut held = Vec::new();
    let mut checked = Vec::new();
    for path in &plan.read_only {
        // A root's own places were looked at through its pinned
        // descriptor: held when there, else its root is locked.
        if let Some(place) = guard.present.iter().find(|p| &p.path == path) {
            held.push(Held {
                path: c_path(path)?,
                flags: place.flags,
            });
            checked.push((c_path(path)?, place.identity));
            continue;
        }
        if guard.guarded.contains(path) {
            continue;
        }
        match std::fs::symlink_metadata(path) {
            Ok(_) => held.push(Held {
                path: c_path(path)?,
                flags: locked_flags(path)?,
            }),
            Err(_) => {
                super::instructions::guard_place(path, &plan.writable, &plan.roots, &mut guard)?
            }
        }
    }
    // Entries bound writable, parents first; locked directories made
    // read-only, children first (a parent's recursive bind copies them).
    guard.locked.sort_by(|a, b| a.dir.cmp(&b.dir));
    let mut writable_binds = Vec::new();
    for l in &guard.locked {
        for e in &l.entries {
            writable_binds.push(c_path(e)?);
        }
    }
    let mut locked = Vec::new();
    for l in guard.locked.iter().rev() {
        locked.push((
            Held {
                path: c_path(&l.dir)?,
                flags: l.flags,
            },
            l.identity,
        ));
    }
    let cwd = match cwd {
        Some(dir) => {
            let (dev, ino) = match dir.identity {
                Some(identity) => identity,
                None => {
                    let st = rustix::fs::stat(dir.path)?;
                    (st.st_dev, st.st_ino)
                }
            };
            Some((c_path(dir.path)?, dev, ino))
        }
        None => None,
    };
    Ok(Preparation {
        prepared: Prepared {
            ruleset,
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            hidden,
            held,
            writable_binds,
            locked,
            checked,
            network: plan.network,
            processes: plan.limits.processes,
            file_size: plan.limits.file_size,
            cwd,
        },
        missing: guard.missing,
        locked: guard.locked,
    })
}

/// Arranges for the child of `command` to enter the sandbox before exec.
pub fn install(command: &mut tokio::process::Command, prepared: Prepared) {
    // SAFETY: the closure runs in the forked child before exec and only
    // makes system calls on memory prepared before the fork (no
    // allocation, no locks); errors are returned as `io::Error` built
    // from errno, which `std` reports to the parent through its pipe.
    unsafe {
        command.pre_exec(move || enter(&prepared));
    }
}

/// As [`install`], for a `std` command (the self-test).
pub fn install_std(command: &mut std::process::Command, prepared: Prepared) {
    use std::os::unix::process::CommandExt;
    // SAFETY: as in `install`.
    unsafe {
        command.pre_exec(move || enter(&prepared));
    }
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Writes `bytes` to the file `path` (the id maps).
fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated; `bytes` outlives the write; the
    // descriptor is closed on every path.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let err = io::Error::last_os_error();
        libc::close(fd);
        if n < 0 || n as usize != bytes.len() {
            return Err(err);
        }
    }
    Ok(())
}

/// Runs in the child: enters the sandbox.
fn enter(p: &Prepared) -> io::Result<()> {
    let mut flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS;
    if !p.network {
        flags |= libc::CLONE_NEWNET;
    }
    // SAFETY: unshare takes flags only.
    check(unsafe { libc::unshare(flags) })?;
    write_file(c"/proc/self/setgroups", b"deny")?;
    write_file(c"/proc/self/uid_map", &p.uid_map)?;
    write_file(c"/proc/self/gid_map", &p.gid_map)?;
    let null = std::ptr::null::<libc::c_char>();
    // SAFETY (every mount below): the paths are NUL-terminated strings
    // prepared before the fork; the data argument is null or a literal.
    check(unsafe {
        libc::mount(
            null,
            c"/".as_ptr(),
            null,
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    })?;
    for path in &p.writable_binds {
        check(unsafe {
            libc::mount(
                path.as_ptr(),
                path.as_ptr(),
                null,
                libc::MS_BIND | libc::MS_REC,
                std::ptr::null(),
            )
        })?;
    }
    for h in &p.hidden {
        let rc = if h.dir {
            unsafe {
                libc::mount(
                    c"tmpfs".as_ptr(),
                    h.path.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    c"size=4k,nr_inodes=1,mode=000".as_ptr().cast(),
                )
            }
        } else {
            unsafe {
                libc::mount(
                    c"/dev/null".as_ptr(),
                    h.path.as_ptr(),
                    null,
                    libc::MS_BIND,
                    std::ptr::null(),
                )
            }
        };
        check(rc)?;
    }
    for h in p.held.iter().chain(p.locked.iter().map(|(h, _)| h)) {
        check(unsafe {
            libc::mount(
                h.path.as_ptr(),
                h.path.as_ptr(),
                null,
                libc::MS_BIND | libc::MS_REC,
                std::ptr::null(),
            )
        })?;
        check(unsafe {
            libc::mount(
                null,
                h.path.as_ptr(),
                null,
                libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | h.flags,
                std::ptr::null(),
            )
        })?;
    }
    // The mounts went by path: each must have landed on the pinned place
    // (a path swapped and swapped back meanwhile would have put it
    // elsewhere), so the path must lead to it now, read-only.
    for (path, (dev, ino)) in p
        .locked
        .iter()
        .map(|(h, id)| (&h.path, id))
        .chain(p.checked.iter().map(|(c, id)| (c, id)))
    {
        // SAFETY: NUL-terminated path; `st` is written by the kernel.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            check(libc::stat(path.as_ptr(), &mut st))?;
            // rustix's, not glibc's `statvfs`, which may read
            // /proc/mounts (and allocate) on old kernels.
            let read_only = rustix::fs::statvfs(path.as_c_str())?
                .f_flag
                .contains(rustix::fs::StatVfsMountFlags::RDONLY);
            if st.st_dev != *dev || st.st_ino != *ino || !read_only {
                return Err(io::Error::from_raw_os_error(libc::ESTALE));
            }
        }
    }
    if !p.network {
        loopback_up()?;
    }
    if let Some((path, dev, ino)) = &p.cwd {
        // Enter the directory again through the new mounts, so a working
        // directory inside a held place is held too; it must be the same
        // directory that was checked.
        // SAFETY: NUL-terminated path; `st` is written by the kernel.
        unsafe {
            check(libc::chdir(path.as_ptr()))?;
            let mut st: libc::stat = std::mem::zeroed();
            check(libc::stat(c".".as_ptr(), &mut st))?;
            if st.st_dev != *dev || st.st_ino != *ino {
                return Err(io::Error::from_raw_os_error(libc::ESTALE));
            }
        }
    }
    for (resource, value) in [
        (libc::RLIMIT_NPROC, p.processes),
        (libc::RLIMIT_FSIZE, p.file_size),
    ] {
        if let Some(v) = value {
            let lim = libc::rlimit {
                rlim_cur: v,
                rlim_max: v,
            };
            // SAFETY: `lim` is a valid rlimit for the call.
            check(unsafe { libc::setrlimit(resource, &lim) })?;
        }
    }
    // SAFETY: prctl with integer arguments; landlock_restrict_self with a
    // ruleset descriptor this process owns.
    unsafe {
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
        let rc = libc::syscall(
            libc::SYS_landlock_restrict_self,
            p.ruleset.as_raw_fd(),
            0u32,
        );
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Brings `lo` up in the new network namespace.
fn loopback_up() -> io::Result<()> {
    // SAFETY: a socket used for one ioctl on a properly sized `ifreq`,
    // closed on every path.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut req = IfreqFlags {
            name: [0; 16],
            flags: IFF_UP_RUNNING,
            _pad: [0; 22],
        };
        req.name[0] = b'l';
        req.name[1] = b'o';
        let rc = libc::ioctl(fd, SIOCSIFFLAGS, &mut req);
        let err = io::Error::last_os_error();
        libc::close(fd);
        if rc < 0 {
            return Err(err);
        }
    }
    Ok(())
}
