//! The scheduler's driver: carries out the effects of the pure state
//! machine inside the session actor (prepare, execute, abort, publish,
//! retire) and turns client answers into scheduler inputs.

use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use geminid_protocol::event::EventPayload;
use geminid_protocol::tool::ConfirmationOutcome;
use serde_json::Value;

use super::SessionError;
use super::actor::{Actor, Final, Internal};
use super::handle::{AnswerWords, CallReply, FinalCall, Waiter};
use crate::policy::{
    ApprovalMode, Decision, PolicyVerdict, SHELL_TOOL_NAME, SavedRule, split_command,
};
use crate::scheduler::{Answer, CallError, CallErrorKind, Effect, Prepared, ToolCall};
use crate::tools::contract::PersonAnswer;
use crate::tools::{OutputSink, ToolError};
use crate::wire;

impl Actor {
    pub(super) fn submit_call(&mut self, name: String, args: Value, reply: CallReply) {
        match reply {
            CallReply::Accepted(reply) => {
                let call_id = self.start_call(name, args, None);
                // The id names the call's first event: reveal it once durable.
                self.after_commit(move || {
                    let _ = reply.send(call_id);
                });
            }
            CallReply::Finished(reply) => {
                self.start_call(name, args, Some(Waiter::Event(reply)));
            }
        }
    }

    /// Submits a call to the scheduler; `waiter` gets it when it has
    /// finished (after the commit that made its end durable).
    pub(super) fn start_call(
        &mut self,
        name: String,
        args: Value,
        waiter: Option<Waiter>,
    ) -> String {
        // The call id is derived from the seq of the call's first event,
        // which is unique in the session and survives restarts.
        let call_id = format!("call-{}", self.next_seq());
        if let Some(turn) = &self.calling_turn {
            self.call_turns.insert(call_id.clone(), turn.clone());
        }
        let saved = serde_json::to_vec(&(&name, &args)).unwrap_or_default();
        self.pending_open_call(&call_id, Some(saved));
        if let Some(waiter) = waiter {
            self.waiters
                .entry(call_id.clone())
                .or_default()
                .push(waiter);
        }
        let effects = self
            .scheduler
            .submit(ToolCall::new(call_id.clone(), name, args));
        self.apply(effects);
        call_id
    }

    /// A client's cancel of one call. `Ok(false)` when the call had
    /// already finished; an executing call is aborted (its process group
    /// killed) and ends when the tool reports back.
    pub(super) fn cancel_call(&mut self, call_id: &str) -> Result<bool, SessionError> {
        let active = self
            .scheduler
            .call(call_id)
            .is_some_and(|call| !call.state.is_terminal());
        if !active {
            return if self.is_known_call(call_id) {
                Ok(false)
            } else {
                Err(SessionError::CallNotFound(call_id.to_owned()))
            };
        }
        self.cancel_call_hooks(call_id);
        let effects = self.scheduler.cancel(call_id, "cancelled by a client");
        self.apply(effects);
        Ok(true)
    }

