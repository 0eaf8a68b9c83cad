//! The session's side of MCP sampling: a server's `sampling/createMessage`
//! made during one of the session's calls becomes a call of the pseudo tool
//! `mcp_sampling` of that server (named `<server>__mcp_sampling`). The
//! policy decides it as it decides that server's tools (ask by default,
//! deny when nobody can be asked), except that "every tool of this
//! server" answers do not cover it; a person approves it through the
//! confirmation flow every attached client sees; then the request goes to
//! the session's model without tools, its tokens are booked in the
//! session's account and an `mcpSampling` event records it.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::StreamExt;
use futures::future::BoxFuture;
use geminid_protocol::event::EventPayload;
use geminid_protocol::tool::{CallState, ToolCallSnapshot};
use rmcp::ErrorData;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::SessionError;
use super::actor::{Actor, Internal};
use super::handle::{Command, SessionHandle, Waiter};
use crate::discovery::mcp::sampling::{Sampled, Sampler, SamplingReply, declined};
use crate::discovery::mcp::sampling_convert as convert;
use crate::model::{Model, Usage};
use crate::policy::{Decision, PolicyInput, ToolKind};
use crate::scheduler::{Prepared, ToolCall};
use crate::tools::{
    ConfirmationDetails, OutputSink, ToolError, ToolInvocation, ToolLocation, ToolResult,
};

use crate::discovery::mcp::sampling::SAMPLING_TOOL;

/// Finds the session a request belongs to.
pub type FindSession = Arc<dyn Fn(&str) -> Result<SessionHandle, SessionError> + Send + Sync>;

/// The daemon's [`Sampler`]: hands each request to its session.
pub struct SessionSampler(pub FindSession);

impl Sampler for SessionSampler {
    fn sample(
        &self,
        session: String,
        server: String,
        request: Value,
    ) -> BoxFuture<'static, Result<Value, ErrorData>> {
        let found = (self.0)(&session);
        Box::pin(async move {
            let handle = found.map_err(|e| declined(format!("sampling request declined: {e}")))?;
            let (reply, answer) = oneshot::channel();
            let gone = || {
                declined(format!(
                    "sampling request declined: session {session} stopped"
                ))
            };
            handle
                .commands
                .send(Command::Sample {
                    server,
                    request,
                    reply,
                })
                .await
                .map_err(|_| gone())?;
            answer.await.map_err(|_| gone())?
        })
    }
}

impl Actor {
    /// Starts a sampling request of `server` as a call of this session;
    /// `reply` gets the model's answer or why there is none.
    pub(super) fn start_sampling(&mut self, server: String, request: Value, reply: SamplingReply) {
        if self.stopping {
            let _ = reply.send(Err(declined(format!(
                "sampling request declined: session {} is stopping",
                self.record.id
            ))));
            return;
        }
        let model = match self.sampling_model(&request) {
            Ok(model) => model,
            Err(why) => {
                let _ = reply.send(Err(declined(format!("sampling request declined: {why}"))));
                return;
            }
        };
        let call_id = format!("call-{}", self.next_seq());
        let name = format!("{server}__{SAMPLING_TOOL}");
        let answer = Arc::new(Mutex::new(None));
        let run = SamplingRun {
            call_id: call_id.clone(),
            server: server.clone(),
            request: request.clone(),
            model,
            answer: answer.clone(),
            internal: self.internal.clone(),
        };
        self.invocations.insert(call_id.clone(), Box::new(run));
        self.sampling_calls.insert(call_id.clone(), server);
        let saved = serde_json::to_vec(&(&name, &request)).unwrap_or_default();
        self.pending_open_call(&call_id, Some(saved));
        let (done, finished) = oneshot::channel();
        self.waiters
            .entry(call_id.clone())
            .or_default()
            .push(Waiter::Snapshot(done));
        // The server's call waits on this one: it runs beyond the limit.
        let effects = self
            .scheduler
            .submit_nested(ToolCall::new(call_id, name, request));
        self.apply(effects);
        self.tasks.spawn(async move {
            let outcome = match finished.await {
                Ok(snapshot) => answer_of(&snapshot, &answer),
                Err(_) => Err(declined(
                    "sampling request declined: the session stopped".to_owned(),
                )),
            };
            let _ = reply.send(outcome);
        });
    }

    /// The model a request goes to: the session's, or the available model
    /// (the ones sessions may switch to: `geminid.models`, the fallback)
    /// its first matching `modelPreferences` hint names.
    fn sampling_model(&mut self, request: &Value) -> Result<(String, Arc<dyn Model>), String> {
        use crate::model::choice;
        let cwd = std::path::PathBuf::from(&self.record.cwd);
        let (config, model) = self
            .deps
            .model
            .model_named(Some(&cwd), self.record.model.as_deref())
            .map_err(|e| e.message)?;
        let settings = self.deps.model.settings();
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let fallback = choice::fallback_model(&env, &settings);
        let listed = choice::listed_models(&config.model, fallback.as_deref(), &settings);
        let available: Vec<&str> = listed.iter().map(String::as_str).collect();
        match convert::chosen_model(request, &available) {
            Some(hinted) if hinted != config.model => {
                let (_, client) = self
                    .deps
                    .model
                    .model_named(Some(&cwd), Some(hinted))
                    .map_err(|e| e.message)?;
                Ok((hinted.to_owned(), client))
            }
            _ => Ok((config.model, model)),
        }
    }

