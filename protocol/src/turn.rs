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

/// One piece of a prompt (`session.prompt {parts}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum PromptPart {
    /// Text; `@path` references in it are read like the `text` param's.
    Text { text: String },
    /// Bytes for the model (an image, a PDF), base64-encoded.
    #[serde(rename_all = "camelCase")]
    InlineData { mime_type: String, data: String },
    /// A file or directory beneath the session's workspace, read as
    /// `@path` is.
    File { path: String },
    /// Content the client embedded: `text`, or `blob` (base64) with its
    /// MIME type.
    #[serde(rename_all = "camelCase")]
    Resource {
        uri: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        blob: Option<String>,
    },
    /// A link: a `file://` URI beneath the workspace is read as `@path`
    /// is; any other is named to the model as a link.
    #[serde(rename_all = "camelCase")]
    ResourceLink {
        uri: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
}

/// The prompt as people see it (`userMessage`, titles): its text and
/// text parts, with the other parts named in brackets.
pub fn shown_prompt(text: &str, parts: &[PromptPart]) -> String {
    let mut pieces: Vec<String> = Vec::new();
    if !text.trim().is_empty() {
        pieces.push(text.to_owned());
    }
    for part in parts {
        pieces.push(match part {
            PromptPart::Text { text } => text.clone(),
            PromptPart::InlineData { mime_type, .. } => format!("[{mime_type}]"),
            PromptPart::File { path } => format!("[@{path}]"),
            PromptPart::Resource { uri, .. } => format!("[{uri}]"),
            PromptPart::ResourceLink { uri, .. } => format!("[{uri}]"),
        });
    }
    pieces.join("\n")
}

/// One item of the model's todo list (`write_todos`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TodoItem {
    pub description: String,
    /// `pending`, `in_progress`, `completed`, `cancelled` or `blocked`.
    pub status: String,
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
    /// Models a session may be switched to (`session.setModel`): this
    /// one, settings `geminid.models`, the fallback.
    #[serde(default)]
    pub available: Vec<String>,
    /// Where turns go on when the model is over quota or overloaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
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

/// Token counts of model requests, as the provider reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenCounts {
    /// Prompt tokens (the whole request: system instruction, history, tools).
    pub input: u64,
    /// Answer tokens, thoughts excluded.
    pub output: u64,
    /// Prompt tokens served from the provider's cache (part of `input`).
    pub cached: u64,
    /// Thought tokens.
    pub thoughts: u64,
}

impl TokenCounts {
    /// `self + other`, field by field.
    pub fn plus(self, other: TokenCounts) -> TokenCounts {
        TokenCounts {
            input: self.input + other.input,
            output: self.output + other.output,
            cached: self.cached + other.cached,
            thoughts: self.thoughts + other.thoughts,
        }
    }
}

/// A session's token accounting (`session.get`, `tokenUsage` events).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionTokens {
    /// Every model request of the session so far, summed.
    pub total: TokenCounts,
    /// How many model requests were made (compression's included).
    pub requests: u64,
    /// The model of the last request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Prompt tokens of the last request: how much of the window the
    /// conversation as sent fills.
    pub context_tokens: u64,
    /// The model's context window in tokens.
    pub context_window: u64,
    /// `contextTokens / contextWindow`, 0 to 1.
    pub context_share: f64,
}

/// Result of `session.compress`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompressResult {
    /// `compressed`, or `noop` when there was nothing old enough to
    /// summarize.
    pub status: String,
    /// History entries (from the start) the summary stands for now.
    pub replaced_entries: u64,
    /// Estimated tokens of what is sent, before and after.
    pub tokens_before: u64,
    pub tokens_after: u64,
}
