//! JSON with comments, as Gemini CLI 0.61 reads `settings.json` and
//! `trustedFolders.json` (`strip-json-comments`, then `JSON.parse`):
//! `//` and `/* */` comments outside strings are blanked (newlines kept,
//! so error lines and columns stay the file's own), and what is left must
//! be strict JSON. Trailing commas stay errors, as in 0.61.

use serde_json::Value;

/// Where and why a text is not JSON with comments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsoncError {
    pub line: u64,
    pub column: u64,
    pub message: String,
}

impl std::fmt::Display for JsoncError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {} column {}: {}",
            self.line, self.column, self.message
        )
    }
}

/// Parses `text`; the error names the line and column in the file.
pub fn parse(text: &str) -> Result<Value, JsoncError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    serde_json::from_str(&strip_comments(text)).map_err(|e| JsoncError {
        line: e.line() as u64,
        column: e.column() as u64,
        message: describe(&e),
    })
}

fn describe(e: &serde_json::Error) -> String {
    // serde_json appends " at line L column C" to its message.
    let full = e.to_string();
    match full.rfind(" at line ") {
        Some(cut) => full[..cut].to_owned(),
        None => full,
    }
}

/// `text` with every comment replaced by spaces (newlines kept).
pub fn strip_comments(text: &str) -> String {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Code,
        Str,
        StrEscape,
        Line,
        Block,
    }
    let mut out = String::with_capacity(text.len());
    let mut state = State::Code;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match state {
            State::Code => match (c, chars.peek()) {
                ('"', _) => {
                    state = State::Str;
                    out.push(c);
                }
                ('/', Some('/')) => {
                    chars.next();
                    out.push_str("  ");
                    state = State::Line;
                }
                ('/', Some('*')) => {
                    chars.next();
                    out.push_str("  ");
                    state = State::Block;
                }
                _ => out.push(c),
            },
            State::Str => {
                out.push(c);
                match c {
                    '\\' => state = State::StrEscape,
                    '"' => state = State::Code,
                    _ => {}
                }
            }
            State::StrEscape => {
                out.push(c);
                state = State::Str;
            }
            State::Line => {
                if c == '\n' || c == '\r' {
                    out.push(c);
                    state = State::Code;
                } else {
                    out.push(' ');
                }
            }
            State::Block => {
                if c == '*' && chars.peek() == Some(&'/') {
                    chars.next();
                    out.push_str("  ");
                    state = State::Code;
                } else if c == '\n' || c == '\r' {
                    out.push(c);
                } else {
                    out.push(' ');
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn comments_go_strings_stay() {
        let text = r#"{
  // the model
  "model": {"name": "m // not a comment"}, /* block
  over lines */ "url": "http://x/*y*/",
  "esc": "a\"//b"
}"#;
        assert_eq!(
            parse(text).unwrap(),
            json!({"model": {"name": "m // not a comment"}, "url": "http://x/*y*/", "esc": "a\"//b"})
        );
    }

    #[test]
    fn errors_keep_the_file_s_lines() {
        let text = "{\n  // c\n  /* d\n */ \"a\": 1,\n}\n";
        let err = parse(text).unwrap_err().to_string();
        assert!(err.starts_with("line 5 column 1"), "{err}");
    }

    #[test]
    fn a_byte_order_mark_is_fine() {
        assert_eq!(parse("\u{feff}{}").unwrap(), json!({}));
    }
}
