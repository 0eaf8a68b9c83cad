//! Which connections are served: at most `max_connections` at once. A new
//! connection is always taken; when the daemon is full, an idle one is
//! shed to make room, in this order: one that never completed
//! `daemon.initialize` (oldest first), then an initialized one with no
//! request in flight and no subscription, then one with no request in
//! flight (a quiet subscriber), each the longest idle first. Only when
//! every connection has a request in flight is the new one turned away.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

/// What one connection is doing, updated by the connection itself.
#[derive(Debug)]
pub struct Activity {
    /// The admission's epoch, so that times compare across connections.
    epoch: Instant,
    initialized: AtomicBool,
    subscribed: AtomicBool,
    in_flight: AtomicUsize,
    /// Milliseconds since `epoch` of the connect or the last request read.
    last_request_ms: AtomicU64,
    /// Fired to shed the connection.
    pub shed: CancellationToken,
}

impl Activity {
    fn new(epoch: Instant) -> Activity {
        Activity {
            epoch,
            initialized: AtomicBool::new(false),
            subscribed: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            last_request_ms: AtomicU64::new(millis_since(epoch)),
            shed: CancellationToken::new(),
        }
    }

    pub fn initialized(&self) {
        self.initialized.store(true, Ordering::Relaxed);
    }

    pub fn subscribed(&self) {
        self.subscribed.store(true, Ordering::Relaxed);
    }

    /// A request was read; the guard counts it in flight until dropped.
    pub fn request(self: &Arc<Self>) -> InFlight {
        self.last_request_ms
            .store(millis_since(self.epoch), Ordering::Relaxed);
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(self.clone())
    }

    /// The connection's rank for shedding: lower goes first; `None` when it
    /// has a request in flight.
    fn shed_rank(&self) -> Option<(u8, u64)> {
        if self.in_flight.load(Ordering::Relaxed) > 0 {
            return None;
        }
        let last = self.last_request_ms.load(Ordering::Relaxed);
        let tier = if !self.initialized.load(Ordering::Relaxed) {
            0
        } else if !self.subscribed.load(Ordering::Relaxed) {
            1
        } else {
            2
        };
        Some((tier, last))
    }
}

fn millis_since(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Counts a request in flight while alive.
pub struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The connections being served.
pub struct Admission {
    max: usize,
    epoch: Instant,
    connections: Mutex<HashMap<u64, (u64, Arc<Activity>)>>,
    next_order: AtomicU64,
}

/// A connection taken in; it leaves the table when dropped.
pub struct Admitted {
    admission: Arc<Admission>,
    id: u64,
    pub activity: Arc<Activity>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.admission
            .connections
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
    }
}

impl Admission {
    pub fn new(max: usize) -> Arc<Admission> {
        Arc::new(Admission {
            max: max.max(1),
            epoch: Instant::now(),
            connections: Mutex::new(HashMap::new()),
            next_order: AtomicU64::new(0),
        })
    }

    /// Takes connection `id` in, shedding an idle one when full; `None`
    /// when every connection has a request in flight.
    pub fn admit(self: &Arc<Self>, id: u64) -> Option<Admitted> {
        let mut connections = self.connections.lock().unwrap_or_else(|e| e.into_inner());
        // Shed connections are still in the table until they have closed:
        // they do not count.
        let live = connections
            .values()
            .filter(|(_, a)| !a.shed.is_cancelled())
            .count();
        if live >= self.max {
            let victim = connections
                .values()
                .filter(|(_, a)| !a.shed.is_cancelled())
                .filter_map(|(order, a)| a.shed_rank().map(|rank| (rank, *order, a)))
                .min_by_key(|(rank, order, _)| (*rank, *order))
                .map(|(_, _, a)| a.clone());
            match victim {
                Some(victim) => victim.shed.cancel(),
                None => return None,
            }
        }
        let order = self.next_order.fetch_add(1, Ordering::Relaxed);
        let activity = Arc::new(Activity::new(self.epoch));
        connections.insert(id, (order, activity.clone()));
        Some(Admitted {
            admission: self.clone(),
            id,
            activity,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sheds_the_never_initialized_first_then_the_idle_never_the_busy() {
        let admission = Admission::new(3);
        let silent = admission.admit(1).expect("room");
        let quiet = admission.admit(2).expect("room");
        quiet.activity.initialized();
        let busy = admission.admit(3).expect("room");
        busy.activity.initialized();
        let _request = busy.activity.request();

        let _fourth = admission.admit(4).expect("the new one is taken");
        assert!(silent.activity.shed.is_cancelled());
        assert!(!quiet.activity.shed.is_cancelled());

        // 4 has never initialized: it goes before the quiet one.
        let _fifth = admission.admit(5).expect("taken");
        assert!(!quiet.activity.shed.is_cancelled());
        assert!(!busy.activity.shed.is_cancelled());
    }

    #[test]
    fn turns_the_new_one_away_only_when_every_one_is_busy() {
        let admission = Admission::new(2);
        let a = admission.admit(1).expect("room");
        let b = admission.admit(2).expect("room");
        let _ra = a.activity.request();
        let rb = b.activity.request();
        assert!(admission.admit(3).is_none());
        drop(rb);
        let c = admission.admit(3).expect("b is idle now");
        assert!(b.activity.shed.is_cancelled());
        drop(b);
        drop(c);
        assert!(admission.admit(4).is_some(), "closed ones leave the table");
    }

    #[test]
    fn a_quiet_subscriber_goes_after_the_idle_without_one() {
        let admission = Admission::new(2);
        let watcher = admission.admit(1).expect("room");
        watcher.activity.initialized();
        watcher.activity.subscribed();
        let idle = admission.admit(2).expect("room");
        idle.activity.initialized();
        let _new = admission.admit(3).expect("taken");
        assert!(idle.activity.shed.is_cancelled());
        assert!(!watcher.activity.shed.is_cancelled());
    }
}
