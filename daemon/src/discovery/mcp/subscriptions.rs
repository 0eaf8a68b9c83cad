//! Which sessions subscribed to which MCP resources (the server's scope
//! and name, since two workspaces may each have a server of one name, and
//! `uri`):
//! the table a `notifications/resources/updated` is looked up in. The
//! server is asked once per resource (`server.rs` keeps what it was asked
//! and asks again after a reconnect); sessions are only remembered here.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// (scope, server, uri)
type Resource = (String, String, String);

#[derive(Default)]
pub struct Subscribers {
    by_resource: Mutex<BTreeMap<Resource, BTreeSet<String>>>,
}

impl Subscribers {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<Resource, BTreeSet<String>>> {
        self.by_resource.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn add(&self, session: &str, scope: &str, server: &str, uri: &str) {
        self.lock()
            .entry((scope.to_owned(), server.to_owned(), uri.to_owned()))
            .or_default()
            .insert(session.to_owned());
    }

    /// The sessions subscribed to `uri` of `server` (of `scope`), in id
    /// order.
    pub fn subscribers(&self, scope: &str, server: &str, uri: &str) -> Vec<String> {
        self.lock()
            .get(&(scope.to_owned(), server.to_owned(), uri.to_owned()))
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    pub fn forget(&self, session: &str) {
        self.lock().retain(|_, sessions| {
            sessions.remove(session);
            !sessions.is_empty()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_go_to_the_sessions_that_subscribed() {
        let s = Subscribers::default();
        s.add("b", "user", "srv", "x://1");
        s.add("a", "user", "srv", "x://1");
        s.add("a", "user", "srv", "x://1");
        s.add("a", "user", "other", "x://2");
        s.add("c", "workspace:/w", "srv", "x://1");
        assert_eq!(s.subscribers("user", "srv", "x://1"), ["a", "b"]);
        assert_eq!(s.subscribers("workspace:/w", "srv", "x://1"), ["c"]);
        assert!(s.subscribers("user", "srv", "x://2").is_empty());
        s.forget("a");
        assert_eq!(s.subscribers("user", "srv", "x://1"), ["b"]);
        assert!(s.subscribers("user", "other", "x://2").is_empty());
    }
}
