//! The session actor: one task per loaded session owns its state, fed by a
//! command channel (from rpc/) and an internal channel (from the tasks it
//! spawns). No locks around session state.
//!
//! Every step ends with [`Actor::commit`]: the events the step produced
//! are logged to the store in one write (durable from then on), and only
//! then broadcast and answered (persist-then-broadcast). Steps that arrive
//! together share one write (group commit). Then the step goes to the
//! store's apply thread for sled (`store/applier.rs`, `store/tail.rs`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use geminid_protocol::event::{EventPayload, SessionEvent};
use serde_json::value::RawValue;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::handle::{Command, SessionHandle, Subscription, Waiter};
use crate::agent::{Conversation, PromptQueue, TurnLimits, TurnMsg};
use crate::scheduler::{CallState, Effect, Scheduler, ToolCall};
use crate::store::{Append, Published, SessionRecord, Store};
use crate::tools::{PinnedRoot, ToolContext, ToolInvocation, ToolRegistry, ToolSettings};
use crate::wire;

/// What the waiters of a call about to retire get: its final `toolCall`
/// event and, for in-process waiters (turns), its structured snapshot.
#[derive(Default)]
pub(super) struct Final {
    pub event: Option<Arc<Published>>,
    pub snapshot: Option<geminid_protocol::tool::ToolCallSnapshot>,
}

/// How many commands one step takes before it commits.
const MAX_BATCH: usize = 256;
/// How many events a lagging subscriber may fall behind before it reads
/// the rest from the store.
const BROADCAST_CAPACITY: usize = 1024;
/// How long a stopping session waits for running calls to acknowledge
/// their cancellation.
pub(super) const STOP_GRACE: Duration = Duration::from_secs(5);
/// How soon a failed commit (disk full, read-only store) is tried again.
const COMMIT_RETRY: Duration = Duration::from_secs(1);

/// Messages from tasks the actor spawned.
pub(super) enum Internal {
    Prepared {
        call_id: String,
        prepared: crate::scheduler::Prepared,
        invocation: Option<Box<dyn ToolInvocation>>,
    },
    Output {
        call_id: String,
        delta: String,
    },
    Finished {
        call_id: String,
        outcome: Result<crate::tools::ToolResult, crate::scheduler::CallError>,
    },
    /// A call's BeforeTool hooks reported (`session/hooks.rs`).
    BeforeTool {
        call_id: String,
        fired: crate::hooks::Fired,
        args: serde_json::Value,
    },
    /// Hooks ran that only report (AfterTool, Notification).
    HookRuns {
        call_id: Option<String>,
        runs: Vec<crate::hooks::HookRun>,
    },
    /// A message from a running turn (`agent/turn.rs`).
    Turn {
        turn_id: String,
        msg: TurnMsg,
    },
    /// The SessionStart hooks reported.
    SessionStarted {
        fired: crate::hooks::Fired,
    },
    /// A running call asks its people (`session/questions.rs`).
    Ask {
        call_id: Option<String>,
        question: crate::questions::Question,
        reply: oneshot::Sender<crate::questions::Answer>,
    },
    /// A question's time ran out.
    QuestionTimedOut {
        question_id: String,
    },
    /// An MCP sampling request got its answer (`session/sampling.rs`).
    Sampled(crate::discovery::mcp::sampling::Sampled),
    /// A URL-mode question's server said its interaction is finished.
    ElicitationCompleted {
        question_id: String,
        server: String,
    },
}

