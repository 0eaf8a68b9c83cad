//! A directory walk over [`DirCache`] listings that honours `.gitignore`,
//! `.git/info/exclude` and `.geminiignore` exactly as the `ignore` crate's
//! walker does with the options of [`walk::walker`], so a tool can switch
//! between the two without a visible difference.
//!
//! Precedence, as in `ignore`: every directory from the file's own up to
//! the workspace root may hold rules; the deepest `.geminiignore` rule that matches
//! decides; if none does, the deepest `.gitignore` rule; then `.git/info/
//! exclude`. A directory that is ignored is not entered. The walk never
//! follows symlinks; it reports them to the caller.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use ignore::Match;
use ignore::gitignore::Gitignore;
use tokio_util::sync::CancellationToken;

use super::dir_cache::{DirCache, Kind, Listing};
use super::walk::{Filtering, GEMINI_IGNORE, GIT_IGNORE};

/// The rules that apply in one directory, chained to its parent's. Only
/// directories that add rules get a layer of their own.
struct Layer {
    gemini: Option<Arc<Gitignore>>,
    git: Option<Arc<Gitignore>>,
    exclude: Option<Arc<Gitignore>>,
    parent: Option<Arc<Layer>>,
}

impl Layer {
    fn ignores(&self, path: &Path, is_dir: bool) -> bool {
        let (mut git, mut exclude) = (Match::None, Match::None);
        let mut layer = Some(self);
        while let Some(l) = layer {
            if let Some(m) = &l.gemini {
                match m.matched(path, is_dir) {
                    Match::None => {}
                    decided => return decided.is_ignore(),
                }
            }
            if git.is_none()
                && let Some(m) = &l.git
            {
                git = m.matched(path, is_dir);
            }
            if exclude.is_none()
                && let Some(m) = &l.exclude
            {
                exclude = m.matched(path, is_dir);
            }
            layer = l.parent.as_deref();
        }
        git.or(exclude).is_ignore()
    }
}

/// What a walk over some bases is asked to do.
pub struct CachedWalk<'a> {
    pub cache: &'a DirCache,
    /// The directory above which no rules are read: the workspace root
    /// (as the walk names it). Rules above it are none of the
    /// workspace's business, as in Gemini CLI.
    pub top: &'a Path,
    pub filtering: Filtering,
    /// Whether to enter a directory (already known not to be ignored).
    pub enter: &'a (dyn Fn(&Path) -> bool + Sync),
    /// Whether to report a file or symlink (already known not to be ignored).
    pub keep: &'a (dyn Fn(&Path, Kind) -> bool + Sync),
}

impl CachedWalk<'_> {
    /// Walks every base (a directory, canonical) on two threads and returns
    /// the kept files and symlinks, in no particular order. `.git`
    /// directories and the daemon's temp files are never reported. Empty
    /// when cancelled.
    pub fn run(&self, bases: &[&Path], cancel: &CancellationToken) -> Vec<(PathBuf, Kind)> {
        let jobs: Vec<Job> = bases
            .iter()
            .map(|b| Job {
                dir: b.to_path_buf(),
                rules: self.ancestor_rules(b),
            })
            .collect();
        let queue = Queue::new(jobs);
        let found: Vec<(PathBuf, Kind)> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..2)
                .map(|_| scope.spawn(|| self.work(&queue, cancel)))
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().unwrap_or_default())
                .collect()
        });
        if cancel.is_cancelled() {
            return Vec::new();
        }
        found
    }

    fn work(&self, queue: &Queue, cancel: &CancellationToken) -> Vec<(PathBuf, Kind)> {
        let mut found = Vec::new();
        while let Some(job) = queue.take() {
            // Finishes the job even if listing it panics, so the other
            // worker is not left waiting for it.
            let mut done = Finished {
                queue,
                children: Vec::new(),
            };
            if !cancel.is_cancelled() {
                done.children = self.visit(job, &mut found);
            }
        }
        found
    }

    /// Lists one directory: reports its files, returns its subdirectories.
    fn visit(&self, job: Job, found: &mut Vec<(PathBuf, Kind)>) -> Vec<Job> {
        let Ok(listing) = self.cache.listing(&job.dir) else {
            return Vec::new();
        };
        let rules = self.layer(&job.dir, &listing, job.rules);
        let mut children = Vec::new();
        for entry in &listing.entries {
            if super::atomic_write::is_temp_name(&entry.name) {
                continue;
            }
            let path = job.dir.join(&entry.name);
            let is_dir = entry.kind == Kind::Dir;
            if rules.as_ref().is_some_and(|r| r.ignores(&path, is_dir)) {
                continue;
            }
            match entry.kind {
                Kind::Dir if entry.name != ".git" && (self.enter)(&path) => children.push(Job {
                    dir: path,
                    rules: rules.clone(),
                }),
                Kind::File | Kind::Symlink if (self.keep)(&path, entry.kind) => {
                    found.push((path, entry.kind))
                }
                _ => {}
            }
        }
        children
    }

    /// The rules of every directory above `base`, from [`CachedWalk::top`]
    /// down.
    fn ancestor_rules(&self, base: &Path) -> Option<Arc<Layer>> {
        let mut above: Vec<&Path> = base
            .ancestors()
            .skip(1)
            .take_while(|d| d.starts_with(self.top))
            .collect();
        above.reverse();
        let mut rules = None;
        for dir in above {
            if let Ok(listing) = self.cache.listing(dir) {
                rules = self.layer(dir, &listing, rules);
            }
        }
        rules
    }

    /// `parent`'s rules plus those of the ignore files `dir` holds.
    fn layer(
        &self,
        dir: &Path,
        listing: &Listing,
        parent: Option<Arc<Layer>>,
    ) -> Option<Arc<Layer>> {
        let load = |wanted: bool, name: &str| {
            (wanted && listing.kind_of(name).is_some())
                .then(|| self.cache.ignore_file(dir, &dir.join(name)))
                .flatten()
                .filter(|g| !g.is_empty())
        };
        let gemini = load(self.filtering.gemini, GEMINI_IGNORE);
        let git = load(self.filtering.git, GIT_IGNORE);
        let exclude = match listing.kind_of(".git") {
            Some(kind) if self.filtering.git => git_exclude(dir, kind)
                .and_then(|file| self.cache.ignore_file(dir, &file))
                .filter(|g| !g.is_empty()),
            _ => None,
        };
        if gemini.is_none() && git.is_none() && exclude.is_none() {
            return parent;
        }
        Some(Arc::new(Layer {
            gemini,
            git,
            exclude,
            parent,
        }))
    }
}

