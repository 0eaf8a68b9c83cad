//! `session.checkpoints`, `session.restore` and `session.fork`.

use jsonrpsee::core::RpcResult;

use crate::daemon::Daemon;
use crate::wire;

/// `session.checkpoints`.
pub async fn checkpoints(
    daemon: &Daemon,
    session_id: &str,
) -> RpcResult<geminid_protocol::undo::CheckpointList> {
    let handle = daemon.sessions.get(session_id)?;
    Ok(wire::checkpoint_list(&handle.checkpoints().await?))
}

/// `session.restore`.
pub async fn restore(
    daemon: &Daemon,
    session_id: &str,
    checkpoint: String,
    force: bool,
) -> RpcResult<geminid_protocol::undo::RestoreResult> {
    let handle = daemon.sessions.get(session_id)?;
    Ok(wire::restore_result(
        &handle.restore(checkpoint, force).await?,
    ))
}
