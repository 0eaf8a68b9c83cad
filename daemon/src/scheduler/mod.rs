//! The scheduler: a pure state machine over a session's tool calls.
//!
//! `validating → scheduled → executing → success | error | cancelled`, with
//! `awaiting_approval` between validating and scheduled when the policy asks
//! a person. The machine does no IO: each input returns the [`Effect`]s the
//! driver (the session actor) must carry out: prepare a call (validate,
//! decide, build the confirmation), execute it, abort it, publish a snapshot.
//!
//! Rules it keeps:
//! * calls that need no confirmation run in parallel, up to `max_parallel`;
//!   beyond that they wait in `scheduled` (new calls queue, never fail);
//! * a call awaiting approval blocks nothing else;
//! * the first answer to a confirmation wins; later ones are not accepted.

mod call;

#[cfg(test)]
mod tests;

use std::collections::{HashMap, VecDeque};

pub use call::{CallError, CallErrorKind, CallState, ToolCall};

use crate::tools::{ConfirmationDetails, ToolLocation, ToolResult};

/// What preparing a call found out.
#[derive(Debug, Clone)]
pub enum Prepared {
    /// The arguments are invalid or the tool is unknown.
    Invalid(CallError),
    /// The policy refused the call.
    Denied { reason: String },
    /// The call may run.
    Allowed {
        description: String,
        locations: Vec<ToolLocation>,
        decided_by: String,
    },
    /// A person must approve the call first. `decided_by` says why when a
    /// check stricter than the policy asked (shown while it waits).
    Ask {
        description: String,
        locations: Vec<ToolLocation>,
        details: ConfirmationDetails,
        decided_by: Option<String>,
    },
}

/// A person's answer, already interpreted by the driver.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Run it (once, always, with modified arguments: the driver has
    /// recorded "always" and rebuilt modified calls before this).
    Proceed { decided_by: String },
    /// Do not run it.
    Cancel,
}

/// Something the driver must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Validate the call, ask the policy, build confirmation details, then
    /// feed back [`Scheduler::prepared`].
    Prepare { call_id: String },
    /// Start executing the call, then feed back [`Scheduler::finished`].
    Execute { call_id: String },
    /// Signal a running call to stop.
    Abort { call_id: String },
    /// The call changed: persist and broadcast this snapshot of it (taken
    /// when the change happened, so every transition is seen).
    Publish {
        call: Box<ToolCall>,
        output_delta: Option<String>,
    },
    /// The call reached a terminal state and the scheduler forgot it (its
    /// last `Publish`, just before, carries it): wake anyone waiting.
    Retire { call_id: String },
}

/// The calls of one session.
#[derive(Debug)]
pub struct Scheduler {
    calls: HashMap<String, ToolCall>,
    ready: VecDeque<String>,
    running: usize,
    max_parallel: usize,
    /// Calls that run as soon as they are allowed, whatever the limit:
    /// those a running call waits on (an MCP server's sampling request
    /// during its tool call), which would otherwise wait for their own
    /// caller's slot.
    nested: std::collections::HashSet<String>,
}

impl Scheduler {
    pub fn new(max_parallel: usize) -> Self {
        Scheduler {
            calls: HashMap::new(),
            ready: VecDeque::new(),
            running: 0,
            max_parallel: max_parallel.max(1),
            nested: std::collections::HashSet::new(),
        }
    }

    /// The call, until it ends (see `end`).
    pub fn call(&self, call_id: &str) -> Option<&ToolCall> {
        self.calls.get(call_id)
    }

    /// Calls that have not ended.
    pub fn active(&self) -> impl Iterator<Item = &ToolCall> {
        self.calls.values()
    }

    /// A new call arrives.
    pub fn submit(&mut self, call: ToolCall) -> Vec<Effect> {
        let call_id = call.id.clone();
        let published = publish(&call);
        self.calls.insert(call_id.clone(), call);
        vec![published, Effect::Prepare { call_id }]
    }

    /// A call a running call waits on: once allowed it starts at once,
    /// beyond `max_parallel` (see `nested`).
    pub fn submit_nested(&mut self, call: ToolCall) -> Vec<Effect> {
        self.nested.insert(call.id.clone());
        self.submit(call)
    }

    /// The driver finished preparing a call.
    pub fn prepared(&mut self, call_id: &str, prepared: Prepared) -> Vec<Effect> {
        let Some(call) = self.calls.get_mut(call_id) else {
            return Vec::new();
        };
        if call.state != CallState::Validating {
            // Cancelled while it was being prepared.
            return Vec::new();
        }
        match prepared {
            Prepared::Invalid(error) => self.end(call_id, CallState::Error(error)),
            Prepared::Denied { reason } => self.end(
                call_id,
                CallState::Error(CallError::new(CallErrorKind::Denied, reason)),
            ),
            Prepared::Allowed {
                description,
                locations,
                decided_by,
            } => {
                call.description = Some(description);
                call.locations = locations;
                call.decided_by = Some(decided_by);
                self.schedule(call_id)
            }
            Prepared::Ask {
                description,
                locations,
                details,
                decided_by,
            } => {
                call.description = Some(description);
                call.locations = locations;
                call.decided_by = decided_by;
                call.state = CallState::AwaitingApproval(details);
                vec![publish(call)]
            }
        }
    }