    /// A client's answer to a confirmation. `Ok(false)` when the call is
    /// not waiting (anymore): another client answered first.
    pub(super) fn confirm(
        &mut self,
        call_id: &str,
        outcome: ConfirmationOutcome,
        modified_args: Option<Value>,
        words: AnswerWords,
    ) -> Result<bool, SessionError> {
        let Some(call) = self.scheduler.call(call_id) else {
            return if self.is_known_call(call_id) {
                Ok(false)
            } else {
                Err(SessionError::CallNotFound(call_id.to_owned()))
            };
        };
        if !matches!(call.state, crate::scheduler::CallState::AwaitingApproval(_)) {
            return Ok(false);
        }
        let name = call.name.clone();
        let args = call.args.clone();
        if let Some(accepted) = self.answer_taken(call_id, outcome, &words)? {
            return Ok(accepted);
        }
        let answer = match outcome {
            ConfirmationOutcome::Cancel => Answer::Cancel,
            ConfirmationOutcome::ProceedOnce => Answer::Proceed {
                decided_by: "approved once by a client".to_owned(),
            },
            ConfirmationOutcome::ProceedAlways
            | ConfirmationOutcome::ProceedAlwaysTool
            | ConfirmationOutcome::ProceedAlwaysServer
            | ConfirmationOutcome::ProceedAlwaysAndSave => {
                let server = self
                    .deps
                    .registry
                    .get(&name)
                    .and_then(|t| t.tool.source().server().map(str::to_owned));
                let decided_by =
                    match self.remember_always(&name, &args, server.as_deref(), outcome)? {
                        Some(what) => format!("{what} approved for the rest of the session"),
                        None => "approved once by a client (a shell command with no command name \
                             to remember: nothing was allowed for later calls)"
                            .to_owned(),
                    };
                Answer::Proceed { decided_by }
            }
            ConfirmationOutcome::ModifyWithEditor => {
                let args = modified_args.ok_or_else(|| {
                    SessionError::InvalidParams(
                        "`modifiedArgs` is required with outcome modify_with_editor".to_owned(),
                    )
                })?;
                let tool = self
                    .deps
                    .registry
                    .get_in(&name, &self.ctx.workspace_root)
                    .ok_or_else(|| {
                        SessionError::InvalidParams(format!(
                            "tool `{name}` is no longer registered"
                        ))
                    })?;
                let invocation = tool.build(&self.ctx, &args).map_err(|e| {
                    SessionError::InvalidParams(format!("modified arguments rejected: {e}"))
                })?;
                self.scheduler.replace_args(
                    call_id,
                    args,
                    invocation.description(),
                    invocation.locations(),
                );
                self.invocations.insert(call_id.to_owned(), invocation);
                Answer::Proceed {
                    decided_by: "approved with modified arguments by a client".to_owned(),
                }
            }
        };
        let (accepted, effects) = self.scheduler.answer(call_id, answer);
        self.apply(effects);
        Ok(accepted)
    }

    /// A call that reports a person's answer itself (`exit_plan_mode`)
    /// takes it and runs, approved or refused; another call refused with
    /// words is cancelled with them (the model reads them in the
    /// cancellation). `None`: answer as usual.
    fn answer_taken(
        &mut self,
        call_id: &str,
        outcome: ConfirmationOutcome,
        words: &AnswerWords,
    ) -> Result<Option<bool>, SessionError> {
        if words.plan_mode == Some(ApprovalMode::Plan) {
            return Err(SessionError::InvalidParams(
                "an approved plan switches to default, autoEdit or yolo, not plan".to_owned(),
            ));
        }
        if outcome == ConfirmationOutcome::ModifyWithEditor {
            return Ok(None);
        }
        let approved = outcome != ConfirmationOutcome::Cancel;
        let feedback = words
            .feedback
            .as_deref()
            .map(str::trim)
            .filter(|f| !f.is_empty());
        let person = PersonAnswer {
            approved,
            mode: words.plan_mode,
            feedback: feedback.map(str::to_owned),
        };
        let taken = self
            .invocations
            .get_mut(call_id)
            .is_some_and(|invocation| invocation.take_answer(&person));
        if taken {
            let decided_by = match (approved, person.mode) {
                (true, mode) => format!(
                    "plan approved by a client (switching to {})",
                    mode.unwrap_or_default().as_str()
                ),
                (false, _) => "plan rejected by a client".to_owned(),
            };
            let (accepted, effects) = self
                .scheduler
                .answer(call_id, Answer::Proceed { decided_by });
            self.apply(effects);
            return Ok(Some(accepted));
        }
        match (approved, feedback) {
            (false, Some(feedback)) => {
                let effects = self.scheduler.cancel(
                    call_id,
                    &format!("cancelled by a person at the confirmation, who said: {feedback}"),
                );
                self.apply(effects);
                Ok(Some(true))
            }
            _ => Ok(None),
        }
    }

