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

use super::compression::{self, Compressed, Summarizer};
use super::context::{Calibration, request_tokens, sent_history};
use super::responses::{function_responses, normalized, not_run};
use crate::model::content::push_merged;
use crate::model::session_context::{self, SessionContext};
use crate::model::window::ContextPolicy;
use crate::model::{
    CompressedPrefix, Content, FunctionCall, Model, ModelRequest, Part, Role, Usage,
};

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
    /// A model request finished: book its usage. `estimated` is our
    /// estimate of its input tokens (to calibrate the next ones).
    Usage {
        purpose: &'static str,
        usage: Usage,
        estimated: u64,
        model: String,
        window: u64,
    },
    /// What is sent was compressed (`trigger`: `auto` or `manual`).
    Compressed {
        trigger: &'static str,
        done: Compressed,
    },
    /// A compression failed; nothing changed.
    CompressionFailed {
        trigger: &'static str,
        message: String,
    },
    /// A compression asked for between turns ended: what it did, or why
    /// it failed.
    CompressionEnded(Result<Option<Compressed>, String>),
    /// Hooks the turn fired ran: each is a `hookRun` event.
    HookRuns(Vec<crate::hooks::HookRun>),
    /// The turn is over.
    Finished(TurnEnd),
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnEnd {
    /// `completed`, `cancelled`, `error`, `max_steps`, `loop_detected`,
    /// `blocked`/`stopped` (a BeforeAgent hook).
    pub reason: &'static str,
    pub message: Option<String>,
    pub usage: Usage,
}

/// Everything a turn needs, prepared by the actor.
pub struct TurnSpec {
    pub turn_id: String,
    pub text: String,
    /// The prompt's parts after its text (`session.prompt {parts}`).
    pub parts: Vec<geminid_protocol::turn::PromptPart>,
    /// What hooks added before this prompt (SessionStart's context): a
    /// text part ahead of the prompt's.
    pub hook_context: Option<String>,
    /// The BeforeAgent hooks to fire before the first request, if any.
    pub before_agent: Option<AgentHooks>,
    /// The AfterAgent hooks to fire on the turn's final response, if any.
    pub after_agent: Option<AgentHooks>,
    /// The PreCompress hooks for this job's trigger (`auto` in a turn,
    /// `manual` between turns), fired before each compression.
    pub pre_compress: Option<AgentHooks>,
    /// Where its references are read; `None`: nothing is read (the text
    /// goes as it is).
    pub references: Option<super::references::ReferenceReader>,
    /// The conversation before this turn.
    pub history: Vec<Content>,
    pub model: Arc<dyn Model>,
    pub tools: Vec<Value>,
    /// MCP servers still connecting that the session will see: the turn
    /// says it waits for them, waits (bounded), and takes the tools again.
    pub tools_ready: Option<ToolsReady>,
    pub workspace: String,
    pub memory: Arc<crate::memory::MemoryCache>,
    /// The session's approval mode and whether a person can answer.
    pub approval_mode: crate::policy::ApprovalMode,
    pub interactive: bool,
    /// Where the turn goes on when the model is over quota or
    /// overloaded: its name and client.
    pub fallback: Option<(String, Arc<dyn Model>)>,
    /// The model's name (for the ledger) and how much it reads.
    pub model_name: String,
    pub context: ContextPolicy,
    /// The summary sent in place of the history's start, if any.
    pub prefix: Option<CompressedPrefix>,
    /// How our estimates compare with the provider's counts so far.
    pub calibration: Calibration,
    pub limits: TurnLimits,
    pub cancel: CancellationToken,
}

