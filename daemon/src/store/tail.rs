//! Appends that are durable but not yet in sled.
//!
//! A commit is two steps (see `store.rs`): the append is logged (one
//! write to the write-ahead log: from then on it survives a crash and may
//! be broadcast and answered), and later applied to sled by the apply
//! thread (`applier.rs`). In between, the append sits in the tail, and
//! every read that a client can reach merges the tail with sled:
//!
//! * a reader takes its snapshot of the tail before it reads sled, and an
//!   entry leaves the tail only after it is in sled, so whatever was
//!   logged before the read is found in one or the other;
//! * the write-ahead log segment an append went to cannot be cut until it
//!   is applied (the [`Logged`] holds a [`Lease`] on it).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::types::{Append, Published, SessionRecord};
use super::wal::Lease;

/// What reads need from an append that is not in sled yet.
#[derive(Debug)]
struct Entry {
    events: Vec<Arc<Published>>,
    record: Option<SessionRecord>,
}

/// The unapplied appends of every session, oldest first.
#[derive(Debug, Default)]
pub struct Tail {
    by_session: Mutex<HashMap<String, Vec<Arc<Entry>>>>,
}

impl Tail {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Arc<Entry>>>> {
        self.by_session.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn insert(&self, id: &str, entry: Arc<Entry>) {
        self.lock().entry(id.to_owned()).or_default().push(entry);
    }

    fn remove(&self, id: &str, entry: &Arc<Entry>) {
        let mut map = self.lock();
        if let Some(list) = map.get_mut(id) {
            list.retain(|e| !Arc::ptr_eq(e, entry));
            if list.is_empty() {
                map.remove(id);
            }
        }
    }

    /// Unapplied events of session `id` with `since < seq <= upto`.
    pub fn events(&self, id: &str, since: u64, upto: u64) -> Vec<Arc<Published>> {
        let map = self.lock();
        let Some(list) = map.get(id) else {
            return Vec::new();
        };
        list.iter()
            .flat_map(|entry| entry.events.iter())
            .filter(|e| e.seq > since && e.seq <= upto)
            .cloned()
            .collect()
    }

    /// The newest unapplied event's seq of session `id`.
    pub fn last_seq(&self, id: &str) -> Option<u64> {
        let map = self.lock();
        map.get(id)?
            .iter()
            .flat_map(|entry| entry.events.iter())
            .map(|e| e.seq)
            .max()
    }

    /// The newest unapplied record of session `id`.
    pub fn record(&self, id: &str) -> Option<SessionRecord> {
        let map = self.lock();
        map.get(id)?
            .iter()
            .rev()
            .find_map(|entry| entry.record.clone())
    }

    /// The newest unapplied record of every session that has one.
    pub fn records(&self) -> Vec<SessionRecord> {
        let map = self.lock();
        map.values()
            .filter_map(|list| list.iter().rev().find_map(|entry| entry.record.clone()))
            .collect()
    }
}

/// An append that is in the write-ahead log and in the tail, waiting to be
/// applied to sled ([`super::Store::apply_logged`]).
///
/// Dropped unapplied (its actor died), it leaves the tail and marks the
/// store broken, so that the next checkpoint replays the log into sled
/// before it cuts it: the append is not lost, only late.
#[derive(Debug)]
pub struct Logged {
    pub(super) id: String,
    pub(super) append: Append,
    /// `(seq, blob marker)` of the events stored out of line.
    pub(super) markers: Vec<(u64, Vec<u8>)>,
    entry: Arc<Entry>,
    tail: Arc<Tail>,
    broken: Arc<AtomicBool>,
    lease: Option<Lease>,
}

impl Logged {
    pub(super) fn new(
        id: &str,
        append: Append,
        markers: Vec<(u64, Vec<u8>)>,
        lease: Lease,
        tail: &Arc<Tail>,
        broken: &Arc<AtomicBool>,
    ) -> Logged {
        let entry = Arc::new(Entry {
            events: append.events.clone(),
            record: append.record.clone(),
        });
        tail.insert(id, entry.clone());
        Logged {
            id: id.to_owned(),
            append,
            markers,
            entry,
            tail: tail.clone(),
            broken: broken.clone(),
            lease: Some(lease),
        }
    }

