//! `notifications/tools/list_changed` for the connected client: the
//! served session's events are followed from `initialized` on, and when an
//! MCP server of the daemon connects or goes (`mcpServerStatus`), when the
//! discovery command ran again (`toolsRediscovered`), and each
//! time the events are followed anew, the tool list is fetched again; a
//! list whose names differ from those the client was last given is
//! announced (once, until the client lists again).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::event::EventPayload;
use rmcp::RoleServer;
use rmcp::service::Peer;

use super::link::Link;

/// How long to wait before following the session again when the daemon
/// went away.
const RETRY: Duration = Duration::from_secs(2);

/// The tool names the client was last given by `tools/list` (`None`:
/// it has not listed them).
pub type Listed = Arc<Mutex<Option<BTreeSet<String>>>>;

/// The names of the session's tools now (`None`: the daemon cannot say).
async fn names(link: &Link) -> Option<BTreeSet<String>> {
    let (client, session_id) = link.get().await.ok()?;
    let tools = client.list_tools(Some(session_id)).await.ok()?;
    Some(tools.into_iter().map(|t| t.name).collect())
}

/// Follows the session until the client is gone.
pub async fn follow(link: Arc<Link>, peer: Peer<RoleServer>, listed: Listed) {
    loop {
        if let Ok((client, session_id)) = link.get().await
            && let Ok(info) = client.get_session(session_id.clone()).await
            && let Ok(mut events) = client
                .subscribe_session(session_id, Some(info.last_seq))
                .await
        {
            // A change before the subscription is caught here, one after
            // it by its event.
            if !check(&link, &peer, &listed).await {
                return;
            }
            while let Some(Ok(event)) = events.next().await {
                if matches!(
                    event.payload,
                    EventPayload::McpServerStatus { .. } | EventPayload::ToolsRediscovered { .. }
                ) && !check(&link, &peer, &listed).await
                {
                    return;
                }
            }
        }
        if peer.is_transport_closed() {
            return;
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// Announces a tool list that differs from the one the client has; false
/// when the client is gone.
async fn check(link: &Link, peer: &Peer<RoleServer>, listed: &Listed) -> bool {
    let Some(now) = names(link).await else {
        return true;
    };
    let changed = match listed.lock() {
        Ok(mut listed) => match listed.as_ref() {
            Some(given) if *given != now => {
                // Announced once: the client lists again to see it.
                *listed = None;
                true
            }
            _ => false,
        },
        Err(_) => false,
    };
    !changed || peer.notify_tool_list_changed().await.is_ok()
}
