//! The store's vocabulary: what a step writes ([`Append`]), what is kept
//! about a session ([`SessionRecord`], [`PendingPrompt`]), an event as
//! stored and broadcast ([`Published`]), the store's errors, and the
//! layout of its sled keys.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Length of a session id in bytes (hex characters).
pub const SESSION_ID_LEN: usize = 32;

/// A failure of the session store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("session store at {path}: {source}")]
    Open { path: String, source: sled::Error },
    #[error(
        "the session store at {path} is in use by another geminid (it holds the store's lock); stop that daemon (`gemctl daemon stop`) or give this one another --data-dir"
    )]
    InUse { path: String },
    #[error("session store: {0}")]
    Sled(#[from] sled::Error),
    #[error("session store holds a corrupt record under {key}: {source}")]
    Corrupt {
        key: String,
        source: serde_json::Error,
    },
    #[error("session id `{0}` is malformed (expected {SESSION_ID_LEN} hex characters)")]
    BadSessionId(String),
    #[error("session store: {0}")]
    Io(String),
}

/// What the store keeps about a session besides its events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    pub id: String,
    pub cwd: String,
    pub title: Option<String>,
    pub approval_mode: crate::policy::ApprovalMode,
    pub interactive: bool,
    pub created_at: u64,
    /// Which directory `cwd` was when the session was created (device and
    /// inode): a session is loaded only while `cwd` still names it.
    /// Records written before it was kept have none; the first load pins it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_dev: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_ino: Option<u64>,
    /// Which kind of client created it (`chat`, `prompt`, `call`, `acp`,
    /// `mcp serve`, or the name another client gave); absent in records
    /// written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// The sandbox mode `session.create` chose (`off`, `workspace-write`,
    /// `read-only`, `required`); absent: the settings decide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// The model chosen for the session (`None`: the daemon's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The session's token account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<crate::model::TokenLedger>,
    /// The summary sent in place of the history's start (the history
    /// itself keeps every entry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression: Option<crate::model::CompressedPrefix>,
    /// Ranges `[from, to)` of stored history entries a restore took back
    /// (the history itself keeps every entry).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rewound: Vec<(u64, u64)>,
    /// What a person allowed for the rest of the session ("always"
    /// answers): kept with the session, so an unload or a restart does
    /// not forget it.
    #[serde(
        default,
        skip_serializing_if = "crate::policy::SessionAllowlist::is_empty"
    )]
    pub allowed: crate::policy::SessionAllowlist,
    /// The model's todo list (`write_todos`), as its last call set it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub todos: Vec<crate::tools::builtin::write_todos::Todo>,
}

/// An event as stored and broadcast: its seq and its wire JSON. Shared
/// (`Arc`) between the pending batch, the log and every subscriber, so a
/// large event is serialized once and never copied.
#[derive(Debug)]
pub struct Published {
    pub seq: u64,
    pub json: Box<RawValue>,
}

impl Published {
    pub fn new(seq: u64, json: Box<RawValue>) -> Arc<Published> {
        Arc::new(Published { seq, json })
    }
}

impl AsRef<RawValue> for Published {
    fn as_ref(&self) -> &RawValue {
        &self.json
    }
}

/// One append to a session's log, applied atomically.
#[derive(Debug, Default, Clone)]
pub struct Append {
    /// Events in seq order.
    pub events: Vec<Arc<Published>>,
    /// Calls that became open (`Some` of what recovery needs to describe
    /// them: their name and args as JSON) or finished (`None`).
    pub open_calls: Vec<(String, Option<Vec<u8>>)>,
    /// A new version of the session record, if it changed.
    pub record: Option<SessionRecord>,
    /// Conversation entries appended: `(index, Content JSON)`.
    pub history: Vec<(u64, String)>,
    /// Prompts queued or started (`Some` of their [`PendingPrompt`] JSON)
    /// or finished (`None`), by turn id.
    pub prompts: Vec<(String, Option<Vec<u8>>)>,
    /// The session is deleted: everything stored of it goes. Logged like
    /// any step, so that the log's replay after a crash, which brings back
    /// the session's earlier steps, deletes it again.
    pub deleted: bool,
}

impl Append {
    /// The appends, in order, as one: what sled holds after applying them
    /// one by one, in fewer writes (a call opened in one and closed in a
    /// later one leaves no marker to write and remove).
    pub fn merged<'a>(appends: impl IntoIterator<Item = &'a Append>) -> Append {
        let mut out = Append::default();
        for append in appends {
            out.events.extend(append.events.iter().cloned());
            out.open_calls.extend(append.open_calls.iter().cloned());
            if append.record.is_some() {
                out.record.clone_from(&append.record);
            }
            out.history.extend(append.history.iter().cloned());
            out.prompts.extend(append.prompts.iter().cloned());
            out.deleted |= append.deleted;
        }
        out
    }
}

/// A prompt that has not finished, as stored under `q`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingPrompt {
    pub turn_id: String,
    pub text: String,
    /// Parts after the text (`session.prompt {parts}`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<geminid_protocol::turn::PromptPart>,
    /// Whether its turn had begun (a restart then ends it as interrupted).
    pub started: bool,
}

pub(super) fn turn_number(turn_id: &str) -> u64 {
    turn_id
        .strip_prefix("turn-")
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX)
}

pub(super) fn check_id(id: &str) -> Result<(), StoreError> {
    if id.len() == SESSION_ID_LEN && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err(StoreError::BadSessionId(id.to_owned()))
    }
}

/// `tag` + session id: the prefix of one kind of a session's keys.
pub(super) fn prefixed(tag: u8, id: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + SESSION_ID_LEN + 8);
    key.push(tag);
    key.extend_from_slice(id.as_bytes());
    key
}

pub(super) fn record_key(id: &str) -> Vec<u8> {
    prefixed(b's', id)
}

pub(super) fn decode_record(id: &str, bytes: &[u8]) -> Result<SessionRecord, StoreError> {
    serde_json::from_slice(bytes).map_err(|source| StoreError::Corrupt {
        key: id.to_owned(),
        source,
    })
}

/// A fresh random session id.
pub fn new_session_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// The seq (or index) at the end of a key.
pub(super) fn seq_of(key: &[u8]) -> u64 {
    be_u64(key)
}

/// The last (up to) eight bytes as a big-endian number.
pub(super) fn be_u64(bytes: &[u8]) -> u64 {
    let mut out = [0u8; 8];
    let bytes = &bytes[bytes.len().saturating_sub(8)..];
    out[8 - bytes.len()..].copy_from_slice(bytes);
    u64::from_be_bytes(out)
}
