//! What every `gemctl` command shares, whichever front end runs it (the
//! CLI's subcommands, `chat`, `acp`, `mcp serve`): the context it runs in
//! ([`Ctx`]) and what it ends with ([`Outcome`]: an exit status, or a
//! [`Failure`] with its message). It names none of those front ends.

use std::path::PathBuf;

use crate::{Client, ClientError};

/// Exit statuses, documented in `gemctl --help` and the README.
pub mod exit {
    pub const OK: u8 = 0;
    pub const FAILED: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const DENIED: u8 = 3;
    pub const CANCELLED: u8 = 4;
    pub const MODEL: u8 = 5;
    pub const LIMIT: u8 = 6;
    pub const UNREACHABLE: u8 = 69;
}

/// Shared by every command.
pub(crate) struct Ctx {
    pub socket: PathBuf,
    pub json: bool,
    /// The name given to the daemon (`gemctl chat`, ...): the origin of
    /// the sessions the command creates.
    pub client: &'static str,
}

impl Ctx {
    pub async fn connect(&self) -> Result<Client, ClientError> {
        Client::connect_as(&self.socket, self.client).await
    }
}

/// A command's failure, with the exit status it maps to.
#[derive(Debug)]
pub(crate) struct Failure {
    pub status: u8,
    pub message: String,
}

impl Failure {
    pub fn new(status: u8, message: impl Into<String>) -> Self {
        Failure {
            status,
            message: message.into(),
        }
    }
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Self {
        match e {
            ClientError::Unreachable { .. } => Failure::new(exit::UNREACHABLE, e.to_string()),
            ClientError::Rpc(rpc) => rpc.into(),
        }
    }
}

impl From<jsonrpsee::core::ClientError> for Failure {
    fn from(e: jsonrpsee::core::ClientError) -> Self {
        match e {
            jsonrpsee::core::ClientError::Call(err) => {
                Failure::new(exit::FAILED, err.message().to_owned())
            }
            other @ (jsonrpsee::core::ClientError::RestartNeeded(_)
            | jsonrpsee::core::ClientError::Transport(_)) => Failure::new(
                exit::UNREACHABLE,
                format!("lost the connection to geminid: {other}"),
            ),
            other => Failure::new(exit::FAILED, other.to_string()),
        }
    }
}

/// The session a command was given, by its full id or a prefix of it
/// that names one session alone (as `git` takes commit ids).
pub(crate) async fn resolve_session(client: &Client, given: &str) -> Result<String, Failure> {
    use geminid_protocol::api::GeminidApiClient;
    let given = given.trim();
    if given.len() == 32 {
        return Ok(given.to_owned());
    }
    if given.is_empty() {
        return Err(Failure::new(exit::USAGE, "the session id is empty"));
    }
    let sessions = client.list_sessions().await?;
    let matching: Vec<&str> = sessions
        .iter()
        .map(|s| s.session_id.as_str())
        .filter(|id| id.starts_with(given))
        .collect();
    match matching.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => Err(Failure::new(
            exit::FAILED,
            format!("no session with id `{given}` (`gemctl session list` shows them)"),
        )),
        many => Err(Failure::new(
            exit::USAGE,
            format!(
                "`{given}` names {} sessions ({}); give more of the id",
                many.len(),
                many.iter()
                    .take(5)
                    .map(|id| &id[..id.len().min(12)])
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// A command's exit status, or why it failed.
pub(crate) type Outcome = Result<u8, Failure>;

/// Prints `value` as one line of JSON.
pub(crate) fn print_json<T: serde::Serialize>(value: &T) -> Outcome {
    let text =
        serde_json::to_string(value).map_err(|e| Failure::new(exit::FAILED, e.to_string()))?;
    out(format_args!("{text}\n"));
    Ok(exit::OK)
}

/// Writes to stdout and flushes. A reader that went away (`gemctl session
/// list | head -1`) ends gemctl quietly with status 0, as `ls | head`
/// does, instead of the panic `println!` would give; other write errors
/// are dropped like the ones `println!` cannot report.
pub(crate) fn out(text: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let written = stdout.write_fmt(text).and_then(|()| stdout.flush());
    if let Err(e) = written
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(i32::from(exit::OK));
    }
}

/// `println!` to stdout through [`out`]: never panics on a closed pipe.
macro_rules! outln {
    () => { $crate::command::out(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::command::out(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `print!` to stdout through [`out`].
macro_rules! outp {
    ($($arg:tt)*) => { $crate::command::out(format_args!($($arg)*)) };
}

pub(crate) use {outln, outp};
/// How full the context window is and what the session used in total.
pub fn context_line(tokens: &geminid_protocol::turn::SessionTokens) -> String {
    format!(
        "context {:.0}% of {} ({} tokens); session total {} in, {} out, {} cached, {} thoughts in {} model request{}",
        tokens.context_share * 100.0,
        tokens.context_window,
        tokens.context_tokens,
        tokens.total.input,
        tokens.total.output,
        tokens.total.cached,
        tokens.total.thoughts,
        tokens.requests,
        if tokens.requests == 1 { "" } else { "s" }
    )
}

/// An `mcpSampling` event in words: `MCP server <name> sampled <model>:
/// N in, M out (<stop reason>)`; empty for other events.
pub fn sampling_line(payload: &geminid_protocol::event::EventPayload) -> String {
    match payload {
        geminid_protocol::event::EventPayload::McpSampling {
            server,
            model,
            request,
            stop_reason,
            ..
        } => format!(
            "MCP server {server} sampled {model}: {} in, {} out ({stop_reason})",
            request.input, request.output
        ),
        _ => String::new(),
    }
}

/// A `hookRun` event in words: `hook <name> (<event>): <decision> in N ms
/// — <error or message>`; `None` for other events.
pub fn hook_run_line(payload: &geminid_protocol::event::EventPayload) -> Option<String> {
    let geminid_protocol::event::EventPayload::HookRun {
        event,
        hook,
        call_id,
        duration_ms,
        decision,
        error,
        system_message,
        ..
    } = payload
    else {
        return None;
    };
    let call = call_id
        .as_deref()
        .map(|c| format!(" for {c}"))
        .unwrap_or_default();
    let mut line = format!("hook {hook} ({event}{call}): {decision} in {duration_ms} ms");
    for extra in [error, system_message].into_iter().flatten() {
        line.push_str(" — ");
        line.push_str(extra);
    }
    Some(line)
}
