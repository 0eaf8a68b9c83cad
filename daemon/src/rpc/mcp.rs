//! `mcp.list`, `mcp.restart` and `tool.rediscover`: discovery state to wire
//! types.

use std::path::PathBuf;

use geminid_protocol::error as code;
use geminid_protocol::mcp::{CommandDiscoveryInfo, McpList, McpPromptInfo, McpServerInfo};
use jsonrpsee::core::RpcResult;

use super::rpc_error;
use crate::daemon::Daemon;
use crate::discovery::CommandState;
use crate::discovery::mcp::server::ServerSnapshot;

fn server_info(s: ServerSnapshot) -> McpServerInfo {
    McpServerInfo {
        status: s.status.as_str().to_owned(),
        transport: s.config.transport.label().to_owned(),
        scope: s.config.scope.clone(),
        trusted: s.config.trust,
        name: s.config.name,
        message: s.message,
        tools: s.registered,
        prompts: s
            .prompts
            .into_iter()
            .map(|p| McpPromptInfo {
                name: p.name,
                description: p.description,
                arguments: p.arguments,
            })
            .collect(),
        pid: s.pid,
    }
}

fn command_info(c: CommandState) -> CommandDiscoveryInfo {
    CommandDiscoveryInfo {
        discovery_command: c.discovery_command,
        call_command: c.call_command,
        tools: c.tools,
        problems: c.problems,
    }
}

pub fn list(daemon: &Daemon) -> McpList {
    let mcp = &daemon.discovery.mcp;
    McpList {
        discovery_state: mcp.discovery_state().to_owned(),
        servers: mcp.list().into_iter().map(server_info).collect(),
        command: daemon.discovery.command_state().map(command_info),
    }
}

pub async fn restart(daemon: &Daemon, name: &str) -> RpcResult<McpServerInfo> {
    daemon
        .discovery
        .mcp
        .restart(name)
        .await
        .map(server_info)
        .map_err(|e| rpc_error(code::INVALID_PARAMS, e.to_string()))
}

pub async fn rediscover(
    daemon: &Daemon,
    session_id: Option<String>,
) -> RpcResult<CommandDiscoveryInfo> {
    let cwd = match session_id {
        Some(id) => {
            let handle = daemon.sessions.get(&id)?;
            let (record, _) = handle.info().await?;
            PathBuf::from(record.cwd)
        }
        None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
    };
    Ok(command_info(daemon.discovery.rediscover(&cwd).await))
}
