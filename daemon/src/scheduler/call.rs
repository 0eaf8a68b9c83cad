//! One tool call and its state.

use serde_json::Value;

use crate::tools::{ConfirmationDetails, ToolError, ToolErrorKind, ToolLocation, ToolResult};

/// A tool call as the scheduler tracks it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub args: Value,
    pub state: CallState,
    pub description: Option<String>,
    pub locations: Vec<ToolLocation>,
    /// Why it was allowed to run (a policy rule, a person's answer).
    pub decided_by: Option<String>,
}

impl ToolCall {
    pub fn new(id: String, name: String, args: Value) -> Self {
        ToolCall {
            id,
            name,
            args,
            state: CallState::Validating,
            description: None,
            locations: Vec::new(),
            decided_by: None,
        }
    }
}

/// Where a call is in its life.
#[derive(Debug, Clone, PartialEq)]
pub enum CallState {
    Validating,
    Scheduled,
    AwaitingApproval(ConfirmationDetails),
    Executing,
    Success(ToolResult),
    Error(CallError),
    Cancelled(String),
    /// Found unfinished after the daemon restarted.
    Interrupted,
}

impl CallState {
    pub fn is_terminal(&self) -> bool {
        match self {
            CallState::Success(_)
            | CallState::Error(_)
            | CallState::Cancelled(_)
            | CallState::Interrupted => true,
            CallState::Validating
            | CallState::Scheduled
            | CallState::AwaitingApproval(_)
            | CallState::Executing => false,
        }
    }
}

/// Why a call ended without a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallError {
    pub kind: CallErrorKind,
    pub message: String,
}

impl CallError {
    pub fn new(kind: CallErrorKind, message: impl Into<String>) -> Self {
        CallError {
            kind,
            message: message.into(),
        }
    }
}

/// Classes of call failure: the tool's own, plus the scheduler's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallErrorKind {
    Tool(ToolErrorKind),
    /// No tool of that name.
    UnknownTool,
    /// The policy refused it.
    Denied,
    /// Stopped while running.
    Cancelled,
}

impl From<ToolError> for CallError {
    fn from(error: ToolError) -> Self {
        let kind = match error.kind {
            ToolErrorKind::Cancelled => CallErrorKind::Cancelled,
            other => CallErrorKind::Tool(other),
        };
        CallError {
            kind,
            message: error.message,
        }
    }
}
