//! The MCP server: the daemon's tool registry, each call run through one
//! daemon session's scheduler and policy, its progress and state changes
//! sent on as MCP notifications.
#![allow(deprecated)] // rmcp marks MCP logging deprecated (SEP-2577); the spec still has it.

use std::sync::{Arc, Mutex};

use geminid_protocol::api::GeminidApiClient;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorCode, Implementation, ListResourcesResult,
    ListToolsResult, LoggingLevel, LoggingMessageNotificationParam, PaginatedRequestParams,
    ProgressNotificationParam, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use super::link::Link;
use super::resources::{self, Offered};
use super::watch::HistoryWatch;
use super::{convert, notify, paging};
use crate::call_follow::{CallFollow, Followed};
use geminid_protocol::event::EventPayload;

/// Serves the daemon's tools for the link's session.
pub struct DaemonTools {
    pub link: Arc<Link>,
    /// Tools per `tools/list` page.
    pub page_size: usize,
    /// The level the client set with `logging/setLevel`.
    pub log_level: Mutex<LoggingLevel>,
    /// The subscription to the session's history, while one is held.
    pub history: HistoryWatch,
    /// Following the session for tool list changes (from `initialized`).
    pub tools_watch: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The tool names the client was last given (`tools/list`).
    pub listed: super::tools_watch::Listed,
}

impl Drop for DaemonTools {
    fn drop(&mut self) {
        if let Ok(mut watch) = self.tools_watch.lock()
            && let Some(task) = watch.take()
        {
            task.abort();
        }
    }
}

impl DaemonTools {
    pub fn new(link: Arc<Link>, page_size: usize) -> Self {
        DaemonTools {
            link,
            page_size,
            log_level: Mutex::new(notify::DEFAULT_LEVEL),
            history: HistoryWatch::default(),
            tools_watch: Mutex::new(None),
            listed: Default::default(),
        }
    }

    fn logs_at(&self, level: LoggingLevel) -> bool {
        let threshold = self
            .log_level
            .lock()
            .map(|l| *l)
            .unwrap_or(notify::DEFAULT_LEVEL);
        notify::passes(level, threshold)
    }
}

/// The daemon could not be reached (or started): every request says why.
fn unreachable(failure: crate::command::Failure) -> ErrorData {
    ErrorData::internal_error(format!("geminid: {}", failure.message), None)
}

fn not_offered(uri: &str) -> ErrorData {
    ErrorData::resource_not_found(
        format!("no resource {uri}: resources/list says what this server offers"),
        Some(serde_json::json!({"uri": uri})),
    )
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
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_logging()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("geminid", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "The Gemini CLI tools of geminid. Calls run in one geminid session under its \
                 approval mode and policy; a call that needs approval waits for a person \
                 in `gemctl attach <session>` (the session id is on gemctl's stderr)."
                .to_owned(),
        )
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        let task = tokio::spawn(super::tools_watch::follow(
            self.link.clone(),
            context.peer,
            self.listed.clone(),
        ));
        if let Ok(mut watch) = self.tools_watch.lock()
            && let Some(old) = watch.replace(task)
        {
            old.abort();
        }
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut level) = self.log_level.lock() {
            *level = request.level;
        }
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let (_, session_id) = self.link.get().await.map_err(unreachable)?;
        Ok(ListResourcesResult::with_all_items(resources::list(
            &session_id,
        )))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let (client, session_id) = self.link.get().await.map_err(unreachable)?;
        let contents = match resources::offered(&request.uri, &session_id) {
            Some(Offered::Memory) => {
                let memory = client
                    .show_memory(Some(session_id), None)
                    .await
                    .map_err(daemon_error)?;
                resources::memory_contents(memory.text)
            }
            Some(Offered::History) => {
                let mut entries = Vec::new();
                loop {
                    let page = client
                        .history(session_id.clone(), Some(entries.len() as u64), None)
                        .await
                        .map_err(daemon_error)?;
                    let got = page.contents.len();
                    entries.extend(page.contents);
                    if got == 0 || entries.len() as u64 >= page.total {
                        break;
                    }
                }
                resources::history_contents(&session_id, entries)
            }
            None => return Err(not_offered(&request.uri)),
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (_, session_id) = self.link.get().await.map_err(unreachable)?;
        match resources::offered(&request.uri, &session_id) {
            Some(Offered::History) => {
                self.history
                    .start(self.link.clone(), context.peer, request.uri);
                Ok(())
            }
            Some(Offered::Memory) => Err(ErrorData::invalid_params(
                "geminid://memory sends no updates: read it again when needed",
                None,
            )),
            None => Err(not_offered(&request.uri)),
        }
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (_, session_id) = self.link.get().await.map_err(unreachable)?;
        if resources::offered(&request.uri, &session_id) == Some(Offered::History) {
            self.history.stop();
        }
        Ok(())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let (client, session_id) = self.link.get().await.map_err(unreachable)?;
        let tools = client
            .list_tools(Some(session_id))
            .await
            .map_err(daemon_error)?;
        if let Ok(mut listed) = self.listed.lock() {
            *listed = Some(tools.iter().map(|t| t.name.clone()).collect());
        }
        let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
        let (tools, next) = paging::page(tools, |t| t.name.as_str(), cursor, self.page_size)
            .map_err(|paging::BadCursor| {
                ErrorData::invalid_params("unknown cursor (not one this server gave)", None)
            })?;
        let mut result =
            ListToolsResult::with_all_items(tools.into_iter().map(convert::tool).collect());
        result.next_cursor = next;
        Ok(result)
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
        let progress_token = context.meta.get_progress_token();
        let mut progress = 0u32;
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
                next = call.next_or_question() => {
                    let next = next.map_err(|e| {
                        ErrorData::internal_error(format!("geminid: following the call: {e:?}"), None)
                    })?;
                    let snapshot = match next {
                        Followed::Call(_, snapshot) => snapshot,
                        Followed::Question(event) => {
                            // This call's questions go to this MCP client.
                            if let EventPayload::QuestionAsked { question_id, call_id, message, fields, url, .. } = event.payload
                                && call_id.as_deref() == Some(call.call_id.as_str())
                            {
                                tokio::spawn(super::elicit::forward(
                                    client.clone(),
                                    session_id.clone(),
                                    context.peer.clone(),
                                    question_id,
                                    message,
                                    fields,
                                    url,
                                ));
                            }
                            continue;
                        }
                    };
                    if let Some((level, data)) = notify::log_entry(&session_id, &snapshot)
                        && self.logs_at(level)
                    {
                        let entry = LoggingMessageNotificationParam::new(level, data)
                            .with_logger("geminid");
                        let _ = context.peer.notify_logging_message(entry).await;
                    }
                    if snapshot.state.is_terminal() {
                        return Ok(convert::call_result(&snapshot).into());
                    }
                    if let (Some(token), Some(message)) =
                        (&progress_token, notify::progress_message(&snapshot))
                    {
                        progress += 1;
                        let mut note = ProgressNotificationParam::new(token.clone(), f64::from(progress));
                        note.message = Some(message);
                        let _ = context.peer.notify_progress(note).await;
                    }
                }
            }
        }
    }
}
