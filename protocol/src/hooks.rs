//! `hooks.list`: the hooks a workspace's sessions run (settings `hooks`,
//! Gemini CLI's contract), where each came from and whether it is on.

use serde::{Deserialize, Serialize};

/// What `hooks.list` answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookList {
    /// The workspace the list is for.
    pub cwd: String,
    /// `hooksConfig.enabled` as merged: false, no hook runs.
    pub enabled: bool,
    /// Whether the workspace's own settings were read (trusted folder).
    pub workspace_trusted: bool,
    /// In the order they run.
    pub hooks: Vec<HookInfo>,
    /// What could not be read (file: field: message); such hooks do not run.
    pub problems: Vec<String>,
}

/// One configured hook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookInfo {
    pub event: String,
    /// The hook's `name`, else its command (what `hooksConfig.disabled` lists).
    pub name: String,
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    pub sequential: bool,
    pub timeout_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `user`, `workspace`, `system`, `system-defaults`.
    pub layer: String,
    /// The settings file.
    pub source: String,
    /// False when `hooksConfig.disabled` names it.
    pub enabled: bool,
}