/// What the actor needs from the daemon.
#[derive(Clone)]
pub struct ActorDeps {
    pub store: Store,
    pub registry: Arc<ToolRegistry>,
    pub policy: Arc<crate::policy::LivePolicy>,
    pub max_parallel: usize,
    /// The model prompts go to.
    pub model: Arc<crate::model::ModelSlot>,
    /// GEMINI.md memory per workspace.
    pub memory: Arc<crate::memory::MemoryCache>,
    pub turn_limits: TurnLimits,
    /// The safety checks applied after the policy.
    pub guard: Arc<crate::safety::Guard>,
    /// The user's settings file, read for each session's tool settings.
    pub user_settings: std::path::PathBuf,
    /// Where sessions' long shell outputs are saved, one directory per
    /// session (removed with the session).
    pub shell_output: std::path::PathBuf,
    /// Edit calls' checkpoints (undo, restore, fork).
    pub checkpoints: Arc<crate::checkpoints::CheckpointStore>,
    /// MCP servers and discovered tools: a prompt waits for the servers
    /// its session will see.
    pub discovery: Arc<crate::discovery::Discovery>,
    /// The daemon's places the sandbox hides or holds read-only.
    pub sandbox_places: Arc<crate::sandbox::DaemonPlaces>,
    /// The hooks of each workspace's sessions.
    pub hooks: Arc<crate::hooks::HookBook>,
    /// How long a question waits for an answer (`session/questions.rs`).
    pub question_timeout: Duration,
}

pub(super) struct Actor {
    pub(super) record: SessionRecord,
    pub(super) ctx: ToolContext,
    pub(super) deps: ActorDeps,
    last_seq: u64,
    pub(super) scheduler: Scheduler,
    pub(super) invocations: HashMap<String, Box<dyn ToolInvocation>>,
    pub(super) running: HashMap<String, CancellationToken>,
    pub(super) waiters: HashMap<String, Vec<Waiter>>,
    /// What the waiters of calls about to retire get.
    pub(super) finals: HashMap<String, Final>,
    /// What a person allowed for the rest of the session.
    pub(super) allowlist: crate::policy::SessionAllowlist,
    events: broadcast::Sender<Arc<Published>>,
    pub(super) internal: mpsc::UnboundedSender<Internal>,
    pub(super) pending: Append,
    /// Replies held back until the events they reveal are durable.
    after_commit: Vec<Box<dyn FnOnce() + Send>>,
    pub(super) tasks: TaskTracker,
    pub(super) cancel: CancellationToken,
    /// The last commit failed; retry even without new work.
    commit_failed: bool,
    /// Prompts: the running turn and the queue behind it.
    pub(super) prompts: PromptQueue,
    /// The conversation with the model, loaded at the first turn.
    pub(super) conversation: Conversation,
    /// The actor is stopping: a turn cancelled now was interrupted.
    pub(super) stopping: bool,
    /// The client waiting for the running `session.compress`.
    pub(super) compress_reply: Option<CompressReply>,
    /// The turn whose calls are being submitted now.
    pub(super) calling_turn: Option<String>,
    /// Which turn each open call of a turn belongs to (for checkpoints).
    pub(super) call_turns: HashMap<String, String>,
    /// How the session leaves memory when idle (`idle.rs`).
    unloader: super::idle::Unloader,
    /// What hooks did to the calls they ran for.
    pub(super) call_hooks: HashMap<String, crate::hooks::tool::CallHooks>,
    /// Where the SessionStart hooks are, and the context they added.
    pub(super) session_start: crate::hooks::lifecycle::SessionStart,
    /// Open questions (`questions.rs`).
    pub(super) questions: crate::questions::book::QuestionBook,
    /// MCP sampling requests not prepared yet: call id → server.
    pub(super) sampling_calls: HashMap<String, String>,
}

/// How `session.compress` is answered.
pub(super) type CompressReply =
    oneshot::Sender<Result<Option<crate::agent::Compressed>, super::SessionError>>;

