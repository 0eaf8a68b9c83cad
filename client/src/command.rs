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
}

impl Ctx {
    pub async fn connect(&self) -> Result<Client, ClientError> {
        Client::connect_as(&self.socket, "gemctl").await
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

/// A command's exit status, or why it failed.
pub(crate) type Outcome = Result<u8, Failure>;

/// Prints `value` as one line of JSON.
pub(crate) fn print_json<T: serde::Serialize>(value: &T) -> Outcome {
    let text =
        serde_json::to_string(value).map_err(|e| Failure::new(exit::FAILED, e.to_string()))?;
    println!("{text}");
    Ok(exit::OK)
}
