//! `gemctl undo`, `gemctl checkpoints`, `gemctl restore` and `gemctl fork`:
//! take back what a session's edits did, list the points it can go back
//! to, and start a new session from a point of one.

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::undo::{CheckpointInfo, RestoreResult};

use crate::command::{Ctx, Failure, Outcome, exit, outln, print_json};

/// The session a command means: the one given (id or prefix), else the
/// most recently active session of the current directory.
pub(crate) async fn session_of(
    client: &crate::Client,
    given: Option<&str>,
) -> Result<String, Failure> {
    if let Some(given) = given {
        return crate::command::resolve_session(client, given).await;
    }
    let here = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .map_err(|e| {
            Failure::new(
                exit::FAILED,
                format!("cannot read the current directory: {e}"),
            )
        })?;
    let sessions = client.list_sessions().await?;
    sessions
        .iter()
        .filter(|s| std::path::Path::new(&s.cwd) == here)
        .max_by_key(|s| s.updated_at)
        .map(|s| s.session_id.clone())
        .ok_or_else(|| {
            Failure::new(
                exit::FAILED,
                format!("no session in {} (pass --session)", here.display()),
            )
        })
}

/// `gemctl checkpoints [--session S]`.
pub async fn checkpoints(ctx: &Ctx, session: Option<String>) -> Outcome {
    let client = ctx.connect().await?;
    let id = session_of(&client, session.as_deref()).await?;
    let list = client.checkpoints(id.clone()).await?;
    if ctx.json {
        return print_json(&list);
    }
    if list.checkpoints.is_empty() {
        outln!("session {id} has no checkpoints (no edits to undo)");
        return Ok(exit::OK);
    }
    for checkpoint in &list.checkpoints {
        outln!("{}", line(checkpoint));
    }
    Ok(exit::OK)
}

fn line(c: &CheckpointInfo) -> String {
    format!(
        "{}  {} call(s), {} file(s): {}",
        c.checkpoint,
        c.calls.len(),
        c.files.len(),
        c.files.join(", ")
    )
}

/// `gemctl undo [--session S] [--force]`: restores the newest checkpoint
/// (the last turn with edits).
pub async fn undo(ctx: &Ctx, session: Option<String>, force: bool) -> Outcome {
    let client = ctx.connect().await?;
    let id = session_of(&client, session.as_deref()).await?;
    let list = client.checkpoints(id.clone()).await?;
    let Some(last) = list.checkpoints.last() else {
        return Err(Failure::new(
            exit::FAILED,
            format!("session {id} has nothing to undo"),
        ));
    };
    restore_with(ctx, &client, id, last.checkpoint.clone(), force).await
}

/// `gemctl restore [--session S] CHECKPOINT [--force]`.
pub async fn restore(
    ctx: &Ctx,
    session: Option<String>,
    checkpoint: String,
    force: bool,
) -> Outcome {
    let client = ctx.connect().await?;
    let id = session_of(&client, session.as_deref()).await?;
    restore_with(ctx, &client, id, checkpoint, force).await
}

async fn restore_with(
    ctx: &Ctx,
    client: &crate::Client,
    id: String,
    checkpoint: String,
    force: bool,
) -> Outcome {
    let done = client.restore(id, checkpoint, Some(force)).await?;
    if ctx.json {
        return print_json(&done);
    }
    print_restored(&done);
    Ok(exit::OK)
}

pub(crate) fn print_restored(done: &RestoreResult) {
    outln!("restored {}:", done.checkpoint);
    for path in &done.restored {
        outln!("  put back  {path}");
    }
    for path in &done.removed {
        outln!("  removed   {path}");
    }
    for path in &done.unchanged {
        outln!("  unchanged {path}");
    }
    outln!(
        "the conversation goes on from before it ({} history entries taken back)",
        done.rewound_entries
    );
}

/// `gemctl fork [--session S] [--at-turn T]`: prints the new session's id.
pub async fn fork(ctx: &Ctx, session: Option<String>, at_turn: Option<String>) -> Outcome {
    let client = ctx.connect().await?;
    let id = session_of(&client, session.as_deref()).await?;
    let info = client.fork(id, at_turn).await?;
    if ctx.json {
        return print_json(&info);
    }
    outln!("{}", info.session_id);
    Ok(exit::OK)
}