/// Starts the actor for `record`, working in `root` (pinned by the
/// manager), and returns its handle. A `fresh` session starts its log with
/// `sessionCreated`; a stored one first marks the calls a previous run left
/// open as interrupted.
pub fn spawn(
    mut record: SessionRecord,
    root: PinnedRoot,
    start: crate::hooks::lifecycle::StartReason,
    deps: ActorDeps,
    tracker: &TaskTracker,
    parent: &CancellationToken,
    unloader: super::idle::Unloader,
) -> Result<SessionHandle, super::SessionError> {
    // A record from before roots were pinned learns its root now.
    let id = root.id();
    let fresh = start == crate::hooks::lifecycle::StartReason::Create;
    let first_pin = record.root_dev != Some(id.dev) || record.root_ino != Some(id.ino);
    record.root_dev = Some(id.dev);
    record.root_ino = Some(id.ino);
    let (settings, problems) = ToolSettings::load(&deps.user_settings);
    for problem in problems {
        // `daemon.status` lists the file's problems; one line per session
        // would repeat them.
        tracing::debug!(session = %record.id, "settings: {problem}");
    }
    // `context.includeDirectories`: extra roots, pinned like the primary;
    // one that cannot be used is left out and said (at creation).
    let (extra, include_problems) =
        crate::tools::include_dirs::pin(&deps.user_settings, root.path());
    for problem in &include_problems {
        tracing::warn!(session = %record.id, "{problem}");
    }
    let mut ctx = ToolContext::pinned(root, extra, settings);
    ctx.session_id = Some(record.id.clone());
    ctx.sandbox.places = deps.sandbox_places.clone();
    // A stored mode that no longer parses is refused, never dropped.
    ctx.sandbox.override_mode = match record.sandbox.as_deref() {
        None => None,
        Some(text) => match crate::sandbox::Mode::parse(text) {
            Some(mode) => Some(mode),
            None => Some(crate::sandbox::Mode::Required),
        },
    };
    ctx.interactive = record.interactive;
    let last_seq = deps.store.last_seq(&record.id)?;
    let interrupted = deps.store.open_calls(&record.id)?;
    let pending_prompts = deps.store.pending_prompts(&record.id)?;
    let (commands_tx, commands_rx) = mpsc::channel(256);
    let (internal_tx, internal_rx) = mpsc::unbounded_channel();
    let (events, _) = broadcast::channel(BROADCAST_CAPACITY);
    let handle = SessionHandle {
        id: record.id.clone(),
        cwd: record.cwd.clone(),
        commands: commands_tx,
    };
    let record_cuts = record.rewound.clone();
    let allowlist = record.allowed.clone();
    if fresh {
        for problem in include_problems {
            handle.announce(geminid_protocol::event::EventPayload::Error {
                message: format!("configuration: {problem}"),
            });
        }
    }
    let mut actor = Actor {
        record,
        ctx,
        scheduler: Scheduler::new(deps.max_parallel),
        deps,
        last_seq,
        invocations: HashMap::new(),
        running: HashMap::new(),
        waiters: HashMap::new(),
        finals: HashMap::new(),
        // "Always" answers are kept in the record: they survive unloads
        // and restarts like the rest of the session.
        allowlist,
        events,
        internal: internal_tx,
        pending: Append::default(),
        after_commit: Vec::new(),
        tasks: TaskTracker::new(),
        cancel: parent.child_token(),
        commit_failed: false,
        prompts: PromptQueue::default(),
        conversation: Conversation::with_cuts(record_cuts),
        stopping: false,
        compress_reply: None,
        calling_turn: None,
        call_turns: HashMap::new(),
        unloader,
        call_hooks: HashMap::new(),
        session_start: crate::hooks::lifecycle::SessionStart::default(),
        questions: crate::questions::book::QuestionBook::default(),
        sampling_calls: HashMap::new(),
    };
    tracker.spawn(async move {
        if fresh {
            actor.emit(EventPayload::SessionCreated {
                cwd: actor.record.cwd.clone(),
                approval_mode: wire::approval_mode(actor.record.approval_mode),
                interactive: actor.record.interactive,
                title: actor.record.title.clone(),
            });
            // The record goes into the same durable batch as its first event.
            actor.pending.record = Some(actor.record.clone());
        } else if first_pin {
            actor.pending.record = Some(actor.record.clone());
        }
        actor.apply_mode(actor.record.approval_mode);
        actor.recover(interrupted);
        // Queued prompts wait for the SessionStart hooks (their context
        // goes before the next prompt).
        actor.start_session_hooks(start);
        actor.recover_prompts(pending_prompts);
        actor.commit();
        actor.run(commands_rx, internal_rx).await;
    });
    Ok(handle)
}

