//! Why a tool call failed: the error every tool, path check and the
//! scheduler share.

use serde::{Deserialize, Serialize};

/// Why a call failed. The message is shown to the model and to people.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[error("{message}")]
pub struct ToolError {
    pub kind: ToolErrorKind,
    pub message: String,
}

/// Coarse classes of tool failure, so clients can react without parsing text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolErrorKind {
    /// The arguments are wrong (schema or the tool's own checks).
    InvalidParams,
    /// A path is outside the workspace or otherwise not allowed.
    PathNotAllowed,
    /// A file or directory the call needs does not exist.
    NotFound,
    /// The tool ran and failed.
    Execution,
    /// The call ran out of time.
    Timeout,
    /// The call was cancelled while running.
    Cancelled,
    /// The tool's backend (an MCP server, a discovery command) is unavailable.
    Unavailable,
}

impl ToolError {
    pub fn new(kind: ToolErrorKind, message: impl Into<String>) -> Self {
        ToolError {
            kind,
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::InvalidParams, message)
    }

    pub fn execution(message: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::Execution, message)
    }
}