    /// Decides a sampling request as a call of `server`'s pseudo tool.
    pub(super) fn prepare_sampling(&mut self, call_id: String, server: String) {
        let Some(call) = self.scheduler.call(&call_id) else {
            return;
        };
        let engine = self.deps.policy.engine_for(&self.ctx.workspace_root);
        let verdict = engine.check_with_session(
            &PolicyInput {
                tool_name: &call.name,
                args: &call.args,
                server_name: Some(&server),
                remote_name: Some(SAMPLING_TOOL),
                annotations: None,
                tool_kind: ToolKind::Other,
                mode: self.record.approval_mode,
                interactive: self.record.interactive,
            },
            &self.allowlist.tools_only(),
        );
        let description = convert::headline(&server, &call.args);
        let prepared = match verdict.decision {
            Decision::Allow => Prepared::Allowed {
                description,
                locations: Vec::new(),
                decided_by: super::driver::explain(&verdict),
            },
            Decision::Deny => Prepared::Denied {
                reason: super::driver::explain(&verdict),
            },
            Decision::AskUser => Prepared::Ask {
                description,
                locations: Vec::new(),
                details: sampling_details(&server, &call.args),
                decided_by: None,
            },
        };
        let effects = self.scheduler.prepared(&call_id, prepared);
        self.apply(effects);
    }

    /// Books what a sampling request cost and records it.
    pub(super) fn sampled(&mut self, sampled: Sampled) {
        let Sampled {
            call_id,
            server,
            model,
            usage,
            stop_reason,
        } = sampled;
        let window = self.context_policy(&model).window;
        let ledger = self.record.tokens.get_or_insert_with(Default::default);
        ledger.book(&model, window, usage);
        let tokens = crate::wire::session_tokens(ledger);
        self.pending.record = Some(self.record.clone());
        self.emit(EventPayload::McpSampling {
            server,
            call_id,
            model,
            request: crate::wire::token_counts(usage),
            stop_reason: stop_reason.to_owned(),
        });
        self.emit(EventPayload::TokenUsage {
            turn_id: None,
            purpose: "sampling".to_owned(),
            request: crate::wire::token_counts(usage),
            tokens,
        });
    }
}

fn sampling_details(server: &str, request: &Value) -> ConfirmationDetails {
    ConfirmationDetails::Info {
        title: format!("Sampling request from MCP server {server}"),
        prompt: convert::summary(server, request),
        urls: Vec::new(),
    }
}

/// The server's answer from the call's end: the model's result, or why
/// there is none (denied, cancelled, failed).
fn answer_of(
    snapshot: &ToolCallSnapshot,
    answer: &Mutex<Option<Value>>,
) -> Result<Value, ErrorData> {
    let taken = answer.lock().unwrap_or_else(|e| e.into_inner()).take();
    match (&snapshot.state, taken) {
        (CallState::Success, Some(result)) => Ok(result),
        (CallState::Cancelled, _) => Err(declined(format!(
            "the sampling request was declined: {}",
            snapshot
                .error
                .as_ref()
                .map(|e| e.message.as_str())
                .unwrap_or("cancelled")
        ))),
        (_, _) => {
            let why = snapshot
                .error
                .as_ref()
                .map(|e| e.message.clone())
                .unwrap_or_else(|| "no answer".to_owned());
            let denied = snapshot.error.as_ref().is_some_and(|e| e.kind == "denied");
            if denied {
                Err(declined(format!("the sampling request was denied: {why}")))
            } else {
                Err(ErrorData::internal_error(
                    format!("the sampling request failed: {why}"),
                    None,
                ))
            }
        }
    }
}

/// One approved sampling request: the model request it becomes, run.
struct SamplingRun {
    call_id: String,
    server: String,
    request: Value,
    model: (String, Arc<dyn Model>),
    answer: Arc<Mutex<Option<Value>>>,
    internal: tokio::sync::mpsc::UnboundedSender<Internal>,
}

#[async_trait]
impl ToolInvocation for SamplingRun {
    fn description(&self) -> String {
        convert::headline(&self.server, &self.request)
    }

    fn locations(&self) -> Vec<ToolLocation> {
        Vec::new()
    }

    async fn confirmation(&self) -> Result<ConfirmationDetails, ToolError> {
        Ok(sampling_details(&self.server, &self.request))
    }

    async fn execute(
        self: Box<Self>,
        cancel: CancellationToken,
        _output: OutputSink,
    ) -> Result<ToolResult, ToolError> {
        let request = convert::model_request(&self.request).map_err(ToolError::invalid)?;
        let (name, model) = &self.model;
        let run = async {
            let mut stream = model
                .stream(&request, &|_, _| {})
                .await
                .map_err(|e| ToolError::execution(format!("the model failed: {e}")))?;
            let mut text = String::new();
            let mut usage = Usage::default();
            while let Some(chunk) = stream.next().await {
                let chunk =
                    chunk.map_err(|e| ToolError::execution(format!("the model failed: {e}")))?;
                for part in chunk.parts.iter().filter(|p| !p.thought) {
                    text.push_str(part.text.as_deref().unwrap_or_default());
                }
                if let Some(latest) = chunk.usage {
                    usage = latest;
                }
            }
            Ok::<_, ToolError>((text, usage))
        };
        let (text, usage) = tokio::select! {
            done = run => done?,
            () = cancel.cancelled() => {
                return Err(ToolError::new(
                    crate::tools::ToolErrorKind::Cancelled,
                    "the sampling request was cancelled",
                ));
            }
        };
        let stop_reason = convert::stop_reason(&self.request, usage.output_tokens);
        let _ = self.internal.send(Internal::Sampled(Sampled {
            call_id: self.call_id.clone(),
            server: self.server.clone(),
            model: name.clone(),
            usage,
            stop_reason,
        }));
        *self.answer.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(convert::result(&text, name, stop_reason));
        Ok(ToolResult::text(text))
    }
}
