//! Finds the expansions in text bash expands like the inside of double
//! quotes: an unquoted here-document body, and any leaf the parser left as
//! plain text (tree-sitter-bash does not parse backticks inside `${...}`
//! operands, nor reliably inside here-document bodies).
//!
//! The scan is conservative: single and double quotes are not special (in a
//! here-document they are not), so a `$(...)` inside them is still found;
//! a substitution whose end cannot be found with certainty (a comment or a
//! here-document inside it, no closing parenthesis) makes the text
//! unparsable.

use super::expansion::{brace_hazard, is_literal_arithmetic};
use super::types::Hazard;

/// What a scanned text holds.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// Expansions that are not inert, with their text.
    pub hazards: Vec<(Hazard, String)>,
    /// The texts of command substitutions (`$(...)`, backticks): commands
    /// to check.
    pub scripts: Vec<String>,
    /// A substitution could not be delimited.
    pub unparsable: bool,
    /// Some expansion or backslash changes the text when bash reads it.
    pub expands: bool,
}

/// Scans `text` for expansions.
pub(crate) fn scan_expanding(text: &str) -> Scan {
    let mut scan = Scan::default();
    scan_into(text, &mut scan, 0);
    scan
}

/// Substitutions and `${...}` nested deeper than this are reported as
/// unparsable (the scan recurses, and a stack overflow would end the
/// daemon).
const MAX_NESTING: usize = 32;

fn scan_into(text: &str, scan: &mut Scan, nesting: usize) {
    if nesting > MAX_NESTING {
        scan.unparsable = true;
        return;
    }
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'\\' => {
                scan.expands = true;
                i += 2;
            }
            b'`' => {
                scan.expands = true;
                let Some(end) = backtick_end(b, i + 1) else {
                    scan.unparsable = true;
                    return;
                };
                scan.scripts
                    .push(unescape_backtick(slice(text, i + 1, end)));
                i = end + 1;
            }
            b'$' => i = dollar(text, i, scan, nesting),
            _ => i += 1,
        }
    }
}

/// Handles the `$` at `i`; returns where scanning goes on.
fn dollar(text: &str, i: usize, scan: &mut Scan, nesting: usize) -> usize {
    let b = text.as_bytes();
    match (b.get(i + 1), b.get(i + 2)) {
        (Some(b'('), Some(b'(')) => {
            scan.expands = true;
            // `$((` is arithmetic; if it really is `$( (cmd) )`, the text is
            // not literal arithmetic either, so it is a hazard all the same.
            let Some(end) = substitution_end(b, i + 2, nesting) else {
                scan.unparsable = true;
                return b.len();
            };
            let inner = slice(text, i + 3, end.saturating_sub(1));
            if !is_literal_arithmetic(inner) {
                scan.hazards
                    .push((Hazard::Arithmetic, slice(text, i, end + 1).to_owned()));
            }
            scan_into(inner, scan, nesting + 1);
            end + 1
        }
        (Some(b'('), _) => {
            scan.expands = true;
            let Some(end) = substitution_end(b, i + 2, nesting) else {
                scan.unparsable = true;
                return b.len();
            };
            scan.scripts.push(slice(text, i + 2, end).to_owned());
            end + 1
        }
        (Some(b'['), _) => {
            scan.expands = true;
            let Some(end) = find_byte(b, i + 2, b']') else {
                scan.unparsable = true;
                return b.len();
            };
            let inner = slice(text, i + 2, end);
            if !is_literal_arithmetic(inner) {
                scan.hazards
                    .push((Hazard::Arithmetic, slice(text, i, end + 1).to_owned()));
            }
            end + 1
        }
        (Some(b'{'), _) => {
            scan.expands = true;
            let Some(end) = brace_end(b, i + 2, nesting) else {
                scan.unparsable = true;
                return b.len();
            };
            let inner = slice(text, i + 2, end);
            if let Some(hazard) = brace_hazard(inner) {
                scan.hazards
                    .push((hazard, slice(text, i, end + 1).to_owned()));
            }
            scan_into(inner, scan, nesting + 1);
            end + 1
        }
        (Some(c), _) if c.is_ascii_alphanumeric() || b"_@*#?-$!".contains(c) => {
            // `$name`, `$1`, `$@`: text only.
            scan.expands = true;
            i + 2
        }
        _ => i + 1,
    }
}

fn slice(text: &str, start: usize, end: usize) -> &str {
    text.get(start..end).unwrap_or("")
}

fn find_byte(b: &[u8], from: usize, want: u8) -> Option<usize> {
    b.iter()
        .skip(from)
        .position(|&c| c == want)
        .map(|p| p + from)
}

