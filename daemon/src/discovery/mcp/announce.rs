//! Which MCP server status changes reach sessions: a server's state is
//! always in `mcp list`; a session is told only when a server goes from
//! connected to disconnected or back, once per change. `connecting` and a
//! failure repeated by each reconnect attempt are not news, so a server
//! that keeps failing adds one event, not one every attempt.

use std::collections::HashMap;
use std::sync::Mutex;

/// The last status announced per server.
#[derive(Default)]
pub struct Announcements {
    last: Mutex<HashMap<String, String>>,
}

impl Announcements {
    /// Whether `status` of `server` is news for sessions; if so it becomes
    /// the last announced.
    pub fn is_news(&self, server: &str, status: &str) -> bool {
        if status == "connecting" {
            return false;
        }
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.get(server).map(String::as_str) == Some(status) {
            return false;
        }
        last.insert(server.to_owned(), status.to_owned());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_that_keeps_failing_is_announced_once() {
        let a = Announcements::default();
        let mut told = Vec::new();
        for status in [
            "connecting",
            "disconnected",
            "connecting",
            "disconnected",
            "connecting",
            "disconnected",
            "connecting",
            "connected",
            "connected",
            "disconnected",
        ] {
            if a.is_news("s", status) {
                told.push(status);
            }
        }
        assert_eq!(told, ["disconnected", "connected", "disconnected"]);
        assert!(a.is_news("other", "disconnected"), "per server");
    }
}
