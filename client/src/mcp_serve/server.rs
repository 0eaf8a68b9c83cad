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
use crate::Client;

/// Serves the daemon's tools for `session_id`.
pub struct DaemonTools {
    pub client: Arc<Client>,
    pub session_id: String,
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
            .with_instructions(format!(
                "The Gemini CLI tools of geminid. Calls run in session {} under its \
                 approval mode and policy; a call that needs approval waits for a person \
                 in `gemctl attach {}`.",
                self.session_id, self.session_id
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .client
            .list_tools(Some(self.session_id.clone()))
            .await
            .map_err(daemon_error)?;
        Ok(ListToolsResult::with_all_items(
            tools.into_iter().map(convert::tool).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let started = self
            .client
            .call_tool(
                self.session_id.clone(),
                request.name.into_owned(),
                Some(args),
                Some(true),
            )
            .await
            .map_err(daemon_error)?;
        let outcome = started.outcome.ok_or_else(|| {
            ErrorData::internal_error("geminid answered tool.call without the outcome", None)
        })?;
        Ok(convert::call_result(&outcome).into())
    }
}
