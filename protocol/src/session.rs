//! Sessions: a workspace, an approval mode and an event log.

use serde::{Deserialize, Serialize};

/// How much a session lets tools do without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum ApprovalMode {
    /// Read-only tools run; everything else asks.
    #[default]
    #[serde(rename = "default")]
    Default,
    /// File edits run without asking too.
    #[serde(rename = "autoEdit")]
    AutoEdit,
    /// Everything runs without asking.
    #[serde(rename = "yolo")]
    Yolo,
    /// Read-only research: only read-only tools run unless a rule says
    /// otherwise (0.61's plan mode).
    #[serde(rename = "plan")]
    Plan,
}

impl ApprovalMode {
    /// The wire name (`default`, `autoEdit`, `yolo`, `plan`).
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Default => "default",
            ApprovalMode::AutoEdit => "autoEdit",
            ApprovalMode::Yolo => "yolo",
            ApprovalMode::Plan => "plan",
        }
    }
}

impl std::str::FromStr for ApprovalMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "default" => Ok(ApprovalMode::Default),
            "autoEdit" | "auto_edit" | "auto-edit" => Ok(ApprovalMode::AutoEdit),
            "yolo" => Ok(ApprovalMode::Yolo),
            "plan" => Ok(ApprovalMode::Plan),
            other => Err(format!(
                "unknown approval mode `{other}` (expected default, autoEdit, yolo or plan)"
            )),
        }
    }
}

impl std::fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A session as listed and shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub session_id: String,
    /// The workspace root (absolute, symlinks resolved).
    pub cwd: String,
    pub title: Option<String>,
    pub approval_mode: ApprovalMode,
    /// When false, anything that would ask a person is denied instead.
    pub interactive: bool,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    /// When the newest event was recorded (milliseconds since the Unix
    /// epoch); `createdAt` when there is none.
    #[serde(default)]
    pub updated_at: u64,
    /// Which kind of client created it: `chat`, `prompt`, `call`, `acp`,
    /// `mcp serve`, or the name another client gave in
    /// `daemon.initialize`; absent for sessions from before it was kept.
    #[serde(default)]
    pub origin: Option<String>,
    /// The `seq` of the newest event (0 when there is none).
    pub last_seq: u64,
    /// Whether the session's actor is running in the daemon now.
    pub loaded: bool,
    /// The model chosen for this session; absent: the daemon's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Token accounting and context-window use, once a request was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<crate::turn::SessionTokens>,
    /// The model's todo list (`write_todos`), empty when it set none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub todos: Vec<crate::turn::TodoItem>,
}

/// Params of `session.create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateSessionParams {
    /// The workspace directory; must exist. Tools are confined to it.
    pub cwd: String,
    #[serde(default)]
    pub approval_mode: Option<ApprovalMode>,
    #[serde(default)]
    pub title: Option<String>,
    /// Defaults to true.
    #[serde(default)]
    pub interactive: Option<bool>,
}

/// Result of `daemon.initialize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    pub protocol_version: u32,
    pub daemon_version: String,
    /// The daemon's process id.
    pub pid: u32,
}

/// Params of `daemon.initialize`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientInfo {
    /// A name for logs (`gemctl`, `zed`, ...).
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub version: Option<String>,
    /// The protocol version the client speaks; the daemon refuses a newer one.
    #[serde(default)]
    pub protocol_version: Option<u32>,
}

/// Result of `daemon.status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DaemonStatus {
    pub daemon_version: String,
    pub pid: u32,
    pub socket: String,
    pub data_dir: String,
    /// Milliseconds since the daemon started.
    pub uptime_ms: u64,
    pub connections: u64,
    pub sessions_total: u64,
    pub sessions_loaded: u64,
    pub tools: u64,
    /// Resident memory of the daemon in bytes, when the platform tells.
    pub rss_bytes: Option<u64>,
    /// The model prompts would use, and whether it is usable.
    pub model: Option<crate::turn::ModelStatus>,
    /// Why the session store cannot be written now (read-only or full file
    /// system, ...); absent when it can. Commits wait while this lasts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_error: Option<String>,
    /// Bytes queued for all clients and not yet written to their sockets
    /// (bounded by the daemon's outbound budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outbound_bytes: Option<u64>,
    /// What is wrong with the configuration files now, one entry per
    /// problem; empty when nothing is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_problems: Vec<ConfigProblemInfo>,
    /// Settings keys the daemon does not use (typos show up here), as
    /// `file: key.path`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unused_settings: Vec<String>,
    /// Whether commands can be sandboxed on this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxStatus>,
}

/// One configuration problem in `daemon.status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigProblemInfo {
    /// `policy`, `settings`, `mcp`, `trust`, ...
    pub area: String,
    pub file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    pub message: String,
    /// What the daemon uses instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
}

/// What the kernel lets the sandbox do (`daemon.status`, `sandbox.check`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxStatus {
    /// Commands can be sandboxed; when false, sandboxed sessions run them
    /// unsandboxed (and say so), or refuse them under mode `required`.
    pub available: bool,
    /// The kernel's Landlock ABI (0: none).
    pub landlock_abi: i32,
    /// Why commands cannot be sandboxed here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
}

/// Result of `sandbox.check`: what a command in a sandboxed session of
/// `workspace` may do here, and a self-test of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxCheck {
    pub status: SandboxStatus,
    pub workspace: String,
    /// The mode of the user's settings (absent: off, on for yolo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    pub network: bool,
    pub writable: Vec<String>,
    pub hidden: Vec<String>,
    pub read_only: Vec<String>,
    /// Problems in the sandbox settings (file and field named).
    pub problems: Vec<String>,
    /// Each probe of the self-test.
    pub probes: Vec<SandboxProbe>,
}

/// One self-test probe: something the sandbox must allow or refuse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxProbe {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

/// Result of `session.delete`, `session.cancel` and other yes/no requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ack {
    /// Whether the request changed anything.
    pub ok: bool,
}
