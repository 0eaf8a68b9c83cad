//! Following one daemon session for the editor: its events become
//! `session/update` notifications, a `turnFinished` answers the
//! `session/prompt` that queued the turn, a call awaiting approval becomes a
//! `session/request_permission` (withdrawn when a terminal answers first),
//! a question an `elicitation/create` when the editor can show its mode
//! (form, or url for a link; else declined with a note), and after `session/load` the history is
//! replayed before the answer.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::event::{EventPayload, SessionEvent};
use geminid_protocol::tool::{CallState, ToolCallSnapshot};
use serde_json::{Value, json};

use super::convert;
use super::elicit::{self, EditorAsks};
use super::rpc::{Peer, code, daemon_error};
use crate::Client;

/// A turn's end, or the prompt request waiting for it.
enum TurnWait {
    Prompt(Value),
    Finished(String, Option<String>),
}

/// What the prompt handler and the follower task share.
#[derive(Default)]
struct Shared {
    turns: HashMap<String, TurnWait>,
    /// Prompts sent from here whose `userMessage` is not echoed back.
    own_texts: Vec<String>,
}

/// The editor: where its messages go, and how it can be asked.
pub struct Editor {
    pub peer: Arc<Peer>,
    pub asks: EditorAsks,
}

/// One followed session.
pub struct Follow {
    pub session_id: String,
    /// The session's workspace (which servers' prompts it is offered).
    pub cwd: String,
    shared: Mutex<Shared>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Drop for Follow {
    fn drop(&mut self) {
        if let Some(task) = self.task.lock().unwrap_or_else(|e| e.into_inner()).take() {
            task.abort();
        }
    }
}

impl Follow {
    /// Starts following `session_id` from `since`; `load`, when given, is
    /// the `session/load` request answered once the events up to
    /// `history_end` have been sent.
    pub fn start(
        client: Arc<Client>,
        editor: Editor,
        session_id: String,
        cwd: String,
        since: u64,
        history_end: u64,
        load: Option<(Value, Value)>,
    ) -> Arc<Follow> {
        let follow = Arc::new(Follow {
            session_id,
            cwd,
            shared: Mutex::new(Shared::default()),
            task: Mutex::new(None),
        });
        let task = Follower {
            client,
            peer: editor.peer,
            follow: Arc::downgrade(&follow),
            session_id: follow.session_id.clone(),
            cwd: follow.cwd.clone(),
            history_end,
            replayed: false,
            load,
            calls: HashMap::new(),
            awaiting: BTreeMap::new(),
            asked: HashMap::new(),
            kinds: HashMap::new(),
            editor_asks: editor.asks,
            questions: Default::default(),
            elicited: HashMap::new(),
            linked: Default::default(),
        };
        let handle = tokio::spawn(task.run(since));
        *follow.task.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
        follow
    }

