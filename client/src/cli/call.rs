//! `gemctl call` and `gemctl tools`.

use std::io::IsTerminal;

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::tool::CallState;
use serde_json::Value;
use tokio::signal::unix::{SignalKind, signal};

use super::confirm::Prompter;
use super::render;
use crate::call_follow::{CallFollow, FollowError, Followed};
use crate::command::{Ctx, Failure, Outcome, exit, outln, print_json, resolve_session};

pub async fn tools(ctx: &Ctx, session: Option<String>) -> Outcome {
    let client = ctx.connect().await?;
    let session = match session {
        Some(given) => Some(resolve_session(&client, &given).await?),
        None => None,
    };
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
        outln!(
            "{:<24} {:<8} {:<10} {summary}",
            tool.name,
            tool.kind,
            source
        );
    }
    Ok(exit::OK)
}

/// Calls a tool, prints its status stream (and live output) on stderr,
/// then its result on stdout. Without a session, the call runs in a
/// one-off session in the current directory, removed afterwards. Ctrl-C
/// cancels the call in the daemon (`tool.cancel`) and exits 4 once it has
/// ended; a second Ctrl-C leaves at once.
pub async fn call(ctx: &Ctx, session: Option<&str>, tool: &str, args: &str) -> Outcome {
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
    // Before anything starts, so a Ctrl-C is never the default kill.
    let mut sigint = signal(SignalKind::interrupt())
        .map_err(|e| Failure::new(exit::FAILED, format!("cannot watch Ctrl-C: {e}")))?;
    let client = ctx.connect().await?;
    let (session_id, one_off) = match session {
        Some(given) => (resolve_session(&client, given).await?, false),
        None => {
            let cwd = std::env::current_dir()
                .map_err(|e| Failure::new(exit::USAGE, format!("the current directory: {e}")))?;
            let info = client
                .create_session(
                    cwd.display().to_string(),
                    None,
                    Some(format!("gemctl call {tool}")),
                    None,
                    None,
                    None,
                    None,
                )
                .await?;
            (info.session_id, true)
        }
    };
    let outcome = follow(ctx, &client, &mut sigint, &session_id, tool, args, one_off).await;
    if one_off {
        // A one-off session is the call's alone; the daemon cancels
        // whatever still runs in it.
        let _ = client.delete_session(session_id).await;
    }
    outcome
}

async fn follow(
    ctx: &Ctx,
    client: &crate::Client,
    sigint: &mut tokio::signal::unix::Signal,
    session_id: &str,
    tool: &str,
    args: Value,
    one_off: bool,
) -> Outcome {
    let mut call = CallFollow::start(client, session_id, tool, args).await?;
    let interactive = std::io::stdin().is_terminal() && !ctx.json;
    let mut prompter = Prompter::new(session_id.to_owned(), interactive);
    let mut told_waiting = false;
    let mut cancelling = false;
    loop {
        let (event, snapshot) = tokio::select! {
            line = prompter.next_line(), if prompter.is_asking() => {
                if let Some(line) = line {
                    prompter.answer(client, &line).await?;
                }
                continue;
            }
            _ = sigint.recv() => {
                if cancelling {
                    eprintln!("gemctl: left without waiting for {} to end", call.call_id);
                    return Ok(exit::CANCELLED);
                }
                cancelling = true;
                prompter.withdraw();
                eprintln!("gemctl: cancelling {} (Ctrl-C again to leave at once)", call.call_id);
                if let Err(e) = call.cancel(client).await {
                    eprintln!("gemctl: the cancel failed: {}", Failure::from(e).message);
                    return Ok(exit::CANCELLED);
                }
                continue;
            }
            next = call.next_or_question() => match next {
                Ok(Followed::Call(event, snapshot)) => (event, snapshot),
                Ok(Followed::Question(event)) => {
                    if ctx.json {
                        print_json(&event)?;
                    } else if let Some(line) = render::question_line(&event.payload) {
                        eprintln!("{line}");
                    }
                    prompter.observe_event(&event.payload);
                    if interactive && !cancelling {
                        prompter.ask_next();
                    }
                    continue;
                }
                Err(FollowError::BadEvent(e)) => return Err(Failure::new(exit::FAILED, format!("bad event from geminid: {e}"))),
                Err(FollowError::Closed) => return Err(Failure::new(exit::UNREACHABLE, "geminid closed the event stream before the call finished")),
            },
        };
        if ctx.json {
            print_json(&event)?;
        } else if let Some(delta) = &snapshot.output_delta {
            // Live output is part of the status stream; the result
            // (which holds it) goes to stdout once, at the end.
            eprint!("{delta}");
        } else if let Some(line) = render::state_line(&snapshot) {
            eprintln!("{line}");
        }
        prompter.observe(&snapshot);
        prompter.observe_event(&event.payload);
        if snapshot.state == CallState::AwaitingApproval && !cancelling {
            if interactive {
                prompter.ask_next();
            } else if !told_waiting && !ctx.json {
                if one_off {
                    eprintln!(
                        "waiting for approval in a one-off session: answer from another terminal with `gemctl attach {session_id}`"
                    );
                } else {
                    eprintln!(
                        "waiting for approval: answer from another terminal with `gemctl attach {session_id}`"
                    );
                }
                told_waiting = true;
            }
        }
        if snapshot.state.is_terminal() {
            // A failure's message is on its state line (stderr) already.
            if !ctx.json && snapshot.state == CallState::Success {
                outln!("{}", render::content_text(&snapshot));
            }
            return Ok(render::exit_status(&snapshot));
        }
    }
}
