//! The actor's side of hooks: BeforeTool runs before a call's policy
//! check (a rewrite is validated and checked by the policy again; a hook's
//! `ask` makes a person decide, or refuses in a session nobody answers),
//! AfterTool around a call's result, Notification when a call starts
//! waiting for approval (in any session, attached or not), SessionStart
//! when the actor starts (prompts wait for it; its context goes before
//! the next prompt) and SessionEnd when it stops. Every hook run
//! is a `hookRun` event. Hook processes are killed when their call (or the
//! session) is cancelled.

use std::path::PathBuf;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::actor::{Actor, Internal};
use crate::hooks::lifecycle;
use crate::hooks::tool::{self as hook_tool, Before, CallHooks};
use crate::hooks::{Fired, HookEnv, HookEvent, HookRun, Subject};
use crate::scheduler::{CallError, CallState, Prepared, ToolCall};
use crate::tools::ToolResult;
use crate::wire;

impl Actor {
    pub(super) fn hook_env(&self) -> HookEnv {
        HookEnv {
            session_id: self.record.id.clone(),
            cwd: PathBuf::from(&self.record.cwd),
            transcript_path: String::new(),
            plans_dir: self.plans_dir(),
            roots: self.ctx.roots().to_vec(),
        }
    }

    /// Starts the BeforeTool hooks of a call being prepared; `true` when
    /// some run (the prepare resumes when they report).
    pub(super) fn start_before_tool(&mut self, call_id: &str, name: &str, args: &Value) -> bool {
        if self.call_hooks.get(call_id).is_some_and(|h| h.before_done) {
            return false;
        }
        let set = self
            .deps
            .hooks
            .for_root(std::path::Path::new(&self.record.cwd));
        let Some(plan) = set.plan(HookEvent::BeforeTool, Subject::Tool(name)) else {
            return false;
        };
        let cancel = self.cancel.child_token();
        self.call_hooks.insert(
            call_id.to_owned(),
            CallHooks {
                before_done: false,
                ask: None,
                modified: false,
                cancel: cancel.clone(),
            },
        );
        let env = self.hook_env();
        let fields = hook_tool::before_input(name, args);
        let internal = self.internal.clone();
        let (call_id, args) = (call_id.to_owned(), args.clone());
        self.tasks.spawn(async move {
            let fired = crate::hooks::fire(&plan, &env, fields, &cancel).await;
            let _ = internal.send(Internal::BeforeTool {
                call_id,
                fired,
                args,
            });
        });
        true
    }

    /// BeforeTool hooks reported: the call is refused, or prepared again
    /// (with its new arguments) through validation and the policy.
    pub(super) fn before_tool_done(&mut self, call_id: String, fired: Fired, args: Value) {
        self.emit_hook_runs(Some(&call_id), &fired.runs);
        let waiting = self
            .scheduler
            .call(&call_id)
            .is_some_and(|c| c.state == CallState::Validating);
        if !waiting {
            self.call_hooks.remove(&call_id);
            return;
        }
        let verdict = hook_tool::before(fired.merged.as_ref(), &args);
        let refused = match verdict {
            Before::Blocked(reason) => Some((reason, false)),
            Before::Stopped(reason) => Some((reason, true)),
            Before::Proceed { args: new, ask } => {
                if let Some(state) = self.call_hooks.get_mut(&call_id) {
                    state.before_done = true;
                    state.ask = ask;
                    state.modified = new.is_some();
                }
                if let Some(new) = new {
                    self.scheduler.rewrite_args(&call_id, new);
                }
                None
            }
        };
        match refused {
            Some((reason, stop)) => {
                self.call_hooks.remove(&call_id);
                let effects = self
                    .scheduler
                    .prepared(&call_id, Prepared::Denied { reason });
                self.apply(effects);
                if stop {
                    self.cancel_turn();
                }
            }
            None => self.prepare_again(call_id),
        }
    }

    /// Why a BeforeTool hook asked for this call, if one did.
    pub(super) fn hook_ask(&self, call_id: &str) -> Option<String> {
        self.call_hooks.get(call_id).and_then(|h| h.ask.clone())
    }

