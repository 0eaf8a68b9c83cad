//! MCP sampling on the client side: the hand-off of a server's
//! `sampling/createMessage` to the daemon's [`Sampler`] (the session:
//! policy, confirmation, its model; `session/sampling.rs`), for the session
//! the connection's calls in flight say it belongs to (`calls.rs`). When
//! that says nobody (a server asking on its own, calls of several
//! sessions), the request is declined with the reason, never guessed.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use rmcp::ErrorData;
use rmcp::model::ErrorCode;
use serde_json::Value;

use super::calls::Refused;
use crate::questions::Asker;

/// The pseudo tool a sampling request is decided as, with `mcpName` the
/// server: a call named `<server>__mcp_sampling` (`session/sampling.rs`).
pub const SAMPLING_TOOL: &str = "mcp_sampling";

/// MCP's code for a sampling request the user (or the client) refused.
pub const DECLINED: ErrorCode = ErrorCode(-1);

/// Runs a sampling request for a session: `request` is the request's
/// params as the server sent them (JSON); the answer is a
/// `CreateMessageResult` as JSON, or the error the server gets.
pub trait Sampler: Send + Sync {
    fn sample(
        &self,
        session: String,
        server: String,
        request: Value,
    ) -> BoxFuture<'static, Result<Value, ErrorData>>;
}

/// How a session answers a sampling request: a `CreateMessageResult` as
/// JSON, or the error the server gets.
pub type SamplingReply = tokio::sync::oneshot::Sender<Result<Value, ErrorData>>;

/// What an answered sampling request cost, for the session's account.
pub struct Sampled {
    pub call_id: String,
    pub server: String,
    pub model: String,
    pub usage: crate::model::Usage,
    pub stop_reason: &'static str,
}

/// Where every server's sampling requests go: set once the sessions
/// exist (the daemon sets it after building them).
#[derive(Default)]
pub struct SamplingDesk {
    sampler: Mutex<Option<Arc<dyn Sampler>>>,
}

impl SamplingDesk {
    pub fn set(&self, sampler: Arc<dyn Sampler>) {
        *self.sampler.lock().unwrap_or_else(|e| e.into_inner()) = Some(sampler);
    }

    fn sampler(&self) -> Option<Arc<dyn Sampler>> {
        self.sampler
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// One server's side.
pub struct ServerSampling {
    server: String,
    desk: Arc<SamplingDesk>,
}

impl ServerSampling {
    pub fn new(server: &str, desk: Arc<SamplingDesk>) -> Arc<ServerSampling> {
        Arc::new(ServerSampling {
            server: server.to_owned(),
            desk,
        })
    }

    /// Answers one `sampling/createMessage` (params as JSON).
    /// `session`: whose it is, by the connection's calls in flight.
    pub async fn create_message(
        &self,
        session: Result<String, Refused>,
        request: Value,
    ) -> Result<Value, ErrorData> {
        let session = match session {
            Ok(session) => session,
            Err(why) => {
                tracing::warn!(server = %self.server, "sampling request declined: {why}");
                return Err(declined(format!(
                    "geminid declined the sampling request of MCP server {}: {why}",
                    self.server
                )));
            }
        };
        let Some(sampler) = self.desk.sampler() else {
            return Err(declined(format!(
                "geminid declined the sampling request of MCP server {}: the daemon is not ready for it",
                self.server
            )));
        };
        sampler.sample(session, self.server.clone(), request).await
    }
}

/// The handler's side: `sampling/createMessage` through `sampling` (none:
/// declined, as for a probe), in rmcp's types.
#[allow(deprecated)] // rmcp marks MCP sampling deprecated (SEP-2577).
pub async fn answer(
    sampling: Option<&ServerSampling>,
    whose: Result<Asker, Refused>,
    params: rmcp::model::CreateMessageRequestParams,
) -> Result<rmcp::model::CreateMessageResult, ErrorData> {
    let Some(sampling) = sampling else {
        return Err(declined(
            "geminid declined the sampling request: this connection serves no session (a probe)"
                .to_owned(),
        ));
    };
    let request = serde_json::to_value(&params)
        .map_err(|e| ErrorData::invalid_params(format!("unreadable request: {e}"), None))?;
    let result = sampling
        .create_message(whose.map(|asker| asker.owner), request)
        .await?;
    serde_json::from_value(result)
        .map_err(|e| ErrorData::internal_error(format!("unsendable result: {e}"), None))
}

/// A sampling request refused (by a person, a rule or for want of one).
pub fn declined(message: String) -> ErrorData {
    ErrorData::new(DECLINED, message, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trusted_server_s_tools_run_but_its_sampling_still_asks() {
        use crate::policy::{ApprovalMode, Decision, PolicyEngine, PolicyInput, ToolKind};
        let settings = serde_json::json!({"mcpServers": {"srv": {"command": "x", "trust": true}}});
        let engine = PolicyEngine::new(crate::discovery::trust_rules(&settings, "settings.json"));
        let args = serde_json::json!({});
        let decide = |name: &str, remote: &str| {
            engine
                .check(&PolicyInput {
                    tool_name: name,
                    args: &args,
                    server_name: Some("srv"),
                    remote_name: Some(remote),
                    annotations: None,
                    tool_kind: ToolKind::Other,
                    mode: ApprovalMode::Default,
                    interactive: true,
                })
                .decision
        };
        assert_eq!(decide("srv__echo", "echo"), Decision::Allow);
        assert_eq!(
            decide(&format!("srv__{SAMPLING_TOOL}"), SAMPLING_TOOL),
            Decision::AskUser
        );
    }

    #[tokio::test]
    async fn a_request_outside_any_call_is_declined_with_the_reason() {
        let sampling = ServerSampling::new("srv", Arc::default());
        let error = sampling
            .create_message(
                Err(Refused::NoCall),
                serde_json::json!({"messages": [], "maxTokens": 5}),
            )
            .await
            .unwrap_err();
        assert_eq!(error.code, DECLINED);
        assert!(
            error.message.contains("no session's tool call"),
            "{error:?}"
        );
    }
}
