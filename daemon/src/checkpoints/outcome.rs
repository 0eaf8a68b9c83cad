//! What a restore did, or why it did not: the answers `session.restore`
//! gives, as domain types (`wire.rs` makes them wire types).

use std::path::PathBuf;

/// What a restore did.
pub struct Restored {
    pub checkpoint: String,
    pub restored: Vec<PathBuf>,
    pub removed: Vec<PathBuf>,
    pub unchanged: Vec<PathBuf>,
    pub rewound_entries: u64,
}

/// A file a restore would overwrite though someone changed it since.
#[derive(Debug, Clone)]
pub struct Conflict {
    pub path: PathBuf,
    /// From what is on disk now to what the restore would write.
    pub diff: String,
}
