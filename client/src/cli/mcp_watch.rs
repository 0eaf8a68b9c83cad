//! `gemctl mcp resources --subscribe URI`: subscribes a session to one
//! resource, prints each of its `mcpResourceUpdated` events until Ctrl-C,
//! the end of stdin or a closed pipe, then unsubscribes (the daemon tells
//! the server when no session wants the resource any more).

use std::io::Write;

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::event::EventPayload;
use tokio::signal::unix::{SignalKind, signal};

use crate::command::{Ctx, Failure, Outcome, exit};

/// Why the watch ended.
enum Stop {
    Signal,
    StdinClosed,
    PipeClosed,
    DaemonGone,
}

pub async fn watch(
    ctx: &Ctx,
    server: Option<String>,
    uri: String,
    session: Option<String>,
) -> Outcome {
    // Before anything starts, so a Ctrl-C is never the default kill.
    let watch_signal = |kind| {
        signal(kind).map_err(|e| Failure::new(exit::FAILED, format!("cannot watch signals: {e}")))
    };
    let mut sigint = watch_signal(SignalKind::interrupt())?;
    let mut sigterm = watch_signal(SignalKind::terminate())?;
    let client = ctx.connect().await?;
    let session = super::undo::session_of(&client, session.as_deref()).await?;
    let server = match server {
        Some(server) => server,
        None => server_listing(&client, &session, &uri).await?,
    };
    // Events first: no update between the subscribe and the watch is lost.
    let mut events = client.subscribe_session(session.clone(), None).await?;
    client
        .mcp_subscribe(session.clone(), server.clone(), uri.clone())
        .await?;
    eprintln!("subscribed to {server}:{uri} (session {session}); Ctrl-C or end of input stops");
    let mut stdin_closed = stdin_closed();
    let stop = loop {
        tokio::select! {
            _ = sigint.recv() => break Stop::Signal,
            _ = sigterm.recv() => break Stop::Signal,
            _ = &mut stdin_closed => break Stop::StdinClosed,
            event = events.next() => {
                let Some(Ok(event)) = event else { break Stop::DaemonGone };
                let EventPayload::McpResourceUpdated { server: from, uri: updated } = &event.payload else {
                    continue;
                };
                if *from != server || *updated != uri {
                    continue;
                }
                let line = if ctx.json {
                    serde_json::to_string(&event).unwrap_or_default()
                } else {
                    format!("{from}:{updated}")
                };
                if write_line(&line).is_err() {
                    break Stop::PipeClosed;
                }
            }
        }
    };
    if matches!(stop, Stop::DaemonGone) {
        return Err(Failure::new(
            exit::UNREACHABLE,
            "lost the connection to geminid",
        ));
    }
    client.mcp_unsubscribe(session, server, uri).await?;
    Ok(exit::OK)
}

/// The one server, of those `session`'s workspace sees, whose resources
/// list `uri`.
async fn server_listing(
    client: &crate::Client,
    session: &str,
    uri: &str,
) -> Result<String, Failure> {
    let listed = client
        .mcp_resources(None, Some(session.to_owned()), None, None)
        .await?;
    let mut servers: Vec<&str> = listed
        .resources
        .iter()
        .filter(|r| r.resource.get("uri").and_then(|u| u.as_str()) == Some(uri))
        .map(|r| r.server.as_str())
        .collect();
    servers.dedup();
    match servers.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => Err(Failure::new(
            exit::USAGE,
            format!("no server lists {uri} (name it with --server)"),
        )),
        many => Err(Failure::new(
            exit::USAGE,
            format!(
                "{uri} is listed by {} (name one with --server)",
                many.join(", ")
            ),
        )),
    }
}

/// One line to stdout; an error when the reader went away.
fn write_line(line: &str) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}")?;
    stdout.flush()
}

/// Resolves when stdin ends (or cannot be read); what it carries is
/// ignored. A thread of its own, not the runtime's blocking pool, which
/// would wait for the read at exit.
fn stdin_closed() -> tokio::sync::oneshot::Receiver<()> {
    let (closed, on_close) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        let mut stdin = std::io::stdin();
        loop {
            match std::io::Read::read(&mut stdin, &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let _ = closed.send(());
    });
    on_close
}
