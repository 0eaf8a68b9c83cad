//! Wire types of installed extensions (`extensions.list`).

use serde::{Deserialize, Serialize};

/// One extension under `~/.gemini/extensions` and what it contributes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionInfo {
    pub name: String,
    pub version: Option<String>,
    pub description: Option<String>,
    /// Where its files are (a linked install's source).
    pub path: String,
    /// Enabled for the directory asked about (else for the user's home).
    pub enabled: bool,
    /// Its MCP servers' names (a user settings server of the same name
    /// replaces it).
    pub mcp_servers: Vec<String>,
    /// Context files added to memory.
    pub context_files: Vec<String>,
    /// Tools it excludes.
    pub exclude_tools: Vec<String>,
    /// Its `policies` directory, when it has one.
    pub policies: Option<String>,
    /// What could not be read, one line each (file, line, what was kept).
    pub problems: Vec<String>,
    /// Its declared settings as the directory asked about resolves them.
    #[serde(default)]
    pub settings: Vec<ExtensionSettingInfo>,
}

/// One declared setting (`settings[]` of the manifest) and where its
/// value comes from; a sensitive value is never sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionSettingInfo {
    pub name: String,
    pub env_var: String,
    pub sensitive: bool,
    /// `user` or `workspace` when it has a value.
    pub scope: Option<String>,
    /// The `.env` file it is read from, or `keychain`.
    pub source: Option<String>,
    /// The value, when it is set and not sensitive.
    pub value: Option<String>,
}
