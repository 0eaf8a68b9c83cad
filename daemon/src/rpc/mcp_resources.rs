//! `mcp.resources`, `mcp.read` and `mcp.prompt`: the MCP servers'
//! resources and prompts to wire types.

use geminid_protocol::error as code;
use std::collections::BTreeMap;

use geminid_protocol::mcp::{McpPromptResult, McpReadResult, McpResource, McpResources};
use geminid_protocol::session::Ack;
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
            scope: l.scope,
        })
        .collect()
}

/// What `mcp.resources` asks for.
pub struct Asked {
    pub server: Option<String>,
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    pub all: bool,
}

/// The resources a session's (or `cwd`'s) workspace sees, as the model
/// does; without either, the shared servers'; `all`: every server's.
pub fn list(daemon: &Daemon, asked: Asked) -> RpcResult<McpResources> {
    let mcp = &daemon.discovery.mcp;
    let server = asked.server.as_deref();
    if asked.all {
        return Ok(McpResources {
            resources: wire(mcp.resources(server)),
            templates: wire(mcp.resource_templates(server)),
        });
    }
    let root = root(daemon, asked.session_id, asked.cwd)?;
    let (resources, templates) = mcp.resources_seen(root.as_deref(), server);
    Ok(McpResources {
        resources: wire(resources),
        templates: wire(templates),
    })
}

/// The workspace whose view names the servers: the session's, else
/// `cwd` (resolved), else none (the one server of a name).
pub fn root(
    daemon: &Daemon,
    session_id: Option<String>,
    cwd: Option<String>,
) -> RpcResult<Option<std::path::PathBuf>> {
    Ok(match (session_id, cwd) {
        (Some(id), _) => Some(std::path::PathBuf::from(
            daemon.sessions.get(&id)?.cwd.clone(),
        )),
        (None, Some(cwd)) => {
            let cwd = std::path::PathBuf::from(cwd);
            Some(std::fs::canonicalize(&cwd).unwrap_or(cwd))
        }
        (None, None) => None,
    })
}

pub async fn read(
    daemon: &Daemon,
    root: Option<std::path::PathBuf>,
    server: String,
    uri: String,
) -> RpcResult<McpReadResult> {
    let mcp = &daemon.discovery.mcp;
    match mcp.read_resource(root.as_deref(), &server, &uri).await {
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
        Err(e @ (McpError::Call(_) | McpError::OAuth(_))) => {
            Err(rpc_error(code::MCP_READ_FAILED, e.to_string()))
        }
    }
}

pub async fn subscribe(
    daemon: &Daemon,
    session_id: String,
    server: String,
    uri: String,
) -> RpcResult<()> {
    // The session must exist: updates are its events, and its workspace
    // says which server of that name it sees.
    let Ok(session) = daemon.sessions.get(&session_id) else {
        return Err(rpc_error(
            code::INVALID_PARAMS,
            format!("no session {session_id:?}"),
        ));
    };
    let root = std::path::PathBuf::from(&session.cwd);
    daemon
        .discovery
        .mcp
        .subscribe(&session_id, &root, &server, &uri)
        .await
        .map_err(failure)
}

pub async fn unsubscribe(
    daemon: &Daemon,
    session_id: String,
    server: String,
    uri: String,
) -> RpcResult<Ack> {
    let Ok(session) = daemon.sessions.get(&session_id) else {
        return Err(rpc_error(
            code::INVALID_PARAMS,
            format!("no session {session_id:?}"),
        ));
    };
    let root = std::path::PathBuf::from(&session.cwd);
    let ok = daemon
        .discovery
        .mcp
        .unsubscribe(&session_id, &root, &server, &uri)
        .await
        .map_err(failure)?;
    Ok(Ack { ok })
}

fn failure(e: McpError) -> jsonrpsee::types::ErrorObjectOwned {
    match e {
        McpError::UnknownServer(_) => rpc_error(code::INVALID_PARAMS, e.to_string()),
        McpError::Call(_) | McpError::OAuth(_) => rpc_error(code::MCP_READ_FAILED, e.to_string()),
    }
}

pub async fn prompt(
    daemon: &Daemon,
    root: Option<std::path::PathBuf>,
    server: String,
    name: String,
    arguments: BTreeMap<String, String>,
) -> RpcResult<McpPromptResult> {
    let arguments = arguments
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    let answer = daemon
        .discovery
        .mcp
        .get_prompt(root.as_deref(), &server, &name, arguments)
        .await
        .map_err(failure)?;
    Ok(McpPromptResult {
        description: answer
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned),
        messages: answer
            .get("messages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        server,
        name,
    })
}
