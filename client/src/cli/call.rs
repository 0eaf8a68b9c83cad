//! `gemctl call` and `gemctl tools`.

use std::io::IsTerminal;

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::event::{EventPayload, SessionEvent};
use geminid_protocol::tool::CallState;
use serde_json::Value;

use super::confirm::Prompter;
use super::render;
use crate::command::{Ctx, Failure, Outcome, exit, print_json};

pub async fn tools(ctx: &Ctx, session: Option<String>) -> Outcome {
    let client = ctx.connect().await?;
    let tools = client.list_tools(session).await?;
    if ctx.json {
        return print_json(&tools);
    }
    for tool in &tools {
        let source = match &tool.server {
            Some(server) => format!("{} {server}", tool.source),
            None => tool.source.clone(),
        };
        let summary = tool.description.lines().next().unwrap_or_default();
        println!(
            "{:<24} {:<8} {:<10} {summary}",
            tool.name, tool.kind, source
        );
    }
    Ok(exit::OK)
}

/// Calls a tool, prints its status stream, then its result.
pub async fn call(ctx: &Ctx, session_id: &str, tool: &str, args: &str) -> Outcome {
    let args: Value = serde_json::from_str(args).map_err(|e| {
        Failure::new(
            exit::USAGE,
            format!("the arguments are not valid JSON: {e}"),
        )
    })?;
    if !args.is_object() {
        return Err(Failure::new(
            exit::USAGE,
            "the arguments must be a JSON object",
        ));
    }
    let client = ctx.connect().await?;
    let info = client.get_session(session_id.to_owned()).await?;
    // Subscribe from "now" so the call's whole stream is seen, nothing older.
    let mut events = client
        .subscribe_session(session_id.to_owned(), Some(info.last_seq))
        .await?;
    let started = client
        .call_tool(
            session_id.to_owned(),
            tool.to_owned(),
            Some(args),
            Some(false),
        )
        .await?;
    let call_id = started.call_id;
    let interactive = std::io::stdin().is_terminal() && !ctx.json;
    let mut prompter = Prompter::new(session_id.to_owned(), interactive);
    let mut told_waiting = false;
    loop {
        let event: SessionEvent = tokio::select! {
            line = prompter.next_line(), if prompter.is_asking() => {
                if let Some(line) = line {
                    prompter.answer(&client, &line).await?;
                }
                continue;
            }
            event = events.next() => match event {
                Some(Ok(event)) => event,
                Some(Err(e)) => return Err(Failure::new(exit::FAILED, format!("bad event from geminid: {e}"))),
                None => return Err(Failure::new(exit::UNREACHABLE, "geminid closed the event stream before the call finished")),
            },
        };
        let EventPayload::ToolCall(call) = &event.payload else {
            continue;
        };
        if call.call_id != call_id {
            continue;
        }
        if ctx.json {
            print_json(&event)?;
        } else if let Some(delta) = &call.output_delta {
            print!("{delta}");
        } else if let Some(line) = render::state_line(call) {
            eprintln!("{line}");
        }
        prompter.observe(call);
        if call.state == CallState::AwaitingApproval {
            if interactive {
                prompter.ask_next();
            } else if !told_waiting && !ctx.json {
                eprintln!(
                    "waiting for approval: answer from another terminal with `gemctl attach {session_id}`"
                );
                told_waiting = true;
            }
        }
        if call.state.is_terminal() {
            if !ctx.json {
                if call.state == CallState::Success {
                    println!("{}", render::content_text(call));
                } else {
                    eprintln!("{}", render::result_text(call));
                }
            }
            return Ok(render::exit_status(call));
        }
    }
}
