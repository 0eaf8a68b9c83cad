//! Asking a person at the terminal to approve pending calls: y (once),
//! a (always), e (edit the arguments in $EDITOR), n (cancel). A question is
//! withdrawn when another client answers first.

use std::collections::BTreeMap;
use std::io::Write;

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::tool::{CallState, ConfirmationOutcome, ToolCallSnapshot};
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};

use super::render;
use crate::Client;
use crate::edit::edit_args;

pub struct Prompter {
    session_id: String,
    /// Calls awaiting approval, by seq of the call (call ids are `call-<seq>`).
    pending: BTreeMap<u64, ToolCallSnapshot>,
    asking: Option<String>,
    stdin: Option<Lines<BufReader<Stdin>>>,
}

impl Prompter {
    pub fn new(session_id: String, enabled: bool) -> Self {
        Prompter {
            session_id,
            pending: BTreeMap::new(),
            asking: None,
            stdin: enabled.then(|| BufReader::new(tokio::io::stdin()).lines()),
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
            println!(
                "  (answered by another client: {})",
                render::state_name(call.state)
            );
            self.asking = None;
        }
    }

    /// Asks about the oldest pending call if nothing is being asked.
    pub fn ask_next(&mut self) {
        if self.asking.is_some() || self.stdin.is_none() {
            return;
        }
        let Some(call) = self.pending.values().next() else {
            return;
        };
        println!("{}", render::confirmation_text(call));
        print!("Allow {}? [y]es once, [a]lways, [e]dit, [n]o: ", call.name);
        let _ = std::io::stdout().flush();
        self.asking = Some(call.call_id.clone());
    }

    pub fn is_asking(&self) -> bool {
        self.asking.is_some()
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
        let Some(call_id) = self.asking.clone() else {
            return Ok(());
        };
        let call = self.pending.get(&order_key(&call_id)).cloned();
        let (outcome, modified) = match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => (ConfirmationOutcome::ProceedOnce, None),
            "a" | "always" => (ConfirmationOutcome::ProceedAlways, None),
            "n" | "no" => (ConfirmationOutcome::Cancel, None),
            "e" | "edit" => match call.as_ref().map(|c| edit_args(&c.args)) {
                Some(Ok(args)) => (ConfirmationOutcome::ModifyWithEditor, Some(args)),
                Some(Err(message)) => {
                    println!("  {message}");
                    self.asking = None;
                    return Ok(());
                }
                None => return Ok(()),
            },
            _ => {
                print!("  please answer y, a, e or n: ");
                let _ = std::io::stdout().flush();
                return Ok(());
            }
        };
        self.asking = None;
        match client
            .confirm_tool(self.session_id.clone(), call_id, outcome, modified)
            .await
        {
            Ok(result) if result.accepted => {}
            Ok(_) => println!("  another client answered first"),
            Err(e) => println!(
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
