//! The actor's side of prompts: queueing them (from any client), starting
//! the agent's turns one at a time, carrying out what a turn asks
//! ([`TurnMsg`]), and what a restart does with prompts left unfinished (a
//! started turn ends as `interrupted`; queued prompts run).

use geminid_protocol::event::EventPayload;

use super::SessionError;
use super::actor::{Actor, Internal};
use super::handle::Waiter;
use crate::agent::{self, Compressed, TurnEnd, TurnLine, TurnMsg, TurnSpec};
use crate::model::window::ContextPolicy;
use crate::model::{Content, Role, Usage};
use crate::store::{PendingPrompt, StoreError};

impl Actor {
    /// `session.prompt`: queues the prompt and starts it if nothing runs.
    pub(super) fn queue_prompt(
        &mut self,
        text: String,
        parts: Vec<geminid_protocol::turn::PromptPart>,
    ) -> Result<(String, u64), SessionError> {
        agent::references::check(&text, &parts).map_err(SessionError::InvalidParams)?;
        let shown = geminid_protocol::turn::shown_prompt(&text, &parts);
        if self.stopping {
            return Err(SessionError::Stopped(self.record.id.clone()));
        }
        if let Err(e) = self.deps.model.check_named(
            Some(std::path::Path::new(&self.record.cwd)),
            self.record.model.as_deref(),
        ) {
            return Err(SessionError::ModelNotConfigured(e.message));
        }
        if self.record.title.is_none() {
            // A session without a title is named after its first prompt.
            self.record.title = Some(title_of(&shown));
            self.pending.record = Some(self.record.clone());
        }
        let turn_id = format!("turn-{}", self.next_seq());
        self.emit(EventPayload::PromptQueued {
            turn_id: turn_id.clone(),
            text: shown,
        });
        let ahead = self.prompts.ahead();
        let prompt = PendingPrompt {
            turn_id: turn_id.clone(),
            text,
            parts,
            started: false,
        };
        self.save_prompt(&prompt);
        self.prompts.push(prompt);
        self.start_next_turn();
        Ok((turn_id, ahead))
    }

    /// Cancels the running turn; whether there was one.
    pub(super) fn cancel_turn(&mut self) -> bool {
        self.prompts.cancel()
    }

    /// Starts the next queued prompt when no turn runs.
    pub(super) fn start_next_turn(&mut self) {
        if self.stopping || self.session_start.running {
            return;
        }
        let Some(mut prompt) = self.prompts.take_next() else {
            return;
        };
        prompt.started = true;
        self.save_prompt(&prompt);
        let turn_id = prompt.turn_id.clone();
        let started_at = self.emit(EventPayload::TurnStarted {
            turn_id: turn_id.clone(),
        });
        self.note_turn_start(started_at, &turn_id);
        self.emit(EventPayload::UserMessage {
            turn_id: turn_id.clone(),
            text: geminid_protocol::turn::shown_prompt(&prompt.text, &prompt.parts),
        });
        let chosen = self.record.model.clone();
        let prepared = self
            .deps
            .model
            .model_named(
                Some(std::path::Path::new(&self.record.cwd)),
                chosen.as_deref(),
            )
            .map_err(|e| e.message)
            .and_then(|(config, model)| {
                let history = self.loaded_history().map_err(|e| e.to_string())?;
                Ok((config, model, history))
            });
        let (config, model, history) = match prepared {
            Ok(ready) => ready,
            Err(message) => {
                let end = TurnEnd {
                    reason: "error",
                    message: Some(message),
                    usage: Usage::default(),
                };
                return self.finish_turn(&turn_id, end);
            }
        };
        let cancel = self.cancel.child_token();
        let context = self.context_policy(&config.model);
        let fallback = self.fallback(&config.model);
        let spec = TurnSpec {
            turn_id: turn_id.clone(),
            text: prompt.text,
            parts: prompt.parts,
            hook_context: self.session_start.context.take(),
            before_agent: self.agent_hooks(crate::hooks::HookEvent::BeforeAgent, None),
            after_agent: self.agent_hooks(crate::hooks::HookEvent::AfterAgent, None),
            pre_compress: self.agent_hooks(crate::hooks::HookEvent::PreCompress, Some("auto")),
            model_hooks: self.model_hooks(),
            references: Some(agent::references::ReferenceReader {
                files: self.ctx.clone(),
                resources: Some(std::sync::Arc::new(super::resource_refs::McpResourceRefs {
                    mcp: self.deps.discovery.mcp.clone(),
                    session: self.record.id.clone(),
                    root: std::path::PathBuf::from(&self.record.cwd),
                })),
            }),
            history,
            model,
            tools: self.offered_tools(),
            tools_ready: self.tools_ready(),
            workspace: self.record.cwd.clone(),
            memory: self.deps.memory.clone(),
            approval_mode: self.record.approval_mode,
            interactive: self.record.interactive,
            fallback,
            model_name: config.model,
            context,
            prefix: self.record.compression.clone(),
            calibration: self.conversation.calibration,
            limits: self.deps.turn_limits,
            cancel: cancel.clone(),
        };
        self.prompts.started(turn_id.clone(), cancel);
        let internal = self.internal.clone();
        let line: TurnLine = Box::new(move |msg| {
            let _ = internal.send(Internal::Turn {
                turn_id: turn_id.clone(),
                msg,
            });
        });
        self.tasks.spawn(agent::run(spec, line));
    }

