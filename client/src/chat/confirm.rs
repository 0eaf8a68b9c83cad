//! Confirmations in the chat: the oldest call awaiting approval is asked
//! about, one at a time; the person answers at the prompt with one of the
//! answers `answers.rs` offers for the call (once, session, server,
//! always and saved, edit in $EDITOR, no). When another client answers first, the call's next
//! snapshot is no longer `awaiting_approval` and the question is
//! withdrawn on screen.

use std::collections::{BTreeMap, HashSet};

use geminid_protocol::tool::{CallState, ToolCallSnapshot};

/// What happened to the question being asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    None,
    /// Another client answered it; the call is now in this state.
    AnsweredElsewhere(CallState),
}

#[derive(Default)]
pub struct Confirmations {
    /// Calls awaiting approval, by seq of the call (call ids are `call-<seq>`).
    pending: BTreeMap<u64, ToolCallSnapshot>,
    /// The call being asked about.
    asking: Option<String>,
    /// Calls this terminal answered (their next snapshot is no surprise).
    answered_here: HashSet<String>,
}

impl Confirmations {
    /// Tracks a call's new snapshot.
    pub fn observe(&mut self, call: &ToolCallSnapshot) -> Change {
        if call.output_delta.is_some() {
            return Change::None;
        }
        let key = order_key(&call.call_id);
        if call.state == CallState::AwaitingApproval {
            self.pending.insert(key, call.clone());
            return Change::None;
        }
        if self.pending.remove(&key).is_none() {
            return Change::None;
        }
        let here = self.answered_here.remove(&call.call_id);
        if self.asking.as_deref() == Some(call.call_id.as_str()) {
            self.asking = None;
            if !here {
                return Change::AnsweredElsewhere(call.state);
            }
        }
        Change::None
    }

    /// The next call to ask about, if nothing is being asked (it is
    /// then being asked).
    pub fn next_question(&mut self) -> Option<ToolCallSnapshot> {
        if self.asking.is_some() {
            return None;
        }
        let call = self.pending.values().next()?.clone();
        self.asking = Some(call.call_id.clone());
        Some(call)
    }

    /// The call being asked about.
    pub fn asking(&self) -> Option<&ToolCallSnapshot> {
        let id = self.asking.as_deref()?;
        self.pending.get(&order_key(id))
    }

    /// Records that this terminal is answering `call_id` (before the
    /// answer is sent: the call's next snapshot may come first).
    pub fn answering(&mut self, call_id: &str) {
        self.answered_here.insert(call_id.to_owned());
    }

    /// The answer was not taken (invalid edited arguments, a failed
    /// request): ask again.
    pub fn retry(&mut self, call_id: &str) {
        self.answered_here.remove(call_id);
        if self.asking.as_deref() == Some(call_id) {
            self.asking = None;
        }
    }

    pub fn any_pending(&self) -> bool {
        !self.pending.is_empty()
    }
}

fn order_key(call_id: &str) -> u64 {
    call_id
        .strip_prefix("call-")
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX)
}

/// How a withdrawn question is explained.
pub fn withdrawn(state: CallState) -> &'static str {
    match state {
        CallState::Cancelled => "answered elsewhere: cancelled",
        CallState::Error | CallState::Interrupted => "answered elsewhere: not run",
        CallState::Validating
        | CallState::Scheduled
        | CallState::AwaitingApproval
        | CallState::Executing
        | CallState::Success => "answered elsewhere: approved",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn snapshot(id: &str, state: CallState) -> ToolCallSnapshot {
        serde_json::from_value(json!({
            "callId": id, "name": "write_file", "args": {}, "state": state,
            "description": null, "confirmation": null, "outputDelta": null,
            "result": null, "error": null, "decidedBy": null
        }))
        .unwrap()
    }

    #[test]
    fn a_question_answered_elsewhere_is_withdrawn() {
        let mut c = Confirmations::default();
        c.observe(&snapshot("call-9", CallState::AwaitingApproval));
        c.observe(&snapshot("call-4", CallState::AwaitingApproval));
        assert_eq!(c.next_question().unwrap().call_id, "call-4");
        assert!(c.next_question().is_none(), "one question at a time");
        assert_eq!(
            c.observe(&snapshot("call-4", CallState::Executing)),
            Change::AnsweredElsewhere(CallState::Executing)
        );
        // Answered here: no surprise.
        assert_eq!(c.next_question().unwrap().call_id, "call-9");
        c.answering("call-9");
        assert_eq!(
            c.observe(&snapshot("call-9", CallState::Cancelled)),
            Change::None
        );
        assert!(!c.any_pending());
    }
}
