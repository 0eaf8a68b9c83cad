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

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use super::tail::Logged;
use super::types::StoreError;

/// How the thread writes steps: the store implements it (`mod.rs`), so
/// this file never names the store above it.
pub(super) trait ApplySteps: Send + 'static {
    /// Applies one logged step; on failure it stays in the tail.
    fn apply_logged(&self, logged: &mut Logged) -> Result<(), StoreError>;
    /// Applies one session's steps, in log order, as one write.
    fn apply_together(&self, steps: &mut [Logged]) -> Result<(), StoreError>;
}

/// How soon a failed apply is tried again.
const RETRY: Duration = Duration::from_secs(1);
/// How long [`Applier::settle`] waits.
const SETTLE_WAIT: Duration = Duration::from_secs(5);
/// How long the thread, woken by a first step, lets more steps gather
/// before it applies them together. Waking a sleeping thread costs both
/// cores a context switch; once per batch instead of once per step is the
/// difference between ~1 and ~0.1 wake-ups per tool call in a client's
/// request loop. Nothing waits for sled in the meantime (reads merge the
/// tail), except a settle, which skips the wait.
const GATHER: Duration = Duration::from_millis(2);

/// The thread's nice value. Its work is never waited for on a request's
/// path, so on a busy machine the workers that answer go first; CFS still
/// gives it a share (a tenth of a worker's at equal demand), far more
/// than the few percent of a core the load test needs.
const NICE: i32 = 10;

enum Job {
    Apply(Box<Logged>),
    /// Answered once everything queued before it is in sled.
    Settle(mpsc::SyncSender<()>),
}

/// The jobs between the actors and the thread.
#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    /// The thread waits on the bell (the queue is empty); the next job
    /// rings it.
    idle: bool,
    /// The applier was dropped: drain what is queued, without retrying a
    /// failing apply (the log keeps it), then end.
    closed: bool,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    bell: Condvar,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `job`; gives it back when the thread has ended.
    fn push(&self, job: Job) -> Result<(), Job> {
        let mut queue = self.lock();
        if queue.closed {
            return Err(job);
        }
        // Only a waiting thread is rung, by the first job, which it then
        // lets gather company; a gathering one finds the rest (a settle
        // among them waits out the gathering).
        let ring = queue.idle;
        queue.jobs.push_back(job);
        if ring {
            queue.idle = false;
            self.bell.notify_one();
        }
        Ok(())
    }
}

/// The sending side. Dropped (with the last handle on the store), it lets
/// the thread drain its queue and waits for it to end, so that sled is
/// closed when the store is.
#[derive(Debug)]
pub struct Applier {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Applier {
    /// Starts the thread; `store` must not hold an applier itself (it
    /// would keep the thread alive forever).
    pub fn spawn(store: impl ApplySteps) -> std::io::Result<Applier> {
        let shared = Arc::new(Shared::default());
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("store-apply".to_owned())
                .spawn(move || run(&store, &shared))?
        };
        Ok(Applier {
            shared,
            thread: Some(thread),
        })
    }

    /// Queues `logged` for sled. If the thread is gone, applies it here.
    pub fn apply(&self, store: &impl ApplySteps, logged: Logged) -> Result<(), StoreError> {
        match self.shared.push(Job::Apply(Box::new(logged))) {
            Ok(()) => Ok(()),
            Err(Job::Apply(mut logged)) => store.apply_logged(&mut logged),
            Err(_) => Ok(()),
        }
    }

    /// Waits until every append queued so far is in sled.
    pub fn settle(&self) -> Result<(), StoreError> {
        let (done, wait) = mpsc::sync_channel(1);
        if self.shared.push(Job::Settle(done)).is_err() {
            return Ok(());
        }
        match wait.recv_timeout(SETTLE_WAIT) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => Ok(()),
            Err(mpsc::RecvTimeoutError::Timeout) => Err(behind()),
        }
    }
}

fn behind() -> StoreError {
    StoreError::Io(
        "logged events are still waiting to be written to sled (the store is failing)".to_owned(),
    )
}

impl Drop for Applier {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.bell.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(store: &impl ApplySteps, shared: &Shared) {
    lower_priority();
    loop {
        let mut queue = shared.lock();
        while queue.jobs.is_empty() && !queue.closed {
            queue.idle = true;
            queue = shared.bell.wait(queue).unwrap_or_else(|e| e.into_inner());
        }
        queue.idle = false;
        if queue.jobs.is_empty() {
            return; // closed and drained
        }
        let settling = queue.closed || queue.jobs.iter().any(|j| matches!(j, Job::Settle(_)));
        if !settling {
            drop(queue);
            std::thread::sleep(GATHER);
            queue = shared.lock();
        }
        let batch = std::mem::take(&mut queue.jobs);
        drop(queue);
        apply_all(store, batch, shared);
    }
}

/// Applies `batch` in order; a failing apply is retried in place. The
/// steps between two other jobs go to sled a session at a time, each
/// session's together (see `Store::apply_together`).
fn apply_all(store: &impl ApplySteps, batch: VecDeque<Job>, shared: &Shared) {
    let mut steps = Vec::new();
    for job in batch {
        match job {
            Job::Apply(logged) => steps.push(*logged),
            Job::Settle(done) => {
                apply_steps(store, std::mem::take(&mut steps), shared);
                let _ = done.send(());
            }
        }
    }
    apply_steps(store, steps, shared);
}

fn apply_steps(store: &impl ApplySteps, steps: Vec<Logged>, shared: &Shared) {
    for mut run in by_session(steps) {
        if run.len() > 1 && store.apply_together(&mut run).is_ok() {
            continue;
        }
        for logged in &mut run {
            while let Err(e) = store.apply_logged(logged) {
                tracing::error!(error = %e, "could not apply events to sled; will retry");
                if shared.lock().closed {
                    // Dropped unapplied, it marks the store broken; the
                    // log replays it at the next open.
                    break;
                }
                std::thread::sleep(RETRY);
            }
        }
    }
}

/// `steps` grouped by session, each group in log order.
fn by_session(steps: Vec<Logged>) -> Vec<Vec<Logged>> {
    let mut groups: Vec<Vec<Logged>> = Vec::new();
    for step in steps {
        match groups.iter_mut().find(|g| g[0].id == step.id) {
            Some(group) => group.push(step),
            None => groups.push(vec![step]),
        }
    }
    groups
}

/// Gives the calling thread (not the process: Linux keeps a nice value per
/// thread) the lower priority [`NICE`].
fn lower_priority() {
    #[allow(unsafe_code)]
    // SAFETY: setpriority takes plain integers; `who == 0` is the caller.
    let done = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, NICE) };
    if done != 0 {
        tracing::debug!(error = %std::io::Error::last_os_error(), "could not lower the apply thread's priority");
    }
}