    /// A message from the running turn.
    pub(super) fn on_turn(&mut self, turn_id: String, msg: TurnMsg) {
        let cancelled = !self.prompts.is_live(&turn_id);
        match msg {
            TurnMsg::Emit(payload) => {
                self.emit(payload);
            }
            TurnMsg::History(content) => self.append_history(content),
            TurnMsg::Calls { calls, reply } => {
                // A cancelled turn starts nothing; its calls get "not run"
                // responses from the turn.
                let mut done = Vec::new();
                if !cancelled {
                    self.calling_turn = Some(turn_id.clone());
                    for (name, args) in calls {
                        let (tx, rx) = tokio::sync::oneshot::channel();
                        let waiter = Waiter::Snapshot(tx);
                        self.start_call(name, args, Some(waiter));
                        done.push(rx);
                    }
                    self.calling_turn = None;
                }
                let _ = reply.send(done);
            }
            TurnMsg::Usage {
                purpose,
                usage,
                estimated,
                model,
                window,
            } => self.book_usage(&turn_id, purpose, usage, estimated, &model, window),
            TurnMsg::Compressed { trigger, done } => self.compressed(&turn_id, trigger, done),
            TurnMsg::CompressionFailed { trigger, message } => {
                self.emit(EventPayload::CompressionFailed {
                    turn_id: turn_of(&turn_id),
                    trigger: trigger.to_owned(),
                    message,
                });
            }
            TurnMsg::CompressionEnded(result) => {
                self.prompts.finished(&turn_id);
                if let Some(reply) = self.compress_reply.take() {
                    let _ = reply.send(result.map_err(SessionError::CompressionFailed));
                }
                self.start_next_turn();
            }
            TurnMsg::HookRuns(runs) => self.emit_hook_runs(None, &runs),
            TurnMsg::Mode { reply } => {
                let _ = reply.send((self.record.approval_mode, self.offered_tools()));
            }
            TurnMsg::Finished(end) => self.finish_turn(&turn_id, end),
        }
    }

    /// Books a model request in the session's account.
    fn book_usage(
        &mut self,
        turn_id: &str,
        purpose: &str,
        usage: Usage,
        estimated: u64,
        model: &str,
        window: u64,
    ) {
        let ledger = self.record.tokens.get_or_insert_with(Default::default);
        ledger.book(model, window, usage);
        let tokens = crate::wire::session_tokens(ledger);
        if purpose == "turn" {
            self.conversation
                .calibration
                .learn(estimated, usage.input_tokens);
        }
        self.pending.record = Some(self.record.clone());
        self.emit(EventPayload::TokenUsage {
            turn_id: turn_of(turn_id),
            purpose: purpose.to_owned(),
            request: crate::wire::token_counts(usage),
            tokens,
        });
    }

    /// What is sent was compressed: the record keeps the summary (so a
    /// restart sends the same), the event says what replaced what.
    fn compressed(&mut self, turn_id: &str, trigger: &str, done: Compressed) {
        self.record.compression = Some(done.prefix.clone());
        self.pending.record = Some(self.record.clone());
        self.emit(EventPayload::Compressed {
            turn_id: turn_of(turn_id),
            trigger: trigger.to_owned(),
            replaced_entries: done.prefix.upto,
            kept_entries: done.kept,
            summary: done.prefix.summary,
            tokens_before: done.tokens_before,
            tokens_after: done.tokens_after,
        });
    }

