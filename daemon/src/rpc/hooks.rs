//! `hooks.list`: the hooks of a session's (or a folder's) workspace.

use std::path::PathBuf;

use geminid_protocol::hooks::HookList;
use jsonrpsee::core::RpcResult;

use crate::daemon::Daemon;
use crate::wire;

pub async fn list(
    daemon: &Daemon,
    session_id: Option<String>,
    cwd: Option<String>,
) -> RpcResult<HookList> {
    let root = match (session_id, cwd) {
        (Some(id), _) => {
            let handle = daemon.sessions.get(&id)?;
            PathBuf::from(handle.cwd.clone())
        }
        (None, Some(cwd)) => PathBuf::from(cwd),
        (None, None) => std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
    };
    let root = std::fs::canonicalize(&root).unwrap_or(root);
    let set = daemon.hooks.for_root(&root);
    Ok(wire::hook_list(&root, &set))
}
