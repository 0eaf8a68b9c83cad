//! `DiscoveredMCPTool`: a tool of an MCP server, as the registry sees it.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::server::{RemoteTool, Server};
use crate::tools::{
    ConfirmationDetails, OutputSink, Tool, ToolContext, ToolError, ToolInvocation, ToolKind,
    ToolLocation, ToolResult, ToolSource,
};

pub struct McpTool {
    /// The registered name: the bare tool name, or `server__tool`.
    name: String,
    display_name: String,
    description: String,
    schema: Value,
    remote: String,
    annotations: Option<serde_json::Map<String, Value>>,
    output_schema: Option<Value>,
    server: Arc<Server>,
}

impl McpTool {
    pub fn new(server: Arc<Server>, remote: &RemoteTool, name: String) -> McpTool {
        let display_name = if name == remote.name {
            remote.name.clone()
        } else {
            format!("{} ({})", remote.name, server.name())
        };
        McpTool {
            name,
            display_name,
            description: remote.description.clone(),
            schema: remote.schema.clone(),
            remote: remote.name.clone(),
            annotations: remote
                .declared
                .get("annotations")
                .and_then(Value::as_object)
                .cloned(),
            output_schema: remote.declared.get("outputSchema").cloned(),
            server,
        }
    }
}

/// `server__tool`, with characters the Gemini API refuses in function
/// names replaced by `_` and the length capped at 64 as the reference does.
pub fn qualified_name(server: &str, tool: &str) -> String {
    valid_name(&format!("{server}__{tool}"))
}

pub fn valid_name(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.len() > 64 {
        // Keep both ends, which carry the server and the tool.
        format!("{}___{}", &clean[..28], &clean[clean.len() - 32..])
    } else {
        clean
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn annotations(&self) -> Option<&serde_json::Map<String, Value>> {
        self.annotations.as_ref()
    }

    fn output_schema(&self) -> Option<&Value> {
        self.output_schema.as_ref()
    }

    fn remote_name(&self) -> Option<&str> {
        Some(&self.remote)
    }

    fn display_name(&self) -> &str {
        &self.display_name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn parameter_schema(&self) -> &Value {
        &self.schema
    }

    fn source(&self) -> ToolSource {
        ToolSource::Mcp {
            server: self.server.name().to_owned(),
        }
    }

    fn build(
        &self,
        _ctx: &ToolContext,
        args: &Value,
    ) -> Result<Box<dyn ToolInvocation>, ToolError> {
        Ok(Box::new(McpCall {
            server: self.server.clone(),
            remote: self.remote.clone(),
            display_name: self.display_name.clone(),
            args: args.clone(),
        }))
    }
}

struct McpCall {
    server: Arc<Server>,
    remote: String,
    display_name: String,
    args: Value,
}

#[async_trait]
impl ToolInvocation for McpCall {
    fn description(&self) -> String {
        format!("{} {}", self.display_name, self.args)
    }

    fn locations(&self) -> Vec<ToolLocation> {
        Vec::new()
    }

    async fn confirmation(&self) -> Result<ConfirmationDetails, ToolError> {
        Ok(ConfirmationDetails::Mcp {
            title: format!("Confirm MCP Tool Execution: {}", self.display_name),
            server_name: self.server.name().to_owned(),
            tool_name: self.remote.clone(),
        })
    }

    async fn execute(
        self: Box<Self>,
        cancel: CancellationToken,
        output: OutputSink,
    ) -> Result<ToolResult, ToolError> {
        self.server
            .call(&self.remote, &self.display_name, self.args, cancel, output)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_valid_for_the_api() {
        assert_eq!(qualified_name("srv", "get-sum"), "srv__get-sum");
        assert_eq!(qualified_name("my srv", "a/b"), "my_srv__a_b");
        assert_eq!(qualified_name(&"s".repeat(40), &"t".repeat(40)).len(), 63);
    }
}
