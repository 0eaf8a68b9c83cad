//! The parallel walk behind `glob`. Each walker thread collects its hits in
//! its own list, handed over once when the thread finishes, so matching many
//! files costs no lock traffic.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use globset::GlobMatcher;
use ignore::WalkState;

use super::contract::PinnedRoot;
use super::search_walk::{SearchFilter, walker};

pub struct Hit {
    pub path: PathBuf,
    pub modified: Option<SystemTime>,
}

/// A thread's hits; moved into the shared list when the thread's visitor
/// is dropped at the end of the walk.
struct Local<'a> {
    hits: Vec<Hit>,
    all: &'a Mutex<Vec<Hit>>,
}

impl Drop for Local<'_> {
    fn drop(&mut self) {
        if let Ok(mut all) = self.all.lock() {
            all.append(&mut self.hits);
        }
    }
}

/// Regular files under `dir` (spelled under `root`) whose path relative to
/// `dir` matches, and which really are inside the workspace `root` when
/// checked (a directory
/// swapped for a symlink during the walk can send the walker outside; what
/// it finds there is dropped).
pub fn find(
    root: &PinnedRoot,
    dir: &Path,
    matcher: &GlobMatcher,
    filter: &SearchFilter,
    stop: &AtomicBool,
) -> Vec<Hit> {
    let all = Mutex::new(Vec::new());
    walker(root, dir, filter).build_parallel().run(|| {
        let mut local = Local {
            hits: Vec::new(),
            all: &all,
        };
        Box::new(move |entry| {
            if stop.load(Ordering::Relaxed) {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let Some(shown) = root.display_of(entry.path()) else {
                return WalkState::Continue;
            };
            let Ok(rel) = shown.strip_prefix(dir) else {
                return WalkState::Continue;
            };
            if matcher.is_match(rel) && super::path::exists_confined(root, &shown) {
                let modified = entry.metadata().ok().and_then(|m| m.modified().ok());
                local.hits.push(Hit {
                    path: shown,
                    modified,
                });
            }
            WalkState::Continue
        })
    });
    all.into_inner().unwrap_or_else(|e| e.into_inner())
}
