//! `gemctl` as a library: a typed async client for `geminid`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), gemctl::ClientError> {
//! use gemctl::GeminidApiClient;
//! let client = gemctl::Client::connect(&gemctl::default_socket()).await?;
//! let session = client.create_session("/tmp".into(), None, None, None, None, None, None).await?;
//! let started = client
//!     .call_tool(session.session_id, "list_directory".into(),
//!                Some(serde_json::json!({"path": "/tmp"})), Some(true))
//!     .await?;
//! println!("{:?}", started.outcome);
//! # Ok(()) }
//! ```
//!
//! [`Client`] derefs to jsonrpsee's client, so every method of
//! [`GeminidApiClient`] is available on it.

mod acp;
mod answers;
mod call_follow;
mod chat;
pub mod cli;
mod client;
mod command;
mod edit;
mod mcp_serve;
mod prompt_commands;
mod questions;
mod start;
pub mod transport;

pub use client::{Client, ClientError, default_socket};
pub use geminid_protocol as protocol;
pub use geminid_protocol::api::{ConfirmPlain, GeminidApiClient, PromptText};