/// Sleeps until `at`; never wakes without one.
async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl Actor {
    async fn run(
        mut self,
        mut commands: mpsc::Receiver<Command>,
        mut internal: mpsc::UnboundedReceiver<Internal>,
    ) {
        let idle_after = self.unloader.after;
        let idle_for = idle_after.unwrap_or(Duration::MAX);
        let mut idle_at = tokio::time::Instant::now().checked_add(idle_for);
        loop {
            let stop = tokio::select! {
                biased;
                Some(msg) = internal.recv() => { self.on_internal(msg); None }
                cmd = commands.recv() => match cmd {
                    Some(cmd) => self.on_command(cmd),
                    // Every handle is gone: the session was unloaded.
                    None => Some((crate::hooks::lifecycle::UNLOADED.to_owned(), None)),
                },
                () = tokio::time::sleep(COMMIT_RETRY), if self.commit_failed => None,
                () = sleep_until(idle_at), if idle_at.is_some() => {
                    if self.activity().is_idle() && self.unloader.try_unload(&self.record.id, &commands) {
                        tracing::debug!(session = %self.record.id, "idle: unloaded");
                        self.tasks.close();
                        return;
                    }
                    None
                }
            };
            // Whatever happened, the idle period starts again (a refused
            // unload looks again one period later).
            idle_at = tokio::time::Instant::now().checked_add(idle_for);
            if let Some((reason, reply)) = stop {
                self.stop(&reason, &mut internal).await;
                if let Some(reply) = reply {
                    let _ = reply.send(());
                }
                return;
            }
            // Take whatever else is ready so that one flush covers it all.
            for _ in 0..MAX_BATCH {
                match internal.try_recv() {
                    Ok(msg) => self.on_internal(msg),
                    Err(_) => break,
                }
            }
            self.commit();
        }
    }

    /// Handles one command; returns `Some` when the actor must stop.
    fn on_command(&mut self, cmd: Command) -> Option<(String, Option<oneshot::Sender<()>>)> {
        match cmd {
            Command::Info { reply } => {
                let info = (self.record.clone(), self.last_seq);
                self.after_commit(move || {
                    let _ = reply.send(info);
                });
            }
            Command::Subscribe { reply } => {
                // Everything up to `last_seq` is durable (commit ran after the
                // previous step), and every later event goes to this receiver.
                let _ = reply.send(Subscription {
                    events: self.events.subscribe(),
                    last_seq: self.last_seq,
                });
            }
            Command::Call { name, args, reply } => self.submit_call(name, args, reply),
            Command::Confirm {
                call_id,
                outcome,
                modified_args,
                feedback,
                plan_mode,
                reply,
            } => {
                let words = super::handle::AnswerWords {
                    feedback,
                    plan_mode,
                };
                let result = self.confirm(&call_id, outcome, modified_args, words);
                self.after_commit(move || {
                    let _ = reply.send(result);
                });
            }
            Command::CancelAll { reply } => {
                let count = self.scheduler.active().count() + usize::from(self.cancel_turn());
                self.cancel_all_call_hooks();
                let effects = self.scheduler.cancel_all("cancelled by a client");
                self.apply(effects);
                self.after_commit(move || {
                    let _ = reply.send(count);
                });
            }
            Command::CancelCall { call_id, reply } => {
                let result = self.cancel_call(&call_id);
                self.after_commit(move || {
                    let _ = reply.send(result);
                });
            }
            Command::SetApprovalMode { mode, reply } => {
                self.switch_mode(mode);
                let record = self.record.clone();
                self.after_commit(move || {
                    let _ = reply.send(record);
                });
            }
            Command::PolicyCheck {
                tool_name,
                args,
                mode,
                interactive,
                reply,
            } => {
                let mode = mode.unwrap_or(self.record.approval_mode);
                let interactive = interactive.unwrap_or(self.record.interactive);
                let verdict = crate::policy::check_tool(
                    &self
                        .deps
                        .policy
                        .engine_for(std::path::Path::new(&self.record.cwd)),
                    &self.deps.registry,
                    Some(std::path::Path::new(&self.record.cwd)),
                    &tool_name,
                    &args,
                    mode,
                    interactive,
                    &self.allowlist,
                );
                let _ = reply.send(super::handle::PolicyCheck {
                    verdict,
                    mode,
                    interactive,
                });
            }
            Command::Prompt { text, parts, reply } => {
                let result = self.queue_prompt(text, parts);
                self.after_commit(move || {
                    let _ = reply.send(result);
                });
            }
            Command::History {
                offset,
                limit,
                reply,
            } => {
                let _ = reply.send(self.history_page(offset, limit));
            }
            Command::Compress { reply } => self.compress_now(reply),
            Command::SetModel { model, reply } => {
                self.record.model = model.clone();
                self.pending.record = Some(self.record.clone());
                self.emit(EventPayload::ModelChanged { model });
                let record = self.record.clone();
                self.after_commit(move || {
                    let _ = reply.send(record);
                });
            }
            Command::Checkpoints { reply } => {
                let _ = reply.send(self.checkpoints());
            }
            Command::Restore {
                checkpoint,
                force,
                reply,
            } => {
                let result = self.restore(&checkpoint, force);
                self.after_commit(move || {
                    let _ = reply.send(result);
                });
            }
            Command::ForkPoint { at_turn, reply } => {
                let _ = reply.send(self.fork_point(at_turn.as_deref()));
            }
            Command::SeedFork {
                from,
                at_turn,
                point,
                reply,
            } => {
                self.seed_fork(from, at_turn, *point);
                self.after_commit(move || {
                    let _ = reply.send(());
                });
            }
            Command::Answer {
                question_id,
                action,
                content,
                by,
                reply,
            } => {
                let result = self.answer_question(&question_id, action, content.as_ref(), by);
                self.after_commit(move || {
                    let _ = reply.send(result);
                });
            }
            Command::Announce { payload } => {
                self.emit(payload);
            }
            Command::Stop { reason, reply } => return Some((reason, Some(reply))),
            Command::Sample {
                server,
                request,
                reply,
            } => self.start_sampling(server, request, reply),
        }
        None
    }

    fn on_internal(&mut self, msg: Internal) {
        let effects = match msg {
            Internal::Prepared {
                call_id,
                prepared,
                invocation,
            } => {
                if let Some(invocation) = invocation {
                    self.invocations.insert(call_id.clone(), invocation);
                }
                self.scheduler.prepared(&call_id, prepared)
            }
            Internal::Output { call_id, delta } => self.scheduler.output(&call_id, delta),
            Internal::Finished { call_id, outcome } => {
                self.running.remove(&call_id);
                self.end_questions_of(&call_id);
                if let Ok(result) = &outcome {
                    self.after_tool_ran(&call_id, result.session_change);
                }
                self.scheduler.finished(&call_id, outcome)
            }
            Internal::BeforeTool {
                call_id,
                fired,
                args,
            } => return self.before_tool_done(call_id, fired, args),
            Internal::HookRuns { call_id, runs } => {
                return self.emit_hook_runs(call_id.as_deref(), &runs);
            }
            Internal::Turn { turn_id, msg } => return self.on_turn(turn_id, msg),
            Internal::SessionStarted { fired } => return self.session_started(fired),
            Internal::Ask {
                call_id,
                question,
                reply,
            } => return self.ask_question(call_id, question, reply),
            Internal::QuestionTimedOut { question_id } => {
                return self.question_timed_out(&question_id);
            }
            Internal::Sampled(sampled) => return self.sampled(sampled),
            Internal::ElicitationCompleted {
                question_id,
                server,
            } => {
                self.emit(EventPayload::ElicitationCompleted {
                    question_id,
                    server,
                });
                return;
            }
        };
        self.apply(effects);
    }

    /// Cancels everything, waits (bounded) for running calls to report
    /// back, and persists the outcome.
    async fn stop(&mut self, reason: &str, internal: &mut mpsc::UnboundedReceiver<Internal>) {
        self.stopping = true;
        self.end_all_questions(reason);
        self.cancel_turn();
        self.end_session_hooks(reason).await;
        let effects = self.scheduler.cancel_all(reason);
        self.apply(effects);
        let deadline = tokio::time::Instant::now() + STOP_GRACE;
        while !self.running.is_empty() || self.prompts.is_running() {
            match tokio::time::timeout_at(deadline, internal.recv()).await {
                Ok(Some(msg)) => self.on_internal(msg),
                Ok(None) | Err(_) => break,
            }
        }
        self.commit();
        self.tasks.close();
    }

    /// What the session is doing, for the idle unload.
    fn activity(&self) -> super::idle::Activity {
        super::idle::Activity {
            subscribers: self.events.receiver_count(),
            open_calls: self.scheduler.active().count() + self.running.len(),
            waiters: self.waiters.values().map(Vec::len).sum(),
            turns: self.prompts.ahead() > 0,
            compressing: self.compress_reply.is_some(),
            unsettled: self.commit_failed
                || !self.after_commit.is_empty()
                || !self.pending.events.is_empty()
                || self.pending.record.is_some(),
        }
    }

    /// Marks calls a previous run left unfinished as interrupted.
    fn recover(&mut self, open: Vec<(String, Vec<u8>)>) {
        if open.is_empty() {
            return;
        }
        let mut ids = Vec::new();
        for (call_id, saved) in open {
            let (name, args) = serde_json::from_slice::<(String, serde_json::Value)>(&saved)
                .unwrap_or_else(|_| ("unknown".to_owned(), serde_json::Value::Null));
            let mut call = ToolCall::new(call_id.clone(), name, args);
            call.state = CallState::Interrupted;
            self.emit(EventPayload::ToolCall(Box::new(wire::snapshot(
                &call, None,
            ))));
            self.pending.open_calls.push((call_id.clone(), None));
            ids.push(call_id);
        }
        tracing::warn!(session = %self.record.id, calls = ?ids, "marked calls interrupted after restart");
        self.emit(EventPayload::SessionRecovered {
            interrupted_calls: ids,
        });
    }

    /// How many subscriptions follow the session's events live.
    pub(super) fn subscribers(&self) -> usize {
        self.events.receiver_count()
    }

    /// The event most recently appended to the pending batch.
    pub(super) fn last_pending(&self) -> Option<Arc<Published>> {
        self.pending.events.last().cloned()
    }

    /// Appends an event to the pending batch and returns its seq.
    pub(super) fn emit(&mut self, payload: EventPayload) -> u64 {
        self.last_seq += 1;
        let event = SessionEvent {
            session_id: self.record.id.clone(),
            seq: self.last_seq,
            time: crate::now_ms(),
            payload,
        };
        let (session_id, seq, time) = (event.session_id.clone(), event.seq, event.time);
        let json = crate::store::event_json::to_json(event).or_else(|e| {
            // Our own types always serialize; keep seq gapless regardless.
            tracing::error!(error = %e, "event failed to serialize");
            RawValue::from_string(format!(
                "{{\"sessionId\":\"{session_id}\",\"seq\":{seq},\"time\":{time},\"type\":\"error\",\"message\":\"event lost: serialization failed\"}}"
            ))
        });
        if let Ok(json) = json {
            self.pending.events.push(Published::new(seq, json));
        }
        seq
    }

    /// The seq the next emitted event will get.
    pub(super) fn next_seq(&self) -> u64 {
        self.last_seq + 1
    }

    /// Records that a call became open (with what recovery needs) or closed.
    pub(super) fn pending_open_call(&mut self, call_id: &str, saved: Option<Vec<u8>>) {
        self.pending.open_calls.push((call_id.to_owned(), saved));
    }

    /// Whether `call_id` names a call this session had, even if finished:
    /// call ids are `call-<seq of the call's first event>`.
    pub(super) fn is_known_call(&self, call_id: &str) -> bool {
        call_id
            .strip_prefix("call-")
            .and_then(|n| n.parse::<u64>().ok())
            .is_some_and(|n| n >= 1 && n <= self.last_seq)
    }

    pub(super) fn after_commit(&mut self, f: impl FnOnce() + Send + 'static) {
        self.after_commit.push(Box::new(f));
    }

    /// Persists the pending batch, then broadcasts it and sends held-back
    /// replies. A store failure keeps the batch for the next commit.
    fn commit(&mut self) {
        let has_writes = !self.pending.events.is_empty()
            || !self.pending.open_calls.is_empty()
            || !self.pending.history.is_empty()
            || !self.pending.prompts.is_empty()
            || self.pending.record.is_some();
        let mut logged = None;
        if has_writes {
            // One write to the write-ahead log: durable against a crash of
            // the daemon from here on (see wal.rs).
            let step = match self.deps.store.log(&self.record.id, &mut self.pending) {
                Ok(step) => step,
                Err(e) => {
                    tracing::error!(session = %self.record.id, error = %e, "could not persist events; will retry");
                    // The batch stays pending, in order; the run loop
                    // retries soon.
                    self.commit_failed = true;
                    return;
                }
            };
            self.commit_failed = false;
            for event in step.events() {
                // No receivers is fine: nobody is subscribed.
                let _ = self.events.send(event.clone());
            }
            logged = Some(step);
        }
        for reply in self.after_commit.drain(..) {
            reply();
        }
        // sled gets the step off this path. Waking the apply thread right
        // away measured faster than letting the replies' tasks run first
        // (yield_now): 170-191 µs against 193-254 µs per read_file round
        // trip, interleaved runs.
        if let Some(step) = logged
            && let Err(e) = self.deps.store.apply_later(step)
        {
            // Logged all the same: the next checkpoint replays it.
            tracing::error!(session = %self.record.id, error = %e, "could not apply events to sled");
        }
    }

    pub(super) fn apply(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            self.apply_one(effect);
        }
    }
}

impl Actor {
    /// What a successful call changes in the session itself: the mode a
    /// built-in switched to (plan mode's tools), the todo list a built-in
    /// `write_todos` set, for every client.
    fn after_tool_ran(
        &mut self,
        call_id: &str,
        change: Option<crate::tools::contract::SessionChange>,
    ) {
        use crate::tools::builtin::write_todos::{WRITE_TODOS, todos_of};
        match change {
            Some(crate::tools::contract::SessionChange::ApprovalMode(mode)) => {
                self.switch_mode(mode)
            }
            None => {}
        }
        let Some(call) = self.scheduler.call(call_id) else {
            return;
        };
        if call.name != WRITE_TODOS {
            return;
        }
        let builtin = self
            .deps
            .registry
            .get(WRITE_TODOS)
            .is_some_and(|t| t.tool.source() == crate::tools::ToolSource::Builtin);
        let (true, Ok(todos)) = (builtin, todos_of(&call.args)) else {
            return;
        };
        self.record.todos = todos;
        self.pending.record = Some(self.record.clone());
        self.emit(EventPayload::TodosUpdated {
            todos: wire::todo_items(&self.record.todos),
        });
    }
}
