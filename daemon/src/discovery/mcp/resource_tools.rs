//! 0.61's `list_mcp_resources` and `read_mcp_resource` tools: the model's
//! way to the connected servers' resources (declarations as 0.61's
//! `default-legacy.js` words them).

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::McpManager;
use super::resources;
use crate::tools::{
    ConfirmationDetails, OutputSink, Tool, ToolContext, ToolDisplay, ToolError, ToolErrorKind,
    ToolInvocation, ToolKind, ToolLocation, ToolResult,
};

pub const LIST_NAME: &str = "list_mcp_resources";
pub const READ_NAME: &str = "read_mcp_resource";

/// Both tools, holding the manager weakly (it owns the registry they are
/// in).
pub fn tools(manager: &Arc<McpManager>) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ListResources {
            manager: Arc::downgrade(manager),
            schema: json!({
                "type": "object",
                "properties": {"serverName": {
                    "description": "Optional filter to list resources from a specific server.",
                    "type": "string"
                }},
                "required": []
            }),
        }),
        Arc::new(ReadResource {
            manager: Arc::downgrade(manager),
            schema: json!({
                "type": "object",
                "properties": {"uri": {
                    "description": "The URI of the MCP resource to read.",
                    "type": "string"
                }},
                "required": ["uri"]
            }),
        }),
    ]
}

fn gone() -> ToolError {
    ToolError::new(ToolErrorKind::Unavailable, "MCP is shutting down")
}

struct ListResources {
    manager: Weak<McpManager>,
    schema: Value,
}

impl Tool for ListResources {
    fn name(&self) -> &str {
        LIST_NAME
    }
    fn display_name(&self) -> &str {
        "List MCP Resources"
    }
    fn description(&self) -> &str {
        "Lists all available resources exposed by connected MCP servers."
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn build(&self, ctx: &ToolContext, args: &Value) -> Result<Box<dyn ToolInvocation>, ToolError> {
        Ok(Box::new(ListCall {
            manager: self.manager.clone(),
            root: ctx.workspace_root.clone(),
            server: args
                .get("serverName")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        }))
    }
}

struct ListCall {
    manager: Weak<McpManager>,
    /// The session's root: its view of the servers.
    root: std::path::PathBuf,
    server: Option<String>,
}

#[async_trait]
impl ToolInvocation for ListCall {
    fn description(&self) -> String {
        "List MCP resources".to_owned()
    }
    fn locations(&self) -> Vec<ToolLocation> {
        Vec::new()
    }
    async fn confirmation(&self) -> Result<ConfirmationDetails, ToolError> {
        Ok(ConfirmationDetails::Info {
            title: "List MCP Resources".to_owned(),
            prompt: self.description(),
            urls: Vec::new(),
        })
    }
    async fn execute(
        self: Box<Self>,
        _cancel: CancellationToken,
        _output: OutputSink,
    ) -> Result<ToolResult, ToolError> {
        let manager = self.manager.upgrade().ok_or_else(gone)?;
        let listed = manager.resources_in(&self.root, self.server.as_deref());
        let text = resources::list_text(&listed, self.server.as_deref());
        let mut result = ToolResult::text(text);
        if !listed.is_empty() {
            result.display = ToolDisplay::Text {
                text: format!("Listed {} resources.", listed.len()),
            };
        }
        Ok(result)
    }
}

struct ReadResource {
    manager: Weak<McpManager>,
    schema: Value,
}

impl Tool for ReadResource {
    fn name(&self) -> &str {
        READ_NAME
    }
    fn display_name(&self) -> &str {
        "Read MCP Resource"
    }
    fn description(&self) -> &str {
        "Reads the content of a specified Model Context Protocol (MCP) resource."
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn build(&self, ctx: &ToolContext, args: &Value) -> Result<Box<dyn ToolInvocation>, ToolError> {
        let uri = args
            .get("uri")
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty())
            .ok_or_else(|| ToolError::new(ToolErrorKind::InvalidParams, "No URI provided."))?;
        let manager = self.manager.upgrade().ok_or_else(gone)?;
        let found = manager
            .find_resource(uri, Some(&ctx.workspace_root))
            .ok_or_else(|| {
                ToolError::new(
                    ToolErrorKind::NotFound,
                    format!("Resource not found for URI: {uri}"),
                )
            })?;
        Ok(Box::new(ReadCall {
            manager: self.manager.clone(),
            root: ctx.workspace_root.clone(),
            found,
        }))
    }
}

struct ReadCall {
    manager: Weak<McpManager>,
    root: std::path::PathBuf,
    found: resources::Listed,
}

impl ReadCall {
    fn what(&self) -> String {
        match self.found.name() {
            Some(name) => format!("resource \"{name}\" from server \"{}\"", self.found.server),
            None => format!(
                "resource {} from server \"{}\"",
                self.found.uri(),
                self.found.server
            ),
        }
    }
}

#[async_trait]
impl ToolInvocation for ReadCall {
    fn description(&self) -> String {
        format!("Read MCP {}", self.what())
    }
    fn locations(&self) -> Vec<ToolLocation> {
        Vec::new()
    }
    async fn confirmation(&self) -> Result<ConfirmationDetails, ToolError> {
        Ok(ConfirmationDetails::Mcp {
            title: format!("Confirm reading {}", self.found.uri()),
            server_name: self.found.server.clone(),
            tool_name: READ_NAME.to_owned(),
        })
    }
    async fn execute(
        self: Box<Self>,
        cancel: CancellationToken,
        _output: OutputSink,
    ) -> Result<ToolResult, ToolError> {
        let manager = self.manager.upgrade().ok_or_else(gone)?;
        let read = manager.read_resource_in(&self.root, &self.found.server, self.found.uri());
        let result = tokio::select! {
            result = read => result,
            () = cancel.cancelled() => {
                return Err(ToolError::new(ToolErrorKind::Cancelled, "the read was cancelled"));
            }
        };
        let value = result.map_err(|e| match e {
            super::McpError::Call(e) => {
                ToolError::new(e.kind, format!("Failed to read resource: {}", e.message))
            }
            other => ToolError::execution(format!("Failed to read resource: {other}")),
        })?;
        let mut result = ToolResult::text(resources::read_text(&value));
        result.display = ToolDisplay::Text {
            text: format!("Successfully read {}", self.what()),
        };
        result.summary = Some(format!("Read {}", self.found.uri()));
        Ok(result)
    }
}
