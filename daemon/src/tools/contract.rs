//! The tool contract (seed 000 section 3.2): what every tool, built-in or
//! discovered, provides to the registry and the scheduler.
//!
//! A [`Tool`] is the declaration (name, kind, schema). `build` validates raw
//! arguments and yields a [`ToolInvocation`]: one checked call that can be
//! described, asked about and executed. Execution gets a cancellation token
//! and an [`OutputSink`] for streaming output; it returns a [`ToolResult`]
//! with content for the model and content for people.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use super::context::ToolContext;
pub use super::error::{ToolError, ToolErrorKind};
pub use super::root::PinnedRoot;
pub use super::settings::ToolSettings;

/// What a tool does, which decides how the default policy treats it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    Think,
    Fetch,
    Other,
}

impl ToolKind {
    /// Parses the lowercase spelling (`read`, `edit`, ...).
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "read" => Some(Self::Read),
            "edit" => Some(Self::Edit),
            "delete" => Some(Self::Delete),
            "move" => Some(Self::Move),
            "search" => Some(Self::Search),
            "execute" => Some(Self::Execute),
            "think" => Some(Self::Think),
            "fetch" => Some(Self::Fetch),
            "other" => Some(Self::Other),
            _ => None,
        }
    }

    /// Kinds that never change anything outside the daemon.
    pub fn is_read_only(self) -> bool {
        match self {
            ToolKind::Read | ToolKind::Search | ToolKind::Think | ToolKind::Fetch => true,
            ToolKind::Edit
            | ToolKind::Delete
            | ToolKind::Move
            | ToolKind::Execute
            | ToolKind::Other => false,
        }
    }

    /// Kinds that modify files (allowed without asking in autoEdit mode).
    pub fn is_edit(self) -> bool {
        match self {
            ToolKind::Edit | ToolKind::Delete | ToolKind::Move => true,
            ToolKind::Read
            | ToolKind::Search
            | ToolKind::Think
            | ToolKind::Fetch
            | ToolKind::Execute
            | ToolKind::Other => false,
        }
    }
}

/// Where a tool came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolSource {
    Builtin,
    Discovered,
    Mcp { server: String },
}

impl ToolSource {
    /// The MCP server, for MCP tools.
    pub fn server(&self) -> Option<&str> {
        match self {
            ToolSource::Mcp { server } => Some(server),
            ToolSource::Builtin | ToolSource::Discovered => None,
        }
    }
}

/// A file system location a call touches (for editors and for review).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolLocation {
    pub path: PathBuf,
    pub line: Option<u64>,
}

/// One part of the content given back to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    Text {
        text: String,
    },
    /// Binary content (images, PDF, audio) as base64 with its MIME type.
    InlineData {
        mime_type: String,
        data: String,
    },
}

/// What people see of a result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolDisplay {
    Text { text: String },
    Markdown { text: String },
    FileDiff(FileDiff),
}

/// A change to one file, as a unified diff plus both contents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileDiff {
    pub file_name: String,
    pub file_path: PathBuf,
    pub diff: String,
    /// `None` when the file is new.
    pub original_content: Option<String>,
    pub new_content: String,
}

/// The outcome of a successful execution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// Content for the model's history.
    pub llm_content: Vec<ContentPart>,
    /// Content for people.
    pub display: ToolDisplay,
    /// A one-line summary, when the tool has a better one than the display.
    pub summary: Option<String>,
    /// An MCP tool's `structuredContent`, kept as the server sent it (for
    /// clients; the model gets `llm_content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// What the call changes in its session, for the built-ins that change
    /// it (`enter_plan_mode`, an approved `exit_plan_mode`); the session
    /// applies it when the call succeeds. Never sent anywhere.
    #[serde(skip)]
    pub session_change: Option<SessionChange>,
}

/// A change a built-in tool makes to its session (`session/actor.rs`
/// applies it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionChange {
    /// The session's approval mode becomes this one.
    ApprovalMode(crate::policy::ApprovalMode),
}

/// A person's answer to a call that reports the answer itself
/// (`exit_plan_mode`): approved (with the mode to switch to), or refused
/// (with their words).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonAnswer {
    pub approved: bool,
    pub mode: Option<crate::policy::ApprovalMode>,
    pub feedback: Option<String>,
}

impl ToolResult {
    /// A result whose model content and display are the same text.
    pub fn text(text: impl Into<String>) -> Self {
        let text = text.into();
        ToolResult {
            llm_content: vec![ContentPart::Text { text: text.clone() }],
            display: ToolDisplay::Text { text },
            summary: None,
            structured: None,
            session_change: None,
        }
    }
}

