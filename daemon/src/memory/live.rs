//! Memory kept warm per workspace: loaded on first use, marked stale when
//! any file it came from (or a memory file next to them) changes, and
//! loaded again before the next turn. The IO edge of `memory/`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use notify::{RecursiveMode, Watcher};

use super::{Memory, file_names_from_setting, load, watched_paths};

/// Every workspace's memory, shared by its sessions.
pub struct MemoryCache {
    user_gemini_dir: PathBuf,
    entries: Mutex<HashMap<PathBuf, Arc<Entry>>>,
    /// Whether a workspace's own settings may be read (folder trust);
    /// unset: they may.
    trusted: Mutex<Option<TrustFn>>,
    /// The context files of the extensions enabled for a workspace.
    extension_files: Mutex<Option<ExtensionFilesFn>>,
}

/// The extensions' context files for the workspace at the path.
pub type ExtensionFilesFn = Arc<dyn Fn(&Path) -> Vec<PathBuf> + Send + Sync>;

/// Whether the folder at the path is trusted.
pub type TrustFn = Arc<dyn Fn(&Path) -> bool + Send + Sync>;

struct Entry {
    memory: Mutex<Arc<Memory>>,
    stale: Arc<AtomicBool>,
    watcher: Mutex<Option<notify::RecommendedWatcher>>,
}

impl MemoryCache {
    pub fn new(user_gemini_dir: &Path) -> Self {
        MemoryCache {
            user_gemini_dir: user_gemini_dir.to_path_buf(),
            entries: Mutex::new(HashMap::new()),
            trusted: Mutex::new(None),
            extension_files: Mutex::new(None),
        }
    }

    /// From now on, an untrusted workspace's `context.fileName` is not
    /// read (its settings are not loaded at all).
    pub fn set_trust(&self, trusted: TrustFn) {
        *self.trusted.lock().unwrap_or_else(|e| e.into_inner()) = Some(trusted);
    }

    /// From now on, the extensions' context files come from `files`.
    pub fn set_extension_files(&self, files: ExtensionFilesFn) {
        *self
            .extension_files
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(files);
    }

    /// Something every workspace's memory depends on changed (the
    /// extensions): each is loaded again before its next use.
    pub fn invalidate_all(&self) {
        for entry in self
            .entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
        {
            entry.stale.store(true, Ordering::Release);
        }
    }

    /// The memory of `workspace`, loaded again if something changed.
    /// Blocking (reads files): call it off the async workers.
    pub fn get(&self, workspace: &Path) -> Arc<Memory> {
        let entry = self.entry(workspace);
        if entry.stale.swap(false, Ordering::AcqRel) {
            return self.load_into(workspace, &entry);
        }
        entry
            .memory
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Loads the memory of `workspace` again, whatever the watcher saw.
    pub fn reload(&self, workspace: &Path) -> Arc<Memory> {
        let entry = self.entry(workspace);
        entry.stale.store(false, Ordering::Release);
        self.load_into(workspace, &entry)
    }

    fn entry(&self, workspace: &Path) -> Arc<Entry> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .entry(workspace.to_path_buf())
            .or_insert_with(|| {
                Arc::new(Entry {
                    memory: Mutex::new(Arc::new(Memory::default())),
                    // Not loaded yet: the first `get` loads.
                    stale: Arc::new(AtomicBool::new(true)),
                    watcher: Mutex::new(None),
                })
            })
            .clone()
    }

    fn load_into(&self, workspace: &Path, entry: &Entry) -> Arc<Memory> {
        let started = std::time::SystemTime::now();
        let names = self.file_names(workspace);
        let extension_files = self
            .extension_files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .map(|f| f(workspace))
            .unwrap_or_default();
        let include_dirs = crate::tools::include_dirs::memory_dirs(
            &self.user_gemini_dir.join("settings.json"),
            workspace,
        );
        let memory = Arc::new(load(
            workspace,
            &self.user_gemini_dir,
            &names,
            extension_files,
            include_dirs,
        ));
        *entry.watcher.lock().unwrap_or_else(|e| e.into_inner()) = watch(
            workspace,
            &self.user_gemini_dir,
            &memory,
            &names,
            entry.stale.clone(),
        );
        // The watcher starts after the files were read: an edit that fell
        // in between would be missed until the next one.
        let mut places = watched_paths(&memory);
        places.extend([workspace.to_path_buf(), self.user_gemini_dir.clone()]);
        if changed_since(&places, started) {
            entry.stale.store(true, Ordering::Release);
        }
        *entry.memory.lock().unwrap_or_else(|e| e.into_inner()) = memory.clone();
        memory
    }

