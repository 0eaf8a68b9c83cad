//! Which checkpoints a session has and what restoring one means: the
//! records grouped by turn (or by a client's own call), and for a restore
//! each file's target bytes, the states it may be in for the restore to
//! overwrite it without asking, and where the conversation is cut. Pure.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::record::{CallRecord, FileAfter, sha256};

/// Where a turn began: the seq it started at and the length of the stored
/// history then (its first entry's index).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnStart {
    pub seq: u64,
    pub turn_id: String,
    pub history_start: u64,
}

/// One point a session can go back to: a turn with edits, or a client's
/// own edit call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// `turn-<n>` or `call-<n>`.
    pub id: String,
    /// Restoring it undoes every edit from this seq on.
    pub seq: u64,
    pub turn_id: Option<String>,
    pub calls: Vec<String>,
    /// Every file its calls touched, once, in the order first touched.
    pub files: Vec<PathBuf>,
    /// When its first call was recorded (ms).
    pub time: u64,
}

/// Groups records (any order) into checkpoints, oldest first.
pub fn checkpoints(records: &[CallRecord], turns: &[TurnStart]) -> Vec<Checkpoint> {
    let mut sorted: Vec<&CallRecord> = records.iter().collect();
    sorted.sort_by_key(|r| r.seq);
    let mut groups: Vec<Checkpoint> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    for record in sorted {
        let id = record
            .turn_id
            .clone()
            .unwrap_or_else(|| record.call_id.clone());
        let at = *index.entry(id.clone()).or_insert_with(|| {
            let seq = record
                .turn_id
                .as_ref()
                .and_then(|t| turns.iter().find(|s| &s.turn_id == t))
                .map_or(record.seq, |s| s.seq.min(record.seq));
            groups.push(Checkpoint {
                id,
                seq,
                turn_id: record.turn_id.clone(),
                calls: Vec::new(),
                files: Vec::new(),
                time: record.time,
            });
            groups.len() - 1
        });
        let group = &mut groups[at];
        group.calls.push(record.call_id.clone());
        for file in &record.files {
            if !group.files.contains(&file.path) {
                group.files.push(file.path.clone());
            }
        }
    }
    groups.sort_by_key(|g| g.seq);
    groups
}

/// One file of a restore.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePlan {
    pub path: PathBuf,
    /// What the file goes back to (`None`: it did not exist).
    pub target: Option<Vec<u8>>,
    pub mode: Option<u32>,
    /// The SHA-256 of what the session's own last edit left there
    /// (`None` inside: no file). Anything else on disk was changed by
    /// someone else since.
    pub expected: Option<String>,
}

/// A restore of the calls from `from_seq` on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestorePlan {
    pub from_seq: u64,
    pub files: Vec<FilePlan>,
    /// The stored history index the conversation goes back to (`None`:
    /// no turn began after the point).
    pub history_start: Option<u64>,
}

/// What to do with one file, given what is on disk now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileAction {
    /// It is already as the checkpoint had it.
    Keep,
    /// It is as the session left it: put the checkpoint's bytes back.
    Restore,
    /// Someone else changed it since: ask first.
    Conflict,
}

/// Plans a restore of `records` (each call from `from_seq` on, full
/// records) given what each call left (`afters`, by seq).
pub fn restore_plan(
    from_seq: u64,
    records: &[CallRecord],
    afters: &BTreeMap<u64, Vec<FileAfter>>,
    turns: &[TurnStart],
) -> RestorePlan {
    let mut sorted: Vec<&CallRecord> = records.iter().filter(|r| r.seq >= from_seq).collect();
    sorted.sort_by_key(|r| r.seq);
    let mut files: Vec<FilePlan> = Vec::new();
    for record in sorted {
        for before in &record.files {
            // What this call left: its own after, or (it failed or the
            // daemon stopped before it finished) what was there before.
            let left = afters
                .get(&record.seq)
                .and_then(|a| a.iter().find(|f| before.path.to_str() == Some(&f.path)))
                .map(|f| f.sha256.clone())
                .unwrap_or_else(|| before.bytes.as_deref().map(sha256));
            match files.iter_mut().find(|f| f.path == before.path) {
                Some(plan) => plan.expected = left,
                None => files.push(FilePlan {
                    path: before.path.clone(),
                    target: before.bytes.clone(),
                    mode: before.mode,
                    expected: left,
                }),
            }
        }
    }
    let history_start = turns
        .iter()
        .filter(|t| t.seq >= from_seq)
        .min_by_key(|t| t.seq)
        .map(|t| t.history_start);
    RestorePlan {
        from_seq,
        files,
        history_start,
    }
}