    fn shared(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remembers a prompt about to be sent, so its echo is not shown.
    pub fn sending(&self, text: &str) {
        self.shared().own_texts.push(text.to_owned());
    }

    /// Forgets a prompt the daemon refused.
    pub fn not_sent(&self, text: &str) {
        let mut shared = self.shared();
        if let Some(i) = shared.own_texts.iter().position(|t| t == text) {
            shared.own_texts.remove(i);
        }
    }

    /// Answers `request` when `turn_id` finishes (at once if it has).
    pub fn await_turn(&self, peer: &Peer, turn_id: String, request: Value) {
        let mut shared = self.shared();
        match shared.turns.remove(&turn_id) {
            Some(TurnWait::Finished(reason, message)) => {
                answer_prompt(peer, request, &reason, message.as_deref())
            }
            _ => {
                shared.turns.insert(turn_id, TurnWait::Prompt(request));
            }
        }
    }
}

fn answer_prompt(peer: &Peer, request: Value, reason: &str, message: Option<&str>) {
    match convert::stop_reason(reason, message) {
        Ok(stop) => peer.respond(request, json!({"stopReason": stop})),
        Err(message) => peer.respond_error(request, code::INTERNAL_ERROR, message),
    }
}

/// A call as the editor has seen it.
#[derive(Default)]
struct SeenCall {
    output: String,
}

struct Follower {
    client: Arc<Client>,
    peer: Arc<Peer>,
    follow: std::sync::Weak<Follow>,
    session_id: String,
    cwd: String,
    history_end: u64,
    replayed: bool,
    load: Option<(Value, Value)>,
    calls: HashMap<String, SeenCall>,
    /// Calls awaiting approval, oldest first (`call-<seq>`).
    awaiting: BTreeMap<u64, ToolCallSnapshot>,
    /// Permission requests sent, by call id.
    asked: HashMap<String, u64>,
    /// Daemon tool kinds by tool name.
    kinds: HashMap<String, String>,
    /// How the editor can be asked a question.
    editor_asks: EditorAsks,
    /// The session's open questions.
    questions: crate::questions::QuestionBook,
    /// `elicitation/create` requests sent, by question id.
    elicited: HashMap<String, u64>,
    /// URL-mode questions sent to the editor, told `elicitation/complete`
    /// when their server says the interaction is over.
    linked: std::collections::HashSet<String>,
}

impl Follower {
    async fn run(mut self, since: u64) {
        self.refresh_kinds().await;
        let mut events = match self
            .client
            .subscribe_session(self.session_id.clone(), Some(since))
            .await
        {
            Ok(events) => events,
            Err(e) => {
                if let Some((request, _)) = self.load.take() {
                    let (code, message) = daemon_error(&e);
                    self.peer.respond_error(request, code, message);
                }
                return;
            }
        };
        if since >= self.history_end {
            self.history_replayed().await;
        }
        while let Some(Ok(event)) = events.next().await {
            self.on_event(&event).await;
            if event.seq >= self.history_end {
                self.history_replayed().await;
            }
        }
        // The daemon ended the stream (session deleted, daemon stopping):
        // prompts still waiting will not finish here.
        eprintln!("gemctl acp: the event stream of {} ended", self.session_id);
        if let Some(follow) = self.follow.upgrade() {
            for (_, wait) in follow.shared().turns.drain() {
                if let TurnWait::Prompt(request) = wait {
                    let message = "geminid ended the session's event stream";
                    self.peer
                        .respond_error(request, code::INTERNAL_ERROR, message);
                }
            }
        }
    }

    async fn refresh_kinds(&mut self) {
        if let Ok(tools) = self.client.list_tools(Some(self.session_id.clone())).await {
            self.kinds = tools.into_iter().map(|t| (t.name, t.kind)).collect();
        }
    }

    fn update(&self, update: Value) {
        let params = json!({"sessionId": self.session_id, "update": update});
        self.peer.notify("session/update", params);
    }

    /// Answers `session/load` (once), offers the MCP prompts as commands
    /// and asks about calls left waiting.
    async fn history_replayed(&mut self) {
        if self.replayed {
            return;
        }
        self.replayed = true;
        if let Some((request, result)) = self.load.take() {
            self.peer.respond(request, result);
            self.announce_commands().await;
        }
        let waiting: Vec<ToolCallSnapshot> = self.awaiting.values().cloned().collect();
        for call in waiting {
            self.ask(&call);
        }
        let open: Vec<crate::questions::Open> = self.questions.all().cloned().collect();
        for question in open {
            self.put_question(question).await;
        }
    }

    /// `available_commands_update` with the prompts offered now.
    async fn announce_commands(&self) {
        let commands = super::commands::offered(&self.client, &self.cwd).await;
        self.update(super::commands::update(&commands));
    }

