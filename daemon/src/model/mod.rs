//! Model clients: the Gemini API and Vertex AI (`gemini.rs`, `vertex.rs`,
//! tokens from `google_auth.rs`) and OpenAI-compatible chat completions
//! (`openai.rs`), behind one streaming interface. The conversation is kept
//! in the Gemini shape (`content.rs`); which provider and model to use
//! comes from the environment, `.env` files (`dotenv.rs`) and settings
//! (`config.rs`).

pub mod choice;
pub mod config;
pub mod content;
pub mod dotenv;
pub mod gemini;
pub mod google_auth;
pub mod openai;
pub mod prompt;
pub mod retry;
pub mod session_context;
pub mod usage;
pub mod vertex;
pub mod window;

use std::pin::Pin;

use futures::Stream;
use serde_json::Value;

pub use self::config::{ModelConfig, ModelSlot, Provider};
pub use self::content::{CompressedPrefix, Content, FunctionCall, FunctionResponse, Part, Role};
pub use self::usage::{TokenLedger, Usage};

/// What one model request carries.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// The system instruction: our preamble and the workspace's memory.
    pub system: String,
    pub contents: Vec<Content>,
    /// Function declarations (`tools/declarations.rs`), already sanitized.
    pub tools: Vec<Value>,
    /// What the caller asks of the generation beyond the provider's
    /// defaults (an MCP sampling request's `maxTokens`, ...).
    pub generation: Generation,
}

/// Generation settings a request overrides (none: the chat defaults).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Generation {
    pub max_output_tokens: Option<u32>,
    pub temperature: Option<f64>,
    pub stop_sequences: Vec<String>,
}

/// A piece of a streamed response.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Chunk {
    /// New parts: text and thought deltas, whole function calls.
    pub parts: Vec<Part>,
    /// The latest usage, when the chunk carried it (it is cumulative).
    pub usage: Option<Usage>,
}

/// The stream of one response.
pub type ChunkStream = Pin<Box<dyn Stream<Item = Result<Chunk, ModelError>> + Send>>;

/// Called before each retry with what went wrong and how long we wait.
pub type RetryNotice<'a> = &'a (dyn Fn(&str, std::time::Duration) + Send + Sync);

/// A streaming model client.
#[async_trait::async_trait]
pub trait Model: Send + Sync {
    /// Sends the request (retrying 429 and 5xx before the stream starts)
    /// and returns the response stream.
    async fn stream(
        &self,
        request: &ModelRequest,
        on_retry: RetryNotice<'_>,
    ) -> Result<ChunkStream, ModelError>;
}

/// Why a model request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelErrorKind {
    /// No provider configured.
    NotConfigured,
    /// The key was refused.
    Auth,
    /// The model does not exist (or the key may not use it).
    UnknownModel,
    /// The prompt or the response was blocked by safety filters.
    Blocked,
    /// Still rate limited after every retry.
    RateLimited,
    /// The server failed (5xx) after every retry, or answered oddly.
    Server,
    /// The server could not be reached.
    Transport,
    /// The request itself was refused (400).
    BadRequest,
}

/// A model failure, said for people.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ModelError {
    pub kind: ModelErrorKind,
    pub message: String,
}

impl ModelError {
    pub fn new(kind: ModelErrorKind, message: impl Into<String>) -> Self {
        ModelError {
            kind,
            message: message.into(),
        }
    }
}

/// Reads an SSE response body into `data:` payloads, one per event, ending
/// at the end of the body. Shared by both providers.
pub(crate) fn sse_data(
    response: reqwest::Response,
) -> Pin<Box<dyn Stream<Item = Result<String, ModelError>> + Send>> {
    use futures::StreamExt;
    let body = response.bytes_stream();
    let stream = futures::stream::unfold(
        (
            body,
            crate::sse::Parser::default(),
            std::collections::VecDeque::new(),
            false,
        ),
        |(mut body, mut parser, mut ready, mut ended)| async move {
            loop {
                if let Some(data) = ready.pop_front() {
                    return Some((Ok(data), (body, parser, ready, ended)));
                }
                if ended {
                    return None;
                }
                match body.next().await {
                    Some(Ok(bytes)) => {
                        ready.extend(parser.push(&bytes).into_iter().map(|e| e.data));
                    }
                    Some(Err(e)) => {
                        ended = true;
                        let error = ModelError::new(
                            ModelErrorKind::Transport,
                            format!("the response stream broke off: {e}"),
                        );
                        return Some((Err(error), (body, parser, ready, ended)));
                    }
                    None => {
                        ended = true;
                        ready.extend(parser.finish().map(|e| e.data));
                    }
                }
            }
        },
    );
    Box::pin(stream)
}
