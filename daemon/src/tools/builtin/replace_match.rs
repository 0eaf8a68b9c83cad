//! The text work behind `replace`: exact and whitespace-flexible matching,
//! line-ending preservation, and re-deriving an edit from edited content.
//! Everything here is linear in the file size for exact matches.

use std::borrow::Cow;

use super::contract::{ToolError, ToolErrorKind};

/// How `old_string` was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchMode {
    /// A new file (empty `old_string`, file absent).
    Create,
    Exact,
    /// Found only after ignoring leading/trailing whitespace on each line.
    Flexible,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditPlan {
    pub new_content: String,
    pub occurrences: usize,
    pub mode: MatchMode,
}

fn edit_error(message: String) -> ToolError {
    ToolError::invalid(message)
}

/// Works out the new content of a file. `current` is `None` when the file
/// does not exist. Errors are distinct per cause so the model can react.
pub fn plan_edit(
    current: Option<&str>,
    old: &str,
    new: &str,
    expected: usize,
) -> Result<EditPlan, ToolError> {
    let Some(current) = current else {
        if old.is_empty() {
            return Ok(EditPlan {
                new_content: new.to_owned(),
                occurrences: 1,
                mode: MatchMode::Create,
            });
        }
        return Err(ToolError::new(
            ToolErrorKind::NotFound,
            "file not found; to create a new file, pass an empty `old_string`".to_owned(),
        ));
    };
    if old.is_empty() {
        return Err(edit_error(
            "`old_string` is empty but the file already exists; an empty `old_string` only creates new files (use write_file to replace a whole file)".to_owned(),
        ));
    }
    if old == new {
        return Err(edit_error(
            "`old_string` and `new_string` are identical: no change to make".to_owned(),
        ));
    }
    // Match on LF text; a CRLF file gets its endings back afterwards so the
    // edit does not silently convert it.
    let crlf = memchr::memmem::find(current.as_bytes(), b"\r\n").is_some();
    let lf = |s: &'_ str| -> String {
        if crlf {
            s.replace("\r\n", "\n")
        } else {
            s.to_owned()
        }
    };
    let content: Cow<'_, str> = if crlf {
        Cow::Owned(current.replace("\r\n", "\n"))
    } else {
        Cow::Borrowed(current)
    };
    let (old, new) = (lf(old), lf(new));

    // memmem (SIMD) finds non-overlapping matches in one linear pass; the
    // positions are then spliced, so `$` and `\\` in `new` stay literal.
    let hits: Vec<usize> = memchr::memmem::find_iter(content.as_bytes(), old.as_bytes()).collect();
    let (mut out, count, mode) = if !hits.is_empty() {
        if hits.len() != expected {
            return Err(count_error(expected, hits.len(), ""));
        }
        (
            splice_exact(&content, &hits, old.len(), &new),
            hits.len(),
            MatchMode::Exact,
        )
    } else {
        let blocks = flexible_blocks(&content, &old);
        if blocks.is_empty() {
            return Err(edit_error(
                "`old_string` was not found in the file (not even ignoring indentation and trailing spaces); read the file again and copy the exact text, including whitespace".to_owned(),
            ));
        }
        if blocks.len() != expected {
            return Err(count_error(
                expected,
                blocks.len(),
                " (ignoring indentation)",
            ));
        }
        (
            splice_flexible(&content, &blocks, &new),
            blocks.len(),
            MatchMode::Flexible,
        )
    };
    // Keep the file's final newline even if the edit removed it.
    if content.ends_with('\n') && !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if crlf {
        out = out.replace('\n', "\r\n");
    }
    if out == current {
        return Err(edit_error(
            "applying the edit leaves the file unchanged: no change to make".to_owned(),
        ));
    }
    Ok(EditPlan {
        new_content: out,
        occurrences: count,
        mode,
    })
}

fn splice_exact(content: &str, hits: &[usize], old_len: usize, new: &str) -> String {
    let grown = content.len() - hits.len() * old_len + hits.len() * new.len();
    let mut out = String::with_capacity(grown);
    let mut pos = 0;
    for &h in hits {
        out.push_str(&content[pos..h]);
        out.push_str(new);
        pos = h + old_len;
    }
    out.push_str(&content[pos..]);
    out
}

fn count_error(expected: usize, found: usize, how: &str) -> ToolError {
    let noun = |n: usize| if n == 1 { "occurrence" } else { "occurrences" };
    edit_error(format!(
        "expected {expected} {} of `old_string` but found {found}{how}; add surrounding context to make it unique, or set `expected_replacements` to {found} to replace them all",
        noun(expected)
    ))
}

/// A run of whole lines in the content: byte range without the final
/// newline, plus the indentation of its first line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Block {
    start: usize,
    end: usize,
    indent: String,
}

