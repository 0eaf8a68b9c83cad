//! The parallel search engine behind `search_file_content`.
//!
//! One walker thread per core; each thread keeps its own `Searcher` (and
//! its buffers) for all the files it visits. Files with hits are pushed to
//! a shared list (rare compared with files searched, so the lock is cheap).
//! A shared counter enforces the match cap across threads.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use grep_regex::RegexMatcher;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::WalkState;
use ignore::overrides::Override;

use super::contract::PinnedRoot;
use super::search_walk::{SearchFilter, walker};

/// Lines longer than this are cut in the output (minified files).
const MAX_LINE_CHARS: usize = 2000;

pub struct FileHits {
    pub path: PathBuf,
    /// (line number, line text without its terminator)
    pub lines: Vec<(u64, String)>,
}

pub struct Found {
    pub files: Vec<FileHits>,
    /// More than the cap exist; only the cap's worth is in `files`.
    pub capped: bool,
}

/// Searches every non-ignored file under `dir` (matching `include` if any),
/// keeping at most `max` matching lines. `stop` aborts the walk. Files are
/// opened confined to the workspace `root`: one a swapped symlink would
/// lead outside is skipped.
pub fn search(
    root: &PinnedRoot,
    dir: &Path,
    matcher: &RegexMatcher,
    include: Option<Override>,
    filter: &SearchFilter,
    max: usize,
    stop: &AtomicBool,
) -> Found {
    let files = Mutex::new(Vec::new());
    // Counts matches seen; it goes past `max` once a match beyond the cap
    // was found, which is how a capped result is recognised.
    let seen = AtomicUsize::new(0);
    let mut builder = walker(root, dir, filter);
    if let Some(o) = include {
        builder.overrides(o);
    }
    let mut searcher_builder = SearcherBuilder::new();
    searcher_builder
        .line_number(true)
        // Like rg: a NUL byte means binary; stop searching that file.
        .binary_detection(BinaryDetection::quit(b'\x00'));
    builder.build_parallel().run(|| {
        let mut searcher = searcher_builder.build();
        let matcher = matcher.clone();
        let (files, seen) = (&files, &seen);
        Box::new(move |entry| {
            if stop.load(Ordering::Relaxed) || seen.load(Ordering::Relaxed) > max {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let mut lines = Vec::new();
            let sink = Lossy(|line_no, line: &str| {
                let n = seen.fetch_add(1, Ordering::Relaxed);
                if n >= max || stop.load(Ordering::Relaxed) {
                    return Ok(false);
                }
                lines.push((line_no, clip(line)));
                Ok(true)
            });
            let Some(shown) = root.display_of(entry.path()) else {
                return WalkState::Continue;
            };
            // Unreadable files are skipped, as rg does (it warns on stderr);
            // so is anything that is no longer a regular file (a FIFO
            // swapped in would block the read), and anything a swapped
            // symlink would lead outside.
            let flags = rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK;
            let Ok((file, meta)) = super::path::open_confined_file(root, &shown, flags) else {
                return WalkState::Continue;
            };
            if !meta.is_file() {
                return WalkState::Continue;
            }
            let _ = searcher.search_file(&matcher, &file, sink);
            if !lines.is_empty()
                && let Ok(mut f) = files.lock()
            {
                f.push(FileHits { path: shown, lines });
            }
            WalkState::Continue
        })
    });
    let capped = seen.load(Ordering::Relaxed) > max;
    Found {
        files: files.into_inner().unwrap_or_else(|e| e.into_inner()),
        capped,
    }
}

/// The line without its terminator, cut at [`MAX_LINE_CHARS`].
fn clip(line: &str) -> String {
    let line = line.trim_end_matches(['\n', '\r']);
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((i, _)) => format!("{}... [line truncated]", &line[..i]),
        None => line.to_owned(),
    }
}
