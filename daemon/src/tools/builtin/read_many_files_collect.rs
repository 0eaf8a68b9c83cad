//! The running half of `read_many_files`: walking, filtering, reading and
//! formatting.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine;
use tokio_util::sync::CancellationToken;

use super::super::cached_walk::CachedWalk;
use super::super::common::{self, FileClass, MAX_FILE_BYTES};
use super::super::contract::PinnedRoot;
use super::super::contract::{ContentPart, ToolDisplay, ToolError, ToolResult};
use super::super::dir_cache::{DirCache, Kind};
use super::super::path::{
    display_relative, exists_confined as confined, metadata_confined, open_confined_file,
};
use super::super::walk::{Filtering, IgnoreChain, custom_rules};
use super::{MAX_TOTAL_TEXT_BYTES, Plan};
use crate::tools::sensitive::blocked_segment;

pub const END_MARKER: &str = "--- End of content ---";

/// Names of files left out, per reason, for the closing notes.
#[derive(Default)]
struct Skipped {
    binary: Vec<String>,
    media: Vec<String>,
    too_large: Vec<String>,
    over_cap: Vec<String>,
    ignored: Vec<String>,
    unreadable: Vec<String>,
}

/// A file read, its content as the model gets it.
pub struct GatheredFile {
    /// Spelled under the root.
    pub path: PathBuf,
    /// Relative to the root, for people.
    pub shown: String,
    /// Text, or inline data (base64) for media.
    pub content: ContentPart,
}

/// The files a plan reads, in path order, and notes on what was left out
/// (one line per reason).
pub struct Gathered {
    pub files: Vec<GatheredFile>,
    pub notes: Vec<String>,
}

/// Walks, filters and reads what `plan` names: ignore files, sensitive
/// paths, the per-file size limit and the total text cap apply.
pub fn gather(
    plan: &Plan,
    listings: &DirCache,
    cancel: &CancellationToken,
) -> Result<Gathered, ToolError> {
    let mut skipped = Skipped::default();
    let mut files: Vec<(PathBuf, bool)> = Vec::new();
    let filtering = Filtering {
        git: plan.respect_git,
        gemini: plan.respect_gemini,
    };
    for path in &plan.explicit {
        let dir = path.parent().unwrap_or(plan.root.path());
        let chain = IgnoreChain::for_dir(&plan.root, dir, filtering, &plan.custom_ignore_files);
        if chain.is_ignored(path, false) {
            skipped
                .ignored
                .push(display_relative(plan.root.path(), path));
        } else {
            files.push((path.clone(), true));
        }
    }
    files.extend(
        walk_globs(plan, listings, cancel)
            .into_iter()
            .map(|p| (p, false)),
    );
    // Sorted by path; an explicitly named file wins over the same file
    // found by a pattern (it may be media that was asked for).
    files.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    files.dedup_by(|a, b| a.0 == b.0);

    let loaded = load_all(plan, &files, cancel)?;
    let mut out = Vec::new();
    // The cap counts what the concatenated text would hold: headers too.
    let mut total = 0usize;
    for ((path, _), item) in files.into_iter().zip(loaded) {
        let shown = display_relative(plan.root.path(), &path);
        let content = match item {
            Loaded::Binary => {
                skipped.binary.push(shown);
                continue;
            }
            Loaded::MediaNotAsked => {
                skipped.media.push(shown);
                continue;
            }
            Loaded::TooLarge => {
                skipped.too_large.push(shown);
                continue;
            }
            Loaded::Unreadable => {
                skipped.unreadable.push(shown);
                continue;
            }
            Loaded::Outside => continue,
            Loaded::OverCap => {
                skipped.over_cap.push(shown);
                continue;
            }
            Loaded::Media(mime, bytes) => ContentPart::InlineData {
                mime_type: mime.to_owned(),
                data: base64::engine::general_purpose::STANDARD.encode(&bytes),
            },
            Loaded::Text(text) => {
                let header = path.as_os_str().len() + 9;
                if total + text.len() > MAX_TOTAL_TEXT_BYTES {
                    skipped.over_cap.push(shown);
                    continue;
                }
                total += header + text.len() + 1;
                ContentPart::Text { text }
            }
        };
        out.push(GatheredFile {
            path,
            shown,
            content,
        });
    }
    Ok(Gathered {
        files: out,
        notes: notes(plan, &skipped),
    })
}

