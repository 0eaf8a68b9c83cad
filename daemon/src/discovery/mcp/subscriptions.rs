//! Which sessions subscribed to which MCP resources (the server's scope
//! and name, since two workspaces may each have a server of one name, and
//! `uri`):
//! the table a `notifications/resources/updated` is looked up in. The
//! server is asked once per resource (`server.rs` keeps what it was asked
//! and asks again after a reconnect); sessions are only remembered here.
//! When the last session of a resource goes (`mcp.unsubscribe`, the
//! session deleted or unloaded while idle), the table says so and the
//! server is told (`McpManager::unsubscribe`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// (scope, server, uri)
pub type Resource = (String, String, String);

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

    /// Whether any session still wants `uri` of `server` (of `scope`).
    pub fn wanted(&self, scope: &str, server: &str, uri: &str) -> bool {
        self.lock()
            .contains_key(&(scope.to_owned(), server.to_owned(), uri.to_owned()))
    }

    /// Removes one subscription: `None` when the session had none,
    /// `Some(true)` when it was the resource's last.
    pub fn remove(&self, session: &str, scope: &str, server: &str, uri: &str) -> Option<bool> {
        let key = (scope.to_owned(), server.to_owned(), uri.to_owned());
        let mut table = self.lock();
        let sessions = table.get_mut(&key)?;
        if !sessions.remove(session) {
            return None;
        }
        let last = sessions.is_empty();
        if last {
            table.remove(&key);
        }
        Some(last)
    }

    /// Forgets every subscription of `session`: answers the resources
    /// nobody wants any more.
    pub fn forget(&self, session: &str) -> Vec<Resource> {
        let mut gone = Vec::new();
        self.lock().retain(|resource, sessions| {
            if sessions.remove(session) && sessions.is_empty() {
                gone.push(resource.clone());
            }
            !sessions.is_empty()
        });
        gone
    }

    /// Every subscribed resource with its sessions, in key order.
    pub fn list(&self) -> Vec<(Resource, Vec<String>)> {
        self.lock()
            .iter()
            .map(|(r, s)| (r.clone(), s.iter().cloned().collect()))
            .collect()
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
        assert_eq!(
            s.forget("a"),
            [("user".to_owned(), "other".to_owned(), "x://2".to_owned())]
        );
        assert_eq!(s.subscribers("user", "srv", "x://1"), ["b"]);
        assert!(s.subscribers("user", "other", "x://2").is_empty());
        assert!(!s.wanted("user", "other", "x://2"));
    }

    #[test]
    fn the_last_unsubscribe_of_a_resource_is_told_apart() {
        let s = Subscribers::default();
        s.add("a", "user", "srv", "x://1");
        s.add("b", "user", "srv", "x://1");
        assert_eq!(s.remove("c", "user", "srv", "x://1"), None);
        assert_eq!(s.remove("a", "user", "srv", "x://1"), Some(false));
        assert_eq!(s.remove("a", "user", "srv", "x://1"), None);
        assert!(s.wanted("user", "srv", "x://1"));
        assert_eq!(s.remove("b", "user", "srv", "x://1"), Some(true));
        assert!(!s.wanted("user", "srv", "x://1"));
        assert!(s.list().is_empty());
    }
}
