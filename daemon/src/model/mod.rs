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
#[derive(Debug, Clone, Default)]
pub struct ModelRequest {
    /// The system instruction: our preamble and the workspace's memory.
    pub system: String,
    pub contents: Vec<Content>,
    /// Function declarations (`tools/declarations.rs`), already sanitized.
    pub tools: Vec<Value>,
    /// Generation settings over the provider's own (a BeforeModel hook's,
    /// an MCP sampling request's `maxTokens`, ...).
    pub generation: Generation,
    /// How the model may call the tools (a BeforeToolSelection hook's).
    pub tool_choice: Option<ToolChoice>,
}

/// Generation settings of one request; `None` leaves the provider's (or
/// our per-model) value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Generation {
    pub temperature: Option<f64>,
    pub max_output_tokens: Option<u64>,
    pub top_p: Option<f64>,
    pub top_k: Option<f64>,
    /// Where the model stops (an MCP sampling request's `stopSequences`).
    pub stop_sequences: Vec<String>,
}

impl Generation {
    /// `over`'s settings where it has them, else these.
    pub fn overlaid(&self, over: Generation) -> Generation {
        Generation {
            temperature: over.temperature.or(self.temperature),
            max_output_tokens: over.max_output_tokens.or(self.max_output_tokens),
            top_p: over.top_p.or(self.top_p),
            top_k: over.top_k.or(self.top_k),
            stop_sequences: if over.stop_sequences.is_empty() {
                self.stop_sequences.clone()
            } else {
                over.stop_sequences
            },
        }
    }
}

/// A setting as JSON writes it: a whole number without a fraction (as
/// JavaScript prints it), else the float.
pub fn setting_value(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        Value::from(value as i64)
    } else {
        Value::from(value)
    }
}

/// Which tools the model may call in one request (the Gemini API's
/// `functionCallingConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolChoice {
    pub mode: ToolMode,
    /// Empty: every offered tool.
    pub allowed: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolMode {
    /// The model decides.
    Auto,
    /// The model must call a tool.
    Any,
    /// The model may call none.
    None,
}

impl ToolMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolMode::Auto => "AUTO",
            ToolMode::Any => "ANY",
            ToolMode::None => "NONE",
        }
    }
}

/// A piece of a streamed response.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Chunk {
    /// New parts: text and thought deltas, whole function calls.
    pub parts: Vec<Part>,
    /// The latest usage, when the chunk carried it (it is cumulative).
    pub usage: Option<Usage>,
    /// Why the model stopped, when this chunk says so, in the Gemini
    /// API's words (`STOP`, `MAX_TOKENS`, ...): what AfterModel hooks
    /// read as the candidate's `finishReason`.
    pub finish_reason: Option<String>,
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

    /// The generation settings a request gets when nothing overrides
    /// them (what hooks are shown); unknown ones are `None`.
    fn generation(&self) -> Generation {
        Generation::default()
    }
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