pub fn run(
    plan: &Plan,
    listings: &DirCache,
    cancel: &CancellationToken,
) -> Result<ToolResult, ToolError> {
    let gathered = gather(plan, listings, cancel)?;
    let notes = gathered.notes;
    let read = gathered.files.len();
    let held: usize = gathered
        .files
        .iter()
        .map(|f| match &f.content {
            ContentPart::Text { text } => text.len() + f.path.as_os_str().len() + 10,
            ContentPart::InlineData { .. } => 0,
        })
        .sum();
    // Sized once: the text can be megabytes.
    let mut text = String::with_capacity(held + 4096);
    let mut parts: Vec<ContentPart> = Vec::new();
    for file in gathered.files {
        text.push_str(&format!("--- {} ---\n", file.path.display()));
        match file.content {
            ContentPart::Text { text: content } => {
                text.push_str(&content);
                text.push('\n');
            }
            media @ ContentPart::InlineData { .. } => {
                parts.push(ContentPart::Text {
                    text: std::mem::take(&mut text),
                });
                parts.push(media);
            }
        }
    }
    if read == 0 {
        let mut msg = "No files were read: nothing matched the given paths and patterns, or every match was skipped.".to_owned();
        if !notes.is_empty() {
            msg.push_str("\n\n");
            msg.push_str(&notes.join("\n"));
        }
        return Ok(ToolResult::text(msg));
    }
    text.push_str(END_MARKER);
    if !notes.is_empty() {
        text.push_str("\n\n");
        text.push_str(&notes.join("\n"));
    }
    parts.push(ContentPart::Text { text });
    let mut summary = format!("Read {read} file(s)");
    for n in &notes {
        summary.push_str(&format!("\n- {n}"));
    }
    Ok(ToolResult {
        llm_content: parts,
        display: ToolDisplay::Markdown {
            text: summary.clone(),
        },
        summary: Some(format!("Read {read} file(s)")),
        structured: None,
        session_change: None,
    })
}

/// One file after loading, before the in-order assembly.
enum Loaded {
    Text(String),
    Media(&'static str, Vec<u8>),
    Binary,
    MediaNotAsked,
    TooLarge,
    Unreadable,
    /// Found through a directory swapped for a symlink out of the
    /// workspace mid-walk: not even named.
    Outside,
    OverCap,
}

/// Loads the files on a few threads (file reads are mostly syscall
/// latency, which overlaps well). Results come back in input order. Text
/// loading stops once twice the cap is held, bounding memory; the exact
/// cap is applied in order afterwards.
fn load_all(
    plan: &Plan,
    files: &[(PathBuf, bool)],
    cancel: &CancellationToken,
) -> Result<Vec<Loaded>, ToolError> {
    let next = AtomicUsize::new(0);
    let held = AtomicUsize::new(0);
    let root = &plan.root;
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4));
    let mut results: Vec<(usize, Loaded)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some((path, explicit)) = files.get(i) else {
                            break;
                        };
                        if cancel.is_cancelled() {
                            break;
                        }
                        out.push((i, load_one(plan, root, path, *explicit, &held)));
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    if cancel.is_cancelled() {
        return Err(common::cancelled());
    }
    results.sort_by_key(|(i, _)| *i);
    Ok(results.into_iter().map(|(_, l)| l).collect())
}

fn load_one(
    plan: &Plan,
    root: &PinnedRoot,
    path: &Path,
    explicit: bool,
    held: &AtomicUsize,
) -> Loaded {
    if held.load(Ordering::Relaxed) > 2 * MAX_TOTAL_TEXT_BYTES {
        return Loaded::OverCap;
    }
    // One path lookup: the size comes from the opened file. Non-blocking:
    // a FIFO swapped in since the walk must not hang the open.
    let flags = rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK;
    let Ok((file, meta)) = open_confined_file(root, path, flags) else {
        // Files the walk found are checked here, where they are opened,
        // rather than each once more in the walk. Whether a file that could
        // not be read is inside is asked the same confined way (an `O_PATH`
        // open needs no read permission): `realpath` can return an inside
        // spelling for a file it reached through a directory swapped for a
        // symlink and back, and the file would be named.
        let inside = confined(root, path);
        return if inside || explicit {
            Loaded::Unreadable
        } else {
            Loaded::Outside
        };
    };
    if !meta.is_file() {
        return Loaded::Unreadable;
    }
    let size = meta.len();
    if size > MAX_FILE_BYTES {
        return Loaded::TooLarge;
    }
    let Ok(bytes) = super::super::path::read_sized(&file, size) else {
        return Loaded::Unreadable;
    };
    match common::classify(path, &bytes) {
        FileClass::Binary => Loaded::Binary,
        FileClass::Media(mime) => {
            let ext = path
                .extension()
                .map(|e| e.to_string_lossy().to_ascii_lowercase())
                .unwrap_or_default();
            if explicit || plan.media_exts.contains(&ext) {
                Loaded::Media(mime, bytes)
            } else {
                Loaded::MediaNotAsked
            }
        }
        FileClass::Text => {
            held.fetch_add(bytes.len(), Ordering::Relaxed);
            Loaded::Text(common::decode_text(bytes))
        }
    }
}

