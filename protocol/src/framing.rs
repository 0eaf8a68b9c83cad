//! NDJSON framing limits shared by the daemon and its clients.

/// The longest request line the daemon accepts, in bytes (without the
/// newline). A longer line is answered with an error and discarded; the
/// connection stays open.
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// The longest message the daemon sends (a response or a notification);
/// clients must accept lines this long.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// File contents larger than this are left out of diffs sent to clients
/// (`FileDiff.contentsOmitted`); the unified diff itself is always there.
pub const MAX_DIFF_CONTENT_BYTES: usize = 1024 * 1024;
