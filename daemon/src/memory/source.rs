//! File-system access for the memory loader, behind a small trait so the
//! import logic can be exercised against anything that looks like a disk.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};

use super::paths;

/// The file operations the import processor needs.
pub trait FileSource {
    /// Existence check (like `access(path, F_OK)`): errors when the path
    /// cannot be reached.
    fn access(&self, path: &Path) -> io::Result<()>;
    /// Read a whole file as UTF-8 (invalid sequences become U+FFFD).
    fn read_to_string(&self, path: &Path) -> io::Result<String>;
    /// Resolve symlinks and `..` on disk (`realpath`).
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf>;
    /// `Ok(Some(target))` when `path` itself is a symlink, `Ok(None)` when it
    /// exists and is not one.
    fn symlink_target(&self, path: &Path) -> io::Result<Option<PathBuf>>;
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsFiles;

impl FileSource for OsFiles {
    fn access(&self, path: &Path) -> io::Result<()> {
        std::fs::metadata(path).map(|_| ())
    }

    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        let bytes = std::fs::read(path)?;
        Ok(match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
        })
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }

    fn symlink_target(&self, path: &Path) -> io::Result<Option<PathBuf>> {
        let meta = std::fs::symlink_metadata(path)?;
        if meta.file_type().is_symlink() {
            std::fs::read_link(path).map(Some)
        } else {
            Ok(None)
        }
    }
}

/// Which system call a failure is attributed to in the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syscall {
    Access,
    Read,
}

/// Describe an I/O failure the way Node does (`ENOENT: no such file or
/// directory, access '/x'`), since that text ends up in the memory.
pub fn node_style_message(err: &io::Error, syscall: Syscall, path: &str) -> String {
    use io::ErrorKind as K;
    let (code, desc) = match err.kind() {
        K::NotFound => ("ENOENT", "no such file or directory"),
        K::NotADirectory => ("ENOTDIR", "not a directory"),
        K::IsADirectory => ("EISDIR", "illegal operation on a directory"),
        K::PermissionDenied => ("EACCES", "permission denied"),
        K::InvalidFilename => ("ENAMETOOLONG", "name too long"),
        _ if err.raw_os_error() == Some(40) => ("ELOOP", "too many symbolic links encountered"),
        _ => return err.to_string(),
    };
    match (syscall, code) {
        (Syscall::Access, _) => format!("{code}: {desc}, access '{path}'"),
        // Node's readFile reports a directory without naming it.
        (Syscall::Read, "EISDIR") => format!("{code}: {desc}, read"),
        (Syscall::Read, _) => format!("{code}: {desc}, open '{path}'"),
    }
}

fn tolerated(kind: io::ErrorKind) -> bool {
    use io::ErrorKind as K;
    matches!(
        kind,
        K::NotFound | K::IsADirectory | K::InvalidFilename | K::NotADirectory
    )
}

/// `realpath` that tolerates missing tails: the longest existing prefix is
/// canonicalized and the rest appended; dangling symlinks are followed
/// lexically. `None` on a symlink loop or an unexpected error.
pub fn robust_realpath(fs: &dyn FileSource, p: &str) -> Option<String> {
    let mut visited = HashSet::new();
    realpath_inner(fs, p, &mut visited)
}

fn realpath_inner(fs: &dyn FileSource, p: &str, visited: &mut HashSet<String>) -> Option<String> {
    if !visited.insert(p.to_string()) {
        return None;
    }
    match fs.canonicalize(Path::new(p)) {
        Ok(real) => Some(paths::path_str(&real)),
        Err(err) if tolerated(err.kind()) => {
            match fs.symlink_target(Path::new(p)) {
                Ok(Some(target)) => {
                    let next = paths::resolve(&paths::dirname(p), &paths::path_str(&target));
                    return realpath_inner(fs, &next, visited);
                }
                Ok(None) => {}
                Err(err) if tolerated(err.kind()) => {}
                Err(_) => return None,
            }
            let parent = paths::dirname(p);
            if parent == p {
                return Some(p.to_string());
            }
            let real_parent = realpath_inner(fs, &parent, visited)?;
            Some(paths::join(&real_parent, paths::basename(p)))
        }
        Err(_) => None,
    }
}

/// `resolveToRealPath`: percent-decoding (kept as-is when malformed), then
/// [`robust_realpath`]. `None` for paths containing NUL.
pub fn resolve_to_real_path(fs: &dyn FileSource, p: &str) -> Option<String> {
    if p.contains('\0') {
        return None;
    }
    let decoded = paths::decode_uri_component(p).unwrap_or_else(|| p.to_string());
    let absolute = paths::resolve("/", &decoded);
    robust_realpath(fs, &absolute)
}

/// Walk up from `start` to the first directory containing one of `markers`
/// (a `.git` directory or file); `start` itself when none is found.
pub fn find_project_root(fs: &dyn FileSource, start: &str, markers: &[&str]) -> String {
    let start = paths::normalize(start);
    let mut dir = start.clone();
    loop {
        for marker in markers {
            if marker.starts_with('/') || marker.contains("..") {
                continue;
            }
            if fs.access(Path::new(&paths::join(&dir, marker))).is_ok() {
                return dir;
            }
        }
        let parent = paths::dirname(&dir);
        if parent == dir {
            return start;
        }
        dir = parent;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_look_like_node() {
        let nf = io::Error::from(io::ErrorKind::NotFound);
        assert_eq!(
            node_style_message(&nf, Syscall::Access, "/x/y.md"),
            "ENOENT: no such file or directory, access '/x/y.md'"
        );
        let dir = io::Error::from(io::ErrorKind::IsADirectory);
        assert_eq!(
            node_style_message(&dir, Syscall::Read, "/x"),
            "EISDIR: illegal operation on a directory, read"
        );
    }

    #[test]
    fn realpath_of_missing_tail() -> io::Result<()> {
        let tmp = tempfile::tempdir()?;
        let root = paths::path_str(&std::fs::canonicalize(tmp.path())?);
        std::fs::create_dir(tmp.path().join("d"))?;
        let want = format!("{root}/d/missing/x.md");
        assert_eq!(
            robust_realpath(&OsFiles, &want).as_deref(),
            Some(want.as_str())
        );
        Ok(())
    }

    #[cfg(unix)]
    #[test]
    fn realpath_follows_dangling_symlink() -> io::Result<()> {
        let tmp = tempfile::tempdir()?;
        let root = paths::path_str(&std::fs::canonicalize(tmp.path())?);
        std::os::unix::fs::symlink("/nowhere/target.md", tmp.path().join("link.md"))?;
        let got = robust_realpath(&OsFiles, &format!("{root}/link.md"));
        assert_eq!(got.as_deref(), Some("/nowhere/target.md"));
        Ok(())
    }

    #[test]
    fn project_root_via_git_marker() -> io::Result<()> {
        let tmp = tempfile::tempdir()?;
        let root = paths::path_str(&std::fs::canonicalize(tmp.path())?);
        std::fs::create_dir_all(tmp.path().join(".git"))?;
        std::fs::create_dir_all(tmp.path().join("a/b"))?;
        assert_eq!(
            find_project_root(&OsFiles, &format!("{root}/a/b"), &[".git"]),
            root
        );
        let other = tempfile::tempdir()?;
        let lone = paths::path_str(&std::fs::canonicalize(other.path())?);
        assert_eq!(find_project_root(&OsFiles, &lone, &[".git"]), lone);
        Ok(())
    }
}
