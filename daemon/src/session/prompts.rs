//! The session's prompts: a FIFO queue from any client, one turn running
//! at a time (`turn.rs`), the conversation history it extends, and what a
//! restart does with prompts left unfinished (a started turn ends as
//! `interrupted`; queued prompts run).

use std::collections::VecDeque;

use geminid_protocol::event::EventPayload;
use tokio_util::sync::CancellationToken;

use super::SessionError;
use super::actor::Actor;
use super::store::PendingPrompt;
use super::turn::{self, TurnEnd, TurnMsg, TurnSpec};
use crate::model::{Content, Role, Usage};

/// At most this many history entries per `session.history` page.
pub const MAX_HISTORY_PAGE: u64 = 100;

#[derive(Default)]
pub(super) struct PromptQueue {
    queue: VecDeque<PendingPrompt>,
    running: Option<RunningTurn>,
}

struct RunningTurn {
    turn_id: String,
    cancel: CancellationToken,
}

impl PromptQueue {
    pub(super) fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// Turns that run or wait.
    fn ahead(&self) -> u64 {
        self.queue.len() as u64 + u64::from(self.running.is_some())
    }
}

impl Actor {
    /// `session.prompt`: queues the prompt and starts it if nothing runs.
    pub(super) fn queue_prompt(&mut self, text: String) -> Result<(String, u64), SessionError> {
        if text.trim().is_empty() {
            return Err(SessionError::InvalidParams("`text` is empty".to_owned()));
        }
        if self.stopping {
            return Err(SessionError::Stopped(self.record.id.clone()));
        }
        if let Err(e) = self.deps.model.model() {
            return Err(SessionError::ModelNotConfigured(e.message));
        }
        let turn_id = format!("turn-{}", self.next_seq());
        self.emit(EventPayload::PromptQueued {
            turn_id: turn_id.clone(),
            text: text.clone(),
        });
        let ahead = self.prompts.ahead();
        let prompt = PendingPrompt {
            turn_id: turn_id.clone(),
            text,
            started: false,
        };
        self.save_prompt(&prompt);
        self.prompts.queue.push_back(prompt);
        self.start_next_turn();
        Ok((turn_id, ahead))
    }

    /// Cancels the running turn; whether there was one.
    pub(super) fn cancel_turn(&mut self) -> bool {
        match &self.prompts.running {
            Some(turn) => {
                turn.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Starts the next queued prompt when no turn runs.
    fn start_next_turn(&mut self) {
        if self.stopping || self.prompts.running.is_some() {
            return;
        }
        let Some(mut prompt) = self.prompts.queue.pop_front() else {
            return;
        };
        prompt.started = true;
        self.save_prompt(&prompt);
        let turn_id = prompt.turn_id.clone();
        self.emit(EventPayload::TurnStarted {
            turn_id: turn_id.clone(),
        });
        self.emit(EventPayload::UserMessage {
            turn_id: turn_id.clone(),
            text: prompt.text.clone(),
        });
        let prepared = self
            .deps
            .model
            .model()
            .map_err(|e| e.message)
            .and_then(|(_, model)| {
                let history = self.loaded_history().map_err(|e| e.to_string())?.clone();
                Ok((model, history))
            });
        let (model, history) = match prepared {
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
        let spec = TurnSpec {
            turn_id: turn_id.clone(),
            text: prompt.text,
            history,
            model,
            tools: crate::tools::declarations::declarations(&self.deps.registry),
            workspace: self.record.cwd.clone(),
            memory: self.deps.memory.clone(),
            limits: self.deps.turn_limits,
            cancel: cancel.clone(),
        };
        self.prompts.running = Some(RunningTurn { turn_id, cancel });
        self.tasks.spawn(turn::run(spec, self.internal.clone()));
    }

    /// A message from the running turn.
    pub(super) fn on_turn(&mut self, turn_id: String, msg: TurnMsg) {
        let current = self
            .prompts
            .running
            .as_ref()
            .filter(|t| t.turn_id == turn_id);
        let cancelled = current.is_none_or(|t| t.cancel.is_cancelled());
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
                    for (name, args) in calls {
                        let (tx, rx) = tokio::sync::oneshot::channel();
                        let waiter = super::driver::Waiter { tx, snapshot: true };
                        self.start_call(name, args, Some(waiter));
                        done.push(rx);
                    }
                }
                let _ = reply.send(done);
            }
            TurnMsg::Finished(end) => self.finish_turn(&turn_id, end),
        }
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
            output_tokens: Some(end.usage.output_tokens),
            message: end.message,
        });
        self.pending.prompts.push((turn_id.to_owned(), None));
        if self
            .prompts
            .running
            .as_ref()
            .is_some_and(|t| t.turn_id == turn_id)
        {
            self.prompts.running = None;
        }
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
                self.prompts.queue.push_back(prompt);
            }
        }
        self.start_next_turn();
    }

    /// Answers function calls the history ends with (the daemon stopped
    /// before they finished), so the conversation stays valid.
    fn repair_history(&mut self) {
        let unanswered: Vec<_> = match self.loaded_history() {
            Ok(history) => match history.last() {
                Some(last) if last.role == Role::Model => last.function_calls().cloned().collect(),
                _ => Vec::new(),
            },
            Err(e) => {
                tracing::error!(session = %self.record.id, error = %e, "history unreadable; not repaired");
                Vec::new()
            }
        };
        if unanswered.is_empty() {
            return;
        }
        let parts = unanswered
            .iter()
            .map(|call| {
                turn::not_run(
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

    fn append_history(&mut self, content: Content) {
        let json = match serde_json::to_string(&content) {
            Ok(json) => json,
            Err(e) => {
                tracing::error!(error = %e, "history entry failed to serialize");
                return;
            }
        };
        match self.loaded_history() {
            Ok(history) => {
                let index = history.len() as u64;
                history.push(content);
                self.pending.history.push((index, json));
            }
            Err(e) => {
                tracing::error!(session = %self.record.id, error = %e, "history unreadable; entry dropped");
            }
        }
    }

    fn loaded_history(&mut self) -> Result<&mut Vec<Content>, super::StoreError> {
        if self.history.is_none() {
            self.history = Some(self.deps.store.history(&self.record.id)?);
        }
        Ok(self.history.get_or_insert_with(Vec::new))
    }

    /// `session.history`: the total and the entries in `[offset, offset+limit)`.
    pub(super) fn history_page(
        &mut self,
        offset: u64,
        limit: u64,
    ) -> Result<(u64, Vec<Content>), SessionError> {
        let history = self.loaded_history()?;
        let total = history.len() as u64;
        let start = offset.min(total) as usize;
        let end = offset
            .saturating_add(limit.min(MAX_HISTORY_PAGE))
            .min(total) as usize;
        Ok((total, history[start..end].to_vec()))
    }

    fn save_prompt(&mut self, prompt: &PendingPrompt) {
        let saved = serde_json::to_vec(prompt).unwrap_or_default();
        self.pending
            .prompts
            .push((prompt.turn_id.clone(), Some(saved)));
    }
}
