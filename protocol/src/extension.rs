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
}
