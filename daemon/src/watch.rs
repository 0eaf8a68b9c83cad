//! Watching configuration files: which files and directories to watch
//! (directories that do not exist yet included), a notify watcher that
//! ignores the daemon's own reads, re-arms itself when a missing directory
//! appears, waits until an editor's multi-step write settles, and tells
//! its listener once per change.
//!
//! An idle daemon does no IO here: the thread blocks on the watcher's
//! channel. Opening and closing a file (`Access` events, which inotify
//! reports for the daemon's own reads) never wakes the listener, so a
//! reload cannot trigger the next one.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use notify::{EventKind, RecursiveMode, Watcher};

/// How long a burst of events must stay quiet before the listener runs.
pub const SETTLE: Duration = Duration::from_millis(40);
/// The longest a continuous burst delays the listener.
pub const SETTLE_MAX: Duration = Duration::from_millis(400);

/// What to watch: single files, and directories whose every entry counts.
/// Neither needs to exist.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WatchSet {
    pub files: BTreeSet<PathBuf>,
    pub dirs: BTreeSet<PathBuf>,
}

impl WatchSet {
    pub fn file(mut self, path: impl Into<PathBuf>) -> Self {
        self.files.insert(path.into());
        self
    }

    pub fn dir(mut self, path: impl Into<PathBuf>) -> Self {
        self.dirs.insert(path.into());
        self
    }

    /// Whether a change at `path` can change what the set holds: a watched
    /// file, an entry of a watched directory, or a directory on the way to
    /// one (created or removed, it adds or takes away the files below it).
    pub fn concerns(&self, path: &Path) -> bool {
        if self.files.contains(path) || self.dirs.contains(path) {
            return true;
        }
        if path.parent().is_some_and(|p| self.dirs.contains(p)) {
            return true;
        }
        self.files
            .iter()
            .chain(&self.dirs)
            .any(|target| target.starts_with(path))
    }

    /// The directories to hand to inotify now: each target's directory,
    /// or its nearest existing ancestor while it is missing. Stats a few
    /// directories; called at start and after each change only.
    fn armed_dirs(&self) -> BTreeSet<PathBuf> {
        let mut out = BTreeSet::new();
        let mut wanted: Vec<&Path> = Vec::new();
        for file in &self.files {
            wanted.extend(file.parent());
        }
        for dir in &self.dirs {
            wanted.push(dir);
            // The directory's own creation, removal or rename.
            wanted.extend(dir.parent());
        }
        for dir in wanted {
            if let Some(existing) = dir.ancestors().find(|d| d.is_dir()) {
                out.insert(existing.to_path_buf());
            }
        }
        out
    }
}

/// Whether an event can mean new content. Opens and closes (our own
/// reads) cannot.
fn is_change(kind: &EventKind) -> bool {
    !matches!(kind, EventKind::Access(_))
}

/// Keeps the watcher and its thread alive; dropping it stops both.
pub struct ConfigWatch {
    watcher: Arc<Mutex<notify::RecommendedWatcher>>,
    set: Arc<Mutex<WatchSet>>,
    armed: Arc<Mutex<BTreeSet<PathBuf>>>,
}

impl ConfigWatch {
    /// Watches `set` and calls `on_change` (on a thread named `name`) once
    /// a burst of relevant changes has settled. The listener compares
    /// contents itself: a change notice may be for a file whose bytes are
    /// the same (`touch`, an editor saving unchanged text).
    pub fn spawn(
        name: &str,
        set: WatchSet,
        mut on_change: impl FnMut() + Send + 'static,
    ) -> notify::Result<ConfigWatch> {
        let (tx, rx) = std::sync::mpsc::channel::<notify::Event>();
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if let Ok(event) = event
                && is_change(&event.kind)
            {
                let _ = tx.send(event);
            }
        })?;
        let watcher = Arc::new(Mutex::new(watcher));
        let set = Arc::new(Mutex::new(set));
        let armed = Arc::new(Mutex::new(BTreeSet::new()));
        rearm(&watcher, &lock(&set), &mut lock(&armed));
        let (thread_watcher, thread_set, thread_armed) =
            (watcher.clone(), set.clone(), armed.clone());
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                while let Some(()) = next_change(&rx, &thread_set) {
                    let now = lock(&thread_set).clone();
                    rearm(&thread_watcher, &now, &mut lock(&thread_armed));
                    on_change();
                }
            })
            .map_err(|e| notify::Error::generic(&e.to_string()))?;
        Ok(ConfigWatch {
            watcher,
            set,
            armed,
        })
    }

    /// Watches `file` too from now on (a workspace's settings, once a
    /// session opened it).
    pub fn add_file(&self, file: &Path) {
        let now = {
            let mut set = lock(&self.set);
            if !set.files.insert(file.to_path_buf()) {
                return;
            }
            set.clone()
        };
        rearm(&self.watcher, &now, &mut lock(&self.armed));
    }

    /// Watches one more directory (a workspace's policies, an extension),
    /// also before it exists.
    pub fn add_dir(&self, dir: &Path) {
        let now = {
            let mut set = lock(&self.set);
            if !set.dirs.insert(dir.to_path_buf()) {
                return;
            }
            set.clone()
        };
        rearm(&self.watcher, &now, &mut lock(&self.armed));
    }
}

