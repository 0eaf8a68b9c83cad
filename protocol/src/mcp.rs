//! Wire types of tool discovery: MCP servers (`mcp.list`, `mcp.restart`)
//! and command-based discovery (`tool.rediscover`).

use serde::{Deserialize, Serialize};

/// `mcp.list`: every configured MCP server and the discovery state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpList {
    /// `not_started`, `in_progress` or `completed` (every server has had
    /// its first connection attempt).
    pub discovery_state: String,
    pub servers: Vec<McpServerInfo>,
    /// Command-based discovery (`tools.discoveryCommand`), when configured.
    pub command: Option<CommandDiscoveryInfo>,
}

/// One MCP server as the daemon sees it now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerInfo {
    pub name: String,
    /// `connecting`, `connected` or `disconnected`.
    pub status: String,
    /// `stdio`, `sse` or `http`.
    pub transport: String,
    /// `user`, or `workspace:<root>` for a server from a workspace's settings.
    pub scope: String,
    /// Calls need no confirmation (`trust: true`).
    pub trusted: bool,
    /// Why it is disconnected, or a problem found during discovery.
    pub message: Option<String>,
    /// The names its tools are registered under.
    pub tools: Vec<String>,
    pub prompts: Vec<McpPromptInfo>,
    /// The stdio server's process id while it runs.
    pub pid: Option<u32>,
}

/// A prompt offered by an MCP server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpPromptInfo {
    pub name: String,
    pub description: Option<String>,
    /// Argument names (required ones end in `*`).
    pub arguments: Vec<String>,
}

/// The state of command-based discovery.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandDiscoveryInfo {
    pub discovery_command: String,
    pub call_command: Option<String>,
    /// The tools the last run registered.
    pub tools: Vec<String>,
    /// What was wrong with the last run's output (it may still have
    /// registered the good declarations).
    pub problems: Vec<String>,
}
