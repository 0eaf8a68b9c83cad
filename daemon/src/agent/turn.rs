//! One turn: the prompt goes to the model with the conversation so far and
//! the registry's tools; the model's function calls run through the
//! session's scheduler (the actor), their responses go back, and this
//! repeats until the model answers without calls, the step limit is
//! reached, a loop is detected, or the turn is cancelled.
//!
//! The turn runs as its own task and changes nothing itself: every event,
//! history entry and call goes to the actor as a [`TurnMsg`], so the actor
//! stays the only writer of the session. The history stays consistent:
//! every function call in it is followed by its response (real, or an
//! error saying why it did not run).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use geminid_protocol::event::EventPayload;
use geminid_protocol::tool::ToolCallSnapshot;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::responses::{function_responses, normalized, not_run};
use crate::model::content::push_merged;
use crate::model::{Content, FunctionCall, Model, ModelRequest, Part, Role, Usage};

/// Limits of one turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnLimits {
    /// Model responses per turn.
    pub max_steps: u32,
    /// The same call (name and arguments) this many times in one turn ends it.
    pub loop_threshold: u32,
}

impl Default for TurnLimits {
    fn default() -> Self {
        TurnLimits {
            max_steps: 100,
            loop_threshold: 5,
        }
    }
}

/// What a turn asks of its session's actor.
pub enum TurnMsg {
    /// Record an event (deltas, notices).
    Emit(EventPayload),
    /// Append to the conversation history.
    History(Content),
    /// Schedule these calls together; the answer has one entry per call.
    Calls {
        calls: Vec<(String, Value)>,
        reply: oneshot::Sender<Vec<oneshot::Receiver<ToolCallSnapshot>>>,
    },
    /// The turn is over.
    Finished(TurnEnd),
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnEnd {
    /// `completed`, `cancelled`, `error`, `max_steps`, `loop_detected`.
    pub reason: &'static str,
    pub message: Option<String>,
    pub usage: Usage,
}

/// Everything a turn needs, prepared by the actor.
pub struct TurnSpec {
    pub turn_id: String,
    pub text: String,
    /// The conversation before this turn.
    pub history: Vec<Content>,
    pub model: Arc<dyn Model>,
    pub tools: Vec<Value>,
    /// MCP servers still connecting that the session will see: the turn
    /// says it waits for them, waits (bounded), and takes the tools again.
    pub tools_ready: Option<ToolsReady>,
    pub workspace: String,
    pub memory: Arc<crate::memory::MemoryCache>,
    pub limits: TurnLimits,
    pub cancel: CancellationToken,
}

/// What a turn waits for before its first request: the servers' names and
/// a future giving the tools once they are connected (or the wait is over).
pub struct ToolsReady {
    pub servers: Vec<String>,
    pub bound: std::time::Duration,
    /// In a mutex only so that the spec stays `Sync`; taken out to await.
    pub tools: std::sync::Mutex<ReadyTools>,
}

pub type ReadyTools = std::pin::Pin<Box<dyn std::future::Future<Output = Vec<Value>> + Send>>;

/// How a turn reaches its session: the actor hands every turn a function
/// that forwards its messages, so this room never names the actor.
pub type TurnLine = Box<dyn Fn(TurnMsg) + Send + Sync>;

/// The turn's line to its actor.
struct Sink {
    line: TurnLine,
}

impl Sink {
    fn send(&self, msg: TurnMsg) {
        (self.line)(msg);
    }

