//! Checkpoints, restores and forks as clients see them: `session.checkpoints`,
//! `session.restore` and `session.fork`.

use serde::{Deserialize, Serialize};

/// One point a session can go back to: a turn that edited files (`turn-<n>`)
/// or a client's own edit call (`call-<n>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointInfo {
    /// What `session.restore` takes as `checkpoint`.
    pub checkpoint: String,
    pub turn_id: Option<String>,
    /// The edit calls whose changes a restore of it takes back.
    pub calls: Vec<String>,
    /// Every file they touched, absolute.
    pub files: Vec<String>,
    /// When its first edit was recorded (ms since the epoch).
    pub time: u64,
}

/// Result of `session.checkpoints`, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointList {
    pub checkpoints: Vec<CheckpointInfo>,
}

/// Result of `session.restore`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestoreResult {
    pub checkpoint: String,
    /// Files put back to their bytes at the checkpoint.
    pub restored: Vec<String>,
    /// Files the edits created, removed again.
    pub removed: Vec<String>,
    /// Files already as they were at the checkpoint.
    pub unchanged: Vec<String>,
    /// History entries no longer sent to the model.
    pub rewound_entries: u64,
}

/// One file a restore would overwrite although it changed on disk since
/// the session's last edit of it (the `data` of error -32043 holds a list
/// of these under `conflicts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestoreConflict {
    pub path: String,
    /// Unified diff from what is on disk now to what the restore writes.
    pub diff: String,
}