/// Hooks a turn fires itself: the plan and the session's hook
/// environment; their runs go to the actor as `TurnMsg::HookRuns`.
pub struct AgentHooks {
    pub plan: crate::hooks::Plan,
    pub env: crate::hooks::HookEnv,
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
pub(super) struct Sink {
    pub(super) line: TurnLine,
}

impl Sink {
    pub(super) fn send(&self, msg: TurnMsg) {
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
    let user = match &spec.references {
        Some(reader) => {
            let resolved = tokio::select! {
                biased;
                () = spec.cancel.cancelled() => return ("cancelled", None),
                resolved = super::references::resolve(&spec.text, &spec.parts, reader, &spec.cancel) => resolved,
            };
            if !resolved.read.is_empty() || !resolved.skipped.is_empty() {
                sink.emit(EventPayload::PromptReferences {
                    turn_id: spec.turn_id.clone(),
                    read: resolved.read,
                    skipped: resolved.skipped,
                });
            }
            Content {
                role: Role::User,
                parts: resolved.parts,
            }
        }
        None => Content::user_text(spec.text.clone()),
    };
    let mut user = user;
    if let Some(context) = &spec.hook_context {
        user.parts.insert(0, Part::text(context.clone()));
    }
    if let Some(hooks) = &spec.before_agent {
        use crate::hooks::lifecycle::{self, BeforeAgent};
        let fields = lifecycle::before_agent_input(&spec.text);
        let fired = crate::hooks::fire(&hooks.plan, &hooks.env, fields, &spec.cancel).await;
        sink.send(TurnMsg::HookRuns(fired.runs));
        if spec.cancel.is_cancelled() {
            return ("cancelled", None);
        }
        match lifecycle::before_agent(fired.merged.as_ref()) {
            BeforeAgent::Blocked(reason) => return ("blocked", Some(reason)),
            BeforeAgent::Stopped(reason) => {
                sink.send(TurnMsg::History(user));
                return ("stopped", Some(reason));
            }
            BeforeAgent::Proceed(Some(context)) => user.parts.push(Part::text(context)),
            BeforeAgent::Proceed(None) => {}
        }
    }
    sink.send(TurnMsg::History(user.clone()));
    let mut contents = spec.history.clone();
    contents.push(user);
    let system = match system_text(spec).await {
        Ok(system) => system,
        Err(message) => return ("error", Some(message)),
    };
    let context_part = session_context(&spec.workspace).await;
    let sent = |contents: &[Content], prefix: Option<&CompressedPrefix>| {
        let mut out = vec![context_part.clone()];
        out.extend(sent_history(contents, prefix));
        normalized(&out)
    };
    let mut seen: HashMap<String, u32> = HashMap::new();
    let mut asked = spec.text.clone();
    let mut stop_hook_active = false;
    let mut prefix = spec.prefix.clone();
    let mut calibration = spec.calibration;
    let mut compression_failed = false;
    let mut current = (spec.model_name.clone(), spec.model.clone());
    let mut fallback = spec.fallback.clone();
    for step in 0..spec.limits.max_steps {
        let mut request = ModelRequest {
            system: system.clone(),
            contents: sent(&contents, prefix.as_ref()),
            tools: spec.tools.clone(),
            generation: Default::default(),
        };
        let mut estimate = request_tokens(&request);
        if calibration.apply(estimate) >= spec.context.compress_at() && !compression_failed {
            let compressed = tokio::select! {
                biased;
                () = spec.cancel.cancelled() => return ("cancelled", None),
                done = compress(spec, sink, &contents, prefix.as_ref(), calibration, "auto") => done,
            };
            match compressed {
                Ok(done) => {
                    prefix = Some(done.prefix);
                    request.contents = sent(&contents, prefix.as_ref());
                    estimate = request_tokens(&request);
                }
                Err(_) => compression_failed = true,
            }
        }
        if calibration.apply(estimate) > spec.context.window {
            return (
                "error",
                Some(format!(
                    "the conversation no longer fits the model's context window (about {} of {} tokens) and could not be compressed enough; not sent",
                    calibration.apply(estimate),
                    spec.context.window
                )),
            );
        }
        let response = match stream_response(
            spec,
            sink,
            &mut current,
            &mut fallback,
            &request,
            usage,
            estimate,
        )
        .await
        {
            Ok((parts, reported)) => {
                calibration.learn(estimate, reported);
                parts
            }
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
        let mut response = response;
        name_calls(&mut response, &spec.turn_id, step);
        let calls: Vec<FunctionCall> = response
            .iter()
            .filter_map(|p| p.function_call.clone())
            .collect();
        let content = Content {
            role: Role::Model,
            parts: response,
        };
        let said = match &spec.after_agent {
            Some(_) => final_text(&content.parts),
            None => String::new(),
        };
        if !content.parts.is_empty() {
            sink.send(TurnMsg::History(content.clone()));
            contents.push(content);
        }
        if calls.is_empty() {
            let Some(hooks) = &spec.after_agent else {
                return ("completed", None);
            };
            use crate::hooks::lifecycle::{self, AfterAgent};
            let fields = lifecycle::after_agent_input(&asked, &said, stop_hook_active);
            let fired = crate::hooks::fire(&hooks.plan, &hooks.env, fields, &spec.cancel).await;
            sink.send(TurnMsg::HookRuns(fired.runs));
            match lifecycle::after_agent(fired.merged.as_ref()) {
                AfterAgent::Done => return ("completed", None),
                AfterAgent::Stopped(reason) => return ("stopped", Some(reason)),
                AfterAgent::Again(reason) => {
                    // The reason goes to the model as the next request.
                    let again = Content::user_text(reason.clone());
                    sink.send(TurnMsg::History(again.clone()));
                    contents.push(again);
                    asked = reason;
                    stop_hook_active = true;
                    continue;
                }
            }
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

/// The text of a final response (thoughts left out), for AfterAgent.
fn final_text(parts: &[Part]) -> String {
    parts
        .iter()
        .filter(|p| !p.thought)
        .filter_map(|p| p.text.as_deref())
        .collect()
}

/// The system instruction: `GEMINI_SYSTEM_MD`'s file or the built-in
/// text, with the workspace's memory. A `GEMINI_SYSTEM_MD` naming a file
/// that cannot be read ends the turn (as in 0.61), saying which.
async fn system_text(spec: &TurnSpec) -> Result<String, String> {
    use crate::model::prompt::{self, PromptInputs, SystemMd};
    let memory = spec.memory.clone();
    let workspace = std::path::PathBuf::from(&spec.workspace);
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let setting = std::env::var("GEMINI_SYSTEM_MD").ok();
    let which = prompt::system_md(setting.as_deref(), &workspace, home.as_deref());
    let read = tokio::task::spawn_blocking(move || {
        let base = match &which {
            SystemMd::Builtin => None,
            SystemMd::File(path) => Some(std::fs::read_to_string(path).map_err(|e| {
                format!(
                    "missing system prompt file '{}' (GEMINI_SYSTEM_MD): {e}",
                    path.display()
                )
            })),
        };
        let git = workspace.join(".git").exists();
        (memory.get(&workspace).text.clone(), base, git)
    })
    .await;
    let (memory, base, git) = read.map_err(|e| format!("system instruction: {e}"))?;
    let base = base.transpose()?;
    let tools: Vec<String> = spec
        .tools
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    let inputs = PromptInputs {
        workspace: &spec.workspace,
        memory: &memory,
        approval_mode: spec.approval_mode,
        interactive: spec.interactive,
        tools: &tools,
        git,
    };
    Ok(prompt::system_instruction(&inputs, base.as_deref()))
}

/// The session context part for `workspace` (its folder tree read off
/// the runtime's threads).
async fn session_context(workspace: &str) -> Content {
    let root = std::path::PathBuf::from(workspace);
    let tree = tokio::task::spawn_blocking(move || session_context::folder_tree(&root))
        .await
        .unwrap_or_default();
    let temp = std::env::temp_dir().display().to_string();
    Content::user_text(session_context::render(&SessionContext {
        now_ms: crate::now_ms(),
        os: std::env::consts::OS,
        temp_dir: &temp,
        workspaces: &[workspace.to_owned()],
        trees: &[tree],
    }))
}

/// Streams one model response, forwarding text and thought deltas as
/// events. On failure or cancellation returns how the turn ends and the
/// parts received so far.
async fn stream_response(
    spec: &TurnSpec,
    sink: &Sink,
    current: &mut (String, Arc<dyn Model>),
    fallback: &mut Option<(String, Arc<dyn Model>)>,
    request: &ModelRequest,
    usage: &mut Usage,
    estimate: u64,
) -> Result<(Vec<Part>, u64), (Ending, Vec<Part>)> {
    let notice = |problem: &str, wait: Duration| {
        sink.emit(EventPayload::Error {
            message: format!("model: {problem}; retrying in {:.1} s", wait.as_secs_f64()),
        });
    };
    let mut stream = loop {
        let started = tokio::select! {
            biased;
            () = spec.cancel.cancelled() => return Err((("cancelled", None), Vec::new())),
            started = current.1.stream(request, &notice) => started,
        };
        match started {
            Ok(stream) => break stream,
            Err(e)
                if falls_back(&e.kind) && fallback.as_ref().is_some_and(|f| f.0 != current.0) =>
            {
                let Some(next) = fallback.take() else {
                    return Err((("error", Some(e.message)), Vec::new()));
                };
                sink.emit(EventPayload::ModelFallback {
                    turn_id: spec.turn_id.clone(),
                    from: current.0.clone(),
                    to: next.0.clone(),
                    reason: e.message,
                });
                *current = next;
            }
            Err(e) => return Err((("error", Some(e.message)), Vec::new())),
        }
    };
    let model_name = current.0.clone();
    let mut parts = Vec::new();
    let mut step_usage = None;
    loop {
        let item = tokio::select! {
            biased;
            () = spec.cancel.cancelled() => {
                add_usage(spec, sink, &model_name, usage, step_usage, estimate);
                return Err((("cancelled", None), parts));
            }
            item = stream.next() => item,
        };
        match item {
            None => break,
            Some(Err(e)) => {
                add_usage(spec, sink, &model_name, usage, step_usage, estimate);
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
    add_usage(spec, sink, &model_name, usage, step_usage, estimate);
    Ok((parts, step_usage.map_or(0, |u| u.input_tokens)))
}

/// Failures a fallback model may get round: quota and overload.
fn falls_back(kind: &crate::model::ModelErrorKind) -> bool {
    use crate::model::ModelErrorKind::{RateLimited, Server};
    matches!(kind, RateLimited | Server)
}

/// Adds a step's usage to the turn's and books it with the session.
fn add_usage(
    spec: &TurnSpec,
    sink: &Sink,
    model: &str,
    total: &mut Usage,
    step: Option<Usage>,
    estimated: u64,
) {
    if let Some(step) = step {
        total.add(step);
        sink.send(TurnMsg::Usage {
            purpose: "turn",
            usage: step,
            estimated,
            model: model.to_owned(),
            window: spec.context.window,
        });
    }
}

/// Compresses what is sent (the turn's `contents` under `prefix`); tells
/// the session what happened, and why not when it failed.
async fn compress(
    spec: &TurnSpec,
    sink: &Sink,
    contents: &[Content],
    prefix: Option<&CompressedPrefix>,
    calibration: Calibration,
    trigger: &'static str,
) -> Result<Compressed, String> {
    let Some(plan) = compression::plan(contents, prefix) else {
        let message = "nothing before the current prompt can be summarized".to_owned();
        sink.send(TurnMsg::CompressionFailed {
            trigger,
            message: message.clone(),
        });
        return Err(message);
    };
    if let Some(hooks) = &spec.pre_compress {
        // Advisory: what it says changes nothing.
        let mut fields = serde_json::Map::new();
        fields.insert("trigger".into(), trigger.into());
        let fired = crate::hooks::fire(&hooks.plan, &hooks.env, fields, &spec.cancel).await;
        sink.send(TurnMsg::HookRuns(fired.runs));
    }
    let on_usage = |usage: Usage, estimated: u64| {
        sink.send(TurnMsg::Usage {
            purpose: "compression",
            usage,
            estimated,
            model: spec.model_name.clone(),
            window: spec.context.window,
        });
    };
    let summarizer = Summarizer {
        model: &spec.model,
        window: spec.context.window,
        calibration,
        on_usage: &on_usage,
    };
    match compression::summarize(&summarizer, contents, prefix, &plan).await {
        Ok(done) => {
            sink.send(TurnMsg::Compressed {
                trigger,
                done: done.clone(),
            });
            Ok(done)
        }
        Err(message) => {
            sink.send(TurnMsg::CompressionFailed {
                trigger,
                message: message.clone(),
            });
            Err(message)
        }
    }
}

/// A compression a client asked for between turns (`spec.text` unused):
/// ends with [`TurnMsg::CompressionEnded`] — `Ok(None)` when there was
/// nothing old enough to summarize.
pub async fn compress_between_turns(spec: TurnSpec, line: TurnLine) {
    let sink = Sink { line };
    let result = if compression::plan(&spec.history, spec.prefix.as_ref()).is_none() {
        Ok(None)
    } else {
        tokio::select! {
            biased;
            () = spec.cancel.cancelled() => Err("cancelled".to_owned()),
            done = compress(&spec, &sink, &spec.history, spec.prefix.as_ref(), spec.calibration, "manual") => done.map(Some),
        }
    };
    sink.send(TurnMsg::CompressionEnded(result));
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

/// Gives every function call an id: the provider's when it sent one
/// (kept as is: OpenAI-compatible servers check the ids they made), else
/// `<name>__<turn>-<step>-<position>` as 0.61 names them. The response to
/// a call carries the same id.
fn name_calls(parts: &mut [Part], turn_id: &str, step: u32) {
    let calls = parts.iter_mut().filter_map(|p| p.function_call.as_mut());
    for (index, call) in calls.enumerate() {
        if call.id.is_none() {
            call.id = Some(format!("{}__{turn_id}-{step}-{index}", call.name));
        }
    }
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
    fn every_call_gets_an_id_named_after_its_tool() {
        let mut parts = vec![
            Part::text("x"),
            Part::call(call("glob", json!({}))),
            Part::call(FunctionCall {
                id: Some("abc".into()),
                ..call("grep", json!({}))
            }),
            Part::call(FunctionCall {
                id: Some("ls__k".into()),
                ..call("ls", json!({}))
            }),
        ];
        name_calls(&mut parts, "turn-7", 2);
        let ids: Vec<_> = parts
            .iter()
            .filter_map(|p| p.function_call.as_ref()?.id.clone())
            .collect();
        assert_eq!(ids, ["glob__turn-7-2-0", "abc", "ls__k"]);
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