    /// Records an "always" answer in the session allowlist (and, for
    /// `proceed_always_and_save`, in the user's policy). Returns what was
    /// allowed, for people.
    fn remember_always(
        &mut self,
        name: &str,
        args: &Value,
        server: Option<&str>,
        outcome: ConfirmationOutcome,
    ) -> Result<Option<String>, SessionError> {
        let shell = name == SHELL_TOOL_NAME;
        let roots = match args.get("command").and_then(Value::as_str) {
            Some(command) if shell => split_command(command).roots(),
            Some(_) | None => Vec::new(),
        };
        if shell && roots.is_empty() {
            // `x=1`, `$CMD`, `>file`: "always" would otherwise allow the
            // shell tool itself, every command, for the rest of the
            // session (and, saved, for good). A person approved this one
            // command; nothing wider is remembered.
            return Ok(None);
        }
        let (what, saved) = match (outcome, server) {
            (ConfirmationOutcome::ProceedAlwaysServer, Some(server)) => {
                self.allowlist.allow_server(server);
                (format!("every tool of {server}"), SavedRule::server(server))
            }
            _ if !roots.is_empty() => {
                for root in &roots {
                    self.allowlist.allow_command_prefix(root);
                }
                let first = roots.first().map(String::as_str).unwrap_or_default();
                (
                    format!("`{}`", roots.join("`, `")),
                    SavedRule::command_prefix(first),
                )
            }
            _ => {
                self.allowlist.allow_tool(name);
                (name.to_owned(), SavedRule::tool(name))
            }
        };
        // Stored with the answer's events (`SessionRecord::allowed`).
        self.record.allowed = self.allowlist.clone();
        self.pending.record = Some(self.record.clone());
        if outcome == ConfirmationOutcome::ProceedAlwaysAndSave {
            self.deps.policy.save_always_allow(&saved).map_err(|e| {
                SessionError::InvalidParams(format!("could not save the rule: {e}"))
            })?;
        }
        Ok(Some(what))
    }

    pub(super) fn apply_one(&mut self, effect: Effect) {
        match effect {
            Effect::Prepare { call_id } => self.prepare(call_id),
            Effect::Execute { call_id } => self.execute(call_id),
            Effect::Abort { call_id } => {
                if let Some(token) = self.running.get(&call_id) {
                    token.cancel();
                }
            }
            Effect::Publish { call, output_delta } => {
                let terminal = call.state.is_terminal();
                let call_id = call.id.clone();
                // A call starts waiting for a person: Notification hooks
                // may page one.
                if output_delta.is_none()
                    && matches!(call.state, crate::scheduler::CallState::AwaitingApproval(_))
                {
                    self.notify_waiting(&call);
                }
                let snapshot = wire::into_snapshot(*call, output_delta);
                // In-process waiters (turns) want the structured snapshot;
                // the rest get the event's JSON, so the common case copies
                // no result.
                let structured = terminal
                    && self
                        .waiters
                        .get(&call_id)
                        .is_some_and(|ws| ws.iter().any(Waiter::wants_snapshot));
                let kept = structured.then(|| snapshot.clone());
                self.emit(EventPayload::ToolCall(Box::new(snapshot)));
                if terminal && self.waiters.contains_key(&call_id) {
                    let event = self.last_pending();
                    self.finals.insert(
                        call_id,
                        Final {
                            event,
                            snapshot: kept,
                        },
                    );
                }
            }
            Effect::Retire { call_id } => {
                self.invocations.remove(&call_id);
                self.call_turns.remove(&call_id);
                self.call_hooks.remove(&call_id);
                self.pending_open_call(&call_id, None);
                let Final { event, snapshot } = self.finals.remove(&call_id).unwrap_or_default();
                let waiters = self.waiters.remove(&call_id).unwrap_or_default();
                if !waiters.is_empty() {
                    self.after_commit(move || {
                        for waiter in waiters {
                            match waiter {
                                Waiter::Event(tx) => {
                                    let _ = tx.send(FinalCall {
                                        call_id: call_id.clone(),
                                        snapshot: None,
                                        event: event.clone(),
                                    });
                                }
                                Waiter::Snapshot(tx) => {
                                    if let Some(snapshot) = snapshot.clone() {
                                        let _ = tx.send(snapshot);
                                    }
                                }
                            }
                        }
                    });
                }
            }
        }
    }

    /// Validates the call, runs its BeforeTool hooks (which may refuse or
    /// rewrite it: then it is prepared again), asks the policy and, when a
    /// person must decide, builds the confirmation details in a task (they
    /// may read files).
    fn prepare(&mut self, call_id: String) {
        self.prepare_checked(call_id, true);
    }

