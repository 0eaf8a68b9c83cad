//! `gemctl prompt`: one turn, headless. The answer streams to stdout
//! (`text`), comes as one JSON document at the end (`json`), or as one
//! event per line as it happens (`stream-json`).

use std::io::{IsTerminal, Read};
use std::time::Instant;

use geminid_protocol::api::{GeminidApiClient, PromptText};
use geminid_protocol::event::{EventPayload, SessionEvent};
use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::{CallState, ToolCallSnapshot};
use serde_json::json;

use super::confirm::Prompter;
use super::render;
use crate::command::{Ctx, Failure, Outcome, exit, out, outln, resolve_session};
use tokio::signal::unix::{SignalKind, signal};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
    StreamJson,
}

pub struct PromptArgs {
    pub session: Option<String>,
    pub cwd: Option<String>,
    pub mode: Option<ApprovalMode>,
    pub format: OutputFormat,
    pub interactive: bool,
    pub detach: bool,
    pub text: Option<String>,
}

pub async fn prompt(ctx: &Ctx, mut args: PromptArgs) -> Outcome {
    let started = Instant::now();
    // --json means JSON whatever the command: the text format becomes json.
    if ctx.json && args.format == OutputFormat::Text {
        args.format = OutputFormat::Json;
    }
    let text = prompt_text(args.text.take())?;
    // Before anything starts, so a Ctrl-C is never the default kill.
    let mut sigint = signal(SignalKind::interrupt())
        .map_err(|e| Failure::new(exit::FAILED, format!("cannot watch Ctrl-C: {e}")))?;
    let client = ctx.connect().await?;
    let session = match &args.session {
        Some(given) => {
            let id = resolve_session(&client, given).await?;
            if let Some(mode) = args.mode {
                client.set_approval_mode(id.clone(), mode).await?;
            }
            client.get_session(id).await?
        }
        None => {
            let cwd = std::path::absolute(args.cwd.as_deref().unwrap_or("."))
                .map_err(|e| Failure::new(exit::USAGE, format!("--cwd: {e}")))?;
            client
                .create_session(
                    cwd.display().to_string(),
                    args.mode,
                    None,
                    Some(args.interactive),
                    None,
                    None,
                    None,
                )
                .await?
        }
    };
    let session_id = session.session_id.clone();
    // Subscribe first (from the current end), so no event of the turn is missed.
    let mut events = if args.detach {
        None
    } else {
        Some(
            client
                .subscribe_session(session_id.clone(), Some(session.last_seq))
                .await?,
        )
    };
    let accepted = client
        .prompt(session_id.clone(), text)
        .await
        .map_err(|e| match &e {
            // No usable model: a model error, not a generic failure.
            jsonrpsee::core::ClientError::Call(err)
                if err.code() == geminid_protocol::error::MODEL_NOT_CONFIGURED =>
            {
                Failure::new(exit::MODEL, err.message().to_owned())
            }
            _ => Failure::from(e),
        })?;
    let turn_id = accepted.turn_id;
    let Some(events) = events.as_mut() else {
        if args.format == OutputFormat::Text {
            outln!("{session_id} {turn_id}");
            eprintln!("follow it with: gemctl attach {session_id}");
        } else {
            outln!(
                "{}",
                json!({"sessionId": session_id, "turnId": turn_id, "queuedBehind": accepted.queued_behind})
            );
        }
        return Ok(exit::OK);
    };
    let can_ask = args.interactive && std::io::stdin().is_terminal();
    if args.interactive && !can_ask {
        eprintln!(
            "gemctl: no terminal to ask on: answer confirmations with `gemctl attach {session_id}`"
        );
    }
    let mut prompter = Prompter::new(session_id.clone(), can_ask);
    let mut run = Run::default();
    // Ctrl-C: cancel the turn once it has started (it may wait in the
    // queue behind other clients' turns), then wait for it to end.
    let mut cancelling = false;
    let mut cancel_sent = false;
    loop {
        if cancelling && !cancel_sent && run.started {
            cancel_sent = true;
            client.cancel_session(session_id.clone()).await?;
        }
        tokio::select! {
            line = prompter.next_line(), if prompter.is_asking() => {
                if let Some(line) = line {
                    prompter.answer(&client, &line).await?;
                }
            }
            _ = sigint.recv() => {
                if cancelling {
                    eprintln!("gemctl: left without waiting for {turn_id} to end");
                    return Ok(exit::CANCELLED);
                }
                cancelling = true;
                prompter.withdraw();
                eprintln!("gemctl: cancelling {turn_id} (Ctrl-C again to leave at once)");
            }
            event = events.next() => {
                let event = match event {
                    Some(Ok(event)) => event,
                    Some(Err(e)) => return Err(Failure::new(exit::FAILED, format!("bad event from geminid: {e}"))),
                    None => return Err(Failure::new(exit::UNREACHABLE, "geminid closed the connection")),
                };
                if args.format == OutputFormat::StreamJson
                    && let Ok(line) = serde_json::to_string(&event)
                {
                    out(format_args!("{line}\n"));
                }
                if let EventPayload::ToolCall(call) = &event.payload {
                    prompter.observe(call);
                }
                prompter.observe_event(&event.payload);
                if !cancelling
                    && matches!(
                        event.payload,
                        EventPayload::ToolCall(_) | EventPayload::QuestionAsked { .. }
                    )
                {
                    prompter.ask_next();
                }
                if run.take(&event, &turn_id, args.format == OutputFormat::Text) {
                    break;
                }
            }
        }
    }
    if args.format == OutputFormat::Json {
        let doc = json!({
            "sessionId": session_id,
            "turnId": turn_id,
            "response": run.answer,
            "toolCalls": run.calls.iter().map(|c| json!({
                "callId": c.call_id, "name": c.name, "args": c.args,
                "state": c.state, "error": c.error,
            })).collect::<Vec<_>>(),
            "stats": {
                "reason": run.reason, "message": run.message,
                "inputTokens": run.input_tokens, "outputTokens": run.output_tokens,
                "durationMs": started.elapsed().as_millis() as u64,
            },
        });
        outln!("{doc}");
    } else if args.format == OutputFormat::Text {
        if !run.answer.is_empty() && !run.answer.ends_with('\n') {
            outln!();
        }
        if let Some(message) = &run.message {
            eprintln!("gemctl: turn ended ({}): {message}", run.reason);
        } else if run.reason != "completed" {
            eprintln!("gemctl: turn ended: {}", run.reason);
        }
    }
    Ok(run.exit_status())
}

