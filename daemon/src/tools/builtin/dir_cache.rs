//! Directory listings and parsed ignore files kept between calls.
//!
//! Opening, listing and closing a directory costs about 12 µs here (most of
//! it ext4's hashed readdir), while `statx` on its path costs about 2.6 µs.
//! A warm daemon that walks the same tree again can therefore ask the file
//! system whether each directory changed instead of reading it again.
//!
//! A cached listing is used only while `statx` reports the same device,
//! inode, size, mtime and ctime it had when it was read. Any change to a
//! directory's entries (create, delete, rename in or out) sets its ctime to
//! the current time, and ctime cannot be set by users. The one gap is a
//! change within the file system's timestamp granularity of the read, which
//! would leave ctime unchanged (git calls this "racily clean"). So a listing
//! is kept only if its ctime lies more than [`RACY_MARGIN`] before the read
//! began; a directory changed more recently is read afresh on every walk.
//! Only file systems whose timestamps are known to behave so (local ones:
//! ext4, xfs, btrfs, tmpfs, ...) are cached; on others (NFS, FUSE) every
//! walk reads every directory.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rustix::fs::{AtFlags, CWD, Dir, FileType, Mode, OFlags, StatxFlags};

/// How much older than the read a directory's ctime must be for the
/// listing to be kept (see the module doc).
pub const RACY_MARGIN: Duration = Duration::from_secs(1);

/// Beyond this many cached entries (a directory counts as one more) the
/// cache starts over, bounding its memory (about 64 bytes an entry with a
/// short name: 32 for the entry, 32 for the name's allocation) whatever
/// the daemon is asked to walk.
const MAX_ENTRIES: usize = 200_000;
/// Beyond this many parsed ignore files, that cache starts over.
const MAX_IGNORE_FILES: usize = 4_096;

/// What a directory entry is, from the listing (`d_type`), never following
/// a symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    Symlink,
    Other,
}

impl Kind {
    fn of(ty: FileType) -> Self {
        match ty {
            FileType::Directory => Kind::Dir,
            FileType::RegularFile => Kind::File,
            FileType::Symlink => Kind::Symlink,
            _ => Kind::Other,
        }
    }
}

#[derive(Debug)]
pub struct Entry {
    pub name: OsString,
    pub kind: Kind,
}

/// What `statx` says of a file, as far as change detection needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: (u32, u32),
    ino: u64,
    size: u64,
    mtime: (i64, u32),
    ctime: (i64, u32),
}

impl Stamp {
    fn of(st: &rustix::fs::Statx) -> Self {
        Stamp {
            dev: (st.stx_dev_major, st.stx_dev_minor),
            ino: st.stx_ino,
            size: st.stx_size,
            mtime: (st.stx_mtime.tv_sec, st.stx_mtime.tv_nsec),
            ctime: (st.stx_ctime.tv_sec, st.stx_ctime.tv_nsec),
        }
    }

    /// True when a change after `read_began` must show in a new stamp.
    fn settled(&self, read_began: SystemTime) -> bool {
        let (Ok(secs), Ok(began)) = (
            u64::try_from(self.ctime.0),
            read_began.duration_since(UNIX_EPOCH),
        ) else {
            return false;
        };
        Duration::new(secs, self.ctime.1) + RACY_MARGIN < began
    }
}

/// One directory's entries (without `.` and `..`), as read.
#[derive(Debug)]
pub struct Listing {
    stamp: Stamp,
    pub entries: Vec<Entry>,
}

impl Listing {
    pub fn kind_of(&self, name: &str) -> Option<Kind> {
        self.entries.iter().find(|e| e.name == name).map(|e| e.kind)
    }
}

/// Listings by directory, with the number of entries they hold.
#[derive(Default)]
struct Listings {
    by_dir: HashMap<PathBuf, Arc<Listing>>,
    entries: usize,
}

/// Parsed ignore files by (directory they govern, file), with the stamp of
/// the file they were parsed from.
type RulesByFile = HashMap<(PathBuf, PathBuf), (Stamp, Arc<Gitignore>)>;

/// The cache; one per tool that walks, shared by its calls.
#[derive(Default)]
pub struct DirCache {
    dirs: Mutex<Listings>,
    ignores: Mutex<RulesByFile>,
    /// Device -> whether its file system's timestamps can be trusted.
    devices: Mutex<HashMap<(u32, u32), bool>>,
}