    /// Prepares a call whose BeforeTool hooks have answered.
    pub(super) fn prepare_again(&mut self, call_id: String) {
        self.prepare_checked(call_id, false);
    }

    fn prepare_checked(&mut self, call_id: String, hooks: bool) {
        // An MCP server's sampling request has no tool behind it.
        if let Some(server) = self.sampling_calls.remove(&call_id) {
            return self.prepare_sampling(call_id, server);
        }
        let Some(call) = self.scheduler.call(&call_id) else {
            return;
        };
        // Another workspace's MCP tools do not exist for this session.
        let root = std::path::Path::new(&self.record.cwd);
        let Some(tool) = self.deps.registry.get_in(&call.name, root) else {
            let names: Vec<String> = self
                .deps
                .registry
                .all_in(root)
                .iter()
                .map(|t| t.tool.name().to_owned())
                .collect();
            let hint = match crate::tools::closest_names(&call.name, &names).as_slice() {
                [] => String::new(),
                [one] => format!("; did you mean `{one}`?"),
                several => format!("; did you mean one of `{}`?", several.join("`, `")),
            };
            let message = format!(
                "no tool named `{}`{hint} (`gemctl tools` lists them all)",
                call.name
            );
            let effects = self.scheduler.prepared(
                &call_id,
                Prepared::Invalid(CallError::new(CallErrorKind::UnknownTool, message)),
            );
            return self.apply(effects);
        };
        let mut invocation = match tool.build(&self.ctx, &call.args) {
            Ok(invocation) => invocation,
            Err(e) => {
                let effects = self
                    .scheduler
                    .prepared(&call_id, Prepared::Invalid(e.into()));
                return self.apply(effects);
            }
        };
        if hooks {
            let (name, args) = (call.name.clone(), call.args.clone());
            if self.start_before_tool(&call_id, &name, &args) {
                return;
            }
        }
        let Some(call) = self.scheduler.call(&call_id) else {
            return;
        };
        let verdict = crate::policy::check_tool(
            &self.deps.policy.engine_for(&self.ctx.workspace_root),
            &self.deps.registry,
            Some(&self.ctx.workspace_root),
            &call.name,
            &call.args,
            self.record.approval_mode,
            self.record.interactive,
            &self.allowlist,
        );
        // The safety checks only ever make the policy's decision stricter.
        let facts = crate::safety::CallFacts {
            tool_name: &call.name,
            tool_kind: tool.tool.kind(),
            args: &call.args,
            locations: invocation.locations().into_iter().map(|l| l.path).collect(),
            root: &self.ctx.workspace_root,
            mode: self.record.approval_mode,
            interactive: self.record.interactive,
            plans: match self.ctx.plan_mode {
                true => self.ctx.plans().map(|p| p.path()),
                false => None,
            },
        };
        let stricter = self.deps.guard.check(&facts, verdict.decision);
        let (mut decision, mut reason) = match &stricter {
            Some(safety) => (safety.decision, safety.explain()),
            None => (verdict.decision, explain(&verdict)),
        };
        let mut asked_by = stricter.map(|_| reason.clone());
        if verdict.grants_network() {
            invocation.grant_network();
        }
        // A hook's `ask` makes a person decide what the policy allowed; in
        // a session nobody answers, that is a refusal.
        if let (Some(why), Decision::Allow) = (self.hook_ask(&call_id), decision) {
            if self.record.interactive {
                decision = Decision::AskUser;
                asked_by = Some(why);
            } else {
                decision = Decision::Deny;
                reason = format!("{why}, and the session is not interactive");
            }
        }
        if decision == Decision::AskUser && invocation.asks_nobody() {
            decision = Decision::Allow;
            reason = "nothing to approve: the call only reports why".to_owned();
        }
        match decision {
            Decision::Allow => {
                let prepared = Prepared::Allowed {
                    description: invocation.description(),
                    locations: invocation.locations(),
                    decided_by: reason,
                };
                self.invocations.insert(call_id.clone(), invocation);
                let effects = self.scheduler.prepared(&call_id, prepared);
                self.apply(effects);
            }
            Decision::Deny => {
                let effects = self
                    .scheduler
                    .prepared(&call_id, Prepared::Denied { reason });
                self.apply(effects);
            }
            Decision::AskUser => {
                let internal = self.internal.clone();
                self.tasks.spawn(async move {
                    let prepared = match invocation.confirmation().await {
                        Ok(details) => Prepared::Ask {
                            description: invocation.description(),
                            locations: invocation.locations(),
                            details,
                            decided_by: asked_by,
                        },
                        Err(e) => Prepared::Invalid(e.into()),
                    };
                    let _ = internal.send(Internal::Prepared {
                        call_id,
                        prepared,
                        invocation: Some(invocation),
                    });
                });
            }
        }
    }