    /// The events of the append, in seq order.
    pub fn events(&self) -> &[Arc<Published>] {
        &self.append.events
    }

    /// Called once the append is in sled: it leaves the tail and releases
    /// its log segment.
    pub(super) fn applied(&mut self) {
        if self.lease.take().is_some() {
            self.tail.remove(&self.id, &self.entry);
        }
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        if self.lease.take().is_some() {
            tracing::error!(session = %self.id, "a logged append was dropped before it reached sled; the next checkpoint replays the log");
            self.broken.store(true, Ordering::Release);
            self.tail.remove(&self.id, &self.entry);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::value::RawValue;

    fn event(seq: u64) -> Arc<Published> {
        Published::new(
            seq,
            RawValue::from_string(format!("{{\"seq\":{seq}}}")).unwrap(),
        )
    }

    fn append(seqs: &[u64]) -> Append {
        Append {
            events: seqs.iter().map(|s| event(*s)).collect(),
            ..Append::default()
        }
    }

    #[test]
    fn reads_see_an_append_until_it_is_applied() {
        let tail = Arc::new(Tail::default());
        let broken = Arc::new(AtomicBool::new(false));
        let mut a = Logged::new(
            "s",
            append(&[1, 2]),
            Vec::new(),
            Lease::detached(),
            &tail,
            &broken,
        );
        let mut b = Logged::new(
            "s",
            append(&[3]),
            Vec::new(),
            Lease::detached(),
            &tail,
            &broken,
        );
        assert_eq!(tail.last_seq("s"), Some(3));
        let seqs: Vec<u64> = tail.events("s", 1, 3).iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [2, 3]);
        a.applied();
        let seqs: Vec<u64> = tail.events("s", 0, 10).iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [3]);
        b.applied();
        assert_eq!(tail.last_seq("s"), None);
        assert!(tail.lock().is_empty(), "applied entries leave no trace");
        assert!(!broken.load(Ordering::Acquire));
    }

    #[test]
    fn the_newest_unapplied_record_wins() {
        let tail = Arc::new(Tail::default());
        let broken = Arc::new(AtomicBool::new(false));
        let record = |title: &str| SessionRecord {
            id: "s".to_owned(),
            cwd: "/".to_owned(),
            title: Some(title.to_owned()),
            approval_mode: crate::policy::ApprovalMode::Default,
            interactive: false,
            created_at: 0,
            root_dev: None,
            root_ino: None,
            origin: None,
            sandbox: None,
            tokens: None,
            model: None,
            compression: None,
            rewound: Vec::new(),
            allowed: Default::default(),
            todos: Vec::new(),
        };
        let mut first = append(&[1]);
        first.record = Some(record("old"));
        let mut second = append(&[2]);
        second.record = Some(record("new"));
        let mut a = Logged::new("s", first, Vec::new(), Lease::detached(), &tail, &broken);
        let mut b = Logged::new("s", second, Vec::new(), Lease::detached(), &tail, &broken);
        assert_eq!(tail.record("s").unwrap().title.as_deref(), Some("new"));
        assert_eq!(tail.records().len(), 1);
        b.applied();
        assert_eq!(tail.record("s").unwrap().title.as_deref(), Some("old"));
        a.applied();
        assert!(tail.record("s").is_none());
    }

    #[test]
    fn dropping_an_unapplied_append_marks_the_store_broken() {
        let tail = Arc::new(Tail::default());
        let broken = Arc::new(AtomicBool::new(false));
        let a = Logged::new(
            "s",
            append(&[1]),
            Vec::new(),
            Lease::detached(),
            &tail,
            &broken,
        );
        drop(a);
        assert!(
            broken.load(Ordering::Acquire),
            "the next checkpoint must replay the log"
        );
        assert_eq!(tail.last_seq("s"), None);
    }
}