    /// Kills the hook processes of a call (cancelled).
    pub(super) fn cancel_call_hooks(&mut self, call_id: &str) {
        if let Some(state) = self.call_hooks.get(call_id) {
            state.cancel.cancel();
        }
    }

    /// Kills every running hook of the session's calls.
    pub(super) fn cancel_all_call_hooks(&mut self) {
        for state in self.call_hooks.values() {
            state.cancel.cancel();
        }
    }

    /// What a call's execution becomes with AfterTool hooks (and the note
    /// of a BeforeTool rewrite) applied; `None` when nothing applies.
    pub(super) fn after_tool(
        &mut self,
        call: &ToolCall,
        cancel: CancellationToken,
    ) -> Option<AfterTool> {
        let modified = self.call_hooks.remove(&call.id).is_some_and(|h| h.modified);
        let set = self
            .deps
            .hooks
            .for_root(std::path::Path::new(&self.record.cwd));
        let plan = set.plan(HookEvent::AfterTool, Subject::Tool(&call.name));
        if plan.is_none() && !modified {
            return None;
        }
        Some(AfterTool {
            plan,
            modified,
            env: self.hook_env(),
            name: call.name.clone(),
            args: call.args.clone(),
            call_id: call.id.clone(),
            internal: self.internal.clone(),
            cancel,
        })
    }

    /// Fires Notification hooks for a call that just started waiting for
    /// approval; they cannot answer it (0.61: observability only).
    pub(super) fn notify_waiting(&mut self, call: &ToolCall) {
        let CallState::AwaitingApproval(details) = &call.state else {
            return;
        };
        let set = self
            .deps
            .hooks
            .for_root(std::path::Path::new(&self.record.cwd));
        let Some(plan) = set.plan(HookEvent::Notification, Subject::Trigger("ToolPermission"))
        else {
            return;
        };
        let fields = hook_tool::permission_input(&call.id, &call.name, details);
        let env = self.hook_env();
        let internal = self.internal.clone();
        let call_id = call.id.clone();
        let cancel = self.cancel.child_token();
        self.tasks.spawn(async move {
            let fired = crate::hooks::fire(&plan, &env, fields, &cancel).await;
            let _ = internal.send(Internal::HookRuns {
                call_id: Some(call_id),
                runs: fired.runs,
            });
        });
    }

    pub(super) fn emit_hook_runs(&mut self, call_id: Option<&str>, runs: &[HookRun]) {
        for run in runs {
            if let Some(error) = &run.result.error {
                tracing::warn!(
                    session = %self.record.id,
                    hook = %run.name,
                    event = run.event.name(),
                    "hook failed: {error}"
                );
            }
            self.emit(wire::hook_run(run, call_id));
        }
    }
}

impl Actor {
    /// The hooks a turn fires itself for `event` (matched on `trigger`
    /// when it has one); `None` when none is configured: the turn does not
    /// wait for anything.
    pub(super) fn agent_hooks(
        &self,
        event: HookEvent,
        trigger: Option<&str>,
    ) -> Option<crate::agent::AgentHooks> {
        let set = self
            .deps
            .hooks
            .for_root(std::path::Path::new(&self.record.cwd));
        let subject = trigger.map_or(Subject::None, Subject::Trigger);
        let plan = set.plan(event, subject)?;
        Some(crate::agent::AgentHooks {
            plan,
            env: self.hook_env(),
        })
    }

