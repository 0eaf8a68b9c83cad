//! Session-level "always allow" answers.
//!
//! The allowlist only turns an `ask_user` into `allow`: it never overrides a
//! `deny`, never overrides an `ask_user` from an Admin-tier rule, and does not
//! lift the downgrades for output redirection, environment assignments or
//! unknowable commands.

use crate::policy::matcher::words_match_prefix;
use std::collections::BTreeSet;

/// Tools, MCP servers and shell command prefixes the user allowed for the
/// rest of the session.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SessionAllowlist {
    tools: BTreeSet<String>,
    servers: BTreeSet<String>,
    command_prefixes: BTreeSet<String>,
}

impl SessionAllowlist {
    /// An empty allowlist.
    pub fn new() -> Self {
        Self::default()
    }

    /// Allows a tool by name (`server__tool` for MCP tools).
    pub fn allow_tool(&mut self, name: &str) {
        self.tools.insert(name.to_owned());
    }

    /// Allows every tool of an MCP server (`proceed_always_server`).
    pub fn allow_server(&mut self, server: &str) {
        self.servers.insert(server.to_owned());
    }

    /// Allows shell commands starting with `prefix` (word-wise).
    pub fn allow_command_prefix(&mut self, prefix: &str) {
        let normalized = prefix.split_whitespace().collect::<Vec<_>>().join(" ");
        if !normalized.is_empty() {
            self.command_prefixes.insert(normalized);
        }
    }

    /// The answers about single tools only: what covers a call that is no
    /// tool of its server (an MCP sampling request, which "every tool of
    /// this server" does not allow).
    pub fn tools_only(&self) -> SessionAllowlist {
        SessionAllowlist {
            tools: self.tools.clone(),
            ..SessionAllowlist::default()
        }
    }

    /// Whether nothing has been allowed.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.servers.is_empty() && self.command_prefixes.is_empty()
    }

    /// Whether the tool as a whole is allowed.
    pub fn allows_tool(&self, qualified: &str, server: Option<&str>) -> bool {
        self.tools.contains(qualified) || server.is_some_and(|s| self.servers.contains(s))
    }

    /// Whether a sub-command (as unquoted words) is allowed by a prefix.
    pub fn allows_command(&self, words: &[String]) -> bool {
        self.command_prefixes
            .iter()
            .any(|p| words_match_prefix(words, p))
    }
}
