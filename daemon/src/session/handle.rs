//! The handle other tasks use to talk to a session actor.

use std::sync::Arc;

use geminid_protocol::tool::{ConfirmationOutcome, ToolCallSnapshot};
use serde_json::Value;
use tokio::sync::{broadcast, mpsc, oneshot};

use super::SessionError;
use crate::policy::ApprovalMode;
use crate::store::{Published, SessionRecord};

/// What a person's answer carries besides its outcome.
#[derive(Debug, Default)]
pub(super) struct AnswerWords {
    /// Their words with a refusal.
    pub feedback: Option<String>,
    /// The mode an approved plan switches to.
    pub plan_mode: Option<ApprovalMode>,
}

/// A live subscription: events with `seq > last_seq` arrive on `events`;
/// everything up to `last_seq` is in the store.
pub struct Subscription {
    pub events: broadcast::Receiver<Arc<Published>>,
    pub last_seq: u64,
}

/// A policy decision as a session would make it, with the mode and
/// interactivity it used.
pub struct PolicyCheck {
    pub verdict: crate::policy::PolicyVerdict,
    pub mode: ApprovalMode,
    pub interactive: bool,
}

/// A call that has finished, for whoever waited on it.
pub struct FinalCall {
    pub call_id: String,
    /// The final snapshot, when the waiter asked for it in structured form.
    pub snapshot: Option<ToolCallSnapshot>,
    /// The final `toolCall` event as stored and broadcast: its JSON is a
    /// superset of the snapshot's, so a `wait: true` answer can carry it
    /// without serializing a large result a second time.
    pub event: Option<Arc<Published>>,
}

/// Who waits for a call to finish, and in what form.
pub(super) enum Waiter {
    /// A client (`tool.call` with `wait: true`): the final event's JSON.
    Event(oneshot::Sender<FinalCall>),
    /// A turn: the structured final snapshot.
    Snapshot(oneshot::Sender<ToolCallSnapshot>),
}

impl Waiter {
    /// Whether it needs the structured snapshot (the event JSON is always kept).
    pub(super) fn wants_snapshot(&self) -> bool {
        matches!(self, Waiter::Snapshot(_))
    }
}

/// How a `Call` command is answered.
pub(super) enum CallReply {
    /// With the call id, once the call's first event is durable.
    Accepted(oneshot::Sender<String>),
    /// Only when the call has finished (`tool.call` with `wait: true`).
    Finished(oneshot::Sender<FinalCall>),
}

