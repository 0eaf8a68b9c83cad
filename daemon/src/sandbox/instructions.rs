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
use std::path::{Path, PathBuf};

/// What one root needs beyond the plan.
#[derive(Debug, Default)]
pub struct RootGuard {
    /// Places to hold read-only besides the plan's.
    pub hold: Vec<PathBuf>,
    /// Roots' `.git` that does not exist (reported if a command makes one).
    pub absent: Vec<PathBuf>,
}

/// Prepares the instruction places of `roots` (see the module comment).
pub fn guard(roots: &[PathBuf]) -> io::Result<RootGuard> {
    let mut out = RootGuard::default();
    for root in roots {
        let gemini = root.join(".gemini");
        if is_missing(&gemini)? {
            create_dir(&gemini)?;
        }
        let git = root.join(".git");
        match std::fs::symlink_metadata(&git) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => out.absent.push(git),
            Err(e) => return Err(e),
            Ok(meta) if meta.is_dir() => {
                let hooks = git.join("hooks");
                if is_missing(&hooks)? {
                    create_dir(&hooks)?;
                }
                if is_missing(&git.join("config"))? {
                    out.hold.push(git);
                }
            }
            // A `.git` file is held by the plan (`read_only_files`); a
            // symlink is held where it points.
            Ok(meta) if meta.file_type().is_symlink() => out.hold.push(git),
            Ok(_) => {}
        }
    }
    Ok(out)
}

fn is_missing(path: &Path) -> io::Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(false),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(e),
    }
}

/// `mkdir` of the last component only (its parent was checked to be a
/// real directory or is the root); one that appeared meanwhile is fine.
fn create_dir(path: &Path) -> io::Result<()> {
    match std::fs::create_dir(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
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
        let g = guard(&[plain.clone(), repo.clone(), bare.clone()]).unwrap();
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
}