    fn execute(&mut self, call_id: String) {
        let Some(invocation) = self.invocations.remove(&call_id) else {
            let effects = self.scheduler.finished(
                &call_id,
                Err(CallError::new(
                    CallErrorKind::Tool(crate::tools::ToolErrorKind::Execution),
                    "internal error: the call was scheduled without a built invocation",
                )),
            );
            return self.apply(effects);
        };
        let checkpoint = self.checkpoint_for(&call_id, invocation.as_ref());
        let token = self.cancel.child_token();
        self.running.insert(call_id.clone(), token.clone());
        let after = match self.scheduler.call(&call_id).cloned() {
            Some(call) => self.after_tool(&call, token.clone()),
            None => None,
        };
        let internal = self.internal.clone();
        let output = {
            let internal = internal.clone();
            let call_id = call_id.clone();
            OutputSink::new(move |delta| {
                let _ = internal.send(Internal::Output {
                    call_id: call_id.clone(),
                    delta,
                });
            })
        }
        .with_asker(self.asker_for(&call_id));
        // A panicking tool must fail its call, not the session.
        let mut run = Box::pin(async move {
            // Nothing is changed before its checkpoint is on disk: an edit
            // that cannot be undone is not made.
            if let Some(checkpoint) = &checkpoint
                && let Err(e) = checkpoint.before()
            {
                return Err(CallError::new(
                    CallErrorKind::Tool(crate::tools::ToolErrorKind::Execution),
                    format!("not run: its checkpoint could not be recorded ({e})"),
                ));
            }
            let outcome = AssertUnwindSafe(invocation.execute(token, output))
                .catch_unwind()
                .await
                .unwrap_or_else(|_| Err(ToolError::execution("the tool panicked")))
                .map_err(CallError::from);
            if let Some(checkpoint) = &checkpoint {
                checkpoint.after();
            }
            match after {
                Some(after) => after.apply(outcome).await,
                None => outcome,
            }
        });
        // The first poll runs here, on the actor: a call that completes
        // without waiting (a small read) then finishes in this same step and
        // shares its commit, with no task and no hop to another thread.
        // A call that has to wait goes on in its own task, which polls it
        // again at once (re-registering its wakers: the noop one is lost).
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        if let std::task::Poll::Ready(outcome) = run.as_mut().poll(&mut cx) {
            let _ = internal.send(Internal::Finished { call_id, outcome });
            return;
        }
        self.tasks.spawn(async move {
            let outcome = run.await;
            let _ = internal.send(Internal::Finished { call_id, outcome });
        });
    }
}

/// "policy: <reason> (<file> rule #<n>, <tier> tier)" for `decidedBy`.
/// The policy's reason, naming the deciding rule once (the reason names
/// it already when the rule decided the whole call); a deny's
/// `denyMessage` first, since that is what the model is meant to read.
pub(super) fn explain(verdict: &PolicyVerdict) -> String {
    let reason = match &verdict.rule {
        Some(rule)
            if !verdict
                .reason
                .contains(&format!("{} rule #{}", rule.source.file, rule.source.index)) =>
        {
            format!(
                "policy: {} ({} rule #{}, priority {:.3})",
                verdict.reason, rule.source.file, rule.source.index, rule.final_priority
            )
        }
        Some(_) | None => format!("policy: {}", verdict.reason),
    };
    match &verdict.deny_message {
        Some(message) => format!("{message} ({reason})"),
        None => reason,
    }
}
