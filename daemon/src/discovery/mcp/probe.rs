//! One-shot MCP probe (`gemctl mcp probe`): connect to a URL or a command,
//! list the tools, optionally call one, print, exit. Also the client under
//! test for the MCP conformance suite: with `MCP_CONFORMANCE_SCENARIO` set
//! and no explicit call, it does what the scenario expects.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::connect::{self, Hooks};
use super::server::{Server, Status};
use crate::discovery::schema;
use crate::discovery::settings::{DEFAULT_MCP_TIMEOUT, ServerConfig, Transport};
use crate::tools::{ContentPart, OutputSink, ToolError};

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("nothing to probe: give a URL or a command")]
    NoTarget,
    #[error("{0}")]
    Connect(#[from] connect::ConnectError),
    #[error("tools/list failed: {0}")]
    List(String),
    #[error("the arguments are not a JSON object: {0}")]
    Args(String),
    #[error("{0}")]
    Call(ToolError),
}

pub struct ProbeRequest {
    /// A URL (`.../sse` means legacy SSE, else streamable HTTP) or a
    /// command line (program and arguments).
    pub target: Vec<String>,
    pub call: Option<String>,
    pub args: Option<String>,
    pub headers: BTreeMap<String, String>,
}

/// What the probe found, ready to print.
pub struct ProbeReport {
    pub server: Option<Value>,
    pub tools: Vec<Value>,
    pub result: Option<Value>,
}

fn transport_for(target: &[String]) -> Result<Transport, ProbeError> {
    let first = target.first().ok_or(ProbeError::NoTarget)?;
    if target.len() == 1 && (first.starts_with("http://") || first.starts_with("https://")) {
        let path = first.split(['?', '#']).next().unwrap_or(first);
        if path.trim_end_matches('/').ends_with("/sse") {
            return Ok(Transport::Sse { url: first.clone() });
        }
        return Ok(Transport::Http { url: first.clone() });
    }
    // One argument with spaces is a whole command line.
    let words: Vec<String> = if target.len() == 1 {
        first.split_whitespace().map(str::to_owned).collect()
    } else {
        target.to_vec()
    };
    let (command, args) = words.split_first().ok_or(ProbeError::NoTarget)?;
    Ok(Transport::Stdio {
        command: command.clone(),
        args: args.to_vec(),
        env: BTreeMap::new(),
        cwd: None,
    })
}

/// The call a conformance scenario expects when none is given.
fn scenario_call() -> Option<(String, Value)> {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").ok()?;
    match scenario.as_str() {
        "tools_call" => Some(("add_numbers".into(), json!({"a": 5, "b": 3}))),
        "elicitation-sep1034-client-defaults" => {
            Some(("test_client_elicitation_defaults".into(), json!({})))
        }
        "sse-retry" => Some(("test_reconnection".into(), json!({}))),
        _ => None,
    }
}

pub async fn probe(request: ProbeRequest) -> Result<ProbeReport, ProbeError> {
    let transport = transport_for(&request.target)?;
    let hooks = Arc::new(Hooks::accepting());
    let conn = connect::connect(&transport, &request.headers, hooks).await?;
    let peer = conn.service.peer().clone();
    let server_info = peer.peer_info().and_then(|i| serde_json::to_value(i).ok());
    let tools = peer
        .list_all_tools()
        .await
        .map_err(|e| ProbeError::List(e.to_string()))?;
    let tools: Vec<Value> = tools
        .iter()
        .filter_map(|t| serde_json::to_value(t).ok())
        .map(|mut t| {
            if let Some(map) = t.as_object_mut() {
                let sanitized = schema::sanitize(map.get("inputSchema"));
                map.insert("inputSchema".into(), sanitized);
            }
            t
        })
        .collect();
    let call = match (request.call, request.args) {
        (Some(name), args) => {
            let args = match args {
                Some(text) => serde_json::from_str::<Value>(&text)
                    .ok()
                    .filter(Value::is_object)
                    .ok_or(ProbeError::Args(text))?,
                None => json!({}),
            };
            Some((name, args))
        }
        (None, _) => scenario_call(),
    };
    let mut result = None;
    if let Some((name, args)) = call {
        // Reuse the daemon's call path (timeout, content conversion).
        let server = Server::new(ServerConfig {
            name: "probe".into(),
            transport: transport.clone(),
            headers: request.headers.clone(),
            timeout: DEFAULT_MCP_TIMEOUT.min(Duration::from_secs(120)),
            trust: false,
            include_tools: None,
            exclude_tools: Vec::new(),
            scope: "probe".into(),
        });
        server.adopt(peer.clone(), Status::Connected);
        let progress = OutputSink::new(|line| eprint!("{line}"));
        let outcome = server
            .call(&name, &name, args, CancellationToken::new(), progress)
            .await;
        match outcome {
            Ok(r) => {
                let parts: Vec<Value> = r
                    .llm_content
                    .iter()
                    .map(|p| match p {
                        ContentPart::Text { text } => json!({"type": "text", "text": text}),
                        ContentPart::InlineData { mime_type, data } => {
                            json!({"type": "inline_data", "mimeType": mime_type, "bytes": data.len() * 3 / 4})
                        }
                    })
                    .collect();
                result = Some(json!({"tool": name, "content": parts}));
            }
            Err(e) => {
                let mut service = conn.service;
                let _ = service.close().await;
                return Err(ProbeError::Call(e));
            }
        }
    }
    let mut service = conn.service;
    let _ = tokio::time::timeout(Duration::from_secs(5), service.close()).await;
    drop(conn.group);
    Ok(ProbeReport {
        server: server_info,
        tools,
        result,
    })
}
