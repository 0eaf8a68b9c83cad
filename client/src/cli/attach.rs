//! `gemctl attach`: follow a session from another terminal.

use std::io::IsTerminal;

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::event::{EventPayload, SubscriptionClosed};
use jsonrpsee::core::client::SubscriptionClientT;

use super::confirm::Prompter;
use super::render;
use crate::command::{Ctx, Failure, Outcome, exit, print_json};

pub async fn attach(ctx: &Ctx, session_id: &str, since: u64, confirm: bool) -> Outcome {
    let client = ctx.connect().await?;
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
                "; answer confirmations with y/a/e/n"
            } else {
                ""
            }
        );
    }
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
                } else if let Some(line) = render::event_line(&event) {
                    println!("{line}");
                }
                if let EventPayload::ToolCall(call) = &event.payload {
                    prompter.observe(call);
                }
                // Ask only once the history is replayed, so a question is
                // never about a call that is already decided.
                if event.seq >= history_end {
                    prompter.ask_next();
                }
            }
        }
    }
}