    /// `context.fileName` from the workspace settings, else the user's.
    fn file_names(&self, workspace: &Path) -> Vec<String> {
        let setting = |path: PathBuf| -> Option<serde_json::Value> {
            let text = std::fs::read_to_string(path).ok()?;
            let value: serde_json::Value = crate::jsonc::parse(&text).ok()?;
            let names = value.get("context")?.get("fileName")?.clone();
            Some(names)
        };
        let trusted = self
            .trusted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .is_none_or(|trusted| trusted(workspace));
        let value = trusted
            .then(|| setting(workspace.join(".gemini/settings.json")))
            .flatten()
            .or_else(|| setting(self.user_gemini_dir.join("settings.json")));
        file_names_from_setting(value.as_ref()).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "memory file name setting ignored");
            vec![super::DEFAULT_FILE_NAME.to_owned()]
        })
    }
}

/// Watches the directories of every contributing file (editors replace
/// files by renaming), the workspace and the user's Gemini directory; a
/// change to a contributing file or to any memory-named file marks the
/// memory stale. New memory files deep below the workspace are found by
/// `memory.reload`.
fn watch(
    workspace: &Path,
    user_dir: &Path,
    memory: &Memory,
    names: &[String],
    stale: Arc<AtomicBool>,
) -> Option<notify::RecommendedWatcher> {
    let files: HashSet<PathBuf> = watched_paths(memory).into_iter().collect();
    let names: HashSet<String> = names.iter().cloned().collect();
    let mut dirs: HashSet<PathBuf> = files
        .iter()
        .filter_map(|p| p.parent().map(Path::to_path_buf))
        .collect();
    dirs.insert(workspace.to_path_buf());
    dirs.insert(user_dir.to_path_buf());
    let relevant = move |path: &Path| {
        files.contains(path)
            || path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| names.contains(n))
    };
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // Opens and closes are reads (ours included), not changes.
        if let Ok(event) = event
            && !matches!(event.kind, notify::EventKind::Access(_))
            && event.paths.iter().any(|p| relevant(p))
        {
            stale.store(true, Ordering::Release);
        }
    })
    .map_err(|e| tracing::warn!(error = %e, "memory files are not watched; use memory.reload"))
    .ok()?;
    for dir in dirs.iter().filter(|d| d.is_dir()) {
        if let Err(e) = watcher.watch(dir, RecursiveMode::NonRecursive) {
            tracing::debug!(dir = %dir.display(), error = %e, "memory directory not watched");
        }
    }
    Some(watcher)
}

/// Whether any of `paths` (files, or directories where a file may have
/// appeared) was modified at or after `since`, less a margin for coarse
/// file-system clocks. A false "yes" costs one extra load; a false "no"
/// would keep an edit unseen.
fn changed_since(paths: &[PathBuf], since: std::time::SystemTime) -> bool {
    let since = since
        .checked_sub(std::time::Duration::from_millis(50))
        .unwrap_or(since);
    paths.iter().any(|p| {
        std::fs::metadata(p)
            .and_then(|m| m.modified())
            .is_ok_and(|at| at >= since)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_touched_after_the_read_began_counts_as_changed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("GEMINI.md");
        std::fs::write(&file, "old").unwrap();
        let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        let f = std::fs::File::options().write(true).open(&file).unwrap();
        f.set_modified(long_ago).unwrap();
        let started = std::time::SystemTime::now();
        assert!(!changed_since(std::slice::from_ref(&file), started));
        std::fs::write(&file, "new").unwrap();
        assert!(changed_since(std::slice::from_ref(&file), started));
        let missing = dir.path().join("gone.md");
        assert!(!changed_since(&[missing], started));
    }

    #[test]
    fn edits_are_picked_up_before_the_next_use() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let ws_path = ws.path().canonicalize().unwrap();
        std::fs::create_dir(ws_path.join(".git")).unwrap();
        std::fs::write(ws_path.join("GEMINI.md"), "first @./extra.md").unwrap();
        std::fs::write(ws_path.join("extra.md"), "imported one").unwrap();
        let cache = MemoryCache::new(home.path());
        let memory = cache.get(&ws_path);
        assert!(memory.text.contains("imported one"), "{}", memory.text);
        std::fs::write(ws_path.join("extra.md"), "imported two").unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let memory = cache.get(&ws_path);
            if memory.text.contains("imported two") {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "edit not seen: {}",
                memory.text
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}