    /// A person answered. Returns whether the answer was accepted (the
    /// call was still waiting) and the effects.
    pub fn answer(&mut self, call_id: &str, answer: Answer) -> (bool, Vec<Effect>) {
        let Some(call) = self.calls.get_mut(call_id) else {
            return (false, Vec::new());
        };
        if !matches!(call.state, CallState::AwaitingApproval(_)) {
            return (false, Vec::new());
        }
        let effects = match answer {
            Answer::Proceed { decided_by } => {
                call.decided_by = Some(decided_by);
                self.schedule(call_id)
            }
            Answer::Cancel => self.end(
                call_id,
                CallState::Cancelled("cancelled by a person at the confirmation".to_owned()),
            ),
        };
        (true, effects)
    }

    /// The arguments of a call awaiting approval changed (modify with
    /// editor); the new confirmation details replace the old ones.
    pub fn replace_args(
        &mut self,
        call_id: &str,
        args: serde_json::Value,
        description: String,
        locations: Vec<ToolLocation>,
    ) -> bool {
        match self.calls.get_mut(call_id) {
            Some(call) if matches!(call.state, CallState::AwaitingApproval(_)) => {
                call.args = args;
                call.description = Some(description);
                call.locations = locations;
                true
            }
            Some(_) | None => false,
        }
    }

    /// A hook rewrote the arguments of a call being prepared; it is
    /// prepared again with them.
    pub fn rewrite_args(&mut self, call_id: &str, args: serde_json::Value) -> bool {
        match self.calls.get_mut(call_id) {
            Some(call) if call.state == CallState::Validating => {
                call.args = args;
                true
            }
            Some(_) | None => false,
        }
    }

    /// Output arrived from a running call.
    pub fn output(&mut self, call_id: &str, delta: String) -> Vec<Effect> {
        match self.calls.get(call_id) {
            Some(call) if call.state == CallState::Executing => vec![Effect::Publish {
                call: Box::new(call.clone()),
                output_delta: Some(delta),
            }],
            Some(_) | None => Vec::new(),
        }
    }

    /// A running call ended.
    pub fn finished(
        &mut self,
        call_id: &str,
        outcome: Result<ToolResult, CallError>,
    ) -> Vec<Effect> {
        match self.calls.get(call_id) {
            Some(call) if call.state == CallState::Executing => {}
            Some(_) | None => return Vec::new(),
        }
        self.running = self.running.saturating_sub(1);
        let state = match outcome {
            Ok(result) => CallState::Success(result),
            Err(error) if error.kind == CallErrorKind::Cancelled => {
                CallState::Cancelled(error.message)
            }
            Err(error) => CallState::Error(error),
        };
        let mut effects = self.end(call_id, state);
        effects.extend(self.start_ready());
        effects
    }

    /// Cancels one call, whatever state it is in.
    pub fn cancel(&mut self, call_id: &str, reason: &str) -> Vec<Effect> {
        let Some(call) = self.calls.get(call_id) else {
            return Vec::new();
        };
        match &call.state {
            CallState::Executing => vec![Effect::Abort {
                call_id: call_id.to_owned(),
            }],
            CallState::Validating | CallState::Scheduled | CallState::AwaitingApproval(_) => {
                self.ready.retain(|id| id != call_id);
                self.end(call_id, CallState::Cancelled(reason.to_owned()))
            }
            CallState::Success(_)
            | CallState::Error(_)
            | CallState::Cancelled(_)
            | CallState::Interrupted => Vec::new(),
        }
    }

    /// Cancels every call that has not finished.
    pub fn cancel_all(&mut self, reason: &str) -> Vec<Effect> {
        let mut ids: Vec<String> = self.calls.keys().cloned().collect();
        ids.sort();
        ids.iter().flat_map(|id| self.cancel(id, reason)).collect()
    }

    /// Queues an allowed call and starts it if a slot is free. `scheduled`
    /// is published only when the call really has to wait.
    fn schedule(&mut self, call_id: &str) -> Vec<Effect> {
        let Some(call) = self.calls.get_mut(call_id) else {
            return Vec::new();
        };
        if self.nested.remove(call_id) {
            call.state = CallState::Executing;
            self.running += 1;
            return vec![
                publish(call),
                Effect::Execute {
                    call_id: call_id.to_owned(),
                },
            ];
        }
        call.state = CallState::Scheduled;
        let waits = self.running >= self.max_parallel;
        let mut effects = if waits {
            vec![publish(call)]
        } else {
            Vec::new()
        };
        self.ready.push_back(call_id.to_owned());
        effects.extend(self.start_ready());
        effects
    }

    fn start_ready(&mut self) -> Vec<Effect> {
        let mut effects = Vec::new();
        while self.running < self.max_parallel {
            let Some(call_id) = self.ready.pop_front() else {
                break;
            };
            let Some(call) = self.calls.get_mut(&call_id) else {
                continue;
            };
            call.state = CallState::Executing;
            self.running += 1;
            effects.push(publish(call));
            effects.push(Effect::Execute { call_id });
        }
        effects
    }

    /// The call's last transition. It leaves the scheduler here, moved
    /// into its last `Publish`: a result can be megabytes, and nothing
    /// needs the call after it.
    fn end(&mut self, call_id: &str, state: CallState) -> Vec<Effect> {
        let Some(mut call) = self.calls.remove(call_id) else {
            return Vec::new();
        };
        self.nested.remove(call_id);
        call.state = state;
        vec![
            Effect::Publish {
                call: Box::new(call),
                output_delta: None,
            },
            Effect::Retire {
                call_id: call_id.to_owned(),
            },
        ]
    }
}

fn publish(call: &ToolCall) -> Effect {
    Effect::Publish {
        call: Box::new(call.clone()),
        output_delta: None,
    }
}
