//! A subscription to the served session's history: while one is held, the
//! session's events are followed (again after the daemon restarted) and
//! each one that changes the history becomes
//! `notifications/resources/updated` for the history's URI.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::event::EventPayload;
use rmcp::RoleServer;
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::Peer;
use tokio::task::JoinHandle;

use super::link::Link;

/// How long to wait before following the session again when the daemon
/// went away.
const RETRY: Duration = Duration::from_secs(2);

#[derive(Default)]
pub struct HistoryWatch {
    task: Mutex<Option<JoinHandle<()>>>,
}

/// Whether an event changes what `session.history` returns: a prompt
/// taken in, or a turn's end (its model contents and tool results).
pub fn changes_history(payload: &EventPayload) -> bool {
    matches!(
        payload,
        EventPayload::UserMessage { .. } | EventPayload::TurnFinished { .. }
    )
}

impl HistoryWatch {
    /// Starts following the session, unless already following it.
    pub fn start(&self, link: Arc<Link>, peer: Peer<RoleServer>, uri: String) {
        let Ok(mut task) = self.task.lock() else {
            return;
        };
        if task.as_ref().is_some_and(|t| !t.is_finished()) {
            return;
        }
        *task = Some(tokio::spawn(follow(link, peer, uri)));
    }

    /// Stops following; no more updates are sent.
    pub fn stop(&self) {
        if let Ok(mut task) = self.task.lock()
            && let Some(task) = task.take()
        {
            task.abort();
        }
    }
}

impl Drop for HistoryWatch {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn follow(link: Arc<Link>, peer: Peer<RoleServer>, uri: String) {
    loop {
        if let Ok((client, session_id)) = link.get().await
            && let Ok(info) = client.get_session(session_id.clone()).await
            && let Ok(mut events) = client
                .subscribe_session(session_id, Some(info.last_seq))
                .await
        {
            while let Some(Ok(event)) = events.next().await {
                if changes_history(&event.payload) {
                    let update = ResourceUpdatedNotificationParam::new(uri.clone());
                    if peer.notify_resource_updated(update).await.is_err() {
                        // The MCP client is gone.
                        return;
                    }
                }
            }
        }
        tokio::time::sleep(RETRY).await;
    }
}
