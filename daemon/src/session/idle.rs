//! Idle unload: when a loaded session may leave memory, and the handover
//! with the manager's map of loaded sessions that makes sure no request is
//! lost to an actor on its way out.
//!
//! The actor decides it is idle (nothing running, waiting or subscribed,
//! no command for a while: [`Activity::is_idle`]) and asks
//! [`Unloader::try_unload`]. Under the map's lock (the one `get` takes to
//! hand out a handle), the unload happens only if the map's handle is the
//! only sender left and no command waits in the channel: every other
//! handle was taken from the map and is still held by a request about to
//! send, so the unload is refused and the request is served by this actor.
//! Once removed, nobody can reach the actor any more; the next `get` loads
//! the session again from the store.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::mpsc;

use super::handle::{Command, SessionHandle};

/// The loaded sessions, by id.
pub(super) type Live = Arc<Mutex<HashMap<String, SessionHandle>>>;

/// Locks the map of loaded sessions (a poisoned lock is still usable:
/// the map is consistent after every statement).
pub(super) fn lock(live: &Live) -> MutexGuard<'_, HashMap<String, SessionHandle>> {
    live.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a session is doing, as far as unloading it goes.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Activity {
    /// Live subscriptions (attached clients).
    pub subscribers: usize,
    /// Calls not yet finished, those awaiting an answer included.
    pub open_calls: usize,
    /// Clients waiting for a call to finish.
    pub waiters: usize,
    /// A turn runs or prompts wait for one.
    pub turns: bool,
    /// A `session.compress` runs.
    pub compressing: bool,
    /// Events or replies not yet committed (a failed commit retries).
    pub unsettled: bool,
}

impl Activity {
    /// Whether nothing would be lost or kept waiting if the actor left.
    pub fn is_idle(&self) -> bool {
        self.subscribers == 0
            && self.open_calls == 0
            && self.waiters == 0
            && !self.turns
            && !self.compressing
            && !self.unsettled
    }
}

/// The manager's side of idle unloads, handed to every actor.
#[derive(Clone)]
pub(super) struct Unloader {
    live: Live,
    /// How long a session stays loaded without activity (`None`: for good).
    pub after: Option<Duration>,
    /// A heap trim is already on its way.
    trimming: Arc<AtomicBool>,
    /// Sessions that left memory while idle and were not loaded since:
    /// loading one again is a reload, not a resume.
    unloaded: Arc<Mutex<HashSet<String>>>,
    /// Told of each unload (`SessionManager::on_unloaded`).
    on_unloaded: Arc<Mutex<Option<UnloadedFn>>>,
}

/// Told the id of a session that left memory while idle; called under the
/// lock of the loaded sessions (so no request loads it again meanwhile):
/// it must not reach for sessions.
pub type UnloadedFn = Arc<dyn Fn(&str) + Send + Sync>;

impl Unloader {
    pub fn new(live: Live, after: Option<Duration>) -> Self {
        Unloader {
            live,
            after,
            trimming: Arc::new(AtomicBool::new(false)),
            unloaded: Arc::default(),
            on_unloaded: Arc::default(),
        }
    }

    /// From now on, `hook` is told of every unload.
    pub fn on_unloaded(&self, hook: UnloadedFn) {
        *self.on_unloaded.lock().unwrap_or_else(|e| e.into_inner()) = Some(hook);
    }

    /// Whether session `id` left memory while idle (and is not loaded).
    pub fn was_unloaded(&self, id: &str) -> bool {
        self.unloaded_ids().contains(id)
    }

    /// Session `id` is loaded again, or gone: forgets its unload.
    pub fn forget(&self, id: &str) {
        self.unloaded_ids().remove(id);
    }

    fn unloaded_ids(&self) -> MutexGuard<'_, HashSet<String>> {
        self.unloaded.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Removes session `id` from the loaded ones if no one can reach its
    /// actor any more (see the module's comment); answers whether it did.
    pub fn try_unload(&self, id: &str, commands: &mpsc::Receiver<Command>) -> bool {
        let mut live = lock(&self.live);
        let mapped = live.get(id).is_some_and(|h| !h.is_stopped());
        let others = commands
            .sender_strong_count()
            .saturating_sub(usize::from(mapped));
        if others > 0 || !commands.is_empty() {
            return false;
        }
        if mapped {
            live.remove(id);
        }
        // Noted before the map's lock is released: a request that loads
        // the session again sees it as a reload.
        self.unloaded_ids().insert(id.to_owned());
        let hook = self
            .on_unloaded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(hook) = hook {
            hook(id);
        }
        drop(live);
        self.trim_soon();
        true
    }

    /// Gives the freed memory back to the system once a wave of unloads
    /// has passed (one trim for many sessions, off the async workers).
    fn trim_soon(&self) {
        if self.trimming.swap(true, Ordering::AcqRel) {
            return;
        }
        let trimming = self.trimming.clone();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            trimming.store(false, Ordering::Release);
            return;
        };
        runtime.spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            trimming.store(false, Ordering::Release);
            let _ = tokio::task::spawn_blocking(crate::heap::trim).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::Activity;

    #[test]
    fn only_a_session_doing_nothing_is_idle() {
        assert!(Activity::default().is_idle());
        let busy = [
            Activity {
                subscribers: 1,
                ..Activity::default()
            },
            Activity {
                open_calls: 1,
                ..Activity::default()
            },
            Activity {
                waiters: 1,
                ..Activity::default()
            },
            Activity {
                turns: true,
                ..Activity::default()
            },
            Activity {
                compressing: true,
                ..Activity::default()
            },
            Activity {
                unsettled: true,
                ..Activity::default()
            },
        ];
        for activity in busy {
            assert!(!activity.is_idle(), "{activity:?}");
        }
    }
}
