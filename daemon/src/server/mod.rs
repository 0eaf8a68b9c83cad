//! The server: listen, accept, serve each connection, shut down in order.
//!
//! Shutdown (SIGTERM, SIGINT or `daemon.shutdown`): tell systemd
//! STOPPING=1, stop accepting, cancel running calls and persist their
//! outcome, flush the store, close the connections, exit 0. SIGHUP reads
//! the configuration again (as a watched file change does).

mod admission;
mod connection;
mod framing;
mod invalid_params;
pub mod listener;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::net::UnixStream;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use listener::ListenError;

use crate::config::DaemonConfig;
use crate::daemon::Daemon;
use crate::rpc;

/// Why the daemon stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Listen(#[from] ListenError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// Listens (first, so that a second daemon stops before touching the
/// store), opens the daemon and serves until shutdown. Returns once
/// everything is persisted.
pub async fn run(mut config: DaemonConfig) -> Result<(), RunError> {
    // Before the socket exists: a SIGTERM that arrives as soon as clients
    // can connect must already mean an orderly stop.
    let shutdown = CancellationToken::new();
    spawn_signal_handler(shutdown.clone());
    let hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup());
    let listening = match listener::from_systemd()? {
        Some(l) => {
            // Report where systemd actually listens, not our default.
            if let Some(path) = l
                .listener
                .local_addr()
                .ok()
                .and_then(|a| a.as_pathname().map(Into::into))
            {
                config.socket = path;
            }
            l
        }
        None => listener::bind(&config.socket).await?,
    };
    let daemon = Daemon::open(config, shutdown)?;
    // The data dir is ours now: what a daemon killed before left running
    // on it ends before anything new starts.
    crate::tools::builtin::shell_reap::reap_previous_run(&daemon.config.data_dir).await;
    match hangup {
        Ok(hangup) => spawn_reload_on_hangup(&daemon, hangup),
        Err(e) => tracing::error!(error = %e, "cannot install the SIGHUP handler"),
    }
    crate::heap::keep_large_buffers();
    serve(daemon, listening).await
}

/// Serves on `listening` until shutdown.
pub async fn serve(daemon: Arc<Daemon>, listening: listener::Listening) -> Result<(), RunError> {
    tracing::info!(
        socket = %daemon.config.socket.display(),
        data_dir = %daemon.config.data_dir.display(),
        activated = listening.owned_path.is_none(),
        "geminid listening"
    );
    // Harmless when not started by systemd.
    let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Ready]);

    let upkeep =
        crate::store::Maintenance::spawn(daemon.sessions.store().clone()).map_err(|e| {
            crate::store::StoreError::Io(format!("cannot start the store's upkeep thread: {e}"))
        })?;
    let connections_stop = CancellationToken::new();
    let connections = TaskTracker::new();
    let methods = rpc::methods(daemon.clone());
    let admission = admission::Admission::new(daemon.config.max_connections);
    let outbound = daemon.outbound.clone();
    let next_id = AtomicU64::new(1);
    let my_uid = rustix::process::getuid().as_raw();
    let mut backoff = Duration::from_millis(10);

    loop {
        let accepted = tokio::select! {
            () = daemon.shutdown.cancelled() => break,
            accepted = listening.listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => {
                backoff = Duration::from_millis(10);
                stream
            }
            Err(e) => {
                // Out of descriptors and the like: wait, then try again.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        if !peer_is_us(&stream, my_uid) {
            continue;
        }
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        // The new connection is always served unless every other one has
        // a request in flight; an idle one makes room instead.
        let Some(admitted) = admission.admit(id) else {
            turn_away(&stream, daemon.config.max_connections);
            continue;
        };
        let conn = connection::Connection {
            id,
            methods: methods.clone(),
            shutdown: connections_stop.clone(),
            outbound: outbound.clone(),
            activity: admitted.activity.clone(),
            initialize_timeout: daemon.config.initialize_timeout,
        };
        let daemon = daemon.clone();
        connections.spawn(async move {
            daemon.connection_opened();
            tracing::debug!(conn = id, "client connected");
            conn.serve(stream).await;
            tracing::debug!(conn = id, "client disconnected");
            daemon.connection_closed();
            drop(admitted);
        });
    }

    tracing::info!("shutting down: no new connections; cancelling running calls");
    let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Stopping]);
    if let Some(path) = &listening.owned_path {
        let _ = std::fs::remove_file(path);
    }
    drop(listening);
    daemon.sessions.shutdown().await;
    // No process a shell command started may outlive the daemon.
    let left = crate::tools::builtin::shell::terminate_leftovers().await;
    if left > 0 {
        tracing::info!(
            processes = left,
            "ended processes shell commands left running"
        );
    }
    // No MCP server process may outlive the daemon.
    daemon.discovery.shutdown().await;
    tokio::task::spawn_blocking(move || upkeep.stop())
        .await
        .map_err(|e| crate::store::StoreError::Io(format!("final checkpoint: {e}")))??;
    connections_stop.cancel();
    connections.close();
    if tokio::time::timeout(Duration::from_secs(6), connections.wait())
        .await
        .is_err()
    {
        tracing::warn!("some connections did not close in time");
    }
    tracing::info!("geminid stopped");
    Ok(())
}

/// Tells a connection the daemon cannot take that it is full, and drops it.
fn turn_away(stream: &UnixStream, max: usize) {
    tracing::warn!(
        max,
        "turned a connection away: every connection has a request in flight"
    );
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": geminid_protocol::error::CONNECTION_CLOSED,
            "message": format!("the daemon serves {max} connections and every one has a request in flight; try again"),
        },
    });
    // Best effort: a new socket's buffer takes one short line.
    let _ = stream.try_write(format!("{error}\n").as_bytes());
}

/// Refuses peers running as another user (SO_PEERCRED).
fn peer_is_us(stream: &UnixStream, my_uid: u32) -> bool {
    match stream.peer_cred() {
        Ok(cred) if cred.uid() == my_uid => true,
        Ok(cred) => {
            tracing::warn!(peer_uid = cred.uid(), pid = ?cred.pid(), "refused a connection from another user");
            false
        }
        Err(e) => {
            tracing::warn!(error = %e, "refused a connection whose credentials cannot be read");
            false
        }
    }
}

/// SIGHUP: read the configuration again, off the async workers.
fn spawn_reload_on_hangup(daemon: &Arc<Daemon>, mut hangup: tokio::signal::unix::Signal) {
    let weak = Arc::downgrade(daemon);
    let stop = daemon.shutdown.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                got = hangup.recv() => if got.is_none() { return },
                () = stop.cancelled() => return,
            }
            tracing::info!("SIGHUP received: reading the configuration again");
            let Some(daemon) = weak.upgrade() else { return };
            let _ = tokio::task::spawn_blocking(move || daemon.config_changed()).await;
        }
    });
}

/// Installs the SIGTERM/SIGINT handlers now (not when a task first runs:
/// the socket may already accept connections by then) and turns the first
/// signal into `shutdown`.
fn spawn_signal_handler(shutdown: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers");
        return;
    };
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM received"),
            _ = int.recv() => tracing::info!("SIGINT received"),
            () = shutdown.cancelled() => return,
        }
        shutdown.cancel();
    });
}