    async fn on_event(&mut self, event: &SessionEvent) {
        if let Some(closed) = self.questions.observe(&event.payload)
            && let Some(request) = self.elicited.remove(&closed.question_id)
        {
            // Answered elsewhere, or ended: withdraw the editor's form.
            self.peer.cancel_request(request);
        }
        match &event.payload {
            // A server came or went: its prompts with it.
            EventPayload::McpServerStatus { .. } if self.replayed => {
                self.announce_commands().await
            }
            EventPayload::ModelText { delta, .. } => {
                self.update(convert::chunk("agent_message_chunk", delta))
            }
            EventPayload::ModelThought { delta, .. } => {
                self.update(convert::chunk("agent_thought_chunk", delta))
            }
            EventPayload::UserMessage { text, .. } if !self.is_own(text) => {
                self.update(convert::chunk("user_message_chunk", text))
            }
            EventPayload::ToolCall(call) => self.on_call(call).await,
            EventPayload::TurnFinished {
                turn_id,
                reason,
                message,
                ..
            } => {
                if let Some(note) = convert::hook_note(reason, message.as_deref()) {
                    self.update(convert::chunk("agent_message_chunk", &note));
                }
                self.on_turn_finished(turn_id, reason, message.clone())
            }
            EventPayload::ApprovalModeChanged { approval_mode } => self.update(
                json!({"sessionUpdate": "current_mode_update", "currentModeId": approval_mode.as_str()}),
            ),
            EventPayload::ElicitationCompleted { question_id, .. }
                if self.linked.remove(question_id) =>
            {
                self.peer.notify(
                    "elicitation/complete",
                    json!({"elicitationId": question_id}),
                )
            }
            EventPayload::QuestionAsked { question_id, .. } if self.replayed => {
                if let Some(question) = self.questions.get(question_id).cloned() {
                    self.put_question(question).await;
                }
            }
            _ => {}
        }
    }

    /// Puts a question to the editor as an `elicitation/create` when it
    /// advertised the question's mode (form, or url for a link); its answer goes back with
    /// `session.answer` (refused harmlessly when another client answered
    /// first). Else it is declined.
    async fn put_question(&mut self, q: crate::questions::Open) {
        if self.elicited.contains_key(&q.question_id) {
            return;
        }
        // A URL-mode question goes only to an editor that shows links;
        // else it is declined, with the note.
        let asks = self.editor_asks;
        let params = match &q.url {
            Some(url) if asks.url => elicit::url_request(&self.session_id, &q, url),
            None if asks.form => elicit::form_request(&self.session_id, &q),
            Some(_) => {
                let why = "this editor offers no URL elicitation to show the link";
                return self.decline_question(&q, why).await;
            }
            None => {
                let why = "this editor offers no elicitation to ask it here";
                return self.decline_question(&q, why).await;
            }
        };
        if q.url.is_some() {
            self.linked.insert(q.question_id.clone());
        }
        let (request, answer) = self.peer.request("elicitation/create", params);
        self.elicited.insert(q.question_id.clone(), request);
        let client = self.client.clone();
        let session_id = self.session_id.clone();
        tokio::spawn(async move {
            // Withdrawn (answered elsewhere) or the editor went away.
            let Ok(answer) = answer.await else {
                return;
            };
            if answer
                .as_ref()
                .err()
                .is_some_and(|e| e["message"] == "withdrawn")
            {
                return;
            }
            let (action, content) = elicit::answer_of(&answer);
            if let Err(e) = client
                .answer_question(session_id, q.question_id.clone(), action, content)
                .await
            {
                eprintln!(
                    "gemctl acp: session.answer for {} failed: {}",
                    q.question_id,
                    daemon_error(&e).1
                );
            }
        });
    }

    /// An editor that cannot show a question (it advertised no
    /// elicitation): it is declined at once, and the editor is told so in
    /// the agent's message, rather than left waiting for a timeout.
    async fn decline_question(&self, q: &crate::questions::Open, why: &str) {
        let who = crate::questions::asker_words(&q.asked_by);
        let message = &q.message;
        let result = self
            .client
            .answer_question(
                self.session_id.clone(),
                q.question_id.clone(),
                geminid_protocol::question::AnswerAction::Decline,
                None,
            )
            .await;
        let notice = match result {
            Ok(_) => format!(
                "\n[geminid: {who} asked \"{message}\"; declined: {why}; to answer such questions, follow the session with `gemctl attach {}`]\n",
                self.session_id
            ),
            // Another client answered first, or it ended.
            Err(_) => return,
        };
        self.update(convert::chunk("agent_message_chunk", &notice));
    }