pub(super) enum Command {
    Info {
        reply: oneshot::Sender<(SessionRecord, u64)>,
    },
    Subscribe {
        reply: oneshot::Sender<Subscription>,
    },
    Call {
        name: String,
        args: Value,
        reply: CallReply,
    },
    Confirm {
        call_id: String,
        outcome: ConfirmationOutcome,
        modified_args: Option<Value>,
        /// A person's words with a refusal, and the mode an approved plan
        /// switches to (`exit_plan_mode`).
        feedback: Option<String>,
        plan_mode: Option<ApprovalMode>,
        reply: oneshot::Sender<Result<bool, SessionError>>,
    },
    CancelAll {
        reply: oneshot::Sender<usize>,
    },
    /// Cancel one call; answers whether it was still running.
    CancelCall {
        call_id: String,
        reply: oneshot::Sender<Result<bool, SessionError>>,
    },
    SetApprovalMode {
        mode: ApprovalMode,
        reply: oneshot::Sender<SessionRecord>,
    },
    /// Evaluate the policy as this session would (its allowlist included).
    PolicyCheck {
        tool_name: String,
        args: Value,
        mode: Option<ApprovalMode>,
        interactive: Option<bool>,
        reply: oneshot::Sender<PolicyCheck>,
    },
    /// Queue a prompt; the answer is its turn id and how many turns run
    /// or wait before it.
    Prompt {
        text: String,
        parts: Vec<geminid_protocol::turn::PromptPart>,
        reply: oneshot::Sender<Result<(String, u64), SessionError>>,
    },
    /// A page of the conversation history: the total and the entries.
    History {
        offset: u64,
        limit: u64,
        reply: oneshot::Sender<Result<(u64, Vec<crate::model::Content>), SessionError>>,
    },
    /// Choose the session's model.
    SetModel {
        model: Option<String>,
        reply: oneshot::Sender<SessionRecord>,
    },
    /// Answer an open question (`session.answer`); the content the asker
    /// got.
    Answer {
        question_id: String,
        action: crate::questions::Action,
        content: Option<Value>,
        /// Who answered, for the event and later answers.
        by: String,
        reply: oneshot::Sender<Result<Option<Value>, SessionError>>,
    },
    /// Compress what is sent to the model (between turns).
    Compress {
        reply: oneshot::Sender<Result<Option<crate::agent::Compressed>, SessionError>>,
    },
    /// The session's checkpoints.
    Checkpoints {
        reply: oneshot::Sender<Result<Vec<crate::checkpoints::Checkpoint>, SessionError>>,
    },
    /// Restore a checkpoint (`session.restore`).
    Restore {
        checkpoint: String,
        force: bool,
        reply: oneshot::Sender<Result<crate::checkpoints::Restored, SessionError>>,
    },
    /// What a fork of this session starts from.
    ForkPoint {
        at_turn: Option<String>,
        reply: oneshot::Sender<Result<ForkPoint, SessionError>>,
    },
    /// Seed a fresh fork with its source's conversation.
    SeedFork {
        from: String,
        at_turn: Option<String>,
        point: Box<ForkPoint>,
        reply: oneshot::Sender<()>,
    },
    /// Record a daemon-wide notice (a policy problem) in the session.
    Announce {
        payload: geminid_protocol::event::EventPayload,
    },
    /// Cancel everything, wait for running calls to end, persist, exit.
    Stop {
        reason: String,
        reply: oneshot::Sender<()>,
    },
    /// An MCP server's sampling request (`session/sampling.rs`).
    Sample {
        server: String,
        request: Value,
        reply: crate::discovery::mcp::sampling::SamplingReply,
    },
}

/// A cheap, cloneable way to reach one session's actor.
#[derive(Clone)]
pub struct SessionHandle {
    pub id: String,
    /// The session's workspace root, as created.
    pub cwd: String,
    pub(super) commands: mpsc::Sender<Command>,
}

