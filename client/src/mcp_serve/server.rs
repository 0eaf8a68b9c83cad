//! The MCP server: the daemon's tool registry, each call run through one
//! daemon session's scheduler and policy.

use std::sync::Arc;

use geminid_protocol::api::GeminidApiClient;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorCode, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use super::convert;
use super::link::Link;
use crate::call_follow::CallFollow;

/// Serves the daemon's tools for the link's session.
pub struct DaemonTools {
    pub link: Arc<Link>,
}

/// The daemon could not be reached (or started): every request says why.
fn unreachable(failure: crate::command::Failure) -> ErrorData {
    ErrorData::internal_error(format!("geminid: {}", failure.message), None)
}

fn daemon_error(e: jsonrpsee::core::ClientError) -> ErrorData {
    match e {
        jsonrpsee::core::ClientError::Call(err) => {
            ErrorData::new(ErrorCode(err.code()), err.message().to_owned(), None)
        }
        other => ErrorData::internal_error(format!("geminid: {other}"), None),
    }
}

impl ServerHandler for DaemonTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("geminid", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "The Gemini CLI tools of geminid. Calls run in one geminid session under its \
                 approval mode and policy; a call that needs approval waits for a person \
                 in `gemctl attach <session>` (the session id is on gemctl's stderr)."
                    .to_owned(),
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let (client, session_id) = self.link.get().await.map_err(unreachable)?;
        let tools = client
            .list_tools(Some(session_id))
            .await
            .map_err(daemon_error)?;
        Ok(ListToolsResult::with_all_items(
            tools.into_iter().map(convert::tool).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let (client, session_id) = self.link.get().await.map_err(unreachable)?;
        let mut call = CallFollow::start(&client, &session_id, &request.name, args)
            .await
            .map_err(daemon_error)?;
        let mut cancel_sent = false;
        loop {
            tokio::select! {
                // notifications/cancelled from the MCP client: the call is
                // cancelled in the daemon too (its process group killed).
                () = context.ct.cancelled(), if !cancel_sent => {
                    cancel_sent = true;
                    if let Err(e) = call.cancel(&client).await {
                        eprintln!("gemctl mcp serve: tool.cancel failed: {e}");
                    }
                }
                next = call.next() => {
                    let (_, snapshot) = next.map_err(|e| {
                        ErrorData::internal_error(format!("geminid: following the call: {e:?}"), None)
                    })?;
                    if snapshot.state.is_terminal() {
                        return Ok(convert::call_result(&snapshot).into());
                    }
                }
            }
        }
    }
}
