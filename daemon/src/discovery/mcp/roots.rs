//! MCP roots: which folders each server is told about (`roots/list`) and
//! when it is told the set changed. A user-scope (or extension) server
//! sees every workspace root the daemon's sessions opened, with their
//! include directories; a workspace server sees its own root (and its
//! include directories) only.
// rmcp marks roots deprecated (SEP-2577, a future protocol version); the
// versions servers speak today still ask for them.
#![allow(deprecated)]

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::model::Root;
use tokio::sync::watch;

/// The workspace roots the daemon's sessions opened, each with its
/// include directories (`context.includeDirectories`).
pub type Opened = BTreeMap<PathBuf, Vec<PathBuf>>;

/// [`Opened`], shared by every server's handler.
pub type OpenRoots = watch::Receiver<Arc<Opened>>;

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
        rmcp::model::ListRootsResult::new(self.paths().iter().map(|p| to_root(p)).collect())
    }

    /// The server's root folders now.
    pub fn paths(&self) -> Vec<PathBuf> {
        let open = self.open.borrow().clone();
        roots_for(&self.scope, &open)
    }

    /// Waits until the server's roots differ from `told` (what it was
    /// last told) and returns them; pending forever once the daemon's
    /// open roots can no longer change.
    pub async fn changed(&self, open: &mut OpenRoots, told: &[PathBuf]) -> Vec<PathBuf> {
        loop {
            if open.changed().await.is_err() {
                return std::future::pending().await;
            }
            let now = roots_for(&self.scope, &open.borrow_and_update());
            if now != told {
                return now;
            }
        }
    }

    /// A fresh watch of the open roots (for the connection loop).
    pub fn watch(&self) -> OpenRoots {
        let mut open = self.open.clone();
        open.mark_unchanged();
        open
    }
}

const WORKSPACE: &str = "workspace:";
/// An extension's instance for one workspace (`${workspacePath}`).
const EXTENSION_WORKSPACE: &str = "extensions:";

/// The roots of a server of `scope` (`user`, `extensions`,
/// `workspace:<root>`, `extensions:<root>`) when `open` are the open
/// workspaces: each once, workspace roots first. A server of one
/// workspace is told only that one.
pub fn roots_for(scope: &str, open: &Opened) -> Vec<PathBuf> {
    let own = scope
        .strip_prefix(WORKSPACE)
        .or_else(|| scope.strip_prefix(EXTENSION_WORKSPACE));
    let (roots, includes): (Vec<PathBuf>, Vec<PathBuf>) = match own {
        Some(root) => {
            let root = PathBuf::from(root);
            let includes = open.get(&root).cloned().unwrap_or_default();
            (vec![root], includes)
        }
        None => (
            open.keys().cloned().collect(),
            open.values().flatten().cloned().collect(),
        ),
    };
    let mut seen = BTreeSet::new();
    roots
        .into_iter()
        .chain(includes)
        .filter(|p| seen.insert(p.clone()))
        .collect()
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
        let p = PathBuf::from;
        let open: Opened = [
            (p("/w/a"), vec![p("/lib")]),
            (p("/w/b"), vec![p("/lib"), p("/w/a")]),
        ]
        .into_iter()
        .collect();
        let all = vec![p("/w/a"), p("/w/b"), p("/lib")];
        assert_eq!(roots_for("user", &open), all);
        assert_eq!(roots_for("extensions", &open), all);
        assert_eq!(
            roots_for("workspace:/w/b", &open),
            vec![p("/w/b"), p("/lib"), p("/w/a")]
        );
        assert_eq!(roots_for("workspace:/w/c", &open), vec![p("/w/c")]);
        assert_eq!(roots_for("extensions:/w/c", &open), vec![p("/w/c")]);
    }

    #[test]
    fn a_root_is_a_percent_encoded_file_uri_named_after_its_folder() {
        let root = to_root(Path::new("/home/u/my proj/ü"));
        assert_eq!(root.uri, "file:///home/u/my%20proj/%C3%BC");
        assert_eq!(root.name.as_deref(), Some("ü"));
    }
}
