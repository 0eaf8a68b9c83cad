//! `mcp.list`, `mcp.restart`, `mcp.probe` and `tool.rediscover`: discovery
//! state to wire types.

use std::collections::BTreeMap;
use std::path::PathBuf;

use geminid_protocol::error as code;
use geminid_protocol::mcp::{
    CommandDiscoveryInfo, McpList, McpLogin, McpProbeCall, McpProbeContent, McpProbeResult,
    McpPromptInfo, McpServerInfo,
};
use jsonrpsee::core::RpcResult;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::rpc_error;
use crate::daemon::Daemon;
use crate::discovery::CommandState;
use crate::discovery::mcp::McpError;
use crate::discovery::mcp::probe::{self, ProbeError, ProbeReport, ProbeRequest};
use crate::discovery::mcp::server::ServerSnapshot;
use crate::tools::ContentPart;

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

pub async fn restart(daemon: &Daemon, name: &str, scope: Option<&str>) -> RpcResult<McpServerInfo> {
    daemon
        .discovery
        .mcp
        .restart(name, scope)
        .await
        .map(server_info)
        .map_err(|e| rpc_error(code::INVALID_PARAMS, e.to_string()))
}

pub async fn auth(daemon: &Daemon, name: &str) -> RpcResult<McpLogin> {
    match daemon.discovery.mcp.begin_login(name, None).await {
        Ok(url) => Ok(McpLogin {
            name: name.to_owned(),
            url,
        }),
        Err(e @ McpError::UnknownServer(_)) => Err(rpc_error(code::INVALID_PARAMS, e.to_string())),
        Err(e @ (McpError::OAuth(_) | McpError::Call(_))) => {
            Err(rpc_error(code::MCP_AUTH_FAILED, e.to_string()))
        }
    }
}

pub async fn auth_wait(daemon: &Daemon, name: &str) -> RpcResult<McpServerInfo> {
    match daemon.discovery.mcp.finish_login(name, None).await {
        Ok(snapshot) => Ok(server_info(snapshot)),
        Err(e @ McpError::UnknownServer(_)) => Err(rpc_error(code::INVALID_PARAMS, e.to_string())),
        Err(e @ (McpError::OAuth(_) | McpError::Call(_))) => {
            Err(rpc_error(code::MCP_AUTH_FAILED, e.to_string()))
        }
    }
}

pub async fn logout(daemon: &Daemon, name: &str) -> RpcResult<McpServerInfo> {
    match daemon.discovery.mcp.logout(name).await {
        Ok(snapshot) => Ok(server_info(snapshot)),
        Err(e @ McpError::UnknownServer(_)) => Err(rpc_error(code::INVALID_PARAMS, e.to_string())),
        Err(e @ (McpError::OAuth(_) | McpError::Call(_))) => {
            Err(rpc_error(code::MCP_AUTH_FAILED, e.to_string()))
        }
    }
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

/// The params of `mcp.probe`, as they came.
pub struct ProbeParams {
    pub target: Vec<String>,
    pub call: Option<String>,
    pub args: Option<Value>,
    pub headers: Option<BTreeMap<String, String>>,
    pub cwd: Option<String>,
    pub env: Option<BTreeMap<String, String>>,
    pub accept_elicitation_defaults: Option<bool>,
    pub oauth: Option<Value>,
}

pub async fn probe(params: ProbeParams, closed: CancellationToken) -> RpcResult<McpProbeResult> {
    let call = match (params.call, params.args) {
        (Some(name), Some(Value::Object(args))) => Some((name, args)),
        (Some(name), None | Some(Value::Null)) => Some((name, serde_json::Map::new())),
        (Some(_), Some(other)) => {
            return Err(rpc_error(
                code::INVALID_PARAMS,
                format!("args: the arguments are not a JSON object: {other}"),
            ));
        }
        (None, Some(_)) => {
            return Err(rpc_error(
                code::INVALID_PARAMS,
                "args: given without `call` (the tool to call)",
            ));
        }
        (None, None) => None,
    };
    let oauth = match params.oauth {
        None | Some(Value::Null) => None,
        Some(block) => Some(
            crate::discovery::mcp::oauth::settings::parse(&block)
                .map_err(|e| rpc_error(code::INVALID_PARAMS, format!("oauth: {e}")))?,
        ),
    };
    let request = ProbeRequest {
        target: params.target,
        call,
        headers: params.headers.unwrap_or_default(),
        cwd: params.cwd.map(PathBuf::from),
        env: params.env.unwrap_or_default(),
        accept_elicitation_defaults: params.accept_elicitation_defaults.unwrap_or(false),
        oauth,
    };
    match probe::probe(request, closed).await {
        Ok(report) => Ok(probe_result(report)),
        Err(e @ ProbeError::NoTarget) => Err(rpc_error(code::INVALID_PARAMS, e.to_string())),
        Err(e @ (ProbeError::Open(_) | ProbeError::Call(_) | ProbeError::Cancelled)) => {
            Err(rpc_error(code::MCP_PROBE_FAILED, e.to_string()))
        }
    }
}

fn probe_result(report: ProbeReport) -> McpProbeResult {
    McpProbeResult {
        server: report.server,
        tools: report.tools,
        result: report.result.map(|call| McpProbeCall {
            tool: call.tool,
            content: call.content.into_iter().map(probe_content).collect(),
            structured_content: call.structured,
        }),
        progress: report.progress,
    }
}

fn probe_content(part: ContentPart) -> McpProbeContent {
    match part {
        ContentPart::Text { text } => McpProbeContent::Text { text },
        ContentPart::InlineData { mime_type, data } => McpProbeContent::InlineData {
            mime_type,
            // Base64: four characters carry three bytes.
            bytes: data.len() as u64 * 3 / 4,
        },
    }
}
