//! MCP roots: which folders each server is told about (`roots/list`) and
//! when it is told the set changed. A user-scope (or extension) server
//! sees every workspace root the daemon's sessions opened; a workspace
//! server sees its own root only.
// rmcp marks roots deprecated (SEP-2577, a future protocol version); the
// versions servers speak today still ask for them.
#![allow(deprecated)]

use std::collections::BTreeSet;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::model::Root;
use tokio::sync::watch;

/// The workspace roots the daemon's sessions opened, shared by every
/// server's handler.
pub type OpenRoots = watch::Receiver<Arc<BTreeSet<PathBuf>>>;

/// What one server is told: its scope decides which of the open roots.
#[derive(Clone)]
pub struct RootsView {
    open: OpenRoots,
    scope: String,
}

impl RootsView {
    pub fn new(open: OpenRoots, scope: &str) -> RootsView {
        RootsView {
            open,
            scope: scope.to_owned(),
        }
    }

    /// The server's roots now, as `roots/list` answers them.
    pub fn roots(&self) -> rmcp::model::ListRootsResult {
        let open = self.open.borrow().clone();
        rmcp::model::ListRootsResult::new(
            roots_for(&self.scope, &open)
                .iter()
                .map(|p| to_root(p))
                .collect(),
        )
    }

    /// Whether the set can change (a workspace server's never does).
    pub fn follows_open_roots(&self) -> bool {
        !self.scope.starts_with(WORKSPACE)
    }

    /// A fresh watch of the open roots (for the connection loop).
    pub fn watch(&self) -> OpenRoots {
        let mut open = self.open.clone();
        open.mark_unchanged();
        open
    }
}

const WORKSPACE: &str = "workspace:";

/// The roots of a server of `scope` (`user`, `extensions`,
/// `workspace:<root>`) when `open` are the open workspace roots.
pub fn roots_for(scope: &str, open: &BTreeSet<PathBuf>) -> Vec<PathBuf> {
    match scope.strip_prefix(WORKSPACE) {
        Some(root) => vec![PathBuf::from(root)],
        None => open.iter().cloned().collect(),
    }
}

/// A folder as an MCP root: a `file://` URI (bytes outside the unreserved
/// set and `/` percent-encoded) named after its last component.
pub fn to_root(path: &Path) -> Root {
    let mut uri = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    let root = Root::new(uri);
    match path.file_name() {
        Some(name) => root.with_name(name.to_string_lossy()),
        None => root,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_server_sees_every_open_root_and_a_workspace_server_its_own() {
        let open: BTreeSet<PathBuf> = ["/w/a", "/w/b"].iter().map(PathBuf::from).collect();
        assert_eq!(roots_for("user", &open).len(), 2);
        assert_eq!(roots_for("extensions", &open).len(), 2);
        assert_eq!(
            roots_for("workspace:/w/c", &open),
            vec![PathBuf::from("/w/c")]
        );
    }

    #[test]
    fn a_root_is_a_percent_encoded_file_uri_named_after_its_folder() {
        let root = to_root(Path::new("/home/u/my proj/ü"));
        assert_eq!(root.uri, "file:///home/u/my%20proj/%C3%BC");
        assert_eq!(root.name.as_deref(), Some("ü"));
    }
}
