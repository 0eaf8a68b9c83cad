//! What `mcp serve` offers as MCP resources, for the one session it serves:
//! the GEMINI.md memory the model gets in that session's workspace
//! (`geminid://memory`, markdown, read fresh each time) and the session's
//! history with the model (`geminid://session/<id>/history`, JSON, which
//! can be subscribed to: it changes as turns run). Pure: URIs, listings and
//! contents; the handler reads the daemon.

use rmcp::model::{Resource, ResourceContents};
use serde_json::{Value, json};

pub const MEMORY_URI: &str = "geminid://memory";

/// A resource of the served session.
#[derive(Debug, PartialEq)]
pub enum Offered {
    Memory,
    History,
}

pub fn history_uri(session_id: &str) -> String {
    format!("geminid://session/{session_id}/history")
}

/// Which resource `uri` names; `None` for anything else (including the
/// history of any other session).
pub fn offered(uri: &str, session_id: &str) -> Option<Offered> {
    if uri == MEMORY_URI {
        Some(Offered::Memory)
    } else if uri == history_uri(session_id) {
        Some(Offered::History)
    } else {
        None
    }
}

/// The resources of the served session.
pub fn list(session_id: &str) -> Vec<Resource> {
    let mut memory = Resource::new(MEMORY_URI, "memory");
    memory.title = Some("GEMINI.md memory".to_owned());
    memory.description = Some(
        "The GEMINI.md memory the model gets in this session's workspace: every memory \
         file merged, imports resolved"
            .to_owned(),
    );
    memory.mime_type = Some("text/markdown".to_owned());
    let mut history = Resource::new(history_uri(session_id), "history");
    history.title = Some("Session history".to_owned());
    history.description = Some(format!(
        "The history of geminid session {session_id} with the model, as Gemini API \
         contents (JSON); subscribe to hear when a turn changes it"
    ));
    history.mime_type = Some("application/json".to_owned());
    vec![memory, history]
}

pub fn memory_contents(text: String) -> ResourceContents {
    ResourceContents::TextResourceContents {
        uri: MEMORY_URI.to_owned(),
        mime_type: Some("text/markdown".to_owned()),
        text,
        meta: None,
    }
}

pub fn history_contents(session_id: &str, entries: Vec<Value>) -> ResourceContents {
    ResourceContents::TextResourceContents {
        uri: history_uri(session_id),
        mime_type: Some("application/json".to_owned()),
        text: json!({"sessionId": session_id, "contents": entries}).to_string(),
        meta: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_served_sessions_resources_are_offered() {
        assert_eq!(offered("geminid://memory", "s1"), Some(Offered::Memory));
        assert_eq!(
            offered("geminid://session/s1/history", "s1"),
            Some(Offered::History)
        );
        assert_eq!(offered("geminid://session/s2/history", "s1"), None);
        assert_eq!(offered("test://static-text", "s1"), None);
        let uris: Vec<String> = list("s1").into_iter().map(|r| r.uri).collect();
        assert_eq!(uris, ["geminid://memory", "geminid://session/s1/history"]);
    }

    #[test]
    fn history_is_json_with_its_session() {
        let ResourceContents::TextResourceContents {
            text, mime_type, ..
        } = history_contents("s1", vec![json!({"role": "user"})])
        else {
            panic!("text expected")
        };
        assert_eq!(mime_type.as_deref(), Some("application/json"));
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["contents"][0]["role"], "user");
        assert_eq!(v["sessionId"], "s1");
    }
}
