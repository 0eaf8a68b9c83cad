//! The store's upkeep, on a thread of its own: every [`CHECKPOINT_EVERY`]
//! it flushes sled and cuts the write-ahead log, reclaims sled's garbage
//! while writes come and for a while after, and returns freed heap to the
//! system once writes stop. Stopping it runs the final checkpoint.
//!
//! It used to be a task that sent each tick's work to tokio's blocking
//! pool. That pool ends a thread after 10 s without work, but a job every
//! 500 ms reached every idle thread in turn, so after a burst of tool
//! calls (up to 20 blocking threads under the load test) none of them
//! ever ended, and each kept its stack and its share of the heap.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;

use super::Store;
use super::types::StoreError;
use super::wal::{CHECKPOINT_EVERY, Checkpoint};

/// Ticks of quiet after the last write during which the store still
/// reclaims sled's garbage (see `Store::reclaim`).
const RECLAIM_TICKS: u32 = 30;

/// What one tick does besides the checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Upkeep {
    reclaim: bool,
    trim: bool,
}

/// Counts the ticks without a write.
#[derive(Debug)]
struct Quiet {
    writes: u64,
    ticks: u32,
}

impl Quiet {
    /// Starts as long quiet: a fresh store has nothing to reclaim.
    fn new(writes: u64) -> Quiet {
        Quiet {
            writes,
            ticks: RECLAIM_TICKS,
        }
    }

    /// The upkeep for a tick that sees the store's write count at `writes`.
    fn tick(&mut self, writes: u64) -> Upkeep {
        self.ticks = if writes == self.writes {
            self.ticks.saturating_add(1)
        } else {
            0
        };
        self.writes = writes;
        let reclaim = self.ticks < RECLAIM_TICKS;
        Upkeep {
            reclaim,
            // Once writes stop, what the burst (and each reclaim) freed
            // goes back to the system.
            trim: reclaim && self.ticks > 0,
        }
    }
}

/// The running upkeep thread. Dropping it stops the thread after a last
/// checkpoint, without waiting; [`Maintenance::stop`] waits.
#[derive(Debug)]
pub struct Maintenance {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<Result<Checkpoint, StoreError>>,
}

impl Maintenance {
    pub fn spawn(store: Store) -> std::io::Result<Maintenance> {
        let (stop, stopped) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("store-upkeep".to_owned())
            .spawn(move || run(&store, &stopped))?;
        Ok(Maintenance { stop, thread })
    }

    /// Stops the thread and returns its final checkpoint (blocking: run it
    /// off the async workers). Appends still on their way to sled
    /// (`Behind`) stay in the log and are replayed at the next start.
    pub fn stop(self) -> Result<Checkpoint, StoreError> {
        let Maintenance { stop, thread } = self;
        drop(stop);
        thread.join().unwrap_or_else(|_| {
            Err(StoreError::Io(
                "the store's upkeep thread panicked; the log is replayed at the next start"
                    .to_owned(),
            ))
        })
    }
}

fn run(store: &Store, stopped: &mpsc::Receiver<()>) -> Result<Checkpoint, StoreError> {
    let mut quiet = Quiet::new(store.writes());
    loop {
        match stopped.recv_timeout(CHECKPOINT_EVERY) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return store.checkpoint(),
        }
        let upkeep = quiet.tick(store.writes());
        // A panicking tick must not end the upkeep: the log would grow
        // until the next start.
        let ticked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tick(store, upkeep)));
        if ticked.is_err() {
            tracing::error!("the store's upkeep panicked; will retry");
        }
    }
}

fn tick(store: &Store, upkeep: Upkeep) {
    match store.checkpoint() {
        Ok(Checkpoint::Done) => {}
        // Normal under heavy load: the log keeps those appends, and a later
        // tick finishes the cut.
        Ok(Checkpoint::Behind { unapplied }) => {
            tracing::debug!(
                unapplied,
                "checkpoint deferred: appends still on their way to sled"
            );
        }
        Err(e) => tracing::error!(error = %e, "checkpoint failed; will retry"),
    }
    if upkeep.reclaim {
        store.reclaim();
    }
    if upkeep.trim {
        crate::heap::trim();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDLE: Upkeep = Upkeep {
        reclaim: false,
        trim: false,
    };

    #[test]
    fn a_fresh_store_is_left_alone() {
        let mut quiet = Quiet::new(7);
        assert_eq!(quiet.tick(7), IDLE);
    }

    #[test]
    fn writes_reclaim_then_quiet_ticks_also_trim_until_the_window_ends() {
        let mut quiet = Quiet::new(0);
        assert_eq!(
            quiet.tick(5),
            Upkeep {
                reclaim: true,
                trim: false
            },
            "a tick with writes reclaims, but does not trim under load"
        );
        for n in 1..RECLAIM_TICKS {
            assert_eq!(
                quiet.tick(5),
                Upkeep {
                    reclaim: true,
                    trim: true
                },
                "quiet tick {n}"
            );
        }
        assert_eq!(quiet.tick(5), IDLE, "the window has ended");
        assert_eq!(quiet.tick(5), IDLE);
        assert!(quiet.tick(6).reclaim, "a new write opens it again");
    }
}
