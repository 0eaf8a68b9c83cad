//! Asking a person at the terminal to approve pending calls, with every
//! answer the daemon offers for the call (`answers.rs`: once, for the
//! session, for the server, always and saved, edit, no), and to answer the
//! session's questions (`questions.rs`: elicitations, `ask_user`) field by
//! field. A question is withdrawn when another client answers first.

use std::collections::BTreeMap;

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::tool::{CallState, ConfirmationOutcome, ToolCallSnapshot};

use crate::answers::{self, Answer};
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};

use super::render;
use crate::Client;
use crate::edit::edit_args;
use crate::questions::{self, Filling, QuestionBook, Step};

pub struct Prompter {
    session_id: String,
    /// Calls awaiting approval, by seq of the call (call ids are `call-<seq>`).
    pending: BTreeMap<u64, ToolCallSnapshot>,
    asking: Option<String>,
    /// The plan rejected here whose feedback the next line is.
    feedback_for: Option<String>,
    stdin: Option<Lines<BufReader<Stdin>>>,
    /// The session's open questions, and the one being answered.
    questions: QuestionBook,
    filling: Option<Filling>,
}

impl Prompter {
    pub fn new(session_id: String, enabled: bool) -> Self {
        Prompter {
            session_id,
            pending: BTreeMap::new(),
            asking: None,
            feedback_for: None,
            stdin: enabled.then(|| BufReader::new(tokio::io::stdin()).lines()),
            questions: QuestionBook::default(),
            filling: None,
        }
    }

    /// Follows the session's questions (asked, closed, gone with their
    /// call); withdraws the one being answered if it closed elsewhere.
    pub fn observe_event(&mut self, payload: &geminid_protocol::event::EventPayload) {
        if let Some(closed) = self.questions.observe(payload)
            && self.filling.as_ref().map(|f| f.question_id.as_str())
                == Some(closed.question_id.as_str())
        {
            eprintln!("\n  (question {} {})", closed.question_id, closed.how);
            self.filling = None;
        }
    }

    /// Tracks a call's new state; withdraws the question if it was answered
    /// elsewhere.
    pub fn observe(&mut self, call: &ToolCallSnapshot) {
        if call.output_delta.is_some() {
            return;
        }
        let key = order_key(&call.call_id);
        if call.state == CallState::AwaitingApproval {
            self.pending.insert(key, call.clone());
        } else if self.pending.remove(&key).is_some()
            && self.asking.as_deref() == Some(&call.call_id)
        {
            eprintln!(
                "  (answered by another client: {})",
                render::state_name(call.state)
            );
            self.asking = None;
            self.feedback_for = None;
        }
    }

    /// Asks about the oldest pending call if nothing is being asked.
    pub fn ask_next(&mut self) {
        if self.asking.is_some() || self.filling.is_some() || self.stdin.is_none() {
            return;
        }
        let Some(call) = self.pending.values().next() else {
            if let Some(q) = self.questions.first() {
                let (filling, prompt) = Filling::start(q);
                eprintln!("{}", questions::heading(q));
                eprint!("{prompt}");
                self.filling = Some(filling);
            }
            return;
        };
        eprintln!("{}", render::confirmation_text(call));
        eprintln!("{}", answers::menu(call));
        eprint!("Allow {}? [{}]: ", call.name, answers::keys(call));
        self.asking = Some(call.call_id.clone());
    }

    /// Stops asking (the call is being cancelled); a line typed later is
    /// not taken for an answer.
    pub fn withdraw(&mut self) {
        if self.asking.take().is_some() || self.filling.take().is_some() {
            eprintln!();
        }
    }

    pub fn is_asking(&self) -> bool {
        self.asking.is_some() || self.filling.is_some()
    }

    /// Waits for the person's next line (only call while asking).
    pub async fn next_line(&mut self) -> Option<String> {
        let stdin = self.stdin.as_mut()?;
        match stdin.next_line().await {
            Ok(Some(line)) => Some(line),
            Ok(None) | Err(_) => {
                // No more input: stop asking, keep following.
                self.stdin = None;
                self.asking = None;
                self.filling = None;
                None
            }
        }
    }

    /// Acts on an answer line.
    pub async fn answer(
        &mut self,
        client: &Client,
        line: &str,
    ) -> Result<(), crate::command::Failure> {
        if let Some(filling) = self.filling.as_mut() {
            match filling.take(line) {
                Step::Next(prompt) | Step::Again(prompt) => eprint!("{prompt}"),
                Step::Done(action, content) => {
                    let question_id = filling.question_id.clone();
                    self.filling = None;
                    match client
                        .answer_question(
                            self.session_id.clone(),
                            question_id.clone(),
                            action,
                            content,
                        )
                        .await
                    {
                        Ok(_) => self.questions.answered(&question_id),
                        Err(e) => eprintln!(
                            "  not accepted: {}",
                            crate::command::Failure::from(e).message
                        ),
                    }
                }
            }
            return Ok(());
        }
        let Some(call_id) = self.asking.clone() else {
            return Ok(());
        };
        if self.feedback_for.take().as_deref() == Some(call_id.as_str()) {
            self.asking = None;
            let feedback = Some(line.trim().to_owned()).filter(|f| !f.is_empty());
            return self
                .send(
                    client,
                    call_id,
                    ConfirmationOutcome::Cancel,
                    None,
                    feedback,
                    None,
                )
                .await;
        }
        let call = self.pending.get(&order_key(&call_id)).cloned();
        let Some(call) = call else {
            return Ok(());
        };
        let (outcome, modified, mode) = match answers::parse(&call, line) {
            Some(Answer::Outcome(outcome)) => (outcome, None, None),
            Some(Answer::ApprovePlan(mode)) => (ConfirmationOutcome::ProceedOnce, None, Some(mode)),
            Some(Answer::RejectPlan) => {
                self.feedback_for = Some(call_id);
                eprint!("{}", answers::FEEDBACK_QUESTION);
                return Ok(());
            }
            Some(Answer::Edit) => match edit_args(&call.args) {
                Ok(args) => (ConfirmationOutcome::ModifyWithEditor, Some(args), None),
                Err(message) => {
                    eprintln!("  {message}");
                    self.asking = None;
                    return Ok(());
                }
            },
            None => {
                eprint!("  please answer {}: ", answers::keys(&call));
                return Ok(());
            }
        };
        self.asking = None;
        self.send(client, call_id, outcome, modified, None, mode)
            .await
    }

    /// Sends an answer and says when it was not the one that counted.
    async fn send(
        &self,
        client: &Client,
        call_id: String,
        outcome: ConfirmationOutcome,
        modified: Option<serde_json::Value>,
        feedback: Option<String>,
        mode: Option<geminid_protocol::session::ApprovalMode>,
    ) -> Result<(), crate::command::Failure> {
        match client
            .confirm_answer(
                self.session_id.clone(),
                call_id,
                outcome,
                modified,
                feedback,
                mode,
            )
            .await
        {
            Ok(result) if result.accepted => {}
            Ok(_) => eprintln!("  another client answered first"),
            Err(e) => eprintln!(
                "  not accepted: {}",
                crate::command::Failure::from(e).message
            ),
        }
        Ok(())
    }
}

fn order_key(call_id: &str) -> u64 {
    call_id
        .strip_prefix("call-")
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX)
}
