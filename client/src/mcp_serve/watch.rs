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
    let mut again = false;
    loop {
        if let Ok((client, session_id)) = link.get().await
            && let Ok(info) = client.get_session(session_id.clone()).await
            && let Ok(mut events) = client
                .subscribe_session(session_id, Some(info.last_seq))
                .await
        {
            // What happened while the daemon was away is not known: the
            // history may have changed (a recovered turn).
            if again && !updated(&peer, &uri).await {
                return;
            }
            again = true;
            while let Some(Ok(event)) = events.next().await {
                if changes_history(&event.payload) && !updated(&peer, &uri).await {
                    return;
                }
            }
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// Tells the client `uri` changed; false when the client is gone.
async fn updated(peer: &Peer<RoleServer>, uri: &str) -> bool {
    let update = ResourceUpdatedNotificationParam::new(uri.to_owned());
    peer.notify_resource_updated(update).await.is_ok()
}
