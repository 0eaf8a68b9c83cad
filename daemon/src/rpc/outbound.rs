//! The daemon's outbound memory: the bytes queued for clients and not yet
//! written to their sockets, counted per connection (`Meter`) and
//! daemon-wide against one budget (`OutboundBudget`).
//!
//! A connection may always queue one message (so every client makes
//! progress, whatever the size of an event); beyond that, a message is
//! queued only while the connection stays within its share of the budget
//! (the budget over the open connections) and the daemon within the
//! budget. A subscription that finds no room waits for its client to read
//! and meanwhile falls behind the live stream (it reads what it missed
//! from the store later), so a client that never reads costs at most its
//! share, and all of them together at most the budget plus one message
//! each.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// The default budget for all outbound queues together.
pub const DEFAULT_OUTBOUND_BUDGET: usize = 64 * 1024 * 1024;

/// The memory all connections' outbound queues may hold together.
#[derive(Debug)]
pub struct OutboundBudget {
    limit: usize,
    total: AtomicUsize,
    connections: AtomicUsize,
}

impl OutboundBudget {
    pub fn new(limit: usize) -> Arc<OutboundBudget> {
        Arc::new(OutboundBudget {
            limit: limit.max(1),
            total: AtomicUsize::new(0),
            connections: AtomicUsize::new(0),
        })
    }

    /// A meter for one new connection; the connection counts towards the
    /// shares until the meter is dropped.
    pub fn meter(self: &Arc<Self>) -> Arc<Meter> {
        self.connections.fetch_add(1, Ordering::Relaxed);
        Arc::new(Meter {
            budget: self.clone(),
            queued: AtomicUsize::new(0),
            drained: Notify::new(),
            closed: AtomicBool::new(false),
        })
    }

    /// Bytes queued for all clients now.
    pub fn total(&self) -> usize {
        self.total.load(Ordering::Relaxed)
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// One connection's share: the budget over the open connections.
    fn share(&self) -> usize {
        self.limit / self.connections.load(Ordering::Relaxed).max(1)
    }
}

/// One connection's queued bytes.
#[derive(Debug)]
pub struct Meter {
    budget: Arc<OutboundBudget>,
    queued: AtomicUsize,
    drained: Notify,
    /// The connection ended: its bytes and its share went back.
    closed: AtomicBool,
}

impl Meter {
    /// A message of `bytes` entered the connection's queue.
    pub fn add(&self, bytes: usize) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        self.queued.fetch_add(bytes, Ordering::Relaxed);
        self.budget.total.fetch_add(bytes, Ordering::Relaxed);
    }

    /// A message of `bytes` left the queue (written or dropped).
    pub fn sub(&self, bytes: usize) {
        let taken = take(&self.queued, bytes);
        take(&self.budget.total, taken);
        self.drained.notify_waiters();
    }

    /// Bytes queued for this connection now.
    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }

    /// Whether the connection holds more than its share: it reads no more
    /// requests until its client has read some answers.
    pub fn over_share(&self) -> bool {
        self.queued() > self.budget.share()
    }

    /// Whether a message of `bytes` may be queued now (see the module's
    /// comment).
    pub fn has_room(&self, bytes: usize) -> bool {
        let queued = self.queued();
        queued == 0
            || (queued + bytes <= self.budget.share()
                && self.budget.total() + bytes <= self.budget.limit)
    }

    /// Waits until a message of `bytes` may be queued; false when the
    /// client has not read enough within `limit`.
    pub async fn wait_room(&self, bytes: usize, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let drained = self.drained.notified();
            if self.has_room(bytes) {
                return true;
            }
            // Room can also come from other connections draining, which
            // this meter is not told of: look again now and then.
            let wake = deadline.min(tokio::time::Instant::now() + Duration::from_millis(50));
            tokio::select! {
                () = drained => {}
                () = tokio::time::sleep_until(wake) => {}
            }
            if tokio::time::Instant::now() >= deadline {
                return self.has_room(bytes);
            }
        }
    }

    /// Waits until the connection is within its share again.
    pub async fn wait_within_share(&self) {
        loop {
            let drained = self.drained.notified();
            if !self.over_share() {
                return;
            }
            tokio::select! {
                () = drained => {}
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
    }
}

impl Meter {
    /// The connection ended and its queue is gone: its bytes and its share
    /// go back to the budget now, whoever still holds the meter (a
    /// subscription that has not noticed yet).
    pub fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let left = self.queued.swap(0, Ordering::Relaxed);
        take(&self.budget.total, left);
        self.budget.connections.fetch_sub(1, Ordering::Relaxed);
        self.drained.notify_waiters();
    }
}

impl Drop for Meter {
    fn drop(&mut self) {
        self.close();
    }
}

/// Subtracts up to `bytes` from `counter`, never below zero; returns what
/// was subtracted.
fn take(counter: &AtomicUsize, bytes: usize) -> usize {
    let mut taken = 0;
    let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |now| {
        taken = bytes.min(now);
        Some(now - taken)
    });
    taken
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_message_always_fits_then_the_share_decides() {
        let budget = OutboundBudget::new(1000);
        let a = budget.meter();
        let b = budget.meter();
        assert!(a.has_room(5000), "an empty queue takes any one message");
        a.add(5000);
        assert!(!a.has_room(1), "over its share");
        assert!(b.has_room(400));
        b.add(400);
        assert!(!b.has_room(200), "share is 500");
        a.sub(5000);
        assert_eq!(budget.total(), 400);
        b.close();
        b.add(10);
        drop(b);
        assert_eq!(
            budget.total(),
            0,
            "a closed connection gives its bytes back"
        );
        assert!(a.has_room(900));
    }

    #[test]
    fn the_daemon_wide_budget_caps_the_sum() {
        let budget = OutboundBudget::new(1000);
        let a = budget.meter();
        let b = budget.meter();
        a.add(5000);
        assert!(b.has_room(100), "an empty queue still takes one message");
        b.add(1);
        assert!(
            !b.has_room(100),
            "within its share, but the daemon is over budget"
        );
        a.sub(10_000);
        assert_eq!(budget.total(), 1, "never below zero");
        assert!(b.has_room(100));
    }
}