/// Blocks until a relevant change has settled; `None` once the watcher
/// is gone.
fn next_change(rx: &Receiver<notify::Event>, set: &Mutex<WatchSet>) -> Option<()> {
    loop {
        let event = rx.recv().ok()?;
        let set = lock(set);
        if event.paths.iter().any(|p| set.concerns(p)) {
            break;
        }
    }
    let start = Instant::now();
    while start.elapsed() < SETTLE_MAX {
        match rx.recv_timeout(SETTLE) {
            Ok(_) => continue,
            Err(RecvTimeoutError::Timeout) => break,
            Err(RecvTimeoutError::Disconnected) => return None,
        }
    }
    Some(())
}

/// Watches the directories `set` needs now (a missing directory that
/// appeared is watched itself from now on, as well as its parent).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn rearm(
    watcher: &Mutex<notify::RecommendedWatcher>,
    set: &WatchSet,
    armed: &mut BTreeSet<PathBuf>,
) {
    let wanted = set.armed_dirs();
    let mut watcher = watcher.lock().unwrap_or_else(|e| e.into_inner());
    // Watches no longer needed (an ancestor watched while a directory was
    // missing) stay: their events are filtered by `concerns`, and the set
    // of ancestors is small.
    for dir in &wanted {
        // Re-adding an existing watch is harmless, and re-creates one a
        // removed-and-recreated directory lost.
        if let Err(e) = watcher.watch(dir, RecursiveMode::NonRecursive) {
            tracing::debug!(dir = %dir.display(), error = %e, "configuration directory not watched");
        }
    }
    armed.extend(wanted);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn wait_for(count: &AtomicUsize, at_least: usize) -> bool {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(3) {
            if count.load(Ordering::SeqCst) >= at_least {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    #[test]
    fn concerns_targets_their_entries_and_the_way_to_them() {
        let set = WatchSet::default()
            .file("/h/.gemini/settings.json")
            .dir("/h/.gemini/policies");
        assert!(set.concerns(Path::new("/h/.gemini/settings.json")));
        assert!(set.concerns(Path::new("/h/.gemini/policies/a.toml")));
        assert!(set.concerns(Path::new("/h/.gemini")));
        assert!(set.concerns(Path::new("/h/.gemini/policies")));
        assert!(!set.concerns(Path::new("/h/.gemini/other.json")));
        assert!(!set.concerns(Path::new("/h/.gemini/policies/sub/a.toml")));
        assert!(!set.concerns(Path::new("/elsewhere")));
    }

    #[test]
    fn reads_do_not_wake_it_and_later_directories_are_watched() {
        let home = tempfile::tempdir().unwrap();
        let gemini = home.path().join(".gemini");
        let policies = gemini.join("policies");
        let set = WatchSet::default()
            .file(gemini.join("settings.json"))
            .dir(&policies);
        let count = Arc::new(AtomicUsize::new(0));
        let seen = count.clone();
        let reads = Arc::new(std::sync::Mutex::new(Vec::new()));
        let reader = reads.clone();
        let settings = gemini.join("settings.json");
        let _watch = ConfigWatch::spawn("test-watch", set, move || {
            seen.fetch_add(1, Ordering::SeqCst);
            // The listener reads what it watches, as every reload does.
            reader
                .lock()
                .unwrap()
                .push(std::fs::read_to_string(&settings).ok());
        })
        .unwrap();
        // Neither ~/.gemini nor its policies exist yet.
        std::fs::create_dir(&gemini).unwrap();
        assert!(wait_for(&count, 1), "creating ~/.gemini is a change");
        std::fs::write(gemini.join("settings.json"), "{}").unwrap();
        assert!(wait_for(&count, 2));
        std::fs::create_dir(&policies).unwrap();
        assert!(wait_for(&count, 3));
        std::fs::write(policies.join("u.toml"), "").unwrap();
        assert!(wait_for(&count, 4), "a file in a directory created later");
        // Now idle: the listener's reads must not wake it again.
        std::thread::sleep(Duration::from_millis(400));
        let settled = count.load(Ordering::SeqCst);
        std::fs::read_to_string(gemini.join("settings.json")).unwrap();
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(count.load(Ordering::SeqCst), settled);
        // An unrelated file does not wake it either.
        std::fs::write(gemini.join("notes.txt"), "x").unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(count.load(Ordering::SeqCst), settled);
    }
}
