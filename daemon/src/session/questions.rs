//! The session's side of questions (`questions/`): a running call asks
//! (`Internal::Ask`), the question goes to every attached client as a
//! `questionAsked` event, the first `session.answer` wins and a
//! `questionClosed` event withdraws it from everyone. A session nobody
//! can answer in (non-interactive, or no client attached) declines at
//! once. A question ends as `cancel` at its timeout, when its call ends
//! or is cancelled, and when the session stops: it never holds a call
//! longer than that. Open questions live only in the actor's memory: a
//! daemon restart ends them with their calls (marked interrupted).

use geminid_protocol::event::EventPayload;
use serde_json::Value;
use tokio::sync::oneshot;

use super::SessionError;
use super::actor::{Actor, Internal};
use crate::questions::book::Open;
use crate::questions::{Action, Answer, AskedBy, Asker, Link, Question};
use crate::wire;

impl Actor {
    /// The way a call of this session asks its questions.
    pub(super) fn asker_for(&self, call_id: &str) -> Asker {
        let internal = self.internal.clone();
        let call = call_id.to_owned();
        Asker::new(
            self.record.id.clone(),
            Some(call_id.to_owned()),
            move |question, reply| {
                // A stopped actor drops `reply`: the asker gets `cancel`.
                let _ = internal.send(Internal::Ask {
                    call_id: Some(call.clone()),
                    question,
                    reply,
                });
            },
        )
    }

    /// Puts a question to the session's clients, or declines it at once
    /// when nobody can answer.
    pub(super) fn ask_question(
        &mut self,
        call_id: Option<String>,
        question: Question,
        reply: oneshot::Sender<Answer>,
    ) {
        let question_id = format!("q-{}", self.next_seq());
        let timeout = self.deps.question_timeout;
        self.emit(EventPayload::QuestionAsked {
            question_id: question_id.clone(),
            call_id: call_id.clone(),
            asked_by: wire::question_asker(&question.asked_by),
            message: question.message.clone(),
            fields: wire::question_fields(&question.form),
            timeout_secs: timeout.as_secs(),
            url: question.link.as_ref().map(|l| l.url.clone()),
        });
        let nobody = if !self.record.interactive {
            Some("declined: the session is not interactive, nobody can be asked")
        } else if self.subscribers() == 0 {
            Some("declined: no client is attached to the session to answer")
        } else {
            None
        };
        if let Some(reason) = nobody {
            tracing::info!(session = %self.record.id, question = %question_id, "{reason}");
            self.close_question_event(&question_id, Action::Decline, None, Some(reason.into()));
            let _ = reply.send(Answer::decline());
            return;
        }
        if let (Some(link), AskedBy::Mcp(server)) = (&question.link, &question.asked_by) {
            self.watch_completion(&question_id, server, link);
        }
        self.questions.insert(
            question_id.clone(),
            Open {
                call_id,
                form: question.form,
                reply,
            },
        );
        let internal = self.internal.clone();
        let cancel = self.cancel.clone();
        self.tasks.spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(timeout) => {
                    let _ = internal.send(Internal::QuestionTimedOut { question_id });
                }
                () = cancel.cancelled() => {}
            }
        });
    }

    /// A URL-mode question's server may say its interaction is finished,
    /// also after the question was answered: a `elicitationCompleted`
    /// event then. Watched until the question's timeout.
    fn watch_completion(&mut self, question_id: &str, server: &str, link: &Link) {
        let internal = self.internal.clone();
        let cancel = self.cancel.clone();
        let completed = link.completed.clone();
        let (question_id, server) = (question_id.to_owned(), server.to_owned());
        let timeout = self.deps.question_timeout;
        self.tasks.spawn(async move {
            tokio::select! {
                () = completed.notified() => {
                    let _ = internal.send(Internal::ElicitationCompleted { question_id, server });
                }
                () = tokio::time::sleep(timeout) => {}
                () = cancel.cancelled() => {}
            }
        });
    }

    /// `session.answer`: the first answer wins; content that does not fit
    /// the form is refused and the question stays open.
    pub(super) fn answer_question(
        &mut self,
        question_id: &str,
        action: Action,
        content: Option<&Value>,
        by: String,
    ) -> Result<Option<Value>, SessionError> {
        let Some(open) = self.questions.get(question_id) else {
            return Err(SessionError::QuestionClosed(
                match self.questions.ended(question_id) {
                    Some(how) => format!("question `{question_id}` is closed: {how}"),
                    None => format!("no question `{question_id}` is open in this session"),
                },
            ));
        };
        let content = match action {
            Action::Accept => Some(
                open.form
                    .check(content)
                    .map_err(|why| SessionError::InvalidParams(format!("content: {why}")))?,
            ),
            Action::Decline | Action::Cancel => None,
        };
        let Some(open) = self.questions.remove(question_id) else {
            return Err(SessionError::QuestionClosed(question_id.to_owned()));
        };
        let shown = content.clone().map(Value::Object);
        let _ = open.reply.send(Answer { action, content });
        self.close_question_event(question_id, action, Some(by), None);
        Ok(shown)
    }

    /// A question's time ran out: it ends as `cancel`.
    pub(super) fn question_timed_out(&mut self, question_id: &str) {
        let secs = self.deps.question_timeout.as_secs();
        self.end_question(question_id, &format!("no answer within {secs} s"));
    }

    /// A call ended (finished, failed or cancelled): its questions end.
    pub(super) fn end_questions_of(&mut self, call_id: &str) {
        for id in self.questions.of_call(call_id) {
            self.end_question(&id, "its call ended");
        }
    }

    /// The session stops: every question ends.
    pub(super) fn end_all_questions(&mut self, reason: &str) {
        for id in self.questions.ids() {
            self.end_question(&id, reason);
        }
    }

    fn end_question(&mut self, question_id: &str, reason: &str) {
        let Some(open) = self.questions.remove(question_id) else {
            return;
        };
        let _ = open.reply.send(Answer::cancel());
        self.close_question_event(question_id, Action::Cancel, None, Some(reason.to_owned()));
    }

    fn close_question_event(
        &mut self,
        question_id: &str,
        action: Action,
        by: Option<String>,
        reason: Option<String>,
    ) {
        let how = match (&by, &reason) {
            (Some(by), _) => format!("already answered ({}) by {by}", action.as_str()),
            (None, Some(reason)) => format!("{} ({reason})", action.as_str()),
            (None, None) => action.as_str().to_owned(),
        };
        self.questions.remember(question_id.to_owned(), how);
        self.emit(EventPayload::QuestionClosed {
            question_id: question_id.to_owned(),
            action: wire::answer_action(action),
            by,
            reason,
        });
    }
}