    /// `session.compress`: summarizes the older history between turns.
    pub(super) fn compress_now(&mut self, reply: super::actor::CompressReply) {
        if self.stopping {
            let _ = reply.send(Err(SessionError::Stopped(self.record.id.clone())));
            return;
        }
        if self.prompts.is_running() {
            let _ = reply.send(Err(SessionError::Busy(
                "a turn (or a compression) is running; compress between turns (a turn compresses on its own when it must)".to_owned(),
            )));
            return;
        }
        let prepared = self
            .deps
            .model
            .model_named(
                Some(std::path::Path::new(&self.record.cwd)),
                self.record.model.as_deref(),
            )
            .map_err(|e| SessionError::ModelNotConfigured(e.message))
            .and_then(|(config, model)| {
                let history = self.loaded_history()?;
                Ok((config, model, history))
            });
        let (config, model, history) = match prepared {
            Ok(ready) => ready,
            Err(e) => {
                let _ = reply.send(Err(e));
                return;
            }
        };
        let job_id = format!("compress-{}", self.next_seq());
        let cancel = self.cancel.child_token();
        let spec = TurnSpec {
            turn_id: job_id.clone(),
            text: String::new(),
            parts: Vec::new(),
            hook_context: None,
            before_agent: None,
            after_agent: None,
            pre_compress: self.agent_hooks(crate::hooks::HookEvent::PreCompress, Some("manual")),
            model_hooks: agent::ModelHooks::default(),
            references: None,
            history,
            model,
            tools: Vec::new(),
            tools_ready: None,
            workspace: self.record.cwd.clone(),
            memory: self.deps.memory.clone(),
            approval_mode: self.record.approval_mode,
            interactive: self.record.interactive,
            context: self.context_policy(&config.model),
            fallback: None,
            model_name: config.model,
            prefix: self.record.compression.clone(),
            calibration: self.conversation.calibration,
            limits: self.deps.turn_limits,
            cancel: cancel.clone(),
        };
        self.prompts.started(job_id.clone(), cancel);
        self.compress_reply = Some(reply);
        let internal = self.internal.clone();
        let line: TurnLine = Box::new(move |msg| {
            let _ = internal.send(Internal::Turn {
                turn_id: job_id.clone(),
                msg,
            });
        });
        self.tasks.spawn(agent::compress_between_turns(spec, line));
    }

    /// The fallback model's client, unless it is `model` itself.
    fn fallback(&self, model: &str) -> Option<(String, std::sync::Arc<dyn crate::model::Model>)> {
        let name = crate::model::choice::fallback_model(&env, &self.settings())?;
        if name == model {
            return None;
        }
        let workspace = std::path::Path::new(&self.record.cwd);
        let (_, client) = self
            .deps
            .model
            .model_named(Some(workspace), Some(&name))
            .ok()?;
        Some((name, client))
    }

    /// The user's settings (`Null` when absent or unreadable; the model
    /// slot reports a broken file).
    fn settings(&self) -> serde_json::Value {
        std::fs::read_to_string(&self.deps.user_settings)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or(serde_json::Value::Null)
    }

    /// The window and threshold for `model`; problems with the settings
    /// are reported in the session (the defaults are kept).
    pub(super) fn context_policy(&mut self, model: &str) -> ContextPolicy {
        let settings = self.settings();
        let (policy, problems) = ContextPolicy::resolve(model, &env, &settings);
        for problem in problems {
            self.emit(EventPayload::Error { message: problem });
        }
        policy
    }

    fn finish_turn(&mut self, turn_id: &str, end: TurnEnd) {
        let reason = if self.stopping && end.reason == "cancelled" {
            "interrupted"
        } else {
            end.reason
        };
        self.emit(EventPayload::TurnFinished {
            turn_id: turn_id.to_owned(),
            reason: reason.to_owned(),
            input_tokens: Some(end.usage.input_tokens),
            output_tokens: Some(end.usage.output_tokens + end.usage.thought_tokens),
            message: end.message,
        });
        self.pending.prompts.push((turn_id.to_owned(), None));
        self.prompts.finished(turn_id);
        self.start_next_turn();
    }

    /// Prompts a previous run left unfinished: a started turn ends as
    /// interrupted (its calls get responses saying so), queued ones run.
    pub(super) fn recover_prompts(&mut self, pending: Vec<PendingPrompt>) {
        for prompt in pending {
            if prompt.started {
                self.repair_history();
                self.emit(EventPayload::TurnFinished {
                    turn_id: prompt.turn_id.clone(),
                    reason: "interrupted".to_owned(),
                    input_tokens: None,
                    output_tokens: None,
                    message: Some("the daemon stopped during this turn".to_owned()),
                });
                self.pending.prompts.push((prompt.turn_id, None));
            } else {
                self.prompts.push(prompt);
            }
        }
        self.start_next_turn();
    }