    fn is_own(&self, text: &str) -> bool {
        let Some(follow) = self.follow.upgrade() else {
            return false;
        };
        let mut shared = follow.shared();
        match shared.own_texts.iter().position(|t| t == text) {
            Some(i) => {
                shared.own_texts.remove(i);
                true
            }
            None => false,
        }
    }

    fn on_turn_finished(&self, turn_id: &str, reason: &str, message: Option<String>) {
        let Some(follow) = self.follow.upgrade() else {
            return;
        };
        let mut shared = follow.shared();
        match shared.turns.remove(turn_id) {
            Some(TurnWait::Prompt(request)) => {
                answer_prompt(&self.peer, request, reason, message.as_deref())
            }
            // The prompt's answer has not arrived yet (or the turn is not ours):
            // keep the end for `await_turn`. Replayed turns are never awaited.
            _ if self.replayed => {
                if shared.turns.len() > 64 {
                    shared.turns.retain(|_, w| matches!(w, TurnWait::Prompt(_)));
                }
                shared.turns.insert(
                    turn_id.to_owned(),
                    TurnWait::Finished(reason.to_owned(), message),
                );
            }
            _ => {}
        }
    }

    async fn on_call(&mut self, call: &ToolCallSnapshot) {
        if !self.kinds.contains_key(&call.name) {
            self.refresh_kinds().await;
        }
        let kind = self.kinds.get(&call.name).map(String::as_str);
        let first = !self.calls.contains_key(&call.call_id);
        let seen = self.calls.entry(call.call_id.clone()).or_default();
        if let Some(delta) = &call.output_delta {
            convert::add_output(&mut seen.output, delta);
        }
        let update = convert::tool_call(call, kind, first, &seen.output);
        self.update(update);
        if call.state.is_terminal() {
            self.calls.remove(&call.call_id);
        }
        let key = order_key(&call.call_id);
        if call.state == CallState::AwaitingApproval {
            self.awaiting.insert(key, call.clone());
            if self.replayed {
                self.ask(call);
            }
        } else if call.output_delta.is_none() {
            self.awaiting.remove(&key);
            if let Some(request) = self.asked.remove(&call.call_id) {
                // Decided elsewhere (a terminal, a cancel): withdraw the question.
                self.peer.cancel_request(request);
            }
        }
    }

    /// Sends `session/request_permission` for a call (once) and passes the
    /// editor's answer on with `tool.confirm`. A late answer, after another
    /// client decided, is refused by the daemon (`accepted: false`).
    fn ask(&mut self, call: &ToolCallSnapshot) {
        if self.asked.contains_key(&call.call_id) {
            return;
        }
        let kind = self.kinds.get(&call.name).map(String::as_str);
        let params = convert::permission_request(&self.session_id, call, kind);
        let (request, answer) = self.peer.request("session/request_permission", params);
        self.asked.insert(call.call_id.clone(), request);
        let client = self.client.clone();
        let session_id = self.session_id.clone();
        let call_id = call.call_id.clone();
        tokio::spawn(async move {
            let Ok(Ok(answer)) = answer.await else {
                return;
            };
            let outcome = convert::permission_outcome(&answer);
            let mode = convert::plan_mode_of(&answer);
            if let Err(e) = client
                .confirm_answer(session_id, call_id, outcome, None, None, mode)
                .await
            {
                eprintln!("gemctl acp: tool.confirm failed: {}", daemon_error(&e).1);
            }
        });
    }
}

fn order_key(call_id: &str) -> u64 {
    call_id
        .strip_prefix("call-")
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX)
}