/// Where the repository at `dir` keeps `info/exclude`: in `.git`, or for a
/// linked worktree (`.git` is a file naming the git dir) in the common
/// dir that git dir names; none when that cannot be worked out.
fn git_exclude(dir: &Path, dot_git: Kind) -> Option<PathBuf> {
    match dot_git {
        Kind::Dir => Some(dir.join(".git/info/exclude")),
        Kind::File => {
            let text = std::fs::read_to_string(dir.join(".git")).ok()?;
            let git_dir = PathBuf::from(text.lines().next()?.strip_prefix("gitdir: ")?);
            let common = std::fs::read_to_string(git_dir.join("commondir")).ok()?;
            let common = Path::new(common.lines().next()?);
            let common = if common.is_relative() {
                git_dir.join(common)
            } else {
                common.to_path_buf()
            };
            Some(common.join("info/exclude"))
        }
        _ => None,
    }
}

/// One directory still to list, with the rules of the directories above it.
struct Job {
    dir: PathBuf,
    rules: Option<Arc<Layer>>,
}

/// A shared stack of directories (depth first, so the stack stays small).
/// The walk ends when the stack is empty and no directory is being listed.
struct Queue {
    state: Mutex<QueueState>,
    ready: Condvar,
}

#[derive(Default)]
struct QueueState {
    jobs: Vec<Job>,
    listing: usize,
    /// Workers asleep in `take`: only they need waking.
    waiting: usize,
}

impl Queue {
    fn new(jobs: Vec<Job>) -> Self {
        Queue {
            state: Mutex::new(QueueState {
                jobs,
                ..QueueState::default()
            }),
            ready: Condvar::new(),
        }
    }

    fn take(&self) -> Option<Job> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(job) = state.jobs.pop() {
                state.listing += 1;
                return Some(job);
            }
            if state.listing == 0 {
                return None;
            }
            state.waiting += 1;
            state = self.ready.wait(state).unwrap_or_else(|e| e.into_inner());
            state.waiting -= 1;
        }
    }

    fn finish(&self, children: Vec<Job>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.jobs.extend(children);
        state.listing -= 1;
        // Wake sleepers when there is work for them or the walk is over.
        if state.waiting > 0 && (!state.jobs.is_empty() || state.listing == 0) {
            self.ready.notify_all();
        }
    }
}

/// Hands a listed directory's subdirectories to the queue when dropped.
struct Finished<'q> {
    queue: &'q Queue,
    children: Vec<Job>,
}

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.queue.finish(std::mem::take(&mut self.children));
    }
}

#[cfg(test)]
#[path = "cached_walk_tests.rs"]
mod tests;
