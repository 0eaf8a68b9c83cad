//! Lexical path helpers that behave like Node's POSIX `path` module.
//!
//! The import processor reports paths inside the generated text (for example
//! in `<!-- Import failed: ... -->` comments), so the exact spelling matters.
//! These helpers work on `/`-separated strings the way `path.resolve`,
//! `path.normalize`, `path.dirname` and `path.relative` do, without touching
//! the file system.

use std::path::Path;

/// Lossy string form of a path (non-UTF-8 bytes become U+FFFD).
pub fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Normalize a path: collapse repeated separators, drop `.` segments,
/// resolve `..` lexically and remove a trailing separator.
///
/// Absolute inputs stay absolute (`..` never climbs above `/`). A relative
/// input that normalizes to nothing becomes `.`.
pub fn normalize(p: &str) -> String {
    let absolute = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|last| *last != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".to_string()
    } else {
        joined
    }
}

/// `path.resolve(base, p)`: `p` if it is absolute, else `base/p`, normalized.
pub fn resolve(base: &str, p: &str) -> String {
    if p.starts_with('/') {
        normalize(p)
    } else if p.is_empty() {
        normalize(base)
    } else {
        normalize(&format!("{base}/{p}"))
    }
}

/// `path.dirname` for a normalized absolute path.
pub fn dirname(p: &str) -> String {
    match p.rfind('/') {
        Some(0) => "/".to_string(),
        Some(i) => p[..i].to_string(),
        None => ".".to_string(),
    }
}

/// `path.basename` for a normalized path.
pub fn basename(p: &str) -> &str {
    match p.rfind('/') {
        Some(i) => &p[i + 1..],
        None => p,
    }
}

/// `path.join(a, b)` followed by normalization.
pub fn join(a: &str, b: &str) -> String {
    normalize(&format!("{a}/{b}"))
}

/// True when `child` is `parent` itself or lies below it (both absolute).
pub fn is_subpath(parent: &str, child: &str) -> bool {
    let parent = normalize(parent);
    let child = normalize(child);
    parent == "/" || child == parent || child.starts_with(&format!("{parent}/"))
}

/// `path.relative(from, to)` for absolute paths; `""` when they are equal.
pub fn relative(from: &str, to: &str) -> String {
    let from = normalize(from);
    let to = normalize(to);
    let f: Vec<&str> = from.split('/').filter(|s| !s.is_empty()).collect();
    let t: Vec<&str> = to.split('/').filter(|s| !s.is_empty()).collect();
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut out: Vec<&str> = vec![".."; f.len() - common];
    out.extend_from_slice(&t[common..]);
    out.join("/")
}

/// JavaScript's `String.prototype.trim` white-space set (which differs from
/// Rust's `char::is_whitespace`: it includes U+FEFF and excludes U+0085).
pub fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// `String.prototype.trim`.
pub fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_whitespace)
}

/// `decodeURIComponent`: `None` when an escape is malformed or the decoded
/// bytes are not UTF-8 (where JavaScript would throw `URIError`).
pub fn decode_uri_component(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_string());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hi = (hex[0] as char).to_digit(16)?;
            let lo = (hex[1] as char).to_digit(16)?;
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_like_node() {
        assert_eq!(normalize("/a//b/./c/../d/"), "/a/b/d");
        assert_eq!(normalize("/../.."), "/");
        assert_eq!(normalize("a/../.."), "..");
        assert_eq!(normalize(""), ".");
    }

    #[test]
    fn resolve_and_dirname() {
        assert_eq!(resolve("/p/q", "./x.md"), "/p/q/x.md");
        assert_eq!(resolve("/p/q", "/abs/y.md"), "/abs/y.md");
        assert_eq!(resolve("/p/q", "../z/"), "/p/z");
        assert_eq!(dirname("/p/q/x.md"), "/p/q");
        assert_eq!(dirname("/x.md"), "/");
        assert_eq!(basename("/p/q/x.md"), "x.md");
    }

    #[test]
    fn subpath_and_relative() {
        assert!(is_subpath("/p", "/p"));
        assert!(is_subpath("/p", "/p/..x"));
        assert!(!is_subpath("/p", "/pq"));
        assert!(is_subpath("/", "/anything"));
        assert_eq!(relative("/w/a", "/w/a/b/GEMINI.md"), "b/GEMINI.md");
        assert_eq!(relative("/w/a", "/w/GEMINI.md"), "../GEMINI.md");
        assert_eq!(relative("/w", "/w"), "");
    }

    #[test]
    fn js_trim_set() {
        assert_eq!(js_trim("\u{FEFF} x \u{A0}"), "x");
        assert_eq!(js_trim("\u{85}x"), "\u{85}x");
    }

    #[test]
    fn uri_decoding() {
        assert_eq!(decode_uri_component("a%20b").as_deref(), Some("a b"));
        assert_eq!(decode_uri_component("%2e%2E/x").as_deref(), Some("../x"));
        assert_eq!(decode_uri_component("100%"), None);
        assert_eq!(decode_uri_component("%C3x"), None);
        assert_eq!(decode_uri_component("%C3%A9").as_deref(), Some("é"));
    }
}
