//! Questions for a session's people (an MCP server's elicitation, the
//! model's `ask_user`): what a question is (`Question`, its `Form`), how
//! it is answered (`Answer`), and the `Asker` a running call holds to
//! put one to its session. Pure, apart from the one-shot channel the
//! answer comes back on; the session's side is `session/questions.rs`.

pub mod book;
pub mod form;

use std::sync::Arc;

pub use form::{Field, FieldKind, Form};
use serde_json::{Map, Value};
use tokio::sync::oneshot;

/// Who asks.
#[derive(Debug, Clone, PartialEq)]
pub enum AskedBy {
    /// An MCP server (its configured name).
    Mcp(String),
    /// The model, with `ask_user`.
    Model,
}

#[derive(Debug, Clone)]
pub struct Question {
    pub asked_by: AskedBy,
    pub message: String,
    pub form: Form,
    /// A URL-mode elicitation's link (its form is empty).
    pub link: Option<Link>,
}

/// The page a URL-mode elicitation sends the person to, never opened by
/// the daemon; `completed` is notified when the server says the
/// interaction there is finished.
#[derive(Debug, Clone)]
pub struct Link {
    pub url: String,
    pub completed: Arc<tokio::sync::Notify>,
}

/// How a question ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Accept,
    Decline,
    Cancel,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Accept => "accept",
            Action::Decline => "decline",
            Action::Cancel => "cancel",
        }
    }
}

/// What the asker gets back.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub action: Action,
    /// For `Accept`: the checked content (defaults filled in).
    pub content: Option<Map<String, Value>>,
}

impl Answer {
    pub fn decline() -> Answer {
        Answer {
            action: Action::Decline,
            content: None,
        }
    }

    pub fn cancel() -> Answer {
        Answer {
            action: Action::Cancel,
            content: None,
        }
    }
}

/// Puts a question to whoever can answer it: a running call's session
/// (`session/driver.rs`), or the `mcp.probe` request. Cheap to clone.
#[derive(Clone)]
pub struct Asker {
    /// The session (or `probe`) that answers: questions of calls in
    /// flight on one MCP connection go to one owner, or to nobody.
    pub owner: String,
    /// The call that asks, when known.
    pub call_id: Option<String>,
    put: Arc<dyn Fn(Question, oneshot::Sender<Answer>) + Send + Sync>,
}

impl Asker {
    pub fn new(
        owner: String,
        call_id: Option<String>,
        put: impl Fn(Question, oneshot::Sender<Answer>) + Send + Sync + 'static,
    ) -> Asker {
        Asker {
            owner,
            call_id,
            put: Arc::new(put),
        }
    }

    /// Asks and waits. An answerer that goes away without answering (the
    /// session stopped, the call ended) is a `Cancel`; the session ends
    /// every question at its timeout, so this never waits for ever.
    pub async fn ask(&self, question: Question) -> Answer {
        let (tx, rx) = oneshot::channel();
        (self.put)(question, tx);
        rx.await.unwrap_or_else(|_| Answer::cancel())
    }
}

impl std::fmt::Debug for Asker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Asker({}, {:?})", self.owner, self.call_id)
    }
}