/// The index of the backtick closing one opened before `i`.
fn backtick_end(b: &[u8], mut i: usize) -> Option<usize> {
    while let Some(&c) = b.get(i) {
        match c {
            b'\\' => i += 2,
            b'`' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Inside backticks, a backslash quotes only `\`, `` ` `` and `$`.
fn unescape_backtick(inner: &str) -> String {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some(&next @ ('\\' | '`' | '$'))) => {
                out.push(next);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// The index of the `}` closing a `${` whose text starts at `i`.
fn brace_end(b: &[u8], mut i: usize, nesting: usize) -> Option<usize> {
    if nesting > MAX_NESTING {
        return None;
    }
    let mut depth = 1usize;
    while let Some(&c) = b.get(i) {
        match c {
            b'\\' => i += 1,
            b'`' => i = backtick_end(b, i + 1)?,
            b'$' if b.get(i + 1) == Some(&b'(') => i = substitution_end(b, i + 2, nesting + 1)?,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index of the `)` closing a `$(` whose text starts at `i`, read as
/// shell code: quotes, escapes, backticks and nested substitutions are
/// skipped. `None` when the end is not certain: no closing parenthesis, a
/// comment (it could hide one) or a here-document.
fn substitution_end(b: &[u8], mut i: usize, nesting: usize) -> Option<usize> {
    if nesting > MAX_NESTING {
        return None;
    }
    let mut depth = 1usize;
    let mut word_start = true;
    while let Some(&c) = b.get(i) {
        match c {
            b'\\' => i += 1,
            b'\'' => i = find_byte(b, i + 1, b'\'')?,
            b'"' => i = dquote_end(b, i + 1, nesting + 1)?,
            b'`' => i = backtick_end(b, i + 1)?,
            b'$' if b.get(i + 1) == Some(&b'(') => i = substitution_end(b, i + 2, nesting + 1)?,
            b'#' if word_start => return None,
            b'<' if b.get(i + 1) == Some(&b'<') => return None,
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        word_start = c.is_ascii_whitespace() || b";|&()".contains(&c);
        i += 1;
    }
    None
}

/// The index of the `"` closing a double-quoted string starting at `i`.
fn dquote_end(b: &[u8], mut i: usize, nesting: usize) -> Option<usize> {
    if nesting > MAX_NESTING {
        return None;
    }
    while let Some(&c) = b.get(i) {
        match c {
            b'\\' => i += 1,
            b'"' => return Some(i),
            b'`' => i = backtick_end(b, i + 1)?,
            b'$' if b.get(i + 1) == Some(&b'(') => i = substitution_end(b, i + 2, nesting + 1)?,
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, scripts: &[&str], hazards: &[Hazard], unparsable: bool) {
        let scan = scan_expanding(text);
        assert_eq!(scan.scripts, scripts, "{text:?}");
        let found: Vec<Hazard> = scan.hazards.iter().map(|(h, _)| *h).collect();
        assert_eq!(found, hazards, "{text:?}");
        assert_eq!(scan.unparsable, unparsable, "{text:?}");
    }

    #[test]
    fn scan_table() {
        check("plain text 'quoted' \"too\"\n", &[], &[], false);
        check("$HOME and ${USER} and $1", &[], &[], false);
        check("`touch p`", &["touch p"], &[], false);
        check("a `echo \\`x\\`` b", &["echo `x`"], &[], false);
        check("\\`not\\` \\$(not)", &[], &[], false);
        check("$(rm x) $(echo \")\")", &["rm x", "echo \")\""], &[], false);
        check("$(a $(b) c)", &["a $(b) c"], &[], false);
        check("'$(rm x)'", &["rm x"], &[], false);
        check("$((1 + 2)) $[3]", &[], &[], false);
        check(
            "$((x)) $[y]",
            &[],
            &[Hazard::Arithmetic, Hazard::Arithmetic],
            false,
        );
        check("${x:-`rm y`}", &["rm y"], &[], false);
        check(
            "${x:=1} ${!x} ${a[i]} ${x@P}",
            &[],
            &[
                Hazard::Assignment,
                Hazard::Indirection,
                Hazard::Subscript,
                Hazard::PromptExpansion,
            ],
            false,
        );
        check("${x:-${y:-$(rm z)}}", &["rm z"], &[], false);
        check("$(ls # )\nrm x)", &[], &[], true);
        check("$(cat <<E\n)\nE\n)", &[], &[], true);
        check("$(unclosed", &[], &[], true);
        check("`unclosed", &[], &[], true);
        check("${unclosed", &[], &[], true);
        check("$ alone and $", &[], &[], false);
    }
}