    /// Answers function calls the history ends with (the daemon stopped
    /// before they finished), so the conversation stays valid.
    fn repair_history(&mut self) {
        let unanswered = self
            .conversation
            .unanswered_calls(&self.deps.store, &self.record.id)
            .unwrap_or_else(|e| {
                tracing::error!(session = %self.record.id, error = %e, "history unreadable; not repaired");
                Vec::new()
            });
        if unanswered.is_empty() {
            return;
        }
        let parts = unanswered
            .iter()
            .map(|call| {
                agent::not_run(
                    call,
                    "interrupted: the daemon stopped before this call finished",
                )
            })
            .collect();
        self.append_history(Content {
            role: Role::User,
            parts,
        });
    }

    pub(super) fn append_history(&mut self, content: Content) {
        match self
            .conversation
            .append(&self.deps.store, &self.record.id, content)
        {
            Ok(entry) => self.pending.history.push(entry),
            Err(e) => {
                tracing::error!(session = %self.record.id, error = %e, "history entry dropped");
            }
        }
    }

    /// The history as it goes on (outside the cuts of rewinds).
    fn loaded_history(&mut self) -> Result<Vec<Content>, StoreError> {
        self.conversation.visible(&self.deps.store, &self.record.id)
    }

    /// `session.history`: the total and the entries in `[offset, offset+limit)`.
    pub(super) fn history_page(
        &mut self,
        offset: u64,
        limit: u64,
    ) -> Result<(u64, Vec<Content>), SessionError> {
        Ok(self
            .conversation
            .page(&self.deps.store, &self.record.id, offset, limit)?)
    }

    fn save_prompt(&mut self, prompt: &PendingPrompt) {
        let saved = serde_json::to_vec(prompt).unwrap_or_default();
        self.pending
            .prompts
            .push((prompt.turn_id.clone(), Some(saved)));
    }
}

/// A title from a prompt: its first non-empty line, cut at 60 characters.
fn title_of(prompt: &str) -> String {
    let line = prompt
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    let mut title: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        title.push('…');
    }
    title
}

/// How long a prompt waits for the MCP servers its session will see.
pub const MCP_WAIT: std::time::Duration = std::time::Duration::from_secs(15);

impl Actor {
    /// When MCP servers this session will see are still connecting (a new
    /// session's first prompt, typically): what the turn waits for.
    fn tools_ready(&self) -> Option<crate::agent::ToolsReady> {
        let root = std::path::PathBuf::from(&self.record.cwd);
        let servers = self.deps.discovery.connecting_for(&root);
        if servers.is_empty() {
            return None;
        }
        let discovery = self.deps.discovery.clone();
        let registry = self.deps.registry.clone();
        let engine = self.deps.policy.engine_for(&root);
        let (mode, interactive) = (self.record.approval_mode, self.record.interactive);
        let names = servers.clone();
        Some(crate::agent::ToolsReady {
            servers,
            bound: MCP_WAIT,
            tools: std::sync::Mutex::new(Box::pin(async move {
                discovery.wait_attempted(&root, &names, MCP_WAIT).await;
                crate::tools::declarations::declarations_in(&registry, &root, |tool| {
                    crate::policy::shows_tool(&engine, tool, mode, interactive)
                })
            })),
        })
    }
}

impl Actor {
    /// The declarations of the tools the session offers the model now:
    /// its workspace's, less those its policy denies outright in its mode.
    fn offered_tools(&self) -> Vec<serde_json::Value> {
        let root = std::path::Path::new(&self.record.cwd);
        let engine = self.deps.policy.engine_for(root);
        let (mode, interactive) = (self.record.approval_mode, self.record.interactive);
        let mut offered =
            crate::tools::declarations::declarations_in(&self.deps.registry, root, |tool| {
                crate::policy::shows_tool(&engine, tool, mode, interactive)
            });
        if mode == crate::policy::ApprovalMode::Plan {
            let plans = self.plans_dir();
            for declaration in &mut offered {
                crate::tools::plans::for_plans_only(declaration, &plans);
            }
        }
        offered
    }
}

/// The turn id an event names: none for a compression between turns.
fn turn_of(id: &str) -> Option<String> {
    (!id.starts_with("compress-")).then(|| id.to_owned())
}

/// The daemon's environment, empty values as unset.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

#[cfg(test)]
mod title_tests {
    #[test]
    fn a_title_is_the_first_line_cut_short() {
        assert_eq!(super::title_of("\n  fix the build \nmore"), "fix the build");
        let long = "x".repeat(70);
        assert_eq!(super::title_of(&long).chars().count(), 61);
    }
}