impl DirCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// The entries of the directory `dir` (absolute; its last component is
    /// not followed if it is a symlink). Fails when `dir` is not a
    /// directory or cannot be read.
    pub fn listing(&self, dir: &Path) -> std::io::Result<Arc<Listing>> {
        let st = rustix::fs::statx(CWD, dir, AtFlags::SYMLINK_NOFOLLOW, StatxFlags::BASIC_STATS)?;
        if FileType::from_raw_mode(st.stx_mode.into()) != FileType::Directory {
            return Err(rustix::io::Errno::NOTDIR.into());
        }
        let stamp = Stamp::of(&st);
        if let Some(hit) = lock(&self.dirs).by_dir.get(dir)
            && hit.stamp == stamp
        {
            return Ok(hit.clone());
        }
        let began = SystemTime::now();
        let listing = Arc::new(read_listing(dir)?);
        if listing.stamp.settled(began) && self.trusted_device(dir, listing.stamp.dev) {
            let mut dirs = lock(&self.dirs);
            let size = listing.entries.len() + 1;
            if dirs.entries + size > MAX_ENTRIES {
                *dirs = Listings::default();
            }
            dirs.entries += size;
            if let Some(old) = dirs.by_dir.insert(dir.to_path_buf(), listing.clone()) {
                dirs.entries -= old.entries.len() + 1;
            }
        }
        Ok(listing)
    }

    /// The rules of the ignore file `file`, relative to `base` (the
    /// directory they govern); None when it is not a readable regular file.
    /// A malformed line is skipped rather than failing: git does the same.
    pub fn ignore_file(&self, base: &Path, file: &Path) -> Option<Arc<Gitignore>> {
        let st = rustix::fs::statx(CWD, file, AtFlags::empty(), StatxFlags::BASIC_STATS).ok()?;
        if FileType::from_raw_mode(st.stx_mode.into()) != FileType::RegularFile {
            return None;
        }
        let stamp = Stamp::of(&st);
        let key = (base.to_path_buf(), file.to_path_buf());
        if let Some((seen, rules)) = lock(&self.ignores).get(&key)
            && *seen == stamp
        {
            return Some(rules.clone());
        }
        let began = SystemTime::now();
        let mut builder = GitignoreBuilder::new(base);
        let _ = builder.add(file);
        let rules = Arc::new(builder.build().ok()?);
        if stamp.settled(began) && self.trusted_device(file, stamp.dev) {
            let mut ignores = lock(&self.ignores);
            if ignores.len() >= MAX_IGNORE_FILES {
                ignores.clear();
            }
            ignores.insert(key, (stamp, rules.clone()));
        }
        Some(rules)
    }

    #[cfg(test)]
    pub fn cached_dirs(&self) -> usize {
        lock(&self.dirs).by_dir.len()
    }

    fn trusted_device(&self, path: &Path, dev: (u32, u32)) -> bool {
        if let Some(known) = lock(&self.devices).get(&dev) {
            return *known;
        }
        let Ok(fs) = rustix::fs::statfs(path) else {
            return false;
        };
        // `f_type` is i64 here but narrower on some targets.
        #[allow(clippy::unnecessary_cast)]
        let trusted = LOCAL_FILE_SYSTEMS.contains(&(fs.f_type as i64));
        lock(&self.devices).insert(dev, trusted);
        trusted
    }
}

