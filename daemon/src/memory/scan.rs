//! Lexical scanning of memory text: `@path` candidates and backtick code
//! regions. All offsets are byte offsets into the scanned string.

/// One `@path` candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportSpan<'a> {
    /// Offset of the `@`.
    pub start: usize,
    /// Offset just past the path.
    pub end: usize,
    /// The text after `@` up to the next white space.
    pub path: &'a str,
}

/// The separators that delimit an import: space, tab, LF and CR only.
fn is_separator(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Find `@path` candidates: an `@` at the start of the text or after a
/// separator, followed by a path beginning with `.`, `/` or an ASCII letter.
/// The path runs to the next separator, so trailing punctuation is part of it.
pub fn find_imports(content: &str) -> Vec<ImportSpan<'_>> {
    let bytes = content.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while let Some(offset) = bytes
        .get(i..)
        .and_then(|rest| rest.iter().position(|&b| b == b'@'))
    {
        let at = i + offset;
        if at > 0 && !is_separator(bytes[at - 1]) {
            i = at + 1;
            continue;
        }
        let mut end = at + 1;
        while end < bytes.len() && !is_separator(bytes[end]) {
            end += 1;
        }
        // `@` and the separators are ASCII, so both ends are char boundaries.
        let path = &content[at + 1..end];
        if path
            .bytes()
            .next()
            .is_some_and(|b| b == b'.' || b == b'/' || b.is_ascii_alphabetic())
        {
            found.push(ImportSpan {
                start: at,
                end,
                path,
            });
        }
        // The separator that ended the path cannot start another import.
        i = end + 1;
    }
    found
}

/// Code regions: backtick regions (see [`backtick_regions`]) plus `~~~`
/// fenced blocks that open outside them (see [`tilde_fences`]).
pub fn code_regions(content: &str) -> Vec<(usize, usize)> {
    let mut regions = backtick_regions(content);
    let fences = tilde_fences(content, &regions);
    regions.extend(fences);
    regions
}

/// Regions delimited by backtick runs: an opening run of N backticks closed
/// by the next N backticks (fewer are tried when no closer of the full
/// length follows). This covers inline spans and ``` fenced blocks alike.
pub fn backtick_regions(content: &str) -> Vec<(usize, usize)> {
    let bytes = content.as_bytes();
    let mut regions = Vec::new();
    let mut p = 0;
    while let Some(offset) = bytes
        .get(p..)
        .and_then(|rest| rest.iter().position(|&b| b == b'`'))
    {
        p += offset;
        let run = run_length(bytes, p);
        let closing = (1..=run)
            .rev()
            .find_map(|k| find_run(bytes, p + k, k).map(|q| q + k));
        match closing {
            Some(end) => {
                regions.push((p, end));
                p = end;
            }
            None => p += 1,
        }
    }
    regions
}

fn run_length(bytes: &[u8], from: usize) -> usize {
    bytes
        .get(from..)
        .map_or(0, |rest| rest.iter().take_while(|&&b| b == b'`').count())
}

/// Earliest offset `q >= from` where at least `k` backticks start.
fn find_run(bytes: &[u8], from: usize, k: usize) -> Option<usize> {
    let mut i = from;
    while i < bytes.len() {
        if bytes[i] == b'`' {
            let len = run_length(bytes, i);
            if len >= k {
                return Some(i);
            }
            i += len;
        } else {
            i += 1;
        }
    }
    None
}

/// CommonMark-style `~~~` fenced blocks: a line indented by at most three
/// spaces starting with three or more tildes opens a block, which a line of
/// at least as many tildes (and nothing else but white space) closes; an
/// unclosed block runs to the end of the text. Lines starting inside one of
/// `skip` (backtick regions) are not considered.
pub fn tilde_fences(content: &str, skip: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut fences = Vec::new();
    let mut open: Option<(usize, usize)> = None; // (start offset, tilde count)
    let mut line_start = 0;
    for line in content.split_inclusive('\n') {
        let start = line_start;
        line_start += line.len();
        if open.is_none() && in_code(skip, start) {
            continue;
        }
        let body = line.trim_end_matches(['\n', '\r']);
        let indent = body.len() - body.trim_start_matches(' ').len();
        if indent > 3 {
            continue;
        }
        let rest = &body[indent..];
        let tildes = rest.len() - rest.trim_start_matches('~').len();
        match open {
            None if tildes >= 3 => open = Some((start, tildes)),
            Some((begin, needed)) if tildes >= needed && rest[tildes..].trim().is_empty() => {
                fences.push((begin, start + body.len()));
                open = None;
            }
            _ => {}
        }
    }
    if let Some((begin, _)) = open {
        fences.push((begin, content.len()));
    }
    fences
}

/// Whether `offset` falls inside one of `regions`.
pub fn in_code(regions: &[(usize, usize)], offset: usize) -> bool {
    regions.iter().any(|&(s, e)| offset >= s && offset < e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(s: &str) -> Vec<&str> {
        find_imports(s).into_iter().map(|i| i.path).collect()
    }

    #[test]
    fn import_candidates() {
        assert_eq!(paths("@./a.md"), vec!["./a.md"]);
        assert_eq!(
            paths("x @a.md @/b.md\n@../c"),
            vec!["a.md", "/b.md", "../c"]
        );
        assert!(paths("me@example.com (@./x) @1 @_y @").is_empty());
        assert_eq!(paths("@./a.md, done"), vec!["./a.md,"]);
        assert_eq!(paths("@./a.md\r\n@b"), vec!["./a.md", "b"]);
    }

    #[test]
    fn backtick_regions() {
        let s = "a `x` b";
        assert_eq!(code_regions(s), vec![(2, 5)]);
        let fence = "```\n@./a.md\n```\n@./b.md";
        let r = code_regions(fence);
        assert_eq!(r, vec![(0, 15)]);
        assert!(in_code(&r, 4));
        assert!(!in_code(&r, 16));
        // An unmatched double run closes on itself, like the regex fallback.
        assert_eq!(code_regions("``x"), vec![(0, 2)]);
        assert_eq!(code_regions("` only one"), vec![]);
    }

    #[test]
    fn tilde_fence_regions() {
        let s = "~~~\n@./a.md\n~~~\n@./b.md";
        assert_eq!(code_regions(s), vec![(0, 15)]);
        // A shorter line does not close a longer fence; unclosed runs to the end.
        let s = "~~~~\n~~~\n@./a.md";
        assert_eq!(code_regions(s), vec![(0, s.len())]);
        // Tildes inside a backtick block do not open a fence.
        let s = "```\n~~~\n```\n@./a.md";
        assert_eq!(code_regions(s), vec![(0, 11)]);
        // Four spaces of indentation is not a fence.
        assert!(code_regions("    ~~~\n@./a.md").is_empty());
    }
}
