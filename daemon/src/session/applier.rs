//! The thread that applies logged appends to sled, off the actors' path.
//!
//! An actor's step is durable once it is logged (`wal.rs`); the step is
//! then broadcast and answered at once, and handed here. Applying it to
//! sled (tens of microseconds of tree updates) happens on this thread, in
//! the order steps were logged, while the actor already serves its next
//! request. Until then reads find the step in the tail (`tail.rs`).
//!
//! A failed apply (a full disk) is retried, in place, until it succeeds:
//! nothing logged after it overtakes it, so the order of writes to sled is
//! always the order of the log.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::store::{Store, StoreError};
use super::tail::Logged;

/// How soon a failed apply is tried again.
const RETRY: Duration = Duration::from_secs(1);
/// How long [`Applier::settle`] waits.
const SETTLE_WAIT: Duration = Duration::from_secs(5);

enum Job {
    Apply(Box<Logged>),
    /// Answered once everything queued before it is in sled.
    Settle(mpsc::SyncSender<()>),
}

/// The sending side. Dropped (with the last handle on the store), it lets
/// the thread drain its queue and waits for it to end, so that sled is
/// closed when the store is.
#[derive(Debug)]
pub struct Applier {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    /// Set on drop: stop retrying a failing apply (the log keeps it).
    closing: Arc<AtomicBool>,
}

impl Applier {
    /// Starts the thread; `store` must not hold an applier itself (it
    /// would keep the thread alive forever).
    pub fn spawn(store: Store) -> std::io::Result<Applier> {
        let (jobs, queue) = mpsc::channel();
        let closing = Arc::new(AtomicBool::new(false));
        let thread = {
            let closing = closing.clone();
            std::thread::Builder::new()
                .name("store-apply".to_owned())
                .spawn(move || run(&store, &queue, &closing))?
        };
        Ok(Applier {
            jobs: Some(jobs),
            thread: Some(thread),
            closing,
        })
    }

    /// Queues `logged` for sled. If the thread is gone, applies it here.
    pub fn apply(&self, store: &Store, logged: Logged) -> Result<(), StoreError> {
        let Some(jobs) = &self.jobs else {
            return store.apply_logged(&mut { logged });
        };
        match jobs.send(Job::Apply(Box::new(logged))) {
            Ok(()) => Ok(()),
            Err(mpsc::SendError(job)) => match job {
                Job::Apply(mut logged) => store.apply_logged(&mut logged),
                Job::Settle(_) => Ok(()),
            },
        }
    }

    /// Waits until every append queued so far is in sled.
    pub fn settle(&self) -> Result<(), StoreError> {
        let (done, wait) = mpsc::sync_channel(1);
        let Some(jobs) = &self.jobs else {
            return Ok(());
        };
        if jobs.send(Job::Settle(done)).is_err() {
            return Ok(());
        }
        match wait.recv_timeout(SETTLE_WAIT) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => Ok(()),
            Err(mpsc::RecvTimeoutError::Timeout) => Err(StoreError::Io(
                "logged events are still waiting to be written to sled (the store is failing)"
                    .to_owned(),
            )),
        }
    }
}

impl Drop for Applier {
    fn drop(&mut self) {
        self.closing.store(true, Ordering::Release);
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(store: &Store, queue: &mpsc::Receiver<Job>, closing: &AtomicBool) {
    while let Ok(job) = queue.recv() {
        match job {
            Job::Apply(mut logged) => {
                while let Err(e) = store.apply_logged(&mut logged) {
                    tracing::error!(error = %e, "could not apply events to sled; will retry");
                    if closing.load(Ordering::Acquire) {
                        // Dropped unapplied, it marks the store broken; the
                        // log replays it at the next open.
                        break;
                    }
                    std::thread::sleep(RETRY);
                }
            }
            Job::Settle(done) => {
                let _ = done.send(());
            }
        }
    }
}