    fn emit(&self, payload: EventPayload) {
        self.send(TurnMsg::Emit(payload));
    }
}

/// Runs the turn to its end and reports it.
pub async fn run(mut spec: TurnSpec, line: TurnLine) {
    let sink = Sink { line };
    if let Some(ready) = spec.tools_ready.take() {
        for server in &ready.servers {
            sink.emit(EventPayload::McpServerStatus {
                server: server.clone(),
                status: "connecting".to_owned(),
                message: Some(format!(
                    "the prompt waits for this server to finish connecting (at most {} s)",
                    ready.bound.as_secs()
                )),
            });
        }
        let tools = ready.tools.into_inner().unwrap_or_else(|e| e.into_inner());
        tokio::select! {
            tools = tools => spec.tools = tools,
            () = spec.cancel.cancelled() => {}
        }
    }
    let mut usage = Usage::default();
    let end = drive(&spec, &sink, &mut usage).await;
    sink.send(TurnMsg::Finished(TurnEnd {
        reason: end.0,
        message: end.1,
        usage,
    }));
}

type Ending = (&'static str, Option<String>);

async fn drive(spec: &TurnSpec, sink: &Sink, usage: &mut Usage) -> Ending {
    let user = Content::user_text(spec.text.clone());
    sink.send(TurnMsg::History(user.clone()));
    let mut contents = spec.history.clone();
    contents.push(user);
    let system = {
        let memory = spec.memory.clone();
        let workspace = std::path::PathBuf::from(&spec.workspace);
        match tokio::task::spawn_blocking(move || memory.get(&workspace)).await {
            Ok(memory) => crate::model::prompt::system_instruction(&spec.workspace, &memory.text),
            Err(_) => crate::model::prompt::system_instruction(&spec.workspace, ""),
        }
    };
    let mut seen: HashMap<String, u32> = HashMap::new();
    for _step in 0..spec.limits.max_steps {
        let request = ModelRequest {
            system: system.clone(),
            contents: normalized(&contents),
            tools: spec.tools.clone(),
        };
        let response = match stream_response(spec, sink, &request, usage).await {
            Ok(parts) => parts,
            Err((ending, partial)) => {
                // What was said stays said; calls that never ran are dropped.
                let said: Vec<Part> = partial
                    .into_iter()
                    .filter(|p| p.function_call.is_none())
                    .collect();
                if !said.is_empty() {
                    sink.send(TurnMsg::History(Content {
                        role: Role::Model,
                        parts: said,
                    }));
                }
                return ending;
            }
        };
        let calls: Vec<FunctionCall> = response
            .iter()
            .filter_map(|p| p.function_call.clone())
            .collect();
        let content = Content {
            role: Role::Model,
            parts: response,
        };
        if !content.parts.is_empty() {
            sink.send(TurnMsg::History(content.clone()));
            contents.push(content);
        }
        if calls.is_empty() {
            return ("completed", None);
        }
        if let Some(repeated) = repeated_call(&mut seen, &calls, spec.limits.loop_threshold) {
            let message = format!(
                "loop detected: the model called `{}` with the same arguments {} times in this turn",
                repeated, spec.limits.loop_threshold
            );
            let responses = calls
                .iter()
                .map(|c| not_run(c, &format!("not run: {message}")))
                .collect();
            sink.send(TurnMsg::History(Content {
                role: Role::User,
                parts: responses,
            }));
            return ("loop_detected", Some(message));
        }
        let snapshots = run_calls(sink, &calls).await;
        let responses = function_responses(&calls, &snapshots);
        sink.send(TurnMsg::History(responses.clone()));
        contents.push(responses);
        if spec.cancel.is_cancelled() {
            return ("cancelled", None);
        }
    }
    (
        "max_steps",
        Some(format!(
            "the turn reached its limit of {} model responses",
            spec.limits.max_steps
        )),
    )
}

/// Streams one model response, forwarding text and thought deltas as
/// events. On failure or cancellation returns how the turn ends and the
/// parts received so far.
async fn stream_response(
    spec: &TurnSpec,
    sink: &Sink,
    request: &ModelRequest,
    usage: &mut Usage,
) -> Result<Vec<Part>, (Ending, Vec<Part>)> {
    let notice = |problem: &str, wait: Duration| {
        sink.emit(EventPayload::Error {
            message: format!("model: {problem}; retrying in {:.1} s", wait.as_secs_f64()),
        });
    };
    let started = tokio::select! {
        biased;
        () = spec.cancel.cancelled() => return Err((("cancelled", None), Vec::new())),
        started = spec.model.stream(request, &notice) => started,
    };
    let mut stream = match started {
        Ok(stream) => stream,
        Err(e) => return Err((("error", Some(e.message)), Vec::new())),
    };
    let mut parts = Vec::new();
    let mut step_usage = None;
    loop {
        let item = tokio::select! {
            biased;
            () = spec.cancel.cancelled() => {
                add_usage(usage, step_usage);
                return Err((("cancelled", None), parts));
            }
            item = stream.next() => item,
        };
        match item {
            None => break,
            Some(Err(e)) => {
                add_usage(usage, step_usage);
                return Err((("error", Some(e.message)), parts));
            }
            Some(Ok(chunk)) => {
                step_usage = chunk.usage.or(step_usage);
                for part in chunk.parts {
                    if part == Part::text("") || part == Part::thought("") {
                        continue;
                    }
                    if let (Some(text), None) = (&part.text, &part.function_call) {
                        let delta = text.clone();
                        let turn_id = spec.turn_id.clone();
                        sink.emit(if part.thought {
                            EventPayload::ModelThought { turn_id, delta }
                        } else {
                            EventPayload::ModelText { turn_id, delta }
                        });
                    }
                    push_merged(&mut parts, part);
                }
            }
        }
    }
    add_usage(usage, step_usage);
    Ok(parts)
}

fn add_usage(total: &mut Usage, step: Option<Usage>) {
    if let Some(step) = step {
        total.input_tokens += step.input_tokens;
        total.output_tokens += step.output_tokens;
    }
}

/// Schedules the calls together and waits for each one's final snapshot.
async fn run_calls(sink: &Sink, calls: &[FunctionCall]) -> Vec<Option<ToolCallSnapshot>> {
    let (reply, accepted) = oneshot::channel();
    sink.send(TurnMsg::Calls {
        calls: calls
            .iter()
            .map(|c| (c.name.clone(), c.args.clone()))
            .collect(),
        reply,
    });
    let Ok(done) = accepted.await else {
        return vec![None; calls.len()];
    };
    let waits = done.into_iter().map(|rx| async move { rx.await.ok() });
    let mut snapshots = futures::future::join_all(waits).await;
    snapshots.resize(calls.len(), None);
    snapshots
}

/// Counts each call; returns the name of one seen `threshold` times.
fn repeated_call(
    seen: &mut HashMap<String, u32>,
    calls: &[FunctionCall],
    threshold: u32,
) -> Option<String> {
    let mut found = None;
    for call in calls {
        let key = format!("{}\u{0}{}", call.name, call.args);
        let count = seen.entry(key).or_insert(0);
        *count += 1;
        if *count >= threshold && found.is_none() {
            found = Some(call.name.clone());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, args: Value) -> FunctionCall {
        FunctionCall {
            id: None,
            name: name.into(),
            args,
        }
    }

    #[test]
    fn the_same_call_repeated_is_a_loop_but_different_args_are_not() {
        let mut seen = HashMap::new();
        for _ in 0..4 {
            assert_eq!(
                repeated_call(
                    &mut seen,
                    &[call("glob", json!({"p": 1})), call("glob", json!({"p": 2}))],
                    5
                ),
                None
            );
        }
        assert_eq!(
            repeated_call(&mut seen, &[call("glob", json!({"p": 1}))], 5),
            Some("glob".into())
        );
    }
}