/// Magic numbers (statfs `f_type`) of local file systems whose ctime
/// changes with every directory change: ext2/3/4, xfs, btrfs, tmpfs,
/// overlayfs, f2fs, zfs, bcachefs.
const LOCAL_FILE_SYSTEMS: [i64; 8] = [
    0xEF53,
    0x5846_5342,
    0x9123_683E,
    0x0102_1994,
    0x794C_7630,
    0xF2F5_2010,
    0x2FC1_2FC1,
    0xCA45_1A4E,
];

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Reads `dir` through one descriptor: its stamp comes from that
/// descriptor before the entries are read, so a change during the read
/// leaves a stamp that no longer matches (and the listing is read again).
fn read_listing(dir: &Path) -> std::io::Result<Listing> {
    let fd = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let st = rustix::fs::statx(&fd, "", AtFlags::EMPTY_PATH, StatxFlags::BASIC_STATS)?;
    let stamp = Stamp::of(&st);
    let mut entries = Vec::new();
    let mut unknown = Vec::new();
    let mut reader = Dir::new(fd)?;
    while let Some(entry) = reader.read() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        if entry.file_type() == FileType::Unknown {
            unknown.push(entries.len());
        }
        let kind = Kind::of(entry.file_type());
        entries.push(Entry {
            name: OsStr::from_bytes(name).to_os_string(),
            kind,
        });
    }
    // Some file systems leave `d_type` unset: ask about those entries.
    for i in unknown {
        let path = dir.join(&entries[i].name);
        if let Ok(st) = rustix::fs::statx(CWD, &path, AtFlags::SYMLINK_NOFOLLOW, StatxFlags::TYPE) {
            entries[i].kind = Kind::of(FileType::from_raw_mode(st.stx_mode.into()));
        }
    }
    Ok(Listing { stamp, entries })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(l: &Listing) -> Vec<String> {
        let mut v: Vec<String> = l
            .entries
            .iter()
            .map(|e| e.name.to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// Sets a directory's ctime in the past the only way there is: waiting.
    fn settle() {
        std::thread::sleep(RACY_MARGIN + Duration::from_millis(100));
    }

    #[test]
    fn a_settled_listing_is_reused_until_the_directory_changes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("a.txt"), "a").unwrap();
        std::os::unix::fs::symlink("a.txt", root.join("link")).unwrap();
        let cache = DirCache::new();
        // Changed just now: read, but not kept.
        let first = cache.listing(&root).unwrap();
        assert_eq!(names(&first), ["a.txt", "link", "sub"]);
        assert_eq!(first.kind_of("sub"), Some(Kind::Dir));
        assert_eq!(first.kind_of("a.txt"), Some(Kind::File));
        assert_eq!(first.kind_of("link"), Some(Kind::Symlink));
        assert_eq!(cache.cached_dirs(), 0);
        settle();
        let kept = cache.listing(&root).unwrap();
        assert_eq!(cache.cached_dirs(), 1);
        assert!(Arc::ptr_eq(&kept, &cache.listing(&root).unwrap()));
        // Every kind of change to the entries shows.
        std::fs::write(root.join("b.txt"), "b").unwrap();
        assert_eq!(
            names(&cache.listing(&root).unwrap()),
            ["a.txt", "b.txt", "link", "sub"]
        );
        std::fs::rename(root.join("b.txt"), root.join("sub/b.txt")).unwrap();
        assert_eq!(
            names(&cache.listing(&root).unwrap()),
            ["a.txt", "link", "sub"]
        );
        std::fs::remove_file(root.join("link")).unwrap();
        std::fs::create_dir(root.join("link")).unwrap();
        let swapped = cache.listing(&root).unwrap();
        assert_eq!(swapped.kind_of("link"), Some(Kind::Dir));
    }

    #[test]
    fn a_directory_replaced_by_a_symlink_is_not_listed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("d")).unwrap();
        let cache = DirCache::new();
        assert!(cache.listing(&root.join("d")).is_ok());
        std::fs::remove_dir(root.join("d")).unwrap();
        std::os::unix::fs::symlink("/", root.join("d")).unwrap();
        assert!(cache.listing(&root.join("d")).is_err());
        assert!(cache.listing(&root.join("missing")).is_err());
    }

    /// procfs is not on the list of file systems whose timestamps are
    /// trusted: its listings are read every time, even settled ones.
    #[test]
    fn listings_of_untrusted_file_systems_are_not_kept() {
        let dir = Path::new("/proc/sys");
        let st = rustix::fs::statx(CWD, dir, AtFlags::empty(), StatxFlags::BASIC_STATS).unwrap();
        assert!(
            Stamp::of(&st).settled(SystemTime::now()),
            "the test needs a directory unchanged for a while"
        );
        let cache = DirCache::new();
        assert!(cache.listing(dir).unwrap().kind_of("kernel") == Some(Kind::Dir));
        assert_eq!(cache.cached_dirs(), 0);
    }

    #[test]
    fn ignore_rules_follow_their_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let file = root.join(".gitignore");
        std::fs::write(&file, "*.log\n").unwrap();
        settle();
        let cache = DirCache::new();
        let rules = cache.ignore_file(&root, &file).unwrap();
        assert!(rules.matched(root.join("x.log"), false).is_ignore());
        assert!(Arc::ptr_eq(
            &rules,
            &cache.ignore_file(&root, &file).unwrap()
        ));
        std::fs::write(&file, "*.tmp\n").unwrap();
        let rules = cache.ignore_file(&root, &file).unwrap();
        assert!(!rules.matched(root.join("x.log"), false).is_ignore());
        assert!(rules.matched(root.join("x.tmp"), false).is_ignore());
        std::fs::remove_file(&file).unwrap();
        std::fs::create_dir(&file).unwrap();
        assert!(cache.ignore_file(&root, &file).is_none());
    }
}