/// What a person is asked before a call runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ConfirmationDetails {
    /// A file edit, shown as a diff.
    Edit { title: String, diff: FileDiff },
    /// A command to execute.
    Exec {
        title: String,
        command: String,
        /// The first word of each sub-command, for "always allow" choices.
        root_commands: Vec<String>,
    },
    /// A call to a tool on an MCP server.
    Mcp {
        title: String,
        server_name: String,
        tool_name: String,
    },
    /// Anything else: a prompt and the URLs it concerns.
    Info {
        title: String,
        prompt: String,
        urls: Vec<String>,
    },
    /// A plan to approve (`exit_plan_mode`): its file and its text.
    Plan {
        title: String,
        plan_path: PathBuf,
        plan: String,
    },
}

/// Receives streaming output while a call runs, and carries the call's
/// way to ask its people a question (`questions::Asker`), when it has
/// one. Cheap to clone.
#[derive(Clone)]
pub struct OutputSink(
    Arc<dyn Fn(String) + Send + Sync>,
    Option<crate::questions::Asker>,
);

impl OutputSink {
    pub fn new(f: impl Fn(String) + Send + Sync + 'static) -> Self {
        OutputSink(Arc::new(f), None)
    }

    /// A sink that drops everything (for tests and non-streaming callers).
    pub fn discard() -> Self {
        OutputSink(Arc::new(|_| {}), None)
    }

    /// The same sink, whose call asks its questions through `asker`.
    pub fn with_asker(mut self, asker: crate::questions::Asker) -> Self {
        self.1 = Some(asker);
        self
    }

    /// Where the call's questions go; none: nobody can be asked.
    pub fn asker(&self) -> Option<&crate::questions::Asker> {
        self.1.as_ref()
    }

    pub fn send(&self, delta: String) {
        (self.0)(delta)
    }
}

impl std::fmt::Debug for OutputSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OutputSink")
    }
}

/// A tool declaration: identity, kind and parameters.
pub trait Tool: Send + Sync {
    /// The name the model calls it by (`read_file`).
    fn name(&self) -> &str;
    /// A name for people (`ReadFile`).
    fn display_name(&self) -> &str;
    /// What the tool does, for the model.
    fn description(&self) -> &str;
    fn kind(&self) -> ToolKind;
    /// JSON schema of the arguments.
    fn parameter_schema(&self) -> &Value;
    fn source(&self) -> ToolSource {
        ToolSource::Builtin
    }
    /// The tool's annotations (an MCP tool's `annotations`: `readOnlyHint`
    /// and the rest), which policy rules may match on.
    fn annotations(&self) -> Option<&serde_json::Map<String, Value>> {
        None
    }
    /// The JSON schema of the tool's structured result (an MCP tool's
    /// `outputSchema`), when it declares one.
    fn output_schema(&self) -> Option<&Value> {
        None
    }
    /// The tool's own name on its MCP server (0.61 names it
    /// `mcp_<server>_<that name>`).
    fn remote_name(&self) -> Option<&str> {
        None
    }
    /// Validates the arguments (the schema has already been checked) and
    /// returns a call ready to describe, confirm and execute.
    fn build(&self, ctx: &ToolContext, args: &Value) -> Result<Box<dyn ToolInvocation>, ToolError>;
}

/// One validated call of a tool.
#[async_trait]
pub trait ToolInvocation: Send + Sync {
    /// A one-line human description (`Read src/main.rs`).
    fn description(&self) -> String;
    /// Paths the call touches.
    fn locations(&self) -> Vec<ToolLocation>;
    /// What to show a person asked to approve this call. Only called when
    /// the policy says to ask.
    async fn confirmation(&self) -> Result<ConfirmationDetails, ToolError>;
    /// Runs the call. Must return promptly with a `Cancelled` error once
    /// `cancel` fires, leaving nothing half-done.
    async fn execute(
        self: Box<Self>,
        cancel: CancellationToken,
        output: OutputSink,
    ) -> Result<ToolResult, ToolError>;
    /// The policy rule that let the call run grants it the network in the
    /// sandbox (`sandboxNetwork`, geminid's own); calls outside any
    /// sandbox ignore it.
    fn grant_network(&mut self) {}
    /// The call's result is known without a person (0.61's
    /// `shouldConfirmExecute` answering no: a plan that cannot be
    /// approved is reported, not presented): where the policy would ask,
    /// it runs without a question. A refusal still refuses.
    fn asks_nobody(&self) -> bool {
        false
    }
    /// A person answered; a call that reports the answer itself keeps it
    /// and returns true: it then runs even when refused (its result says
    /// so). Other calls return false and are run or refused as usual.
    fn take_answer(&mut self, _answer: &PersonAnswer) -> bool {
        false
    }
}
