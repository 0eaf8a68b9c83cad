//! Unquoting of shell words: backslash escapes, `'...'`, `"..."`, `$'...'`.

/// `raw` without `open` leading and `close` trailing bytes (quotes).
pub(crate) fn strip(raw: &str, open: usize, close: usize) -> &str {
    if raw.len() >= open + close {
        raw.get(open..raw.len() - close).unwrap_or(raw)
    } else {
        raw
    }
}

/// Globs and brace expansion make an unquoted word's value unknowable.
pub(crate) fn has_expansion_chars(raw: &str) -> bool {
    let mut escaped = false;
    let mut brace = false;
    for c in raw.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '*' | '?' | '[' | '$' | '`' => return true,
            '{' => brace = true,
            ',' | '.' if brace => return true,
            _ => {}
        }
    }
    false
}

/// Removes backslash escapes and line continuations from an unquoted word.
pub(crate) fn unescape_unquoted(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push(next),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Unescapes the inside of a double-quoted string.
pub(crate) fn unescape_double(inner: &str) -> String {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('\n') => {
                    chars.next();
                }
                Some(&next @ ('"' | '\\' | '$' | '`')) => {
                    chars.next();
                    out.push(next);
                }
                _ => out.push(c),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Unescapes `$'...'`; octal/hex/unicode escapes make the word non-static.
pub(crate) fn unescape_ansi_c(inner: &str) -> (String, bool) {
    let mut is_static = true;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(other @ ('\\' | '\'' | '"' | '?')) => out.push(other),
            Some(other) => {
                is_static = false;
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    (out, is_static)
}