    /// The hooks around each model request of a turn; a BeforeModel
    /// hook's model is built as `/model` would build it.
    pub(super) fn model_hooks(&self) -> crate::agent::ModelHooks {
        let set = self
            .deps
            .hooks
            .for_root(std::path::Path::new(&self.record.cwd));
        let listens = |event| set.listens(event);
        if !listens(HookEvent::BeforeModel)
            && !listens(HookEvent::AfterModel)
            && !listens(HookEvent::BeforeToolSelection)
        {
            return crate::agent::ModelHooks::default();
        }
        let slot = self.deps.model.clone();
        let workspace = PathBuf::from(&self.record.cwd);
        let models: crate::agent::ModelSwitch = std::sync::Arc::new(move |name: &str| {
            slot.model_named(Some(&workspace), Some(name))
                .map(|(_, model)| model)
                .map_err(|e| e.message)
        });
        crate::agent::ModelHooks {
            before_model: self.agent_hooks(HookEvent::BeforeModel, None),
            tool_selection: self.agent_hooks(HookEvent::BeforeToolSelection, None),
            after_model: self.agent_hooks(HookEvent::AfterModel, None),
            models: Some(models),
        }
    }

    /// Fires SessionStart (`startup` for a new session, `resume` for a
    /// stored one, nothing for an idle reload); prompts wait until it
    /// reports.
    pub(super) fn start_session_hooks(&mut self, reason: lifecycle::StartReason) {
        let Some(source) = lifecycle::start_source(reason) else {
            return;
        };
        let set = self
            .deps
            .hooks
            .for_root(std::path::Path::new(&self.record.cwd));
        let Some(plan) = set.plan(HookEvent::SessionStart, Subject::Trigger(source)) else {
            return;
        };
        self.session_start.running = true;
        let env = self.hook_env();
        let internal = self.internal.clone();
        let cancel = self.cancel.child_token();
        self.tasks.spawn(async move {
            let fired =
                crate::hooks::fire(&plan, &env, lifecycle::start_input(source), &cancel).await;
            let _ = internal.send(Internal::SessionStarted { fired });
        });
    }

    /// SessionStart reported: its runs are events, its context waits for
    /// the next prompt, and queued prompts start.
    pub(super) fn session_started(&mut self, fired: Fired) {
        self.emit_hook_runs(None, &fired.runs);
        self.session_start.running = false;
        self.session_start.context = lifecycle::start_context(fired.merged.as_ref());
        self.start_next_turn();
    }

    /// Fires SessionEnd as the actor stops and waits for it (bounded by
    /// the hooks' own timeouts and the stop grace); its runs are events.
    pub(super) async fn end_session_hooks(&mut self, stop_reason: &str) {
        let set = self
            .deps
            .hooks
            .for_root(std::path::Path::new(&self.record.cwd));
        let Some(reason) = lifecycle::end_reason(stop_reason) else {
            return;
        };
        let Some(plan) = set.plan(HookEvent::SessionEnd, Subject::Trigger(reason)) else {
            return;
        };
        let env = self.hook_env();
        // Its own token: the session's is cancelled as it stops.
        let cancel = CancellationToken::new();
        // Hooks still running after the stop grace are killed (and said).
        let timer = cancel.clone();
        let grace = tokio::spawn(async move {
            tokio::time::sleep(super::actor::STOP_GRACE).await;
            timer.cancel();
        });
        let fired = crate::hooks::fire(&plan, &env, lifecycle::end_input(reason), &cancel).await;
        grace.abort();
        self.emit_hook_runs(None, &fired.runs);
    }
}

/// AfterTool's work for one call, carried into its execution task.
pub(super) struct AfterTool {
    plan: Option<crate::hooks::Plan>,
    modified: bool,
    env: HookEnv,
    name: String,
    args: Value,
    call_id: String,
    internal: tokio::sync::mpsc::UnboundedSender<Internal>,
    cancel: CancellationToken,
}

impl AfterTool {
    pub(super) async fn apply(
        self,
        outcome: Result<ToolResult, CallError>,
    ) -> Result<ToolResult, CallError> {
        let merged = match &self.plan {
            Some(plan) if !self.cancel.is_cancelled() => {
                let fields = hook_tool::after_input(&self.name, &self.args, &outcome);
                let fired = crate::hooks::fire(plan, &self.env, fields, &self.cancel).await;
                let _ = self.internal.send(Internal::HookRuns {
                    call_id: Some(self.call_id.clone()),
                    runs: fired.runs,
                });
                fired.merged
            }
            _ => None,
        };
        hook_tool::after(merged.as_ref(), self.modified, outcome)
    }
}