impl SessionHandle {
    async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<T>) -> Command,
    ) -> Result<T, SessionError> {
        let (tx, rx) = oneshot::channel();
        self.commands
            .send(make(tx))
            .await
            .map_err(|_| SessionError::Stopped(self.id.clone()))?;
        rx.await.map_err(|_| SessionError::Stopped(self.id.clone()))
    }

    pub async fn info(&self) -> Result<(SessionRecord, u64), SessionError> {
        self.ask(|reply| Command::Info { reply }).await
    }

    pub async fn subscribe(&self) -> Result<Subscription, SessionError> {
        self.ask(|reply| Command::Subscribe { reply }).await
    }

    /// Schedules a call; answers with its id.
    pub async fn call(&self, name: String, args: Value) -> Result<String, SessionError> {
        self.ask(|reply| Command::Call {
            name,
            args,
            reply: CallReply::Accepted(reply),
        })
        .await
    }

    /// Schedules a call and answers when it has finished.
    pub async fn call_and_wait(
        &self,
        name: String,
        args: Value,
    ) -> Result<FinalCall, SessionError> {
        self.ask(|reply| Command::Call {
            name,
            args,
            reply: CallReply::Finished(reply),
        })
        .await
    }

    pub async fn confirm(
        &self,
        call_id: String,
        outcome: ConfirmationOutcome,
        modified_args: Option<Value>,
        feedback: Option<String>,
        plan_mode: Option<ApprovalMode>,
    ) -> Result<bool, SessionError> {
        self.ask(|reply| Command::Confirm {
            call_id,
            outcome,
            modified_args,
            feedback,
            plan_mode,
            reply,
        })
        .await?
    }

    /// Answers a question; the first answer wins.
    pub async fn answer(
        &self,
        question_id: String,
        action: crate::questions::Action,
        content: Option<Value>,
        by: String,
    ) -> Result<Option<Value>, SessionError> {
        self.ask(|reply| Command::Answer {
            question_id,
            action,
            content,
            by,
            reply,
        })
        .await?
    }

    pub async fn cancel_all(&self) -> Result<usize, SessionError> {
        self.ask(|reply| Command::CancelAll { reply }).await
    }

    /// Cancels one call; `Ok(false)` when it had already finished.
    pub async fn cancel_call(&self, call_id: String) -> Result<bool, SessionError> {
        self.ask(|reply| Command::CancelCall { call_id, reply })
            .await?
    }

    pub async fn set_approval_mode(
        &self,
        mode: ApprovalMode,
    ) -> Result<SessionRecord, SessionError> {
        self.ask(|reply| Command::SetApprovalMode { mode, reply })
            .await
    }

    pub async fn check_policy(
        &self,
        tool_name: String,
        args: Value,
        mode: Option<ApprovalMode>,
        interactive: Option<bool>,
    ) -> Result<PolicyCheck, SessionError> {
        self.ask(|reply| Command::PolicyCheck {
            tool_name,
            args,
            mode,
            interactive,
            reply,
        })
        .await
    }

    pub async fn prompt(
        &self,
        text: String,
        parts: Vec<geminid_protocol::turn::PromptPart>,
    ) -> Result<(String, u64), SessionError> {
        self.ask(|reply| Command::Prompt { text, parts, reply })
            .await?
    }

    pub async fn history(
        &self,
        offset: u64,
        limit: u64,
    ) -> Result<(u64, Vec<crate::model::Content>), SessionError> {
        self.ask(|reply| Command::History {
            offset,
            limit,
            reply,
        })
        .await?
    }

    pub async fn set_model(&self, model: Option<String>) -> Result<SessionRecord, SessionError> {
        self.ask(|reply| Command::SetModel { model, reply }).await
    }

    /// Compresses what is sent to the model; `None` when there was
    /// nothing old enough to summarize.
    pub async fn compress(&self) -> Result<Option<crate::agent::Compressed>, SessionError> {
        self.ask(|reply| Command::Compress { reply }).await?
    }

    pub async fn checkpoints(&self) -> Result<Vec<crate::checkpoints::Checkpoint>, SessionError> {
        self.ask(|reply| Command::Checkpoints { reply }).await?
    }

    pub async fn restore(
        &self,
        checkpoint: String,
        force: bool,
    ) -> Result<crate::checkpoints::Restored, SessionError> {
        self.ask(|reply| Command::Restore {
            checkpoint,
            force,
            reply,
        })
        .await?
    }

    pub(super) async fn fork_point(
        &self,
        at_turn: Option<String>,
    ) -> Result<ForkPoint, SessionError> {
        self.ask(|reply| Command::ForkPoint { at_turn, reply })
            .await?
    }

    pub(super) async fn seed_fork(
        &self,
        from: String,
        at_turn: Option<String>,
        point: ForkPoint,
    ) -> Result<(), SessionError> {
        self.ask(|reply| Command::SeedFork {
            from,
            at_turn,
            point: Box::new(point),
            reply,
        })
        .await
    }

    pub async fn stop(&self, reason: &str) -> Result<(), SessionError> {
        let reason = reason.to_owned();
        self.ask(|reply| Command::Stop { reason, reply }).await
    }

    /// Records a notice without waiting; dropped if the session is busy.
    pub fn announce(&self, payload: geminid_protocol::event::EventPayload) {
        let _ = self.commands.try_send(Command::Announce { payload });
    }

    /// Whether the actor has exited.
    pub fn is_stopped(&self) -> bool {
        self.commands.is_closed()
    }
}

/// What a fork starts from.
pub struct ForkPoint {
    pub record: SessionRecord,
    pub history: Vec<crate::model::Content>,
    pub compression: Option<crate::model::CompressedPrefix>,
}
