//! A session's prompts: a FIFO queue from any client, with at most one
//! turn running at a time.

use std::collections::VecDeque;

use tokio_util::sync::CancellationToken;

use crate::store::PendingPrompt;

/// The running turn and the prompts waiting behind it.
#[derive(Default)]
pub struct PromptQueue {
    queue: VecDeque<PendingPrompt>,
    running: Option<RunningTurn>,
}

/// The turn that runs now.
struct RunningTurn {
    turn_id: String,
    cancel: CancellationToken,
}

impl PromptQueue {
    /// Whether a turn runs.
    pub fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// Turns that run or wait.
    pub fn ahead(&self) -> u64 {
        self.queue.len() as u64 + u64::from(self.running.is_some())
    }

    /// Queues a prompt behind the others.
    pub fn push(&mut self, prompt: PendingPrompt) {
        self.queue.push_back(prompt);
    }

    /// The next prompt to run, when no turn runs.
    pub fn take_next(&mut self) -> Option<PendingPrompt> {
        if self.running.is_some() {
            return None;
        }
        self.queue.pop_front()
    }

    /// Marks `turn_id` as the running turn, cancelled through `cancel`.
    pub fn started(&mut self, turn_id: String, cancel: CancellationToken) {
        self.running = Some(RunningTurn { turn_id, cancel });
    }

    /// Whether `turn_id` is the running turn and has not been cancelled:
    /// a cancelled turn starts nothing more.
    pub fn is_live(&self, turn_id: &str) -> bool {
        self.running
            .as_ref()
            .is_some_and(|t| t.turn_id == turn_id && !t.cancel.is_cancelled())
    }

    /// Cancels the running turn; whether there was one.
    pub fn cancel(&self) -> bool {
        match &self.running {
            Some(turn) => {
                turn.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// `turn_id` has finished: it no longer runs.
    pub fn finished(&mut self, turn_id: &str) {
        if self.running.as_ref().is_some_and(|t| t.turn_id == turn_id) {
            self.running = None;
        }
    }
}