impl FilePlan {
    /// What to do, given the file's bytes now (`None`: no file).
    pub fn action(&self, current: Option<&[u8]>) -> FileAction {
        if current == self.target.as_deref() {
            return FileAction::Keep;
        }
        if current.map(sha256) == self.expected {
            FileAction::Restore
        } else {
            FileAction::Conflict
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::record::FileBefore;
    use super::*;

    fn record(seq: u64, turn: Option<&str>, path: &str, before: Option<&[u8]>) -> CallRecord {
        CallRecord {
            seq,
            call_id: format!("call-{seq}"),
            turn_id: turn.map(str::to_owned),
            tool: "write_file".into(),
            time: seq,
            files: vec![FileBefore {
                path: path.into(),
                bytes: before.map(<[u8]>::to_vec),
                mode: None,
            }],
        }
    }

    fn after(path: &str, bytes: Option<&[u8]>) -> Vec<FileAfter> {
        vec![FileAfter {
            path: path.into(),
            sha256: bytes.map(sha256),
        }]
    }

    #[test]
    fn records_group_by_turn_and_own_calls() {
        let records = vec![
            record(9, None, "/w/c", None),
            record(5, Some("turn-3"), "/w/a", Some(b"a")),
            record(6, Some("turn-3"), "/w/a", Some(b"a2")),
            record(7, Some("turn-3"), "/w/b", None),
        ];
        let turns = vec![TurnStart {
            seq: 4,
            turn_id: "turn-3".into(),
            history_start: 2,
        }];
        let groups = checkpoints(&records, &turns);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].id, "turn-3");
        assert_eq!(groups[0].seq, 4);
        assert_eq!(groups[0].calls, vec!["call-5", "call-6", "call-7"]);
        assert_eq!(groups[0].files.len(), 2);
        assert_eq!(groups[1].id, "call-9");
    }

    #[test]
    fn a_restore_goes_back_to_the_first_before_and_expects_the_last_after() {
        let records = vec![
            record(5, Some("turn-3"), "/w/a", Some(b"one")),
            record(6, Some("turn-3"), "/w/a", Some(b"two")),
            record(8, Some("turn-7"), "/w/n", None),
        ];
        let mut afters = BTreeMap::new();
        afters.insert(5, after("/w/a", Some(b"two")));
        afters.insert(6, after("/w/a", Some(b"three")));
        afters.insert(8, after("/w/n", Some(b"new")));
        let turns = vec![
            TurnStart {
                seq: 4,
                turn_id: "turn-3".into(),
                history_start: 0,
            },
            TurnStart {
                seq: 7,
                turn_id: "turn-7".into(),
                history_start: 4,
            },
        ];
        let plan = restore_plan(4, &records, &afters, &turns);
        assert_eq!(plan.history_start, Some(0));
        let a = &plan.files[0];
        assert_eq!(a.target.as_deref(), Some(&b"one"[..]));
        assert_eq!(a.action(Some(b"three")), FileAction::Restore);
        assert_eq!(a.action(Some(b"one")), FileAction::Keep);
        assert_eq!(a.action(Some(b"someone else")), FileAction::Conflict);
        assert_eq!(a.action(None), FileAction::Conflict);
        let n = &plan.files[1];
        assert_eq!(n.target, None);
        assert_eq!(n.action(Some(b"new")), FileAction::Restore);
        assert_eq!(n.action(None), FileAction::Keep);
        // Only the later turn.
        let later = restore_plan(7, &records, &afters, &turns);
        assert_eq!(later.files.len(), 1);
        assert_eq!(later.history_start, Some(4));
    }

    #[test]
    fn a_call_that_left_no_after_is_expected_unchanged() {
        let records = vec![record(5, None, "/w/a", Some(b"one"))];
        let plan = restore_plan(5, &records, &BTreeMap::new(), &[]);
        assert_eq!(plan.files[0].action(Some(b"one")), FileAction::Keep);
        assert_eq!(plan.files[0].action(Some(b"x")), FileAction::Conflict);
        assert_eq!(plan.history_start, None);
    }
}
