//! Prompts, turns, the conversation history and memory, as clients see
//! them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Result of `session.prompt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptAccepted {
    /// Names the turn in `turnStarted`, `modelText`, `turnFinished`, ...
    pub turn_id: String,
    /// How many prompts of the session run or wait before this one.
    pub queued_behind: u64,
}

/// Result of `session.history`: a page of the conversation with the model,
/// each entry a Gemini API `Content` (`{role, parts}`), whichever provider
/// produced it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryPage {
    /// Entries in the whole history.
    pub total: u64,
    /// Index of the first entry of this page.
    pub offset: u64,
    pub contents: Vec<Value>,
}

/// The model the daemon would use now (`daemon.status`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelStatus {
    /// `gemini`, `vertex-ai` or `openai-compatible`.
    pub provider: String,
    pub model: String,
    pub base_url: String,
    pub key_present: bool,
    /// Where the key is read from.
    pub key_source: String,
    /// Why prompts cannot run, when they cannot.
    pub problem: Option<String>,
    /// Settings found in the user's files that were not used, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Result of `memory.show` and `memory.reload`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryInfo {
    /// The workspace the memory was loaded for.
    pub workspace: String,
    /// The merged text the model gets.
    pub text: String,
    /// Every memory file, in the order they are merged, with its imports.
    pub files: Vec<ImportNode>,
}

/// A memory file and what it imported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportNode {
    pub path: String,
    #[serde(default)]
    pub imports: Vec<ImportNode>,
}
