//! MCP sampling on the client side: which session a server's
//! `sampling/createMessage` belongs to (the session whose tool call it made
//! the request during), and the hand-off to the daemon's [`Sampler`] (the
//! session: policy, confirmation, its model; `session/sampling.rs`).
//!
//! A server names no call in its request (the TypeScript SDK relates it
//! to the call only on its side), so the request belongs to the session
//! whose calls to that server are in flight. When none are (a probe, a
//! server asking on its own) or calls of several sessions are, nobody can
//! be said to have asked: the request is declined, never guessed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use rmcp::ErrorData;
use rmcp::model::ErrorCode;
use serde_json::Value;

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

/// One server's side: the sessions whose calls to it are in flight.
pub struct ServerSampling {
    server: String,
    desk: Arc<SamplingDesk>,
    /// Session id → calls in flight.
    calls: Mutex<HashMap<String, usize>>,
}

/// Counts a call in flight for its session until dropped.
pub struct CallInFlight {
    sampling: Arc<ServerSampling>,
    session: String,
}

impl Drop for CallInFlight {
    fn drop(&mut self) {
        let mut calls = self.sampling.lock();
        if let Some(n) = calls.get_mut(&self.session) {
            *n -= 1;
            if *n == 0 {
                calls.remove(&self.session);
            }
        }
    }
}

/// Why a request belongs to no session.
#[derive(Debug, PartialEq, Eq)]
pub enum Unattributed {
    /// No call of any session is in flight.
    NoCall,
    /// Calls of several sessions are.
    Several(usize),
}

/// The one session with calls in flight, if there is exactly one.
pub fn attribute(calls: &HashMap<String, usize>) -> Result<&str, Unattributed> {
    let mut live = calls.iter().filter(|(_, n)| **n > 0).map(|(s, _)| s);
    match (live.next(), live.next()) {
        (None, _) => Err(Unattributed::NoCall),
        (Some(one), None) => Ok(one),
        (Some(_), Some(_)) => Err(Unattributed::Several(
            calls.values().filter(|n| **n > 0).count(),
        )),
    }
}

impl ServerSampling {
    pub fn new(server: &str, desk: Arc<SamplingDesk>) -> Arc<ServerSampling> {
        Arc::new(ServerSampling {
            server: server.to_owned(),
            desk,
            calls: Mutex::new(HashMap::new()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, usize>> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A call of `session` to this server starts.
    pub fn enter(self: &Arc<Self>, session: &str) -> CallInFlight {
        *self.lock().entry(session.to_owned()).or_default() += 1;
        CallInFlight {
            sampling: self.clone(),
            session: session.to_owned(),
        }
    }

    /// Answers one `sampling/createMessage` (params as JSON).
    pub async fn create_message(&self, request: Value) -> Result<Value, ErrorData> {
        let session = match attribute(&self.lock()) {
            Ok(session) => session.to_owned(),
            Err(why) => {
                let why = match why {
                    Unattributed::NoCall => "no session's tool call to it is running".to_owned(),
                    Unattributed::Several(n) => format!(
                        "tool calls of {n} sessions are running, so the session that asked cannot be told"
                    ),
                };
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
    let result = sampling.create_message(request).await?;
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
    fn a_request_belongs_to_the_one_session_with_calls_in_flight() {
        let sampling = ServerSampling::new("srv", Arc::default());
        assert_eq!(attribute(&sampling.lock()), Err(Unattributed::NoCall));
        let first = sampling.enter("s1");
        let second = sampling.enter("s1");
        assert_eq!(attribute(&sampling.lock()), Ok("s1"));
        let other = sampling.enter("s2");
        assert_eq!(attribute(&sampling.lock()), Err(Unattributed::Several(2)));
        drop(first);
        drop(other);
        assert_eq!(attribute(&sampling.lock()), Ok("s1"));
        drop(second);
        assert_eq!(attribute(&sampling.lock()), Err(Unattributed::NoCall));
    }

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
            .create_message(serde_json::json!({"messages": [], "maxTokens": 5}))
            .await
            .unwrap_err();
        assert_eq!(error.code, DECLINED);
        assert!(
            error.message.contains("no session's tool call"),
            "{error:?}"
        );
    }
}