fn notes(plan: &Plan, s: &Skipped) -> Vec<String> {
    let mut out = Vec::new();
    let mut note = |what: &str, names: &[String]| {
        if names.is_empty() {
            return;
        }
        const SHOWN: usize = 20;
        let mut list = names
            .iter()
            .take(SHOWN)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        if names.len() > SHOWN {
            list.push_str(&format!(", and {} more", names.len() - SHOWN));
        }
        out.push(format!("{what} ({}): {list}", names.len()));
    };
    note("Skipped binary files", &s.binary);
    note(
        "Skipped image/PDF/audio/video files not named explicitly or by extension",
        &s.media,
    );
    note(
        &format!("Skipped files over {} MB", MAX_FILE_BYTES / (1024 * 1024)),
        &s.too_large,
    );
    note(
        &format!(
            "Left out because the {} MB total text limit was reached",
            MAX_TOTAL_TEXT_BYTES / (1024 * 1024)
        ),
        &s.over_cap,
    );
    note("Ignored by ignore files", &s.ignored);
    note("Could not read", &s.unreadable);
    note("Not found", &plan.missing);
    note(
        "Skipped sensitive paths (.env, .git, node_modules, gha-creds-*.json)",
        &plan.sensitive,
    );
    out
}

/// Walks the base directory of every pattern once (over cached listings,
/// see [`DirCache`], through the pinned root's descriptor) and keeps the
/// files a pattern matches and no exclude does. Returns paths spelled
/// under the root.
fn walk_globs(plan: &Plan, listings: &DirCache, cancel: &CancellationToken) -> Vec<PathBuf> {
    let root = &plan.root;
    let mut bases: Vec<&PathBuf> = plan.globs.iter().map(|(b, _)| b).collect();
    bases.sort();
    bases.dedup();
    // A base inside another base is covered by the outer walk.
    let bases: Vec<PathBuf> = bases
        .iter()
        .filter(|b| !bases.iter().any(|o| o != *b && b.starts_with(o)))
        .filter(|b| metadata_confined(root, b).is_ok_and(|m| m.is_dir()))
        .filter_map(|b| root.fs_path(b))
        .collect();
    let custom = custom_rules(root, &plan.custom_ignore_files);
    let shown = |fs: &Path| root.display_of(fs);
    // Nothing the custom ignore files hide, and no sensitive path.
    let allowed = |path: &Path, is_dir: bool| {
        let rel = path.strip_prefix(root.path()).unwrap_or(path);
        blocked_segment(rel).is_none()
            && !custom
                .as_ref()
                .is_some_and(|c| c.matched_path_or_any_parents(path, is_dir).is_ignore())
    };
    // Prune an excluded directory (`**/node_modules/**`) by asking whether
    // a file inside it would be excluded.
    let enter = |dir: &Path| {
        let Some(dir) = shown(dir) else {
            return false;
        };
        let rel = dir.strip_prefix(root.path()).unwrap_or(&dir);
        !plan.exclude.is_match(rel.join("\u{0}")) && allowed(&dir, true)
    };
    // A directory swapped for a symlink mid-walk can send the walk
    // outside: files found there are dropped when loading them fails.
    let keep = |path: &Path, kind: Kind| {
        let Some(path) = shown(path) else {
            return false;
        };
        wanted(plan, &path)
            && allowed(&path, false)
            && (kind != Kind::Symlink
                // Only links whose target is a file inside the workspace.
                || metadata_confined(root, &path).is_ok_and(|m| m.is_file()))
    };
    let walk = CachedWalk {
        cache: listings,
        top: root.fs_base(),
        filtering: Filtering {
            git: plan.respect_git,
            gemini: plan.respect_gemini,
        },
        enter: &enter,
        keep: &keep,
    };
    let bases: Vec<&Path> = bases.iter().map(PathBuf::as_path).collect();
    walk.run(&bases, cancel)
        .into_iter()
        .filter_map(|(path, _)| shown(&path))
        .collect()
}

fn wanted(plan: &Plan, path: &Path) -> bool {
    let Ok(rel) = path.strip_prefix(plan.root.path()) else {
        return false;
    };
    let rel = globset::Candidate::new(rel);
    plan.globs.iter().any(|(_, m)| m.is_match_candidate(&rel))
        && !plan.exclude.is_match_candidate(&rel)
}
