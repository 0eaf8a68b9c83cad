//! `gemctl attach`: follow a session from another terminal.

use std::io::IsTerminal;

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::event::{EventPayload, SessionEvent, SubscriptionClosed};
use jsonrpsee::core::client::SubscriptionClientT;

use super::confirm::Prompter;
use super::render;
use crate::command::{Ctx, Failure, Outcome, exit, outln, outp, print_json, resolve_session};

pub async fn attach(ctx: &Ctx, session_id: &str, since: u64, confirm: bool) -> Outcome {
    let client = ctx.connect().await?;
    let resolved = resolve_session(&client, session_id).await?;
    let session_id = resolved.as_str();
    let info = client.get_session(session_id.to_owned()).await?;
    let history_end = info.last_seq;
    let mut closed = client
        .subscribe_to_method::<SubscriptionClosed>("session.closed")
        .await?;
    let mut events = client
        .subscribe_session(session_id.to_owned(), Some(since))
        .await?;
    let can_ask = confirm && std::io::stdin().is_terminal() && !ctx.json;
    let mut prompter = Prompter::new(session_id.to_owned(), can_ask);
    if !ctx.json {
        eprintln!(
            "attached to {session_id} ({} events so far){}",
            history_end,
            if can_ask {
                "; answer questions here"
            } else {
                ""
            }
        );
    }
    let mut stream = Stream::default();
    loop {
        tokio::select! {
            line = prompter.next_line(), if prompter.is_asking() => {
                if let Some(line) = line {
                    prompter.answer(&client, &line).await?;
                }
            }
            notice = closed.next() => {
                if let Some(Ok(notice)) = notice {
                    if ctx.json {
                        print_json(&serde_json::json!({"closed": notice}))?;
                    } else {
                        eprintln!("stream closed by geminid: {} (last seq {})", notice.reason, notice.last_seq);
                    }
                    return Ok(exit::OK);
                }
            }
            event = events.next() => {
                let event = match event {
                    Some(Ok(event)) => event,
                    Some(Err(e)) => return Err(Failure::new(exit::FAILED, format!("bad event from geminid: {e}"))),
                    None => return Err(Failure::new(exit::UNREACHABLE, "geminid closed the connection")),
                };
                if ctx.json {
                    print_json(&event)?;
                } else {
                    stream.show(&event);
                }
                if let EventPayload::ToolCall(call) = &event.payload {
                    prompter.observe(call);
                }
                prompter.observe_event(&event.payload);
                // Ask only once the history is replayed, so a question is
                // never about a call that is already decided.
                if event.seq >= history_end {
                    prompter.ask_next();
                }
            }
        }
    }
}

/// What kind of streamed text is being printed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flow {
    Text,
    Thought,
    Output,
}

/// Prints events: streamed text (the model's answer, its thoughts, a
/// command's live output) as a stream, chunk after chunk on the same
/// lines; every other event on a line of its own, after a line break if
/// a stream was left mid-line.
#[derive(Default)]
struct Stream {
    open: Option<Flow>,
    mid_line: bool,
}

impl Stream {
    fn show(&mut self, event: &SessionEvent) {
        let chunk = match &event.payload {
            EventPayload::ModelText { delta, .. } => Some((Flow::Text, delta.as_str())),
            EventPayload::ModelThought { delta, .. } => Some((Flow::Thought, delta.as_str())),
            EventPayload::ToolCall(call) => call
                .output_delta
                .as_deref()
                .map(|delta| (Flow::Output, delta)),
            _ => None,
        };
        match chunk {
            Some((flow, text)) => self.chunk(event.seq, flow, text),
            None => {
                if let Some(line) = render::event_line(event) {
                    self.end_line();
                    self.open = None;
                    outln!("{line}");
                }
            }
        }
    }

    fn chunk(&mut self, seq: u64, flow: Flow, text: &str) {
        if self.open != Some(flow) {
            self.end_line();
            let head = match flow {
                Flow::Text => "model:",
                Flow::Thought => "(thinking)",
                Flow::Output => "output:",
            };
            outln!("#{seq} {head}");
            self.open = Some(flow);
        }
        if text.is_empty() {
            return;
        }
        outp!("{text}");
        self.mid_line = !text.ends_with('\n');
    }

    fn end_line(&mut self) {
        if self.mid_line {
            outln!();
            self.mid_line = false;
        }
    }
}