/// Finds non-overlapping runs of lines equal to `old`'s lines once each side
/// is trimmed. Only lines whose trimmed text equals the first pattern line
/// start a comparison, so typical files cost one pass.
fn flexible_blocks(content: &str, old: &str) -> Vec<Block> {
    let old = old.strip_suffix('\n').unwrap_or(old);
    let pattern: Vec<&str> = old.split('\n').map(str::trim).collect();
    if pattern.iter().all(|l| l.is_empty()) {
        return Vec::new();
    }
    // (start, end without '\n') of every line.
    let mut lines = Vec::new();
    let mut start = 0;
    for nl in memchr::memchr_iter(b'\n', content.as_bytes()) {
        lines.push((start, nl));
        start = nl + 1;
    }
    if start < content.len() {
        lines.push((start, content.len()));
    }
    let line = |i: usize| &content[lines[i].0..lines[i].1];
    let mut blocks = Vec::new();
    let mut i = 0;
    while i + pattern.len() <= lines.len() {
        let hit = (0..pattern.len()).all(|j| line(i + j).trim() == pattern[j]);
        if hit {
            let first = line(i);
            let indent_len = first.len() - first.trim_start().len();
            blocks.push(Block {
                start: lines[i].0,
                end: lines[i + pattern.len() - 1].1,
                indent: first[..indent_len].to_owned(),
            });
            i += pattern.len();
        } else {
            i += 1;
        }
    }
    blocks
}

/// `new` with its common indentation removed and `indent` put in its place,
/// so a replacement keeps its internal structure at the matched depth.
fn reindent(new: &str, indent: &str) -> String {
    let body = new.strip_suffix('\n').unwrap_or(new);
    let common = body
        .split('\n')
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out = String::with_capacity(body.len() + indent.len() * 4);
    for (n, l) in body.split('\n').enumerate() {
        if n > 0 {
            out.push('\n');
        }
        if !l.trim().is_empty() {
            out.push_str(indent);
            // `common` counts leading whitespace bytes, which are ASCII
            // here, so the cut is on a character boundary.
            out.push_str(l.get(common..).unwrap_or(l.trim_start()));
        }
    }
    out
}

fn splice_flexible(content: &str, blocks: &[Block], new: &str) -> String {
    let mut out = String::with_capacity(content.len() + new.len() * blocks.len());
    let mut pos = 0;
    for b in blocks {
        out.push_str(&content[pos..b.start]);
        let mut end = b.end;
        if new.is_empty() {
            // Deleting lines removes their line breaks too.
            if content[end..].starts_with('\n') {
                end += 1;
            }
        } else {
            out.push_str(&reindent(new, &b.indent));
        }
        pos = end;
    }
    out.push_str(&content[pos..]);
    out
}

/// Re-derives `(old_string, new_string)` from a person's edit of the whole
/// file: the changed region, trimmed to whole lines, widened line by line
/// until `old_string` is unique in `original` (so it applies with the
/// default `expected_replacements` of 1). Identical texts give `("", "")`.
pub fn replace_from_edited(original: &str, edited: &str) -> (String, String) {
    let (ob, eb) = (original.as_bytes(), edited.as_bytes());
    let mut prefix = ob.iter().zip(eb).take_while(|(a, b)| a == b).count();
    if prefix == ob.len() && prefix == eb.len() {
        return (String::new(), String::new());
    }
    let max_suffix = ob.len().min(eb.len()) - prefix;
    let mut suffix = ob
        .iter()
        .rev()
        .zip(eb.iter().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    // Whole lines: start after a '\n', end after one.
    prefix = memchr::memrchr(b'\n', &ob[..prefix]).map_or(0, |i| i + 1);
    let tail_start = ob.len() - suffix;
    let at_line_start = tail_start == ob.len() || (tail_start > 0 && ob[tail_start - 1] == b'\n');
    if !at_line_start {
        suffix = match memchr::memchr(b'\n', &ob[tail_start..]) {
            Some(i) => ob.len() - (tail_start + i + 1),
            None => 0,
        };
    }
    loop {
        let old = &original[prefix..original.len() - suffix];
        let unique = !old.is_empty() && original.matches(old).nth(1).is_none();
        if unique || (prefix == 0 && suffix == 0) {
            return (
                old.to_owned(),
                edited[prefix..edited.len() - suffix].to_owned(),
            );
        }
        // One more line of context on each side.
        prefix = if prefix == 0 {
            0
        } else {
            memchr::memrchr(b'\n', &ob[..prefix - 1]).map_or(0, |i| i + 1)
        };
        suffix = if suffix == 0 {
            0
        } else {
            let from = ob.len() - suffix;
            match memchr::memchr(b'\n', &ob[from..]) {
                Some(i) => ob.len() - (from + i + 1),
                None => 0,
            }
        };
    }
}

#[cfg(test)]
#[path = "replace_match_tests.rs"]
mod tests;
