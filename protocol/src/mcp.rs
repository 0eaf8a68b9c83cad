//! Wire types of tool discovery: MCP servers (`mcp.list`, `mcp.restart`,
//! `mcp.probe`) and command-based discovery (`tool.rediscover`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// `connecting`, `connected`, `disconnected`, or `needs_auth` (an
    /// HTTP or SSE server that wants an OAuth login: `mcp.auth`).
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

/// `mcp.probe`: what one connection to a server that is not configured
/// found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpProbeResult {
    /// The server's answer to `initialize` (`protocolVersion`,
    /// `capabilities`, `serverInfo`, `instructions`), as it sent it.
    pub server: Option<Value>,
    /// Every tool as the server declared it, in its order, with
    /// `inputSchema` sanitized the way the model gets it.
    pub tools: Vec<Value>,
    /// The call's result, when a call was asked for.
    pub result: Option<McpProbeCall>,
    /// The call's progress notifications as text lines (`[3/10] message`),
    /// in order; batched and capped like a session's tool output.
    pub progress: Vec<String>,
}

/// The result of the call an `mcp.probe` made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpProbeCall {
    /// The tool that was called.
    pub tool: String,
    /// What it answered, converted the way the model gets it.
    pub content: Vec<McpProbeContent>,
    /// Its `structuredContent`, as the server sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
}

/// One part of a probed call's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum McpProbeContent {
    /// Text (resources, links and structured content become text too).
    Text {
        /// The text.
        text: String,
    },
    /// An image or audio; only its size is reported.
    InlineData {
        /// Its media type (`image/png`).
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Its size in bytes (decoded).
        bytes: u64,
    },
}

/// An OAuth login `mcp.auth` started: where the user authorizes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpLogin {
    pub name: String,
    /// The authorization URL to open in a browser.
    pub url: String,
}

/// `mcp.resources`: the resources and resource templates the connected
/// servers list, each with its server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpResources {
    pub resources: Vec<McpResource>,
    pub templates: Vec<McpResource>,
}

/// One resource (or template) of one server, as the server listed it
/// (`uri` or `uriTemplate`, `name`, `title`, `description`, `mimeType`...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpResource {
    pub server: String,
    pub resource: Value,
    /// The server's scope (`user`, `extensions`, `workspace:<root>`,
    /// `extensions:<root>`, as `mcp list` shows it).
    #[serde(default)]
    pub scope: String,
}

/// `mcp.read`: a `resources/read` answer as the server sent it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpReadResult {
    pub server: String,
    pub uri: String,
    /// The answer's `contents`: each has `uri`, `mimeType` and `text` or
    /// `blob` (base64).
    pub contents: Vec<Value>,
}

/// `mcp.prompt`: a `prompts/get` answer as the server sent it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpPromptResult {
    pub server: String,
    pub name: String,
    pub description: Option<String>,
    /// The answer's `messages`: each has `role` and one `content` block
    /// (`text`, `image`, `audio`, `resource`, `resource_link`).
    pub messages: Vec<Value>,
}

/// `mcp.subscriptions`: the resources sessions subscribed to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpSubscriptions {
    pub subscriptions: Vec<McpSubscription>,
}

/// One subscribed resource: its server (and the server's settings scope:
/// `user`, `extensions`, `workspace:<root>`), the sessions that want its
/// updates, and whether the server was asked for them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpSubscription {
    pub server: String,
    pub scope: String,
    pub uri: String,
    pub sessions: Vec<String>,
    pub asked: bool,
}
