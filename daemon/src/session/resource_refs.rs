//! `@server:uri` in a prompt: an MCP resource a connected server lists,
//! read through the daemon's MCP client. As in Gemini CLI 0.61, a
//! reference is a resource only when `server` lists exactly `uri`;
//! anything else stays a path for the workspace. A resource read for a
//! prompt subscribes the session to it, when its server offers
//! subscriptions: its updates become the session's events.

use std::path::PathBuf;
use std::sync::Arc;

use crate::agent::references::ResourceRefs;
use crate::discovery::mcp::McpManager;
use crate::model::Part;
use crate::tools::ContentPart;

/// The daemon's MCP client, and the session whose prompt references:
/// its id and workspace (whose servers it sees).
pub struct McpResourceRefs {
    pub mcp: Arc<McpManager>,
    pub session: String,
    pub root: PathBuf,
}

/// `server:uri` split at the first colon (a URI has colons of its own).
fn split(reference: &str) -> Option<(&str, &str)> {
    let (server, uri) = reference.split_once(':')?;
    (!server.is_empty() && !uri.is_empty()).then_some((server, uri))
}

#[async_trait::async_trait]
impl ResourceRefs for McpResourceRefs {
    fn claims(&self, reference: &str) -> bool {
        let Some((server, uri)) = split(reference) else {
            return false;
        };
        self.mcp
            .resources_in(&self.root, Some(server))
            .iter()
            .any(|listed| listed.uri() == uri)
    }

    async fn read(&self, reference: &str) -> Result<Vec<Part>, String> {
        let (server, uri) = split(reference).ok_or("not a server:uri reference")?;
        let parts = self
            .mcp
            .resource_parts(&self.root, server, uri)
            .await
            .map_err(|e| e.to_string())?;
        if let Err(e) = self
            .mcp
            .subscribe(&self.session, &self.root, server, uri)
            .await
        {
            // Not every server offers subscriptions: the read stands.
            tracing::debug!(server, uri, error = %e, "no subscription for a referenced resource");
        }
        Ok(parts
            .into_iter()
            .map(|part| match part {
                ContentPart::Text { text } => Part::text(text),
                ContentPart::InlineData { mime_type, data } => Part::inline(mime_type, data),
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn the_server_is_before_the_first_colon() {
        assert_eq!(
            split("everything:test://static/resource/1"),
            Some(("everything", "test://static/resource/1"))
        );
        assert_eq!(split("notes.txt"), None);
        assert_eq!(split(":x"), None);
        assert_eq!(split("srv:"), None);
    }
}
