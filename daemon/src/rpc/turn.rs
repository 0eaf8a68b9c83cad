//! `session.prompt`, `session.history`, `session.compress`, `memory.show` and `memory.reload`.

use std::path::PathBuf;

use geminid_protocol::error as code;
use geminid_protocol::turn::{CompressResult, HistoryPage, MemoryInfo, PromptAccepted};
use jsonrpsee::core::RpcResult;

use super::rpc_error;
use crate::agent::MAX_HISTORY_PAGE;
use crate::daemon::Daemon;
use crate::wire;

pub async fn prompt(
    daemon: &Daemon,
    session_id: &str,
    text: String,
    parts: Vec<geminid_protocol::turn::PromptPart>,
) -> RpcResult<PromptAccepted> {
    let handle = daemon.sessions.get(session_id)?;
    let (turn_id, queued_behind) = handle.prompt(text, parts).await?;
    Ok(PromptAccepted {
        turn_id,
        queued_behind,
    })
}

pub async fn history(
    daemon: &Daemon,
    session_id: &str,
    offset: Option<u64>,
    limit: Option<u64>,
) -> RpcResult<HistoryPage> {
    let handle = daemon.sessions.get(session_id)?;
    let offset = offset.unwrap_or(0);
    let (total, contents) = handle
        .history(offset, limit.unwrap_or(MAX_HISTORY_PAGE))
        .await?;
    Ok(HistoryPage {
        total,
        offset: offset.min(total),
        contents: contents.iter().map(wire::history_entry).collect(),
    })
}

/// `session.compress`.
pub async fn compress(daemon: &Daemon, session_id: &str) -> RpcResult<CompressResult> {
    let handle = daemon.sessions.get(session_id)?;
    Ok(match handle.compress().await? {
        Some(done) => CompressResult {
            status: "compressed".to_owned(),
            replaced_entries: done.prefix.upto,
            tokens_before: done.tokens_before,
            tokens_after: done.tokens_after,
        },
        None => CompressResult {
            status: "noop".to_owned(),
            replaced_entries: 0,
            tokens_before: 0,
            tokens_after: 0,
        },
    })
}

/// `memory.show` (`reload: false`) and `memory.reload`.
pub async fn memory(
    daemon: &Daemon,
    session_id: Option<String>,
    cwd: Option<String>,
    reload: bool,
) -> RpcResult<MemoryInfo> {
    let workspace = workspace(daemon, session_id, cwd).await?;
    let cache = daemon.memory.clone();
    let path = workspace.clone();
    let memory = tokio::task::spawn_blocking(move || {
        if reload {
            cache.reload(&path)
        } else {
            cache.get(&path)
        }
    })
    .await
    .map_err(|e| rpc_error(code::INTERNAL_ERROR, format!("memory load failed: {e}")))?;
    Ok(wire::memory_info(&workspace, &memory))
}

/// The session's workspace, or `cwd` (canonical), or an error naming what
/// is missing.
async fn workspace(
    daemon: &Daemon,
    session_id: Option<String>,
    cwd: Option<String>,
) -> RpcResult<PathBuf> {
    if let Some(id) = session_id {
        let handle = daemon.sessions.get(&id)?;
        let (record, _) = handle.info().await?;
        return Ok(PathBuf::from(record.cwd));
    }
    let Some(cwd) = cwd else {
        return Err(rpc_error(
            code::INVALID_PARAMS,
            "give `sessionId` or `cwd`: whose memory?",
        ));
    };
    std::path::Path::new(&cwd)
        .canonicalize()
        .ok()
        .filter(|p| p.is_dir())
        .ok_or_else(|| {
            rpc_error(
                code::INVALID_PARAMS,
                format!("`cwd` {cwd} is not a directory"),
            )
        })
}
