//! A session's open questions, and the ended ones remembered to tell a
//! late answer how they ended. Kept by the session actor
//! (`session/questions.rs`).

use std::collections::{HashMap, VecDeque};

use tokio::sync::oneshot;

use super::{Answer, Form};

/// How many ended questions are remembered.
const REMEMBER_CLOSED: usize = 256;

/// One open question: its call, its form, where its answer goes.
pub struct Open {
    pub call_id: Option<String>,
    pub form: Form,
    pub reply: oneshot::Sender<Answer>,
}

#[derive(Default)]
pub struct QuestionBook {
    open: HashMap<String, Open>,
    /// Ended questions, oldest first: id and how they ended, in words.
    closed: VecDeque<(String, String)>,
}

impl QuestionBook {
    pub fn insert(&mut self, id: String, open: Open) {
        self.open.insert(id, open);
    }

    pub fn get(&self, id: &str) -> Option<&Open> {
        self.open.get(id)
    }

    pub fn remove(&mut self, id: &str) -> Option<Open> {
        self.open.remove(id)
    }

    /// The open questions of `call_id`.
    pub fn of_call(&self, call_id: &str) -> Vec<String> {
        self.open
            .iter()
            .filter(|(_, q)| q.call_id.as_deref() == Some(call_id))
            .map(|(id, _)| id.clone())
            .collect()
    }

    pub fn ids(&self) -> Vec<String> {
        self.open.keys().cloned().collect()
    }

    pub fn remember(&mut self, id: String, how: String) {
        if self.closed.len() >= REMEMBER_CLOSED {
            self.closed.pop_front();
        }
        self.closed.push_back((id, how));
    }

    /// How an ended question ended, if it is still remembered.
    pub fn ended(&self, id: &str) -> Option<&str> {
        self.closed
            .iter()
            .rev()
            .find(|(q, _)| q == id)
            .map(|(_, how)| how.as_str())
    }
}
