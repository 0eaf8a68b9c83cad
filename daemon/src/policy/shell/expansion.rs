//! Which parameter expansions and arithmetic texts are inert.
//!
//! Bash evaluates arithmetic recursively: a variable's value in `$((x))`,
//! `((x))`, `let`, an array subscript or a substring offset is itself
//! evaluated as an expression, and a subscript in it runs command
//! substitutions (`x='a[$(cmd)]'; echo $((x))` runs `cmd`). So arithmetic is
//! inert only when it holds literal numbers and operators. A plain expansion
//! (`$x`, `${x}`, `${x:-word}`, `${#x}`, `${x%pat}`) only produces text and
//! is inert; what its operand words contain is checked where they are found.

use super::types::Hazard;

/// Whether `text` is arithmetic on literal numbers only: no variable names,
/// no expansions, no quotes, no subscripts.
pub(crate) fn is_literal_arithmetic(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'0'..=b'9' => {
                i += 1;
                // `0x1f`, `8#17`, `36#zz`: letters only right after digits.
                while bytes
                    .get(i)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'#' | b'@' | b'_'))
                {
                    i += 1;
                }
            }
            b' ' | b'\t' | b'\n' | b'+' | b'-' | b'*' | b'/' | b'%' | b'<' | b'>' | b'=' | b'!'
            | b'&' | b'|' | b'^' | b'~' | b'?' | b':' | b',' | b'(' | b')' => i += 1,
            _ => return false,
        }
    }
    true
}

/// Why the parameter expansion `${inner}` is not inert at its top level,
/// or `None` when it only produces text. Operand words (`${x:-word}`) are
/// not judged here.
pub(crate) fn brace_hazard(inner: &str) -> Option<Hazard> {
    if inner == "#" || inner == "!" {
        // `${#}` counts the arguments; `${!}` is the last background pid.
        return None;
    }
    if let Some(rest) = inner.strip_prefix('#')
        && let Some((name_end, subscript)) = parameter(rest)
    {
        return match rest.len() == name_end {
            true => subscript_hazard(subscript),
            false => Some(Hazard::Unrecognised),
        };
    }
    if let Some(rest) = inner.strip_prefix('!') {
        return indirect(rest);
    }
    let Some((name_end, subscript)) = parameter(inner) else {
        return Some(Hazard::Unrecognised);
    };
    if let Some(hazard) = subscript_hazard(subscript) {
        return Some(hazard);
    }
    operator_hazard(inner.get(name_end..).unwrap_or(""))
}

/// `${!name*}`, `${!name@}` (names) and `${!name[@]}` (keys) are inert;
/// anything else after `!` is an indirection.
fn indirect(rest: &str) -> Option<Hazard> {
    let ident = identifier_len(rest);
    if ident == 0 {
        return Some(Hazard::Indirection);
    }
    match rest.get(ident..) {
        Some("*" | "@" | "[@]" | "[*]") => None,
        _ => Some(Hazard::Indirection),
    }
}

fn operator_hazard(op: &str) -> Option<Hazard> {
    let bytes = op.as_bytes();
    match bytes {
        [] => None,
        [b':', b'=', ..] | [b'=', ..] => Some(Hazard::Assignment),
        [b':', b'-' | b'+' | b'?', ..] | [b'-' | b'+' | b'?', ..] => None,
        [b'#' | b'%' | b'/' | b'^' | b',', ..] => None,
        [b'@', transform] if b"QEUuLaAKk".contains(transform) => None,
        [b'@', b'P'] => Some(Hazard::PromptExpansion),
        [b':', ..] => {
            // `${x:offset:length}`: both are arithmetic.
            let literal = op
                .get(1..)
                .unwrap_or("")
                .split(':')
                .all(is_literal_arithmetic);
            (!literal).then_some(Hazard::Arithmetic)
        }
        _ => Some(Hazard::Unrecognised),
    }
}

/// Parses a parameter name (`name`, `12`, `@`, `#`, ...) and an optional
/// `[subscript]`: returns where the parameter ends and the subscript.
fn parameter(text: &str) -> Option<(usize, Option<&str>)> {
    let bytes = text.as_bytes();
    let name_len = match bytes.first()? {
        b'0'..=b'9' => bytes.iter().take_while(|b| b.is_ascii_digit()).count(),
        b'@' | b'*' | b'#' | b'?' | b'-' | b'$' | b'!' => 1,
        _ => identifier_len(text),
    };
    if name_len == 0 {
        return None;
    }
    if bytes.get(name_len) != Some(&b'[') {
        return Some((name_len, None));
    }
    let close = matching_bracket(text, name_len)?;
    Some((close + 1, text.get(name_len + 1..close)))
}

/// The subscript of `${a[i]}`: `@`, `*` and literal numbers are inert.
fn subscript_hazard(subscript: Option<&str>) -> Option<Hazard> {
    match subscript {
        None | Some("@" | "*") => None,
        Some(index) if !index.trim().is_empty() && is_literal_arithmetic(index) => None,
        Some(_) => Some(Hazard::Subscript),
    }
}

fn identifier_len(text: &str) -> usize {
    let bytes = text.as_bytes();
    match bytes.first() {
        Some(b) if b.is_ascii_alphabetic() || *b == b'_' => bytes
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
            .count(),
        _ => 0,
    }
}

/// Whether `text` is a plain variable name.
pub(crate) fn is_identifier(text: &str) -> bool {
    !text.is_empty() && identifier_len(text) == text.len()
}

/// The index of the `]` closing the `[` at `open` (nested brackets count).
fn matching_bracket(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, b) in text.bytes().enumerate().skip(open) {
        match b {
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}
