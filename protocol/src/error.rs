//! JSON-RPC error codes used by `geminid`.
//!
//! The standard codes (-32700 parse error, -32600 invalid request, -32601
//! method not found, -32602 invalid params, -32603 internal error) keep their
//! JSON-RPC meaning. Application codes are in the -32000 range.

/// The line was not valid JSON.
pub const PARSE_ERROR: i32 = -32700;
/// The JSON was not a valid JSON-RPC request.
pub const INVALID_REQUEST: i32 = -32600;
/// No such method.
pub const METHOD_NOT_FOUND: i32 = -32601;
/// The params do not fit the method; the message names the field.
pub const INVALID_PARAMS: i32 = -32602;
/// A bug or an unexpected failure inside the daemon.
pub const INTERNAL_ERROR: i32 = -32603;

/// A request arrived before `daemon.initialize`.
pub const NOT_INITIALIZED: i32 = -32002;
/// `daemon.initialize` was called a second time on one connection.
pub const ALREADY_INITIALIZED: i32 = -32003;
/// A line was longer than [`crate::framing::MAX_LINE_BYTES`].
pub const LINE_TOO_LONG: i32 = -32004;
/// The daemon closed the connection: `daemon.initialize` did not come in
/// time, or the daemon was at its connection limit and this connection
/// was the idle one shed to make room.
pub const CONNECTION_CLOSED: i32 = -32005;
/// No session with that id.
pub const SESSION_NOT_FOUND: i32 = -32010;
/// No tool call with that id in the session.
pub const CALL_NOT_FOUND: i32 = -32011;
/// No tool with that name.
pub const TOOL_NOT_FOUND: i32 = -32012;
/// A stored session's workspace directory was replaced (its path no
/// longer names the directory, by device and inode, the session was
/// created in): the session is not loaded.
pub const WORKSPACE_CHANGED: i32 = -32013;
/// The daemon is shutting down and accepts no new work.
pub const SHUTTING_DOWN: i32 = -32020;
/// No model is configured, or the configuration is incomplete.
pub const MODEL_NOT_CONFIGURED: i32 = -32040;
/// The session is busy with something the request must not interleave
/// with (`session.compress` while a turn runs); try again once it ends.
pub const SESSION_BUSY: i32 = -32041;
/// A compression was tried and failed; the history sent is unchanged.
pub const COMPRESSION_FAILED: i32 = -32042;
/// The session store failed (disk full, read-only, corrupt).
pub const STORE_ERROR: i32 = -32030;
/// `mcp.probe` could not connect to the server, list its tools or call
/// the tool; the message says which and why.
pub const MCP_PROBE_FAILED: i32 = -32050;
/// `session.restore` would overwrite files changed on disk since the
/// session's last edit of them; `data.conflicts` names each with a diff.
/// Pass `force` to overwrite them.
pub const RESTORE_CONFLICT: i32 = -32043;
/// `mcp.auth` / `mcp.authWait`: an OAuth login could not be started or
/// completed (discovery, registration, the redirect or the token request
/// failed); the message says which.
pub const MCP_AUTH_FAILED: i32 = -32051;
/// `mcp.read` or `mcp.prompt` could not read the resource or get the
/// prompt (server not connected, no answer, or the server's error); the
/// message says which.
pub const MCP_READ_FAILED: i32 = -32055;
/// `session.answer`: the question is no longer open (another client
/// answered it first, it timed out, its call ended) or never was; the
/// message says which and, when answered, by whom.
pub const QUESTION_CLOSED: i32 = -32046;
