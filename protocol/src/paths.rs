//! Where the daemon listens by default, so that both ends agree.

use std::path::{Path, PathBuf};

/// `$XDG_RUNTIME_DIR/geminid.sock`; when that is not set (MCP clients and
/// editors often start `gemctl` with a bare environment),
/// `/run/user/<uid>/geminid.sock` if that directory exists, is ours and is
/// closed to others (what systemd-logind sets the variable to); else
/// `/tmp/geminid-<uid>/geminid.sock`.
pub fn default_socket() -> PathBuf {
    let uid = current_uid();
    let run_user = PathBuf::from(format!("/run/user/{uid}"));
    let runtime_dir = std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    socket_in(
        runtime_dir,
        is_ours(&run_user, uid).then_some(run_user),
        uid,
    )
}

/// The choice, given the environment's runtime directory and a usable
/// `/run/user/<uid>` (pure).
fn socket_in(runtime_dir: Option<PathBuf>, run_user: Option<PathBuf>, uid: u32) -> PathBuf {
    runtime_dir
        .or(run_user)
        .unwrap_or_else(|| PathBuf::from(format!("/tmp/geminid-{uid}")))
        .join("geminid.sock")
}

/// The owner of /proc/self is this process's uid.
fn current_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(0)
}

/// A real directory (not a symlink) owned by `uid` that neither group nor
/// others can write.
fn is_ours(dir: &Path, uid: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(dir)
        .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o022 == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_wins_then_run_user_then_tmp() {
        let run_user = Some(PathBuf::from("/run/user/1000"));
        assert_eq!(
            socket_in(Some("/x".into()), run_user.clone(), 1000),
            Path::new("/x/geminid.sock")
        );
        assert_eq!(
            socket_in(None, run_user, 1000),
            Path::new("/run/user/1000/geminid.sock")
        );
        assert_eq!(
            socket_in(None, None, 1000),
            Path::new("/tmp/geminid-1000/geminid.sock")
        );
    }

    #[test]
    fn a_directory_of_another_user_is_not_ours() {
        let dir = std::env::temp_dir();
        // /tmp is world-writable: never ours.
        assert!(!is_ours(&dir, current_uid()));
        assert!(!is_ours(
            Path::new("/nonexistent-geminid-dir"),
            current_uid()
        ));
    }
}
