//! Where the daemon listens by default, so that both ends agree.

use std::path::PathBuf;

/// `$XDG_RUNTIME_DIR/geminid.sock`, or `/tmp/geminid-<uid>/geminid.sock`
/// when the runtime directory is not set.
pub fn default_socket() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("geminid.sock"),
        None => {
            use std::os::unix::fs::MetadataExt;
            // The owner of /proc/self is this process's uid.
            let uid = std::fs::metadata("/proc/self")
                .map(|m| m.uid())
                .unwrap_or(0);
            PathBuf::from(format!("/tmp/geminid-{uid}")).join("geminid.sock")
        }
    }
}
