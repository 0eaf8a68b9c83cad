//! `mcp.resources` and `mcp.read`: the MCP servers' resources to wire
//! types.

use geminid_protocol::error as code;
use geminid_protocol::mcp::{McpReadResult, McpResource, McpResources};
use jsonrpsee::core::RpcResult;
use serde_json::Value;

use super::rpc_error;
use crate::daemon::Daemon;
use crate::discovery::mcp::McpError;
use crate::discovery::mcp::resources::Listed;

fn wire(listed: Vec<Listed>) -> Vec<McpResource> {
    listed
        .into_iter()
        .map(|l| McpResource {
            server: l.server,
            resource: l.resource,
        })
        .collect()
}

pub fn list(daemon: &Daemon, server: Option<&str>) -> McpResources {
    let mcp = &daemon.discovery.mcp;
    McpResources {
        resources: wire(mcp.resources(server)),
        templates: wire(mcp.resource_templates(server)),
    }
}

pub async fn read(daemon: &Daemon, server: String, uri: String) -> RpcResult<McpReadResult> {
    match daemon.discovery.mcp.read_resource(&server, &uri).await {
        Ok(answer) => Ok(McpReadResult {
            contents: answer
                .get("contents")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            server,
            uri,
        }),
        Err(e @ McpError::UnknownServer(_)) => Err(rpc_error(code::INVALID_PARAMS, e.to_string())),
        Err(e @ McpError::Call(_)) => Err(rpc_error(code::MCP_READ_FAILED, e.to_string())),
    }
}
