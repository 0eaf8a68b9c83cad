//! Unified diffs for confirmations and results, fast on huge files.

use std::path::Path;

use similar::{ChangeTag, TextDiff};

use super::contract::FileDiff;

/// Length of the common prefix of `a` and `b`, compared in blocks so that
/// large identical regions go through `memcmp`.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 4096;
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + BLOCK <= n && a[i..i + BLOCK] == b[i..i + BLOCK] {
        i += BLOCK;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

fn common_suffix(a: &[u8], b: &[u8], limit: usize) -> usize {
    const BLOCK: usize = 4096;
    let n = a.len().min(b.len()).min(limit);
    let mut i = 0;
    while i + BLOCK <= n
        && a[a.len() - i - BLOCK..a.len() - i] == b[b.len() - i - BLOCK..b.len() - i]
    {
        i += BLOCK;
    }
    while i < n && a[a.len() - 1 - i] == b[b.len() - 1 - i] {
        i += 1;
    }
    i
}

/// Moves `pos` back to the start of the line `context` lines above it.
fn back_lines(text: &[u8], pos: usize, context: usize) -> usize {
    let mut start = match memchr::memrchr(b'\n', &text[..pos]) {
        Some(i) => i + 1,
        None => return 0,
    };
    for _ in 0..context {
        if start == 0 {
            break;
        }
        start = match memchr::memrchr(b'\n', &text[..start - 1]) {
            Some(i) => i + 1,
            None => 0,
        };
    }
    start
}

/// Moves `pos` forward past the end of the line `context` lines below it.
fn forward_lines(text: &[u8], pos: usize, context: usize) -> usize {
    let mut end = pos;
    for _ in 0..=context {
        match memchr::memchr(b'\n', &text[end..]) {
            Some(i) => end += i + 1,
            None => return text.len(),
        }
    }
    end
}

/// A unified diff (3 lines of context) between two texts. Only the region
/// that differs, widened by the context lines, is handed to the diff
/// algorithm, so a one-line change in a 50 MB file costs a few memcmp passes
/// instead of tokenizing every line; hunk headers are shifted back to
/// whole-file line numbers.
pub fn unified_diff(label: &str, old: &str, new: &str) -> String {
    const CONTEXT: usize = 3;
    let (ob, nb) = (old.as_bytes(), new.as_bytes());
    let prefix = common_prefix(ob, nb);
    if prefix == ob.len() && prefix == nb.len() {
        return String::new();
    }
    let suffix = common_suffix(ob, nb, ob.len().min(nb.len()) - prefix);
    let start = back_lines(ob, prefix, CONTEXT);
    // The suffix boundary, moved to a line end in both texts (same offset
    // from the end, so one adjustment serves both).
    let old_end = forward_lines(ob, ob.len() - suffix, CONTEXT);
    let tail = ob.len() - old_end;
    let new_end = nb.len() - tail;
    let line_offset = memchr::memchr_iter(b'\n', &ob[..start]).count();
    // Both cut points sit just after a '\n' or at the ends, so they are
    // character boundaries.
    let old_mid = old.get(start..old_end).unwrap_or(old);
    let new_mid = new.get(start..new_end.max(start)).unwrap_or(new);
    // A deadline keeps a rewrite of a huge file from stalling in Myers'
    // worst case; past it `similar` settles for a coarser (still valid) diff.
    let diff = TextDiff::configure()
        .timeout(std::time::Duration::from_millis(500))
        .diff_lines(old_mid, new_mid);
    let mut out = format!("--- a/{label}\n+++ b/{label}\n");
    for group in diff.grouped_ops(CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let (o0, o1) = (first.old_range().start, last.old_range().end);
        let (n0, n1) = (first.new_range().start, last.new_range().end);
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            hunk_range(o0 + line_offset, o1 - o0),
            hunk_range(n0 + line_offset, n1 - n0)
        ));
        for op in &group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    ChangeTag::Equal => ' ',
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                };
                out.push(sign);
                let value = change.value();
                out.push_str(value);
                if !value.ends_with('\n') {
                    out.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
    }
    out
}

/// `start,len` in unified-diff form (1-based; an empty range names the line
/// before it).
fn hunk_range(start0: usize, len: usize) -> String {
    match len {
        0 => format!("{start0},0"),
        1 => format!("{}", start0 + 1),
        _ => format!("{},{len}", start0 + 1),
    }
}

/// Builds the diff record. Takes the contents by value: for big files the
/// copies would cost more than the diff itself.
pub fn file_diff(root: &Path, path: &Path, old: Option<String>, new: String) -> FileDiff {
    let label = super::path::display_relative(root, path);
    FileDiff {
        file_name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| label.clone()),
        file_path: path.to_path_buf(),
        diff: unified_diff(&label, old.as_deref().unwrap_or(""), &new),
        original_content: old,
        new_content: new,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_of_large_text_has_whole_file_line_numbers() {
        let old: String = (0..100_000).map(|i| format!("line {i}\n")).collect();
        let new = old.replace("line 50000\n", "changed\n");
        let d = unified_diff("f", &old, &new);
        assert!(d.contains("@@ -49998,7 +49998,7 @@"), "{d}");
        assert!(d.contains("-line 50000\n+changed\n"));
    }

    #[test]
    fn diff_matches_similar_for_small_texts() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nX\nd\ne\nf\ng\nh\nnew";
        let ours = unified_diff("f", old, new);
        let theirs = TextDiff::from_lines(old, new)
            .unified_diff()
            .context_radius(3)
            .header("a/f", "b/f")
            .to_string();
        assert_eq!(ours, theirs);
        assert_eq!(
            unified_diff("f", "", "x\n"),
            "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+x\n"
        );
        assert_eq!(unified_diff("f", "same", "same"), "");
    }

    #[test]
    fn diff_agrees_with_similar_on_random_edits() {
        // A small deterministic generator: no extra dev-dependency needed.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..300 {
            let lines: Vec<String> = (0..next(30)).map(|_| format!("l{}", next(6))).collect();
            let mut edited = lines.clone();
            for _ in 0..next(4) {
                let at = next(edited.len() as u64 + 1) as usize;
                match next(3) {
                    0 if at < edited.len() => {
                        edited.remove(at);
                    }
                    1 if at < edited.len() => edited[at] = format!("x{}", next(9)),
                    _ => edited.insert(at, format!("n{}", next(9))),
                }
            }
            let old = lines.join("\n") + if next(2) == 0 { "\n" } else { "" };
            let new = edited.join("\n") + if next(2) == 0 { "\n" } else { "" };
            let theirs = TextDiff::from_lines(&old, &new)
                .unified_diff()
                .context_radius(3)
                .header("a/f", "b/f")
                .to_string();
            let theirs = if theirs.contains("@@") {
                theirs
            } else {
                String::new()
            };
            assert_eq!(unified_diff("f", &old, &new), theirs, "{old:?} -> {new:?}");
        }
    }
}
