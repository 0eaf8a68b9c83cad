//! Loading every `*.toml` file of a policy directory, and the admin
//! directory ownership check.

use crate::policy::error::PolicyLoadError;
use crate::policy::load::parse_policy;
use crate::policy::rule::{PolicyRule, Tier};
use std::path::{Path, PathBuf};

/// Ownership and permission bits of a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirMeta {
    /// Owner uid.
    pub uid: u32,
    /// Mode bits (as from `st_mode`).
    pub mode: u32,
}

/// Admin policies are trusted only from a directory owned by root and not
/// writable by group or others. Returns why the directory fails, if it does.
pub fn admin_dir_problem(meta: DirMeta) -> Option<String> {
    if meta.uid != 0 {
        return Some(format!("owned by uid {}, not root", meta.uid));
    }
    if meta.mode & 0o022 != 0 {
        return Some(format!(
            "mode {:o} is writable by group or others",
            meta.mode & 0o777
        ));
    }
    None
}

/// The `*.toml` files of `dir`, in file-name order; none when the
/// directory does not exist.
pub fn policy_files(dir: &Path) -> Result<Vec<PathBuf>, PolicyLoadError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(io_error(dir, &err)),
    };
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|ext| ext == "toml") && p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

/// Loads all `*.toml` files in `dir` in file-name order. A missing directory
/// yields no rules and no errors.
pub fn load_dir(dir: &Path, tier: Tier) -> (Vec<PolicyRule>, Vec<PolicyLoadError>) {
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    let files = match policy_files(dir) {
        Ok(files) => files,
        Err(err) => {
            errors.push(err);
            return (rules, errors);
        }
    };
    for path in files {
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let (mut found, mut errs) = parse_policy(&text, &path.display().to_string(), tier);
                rules.append(&mut found);
                errors.append(&mut errs);
            }
            Err(err) => errors.push(io_error(&path, &err)),
        }
    }
    (rules, errors)
}

/// Why the admin directory must be ignored (not owned by root, writable by
/// others, unreadable), if it must; `None` when it is trustworthy or absent.
#[cfg(unix)]
pub fn admin_dir_refusal(dir: &Path) -> Option<PolicyLoadError> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(dir) {
        Ok(meta) => admin_dir_problem(DirMeta {
            uid: meta.uid(),
            mode: meta.mode(),
        })
        .map(|reason| PolicyLoadError::AdminDirIgnored {
            file: dir.display().to_string(),
            reason,
        }),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(err) => Some(io_error(dir, &err)),
    }
}

/// Loads the admin directory after checking its ownership and permissions;
/// a failing directory is ignored with an [`PolicyLoadError::AdminDirIgnored`].
#[cfg(unix)]
pub fn load_admin_dir(dir: &Path) -> (Vec<PolicyRule>, Vec<PolicyLoadError>) {
    match admin_dir_refusal(dir) {
        Some(refusal) => (Vec::new(), vec![refusal]),
        None => load_dir(dir, Tier::Admin),
    }
}

fn io_error(path: &Path, err: &std::io::Error) -> PolicyLoadError {
    PolicyLoadError::Io {
        file: path.display().to_string(),
        message: err.to_string(),
    }
}