/// What one turn produced, collected from its events.
#[derive(Default)]
struct Run {
    /// The turn has begun (it is no longer queued).
    started: bool,
    answer: String,
    calls: Vec<ToolCallSnapshot>,
    reason: String,
    message: Option<String>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

impl Run {
    /// Takes one event; true when the turn is over. With `print`, the
    /// answer goes to stdout as it streams and call progress to stderr.
    fn take(&mut self, event: &SessionEvent, turn: &str, print: bool) -> bool {
        match &event.payload {
            EventPayload::TurnStarted { turn_id, .. } if turn_id == turn => self.started = true,
            EventPayload::ModelText { turn_id, delta } if turn_id == turn => {
                self.answer.push_str(delta);
                if print {
                    out(format_args!("{delta}"));
                }
            }
            EventPayload::ToolCall(call) => {
                if print
                    && (call.state.is_terminal() || call.state == CallState::AwaitingApproval)
                    && let Some(line) = render::state_line(call)
                {
                    eprintln!("{line}");
                }
                if call.state.is_terminal() {
                    self.calls.push((**call).clone());
                }
            }
            EventPayload::Error { message } if print => eprintln!("geminid: {message}"),
            EventPayload::TurnFinished {
                turn_id,
                reason,
                input_tokens,
                output_tokens,
                message,
            } if turn_id == turn => {
                self.reason = reason.clone();
                self.message = message.clone();
                self.input_tokens = *input_tokens;
                self.output_tokens = *output_tokens;
                return true;
            }
            _ => {}
        }
        false
    }

    /// 0 completed; 3 completed but the policy denied a call; 4 cancelled
    /// or interrupted; 5 model error; 6 stopped by a limit.
    fn exit_status(&self) -> u8 {
        match self.reason.as_str() {
            "completed"
                if self
                    .calls
                    .iter()
                    .any(|c| render::exit_status(c) == exit::DENIED) =>
            {
                exit::DENIED
            }
            "completed" => exit::OK,
            "cancelled" | "interrupted" => exit::CANCELLED,
            "max_steps" | "loop_detected" => exit::LIMIT,
            // A BeforeAgent hook refused the prompt.
            "blocked" | "stopped" => exit::DENIED,
            _ => exit::MODEL,
        }
    }
}

/// The prompt: the argument, stdin, or as Gemini CLI does both, what
/// is piped in first and the argument after it (`git diff | gemctl prompt
/// "review this"`).
fn prompt_text(argument: Option<String>) -> Result<String, Failure> {
    let mut stdin = std::io::stdin();
    let piped = if stdin.is_terminal() {
        String::new()
    } else {
        let mut text = String::new();
        stdin.read_to_string(&mut text).map_err(|e| {
            Failure::new(exit::USAGE, format!("reading the prompt from stdin: {e}"))
        })?;
        text
    };
    Ok(match argument {
        Some(argument) if piped.trim().is_empty() => argument,
        Some(argument) => join_piped(&piped, &argument),
        None if piped.trim().is_empty() && stdin.is_terminal() => {
            return Err(Failure::new(
                exit::USAGE,
                "give the prompt as an argument or on stdin",
            ));
        }
        None if piped.trim().is_empty() => {
            return Err(Failure::new(exit::USAGE, "the prompt on stdin is empty"));
        }
        None => piped,
    })
}

/// Gemini CLI's joining of piped input and the prompt argument.
fn join_piped(piped: &str, argument: &str) -> String {
    format!("{piped}\n\n{argument}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn piped_input_comes_first_then_the_argument() {
        assert_eq!(
            super::join_piped("DIFF\n", "review this"),
            "DIFF\n\n\nreview this"
        );
    }
}
