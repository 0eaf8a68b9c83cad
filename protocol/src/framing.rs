//! NDJSON framing limits shared by the daemon and its clients.

/// The longest line either side accepts, in bytes (without the newline).
/// A longer line is answered with an error and discarded; the connection
/// stays open.
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// How many outbound messages the daemon queues for one connection before
/// it treats the client as too slow.
pub const OUTBOUND_QUEUE: usize = 4096;
