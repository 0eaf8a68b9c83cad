//! Line-buffered Markdown for a terminal: the model's text arrives in
//! deltas; each complete line is rendered once, so nothing printed is
//! ever taken back. Code fences are indented in a frame and coloured,
//! headings bold, list bullets `•`, quotes behind a bar, `code` and
//! **bold** spans styled. Without colour the structure stays (frame,
//! bullets) and the text is left as the model wrote it.

use super::style::Style;

/// Renders the lines of one stream of Markdown.
pub struct Markdown {
    style: Style,
    /// Inside a fence: its marker (```` ``` ```` or `~~~`).
    fence: Option<String>,
    /// The incomplete last line.
    partial: String,
    /// The indent of the rows after the first of a wrapped line.
    hanging: Option<String>,
}

impl Markdown {
    pub fn new(style: Style) -> Markdown {
        Markdown {
            style,
            fence: None,
            partial: String::new(),
            hanging: None,
        }
    }

    /// Takes a delta; returns the rendered rows (each ending in a
    /// newline), or an empty string. A line longer than `width` is not
    /// held until its end: its rows go out word-wrapped as they fill
    /// (code is never wrapped).
    pub fn push(&mut self, delta: &str, width: usize) -> String {
        self.partial.push_str(delta);
        let mut out = String::new();
        loop {
            if let Some(end) = self.partial.find('\n') {
                let line: String = self.partial.drain(..=end).collect();
                out.push_str(&self.row(line.trim_end_matches(['\n', '\r']), true));
                continue;
            }
            if self.fence.is_some() {
                break;
            }
            let room = width
                .saturating_sub(self.hanging.as_deref().map_or(0, visible_len))
                .max(20);
            let Some(cut) = wrap_point(&self.partial, room) else {
                break;
            };
            let row: String = self.partial.drain(..cut).collect();
            let row = row.trim_end().to_owned();
            self.partial = self.partial.trim_start_matches(' ').to_owned();
            out.push_str(&self.row(&row, false));
        }
        out
    }

    /// Renders what is left of the last line (the stream paused or
    /// ended), and closes an unclosed fence at the end of a stream. A
    /// line cut short by a pause goes on in the next row.
    pub fn flush(&mut self, end_of_stream: bool) -> String {
        let mut out = String::new();
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            out.push_str(&self.row(&line, end_of_stream));
        }
        if end_of_stream {
            self.hanging = None;
            if self.fence.take().is_some() {
                out.push_str(&self.style.dim("  ╰─"));
                out.push('\n');
            }
        }
        out
    }

    /// Whether part of a line is held.
    pub fn holds(&self) -> bool {
        !self.partial.is_empty()
    }

    /// One row: the start of a line is rendered as a line, the rest of a
    /// wrapped line as text under it.
    fn row(&mut self, text: &str, end_of_line: bool) -> String {
        let rendered = match &self.hanging {
            Some(indent) if self.fence.is_none() => {
                format!("{indent}{}", inline(text.trim_start(), self.style))
            }
            _ => {
                let rendered = self.line(text);
                if !end_of_line && self.fence.is_none() {
                    self.hanging = Some(hanging(text, self.style));
                }
                rendered
            }
        };
        if end_of_line {
            self.hanging = None;
        }
        rendered + "\n"
    }

    /// One complete line.
    pub fn line(&mut self, line: &str) -> String {
        let s = self.style;
        let trimmed = line.trim_start();
        if let Some(marker) = &self.fence {
            if trimmed.starts_with(marker.as_str()) && trimmed.trim_end() == marker.as_str() {
                self.fence = None;
                return s.dim("  ╰─");
            }
            return format!("{}{}", s.dim("  │ "), s.code(line));
        }
        for marker in ["```", "~~~"] {
            if let Some(lang) = trimmed.strip_prefix(marker) {
                self.fence = Some(marker.to_owned());
                let lang = lang.trim_matches(|c: char| c == '`' || c == '~').trim();
                return s.dim(format!("  ╭─ {lang}").trim_end());
            }
        }
        if let Some((level, text)) = heading(trimmed) {
            return if s.color {
                if level <= 2 {
                    s.heading(text)
                } else {
                    s.bold(text)
                }
            } else {
                line.to_owned()
            };
        }
        if let Some(text) = trimmed
            .strip_prefix("> ")
            .or(trimmed.strip_prefix(">").filter(|t| t.is_empty()))
        {
            return format!("{}{}", s.dim("│ "), s.dim(&inline(text, s)));
        }
        if is_rule(trimmed) {
            return s.dim("────────────────────────────────────────");
        }
        let indent = &line[..line.len() - trimmed.len()];
        for bullet in ["- ", "* ", "+ "] {
            if let Some(text) = trimmed.strip_prefix(bullet) {
                return format!("{indent}{} {}", s.cyan("•"), inline(text, s));
            }
        }
        if let Some((number, text)) = numbered(trimmed) {
            return format!("{indent}{} {}", s.cyan(number), inline(text, s));
        }
        inline(line, s)
    }
}

/// Where to cut a line to fit `room` columns: after the last space that
/// fits, else at `room` (a very long word). `None` when it fits.
fn wrap_point(line: &str, room: usize) -> Option<usize> {
    if line.chars().count() <= room {
        return None;
    }
    let limit = line.char_indices().nth(room).map_or(line.len(), |(i, _)| i);
    match line[..limit].rfind(' ') {
        Some(space) if space > 0 => Some(space + 1),
        _ => Some(limit),
    }
}

fn visible_len(text: &str) -> usize {
    let mut n = 0;
    let mut escape = false;
    for c in text.chars() {
        match (escape, c) {
            (false, '\x1b') => escape = true,
            (true, 'm') => escape = false,
            (true, _) => {}
            (false, _) => n += 1,
        }
    }
    n
}

/// The indent under a wrapped line: past a bullet or number, behind a
/// quote bar, else none.
fn hanging(line: &str, s: Style) -> String {
    let trimmed = line.trim_start();
    let indent = line.len() - trimmed.len();
    if trimmed.starts_with("> ") {
        return s.dim("│ ");
    }
    if ["- ", "* ", "+ "].iter().any(|b| trimmed.starts_with(b)) {
        return " ".repeat(indent + 2);
    }
    if let Some((number, _)) = numbered(trimmed) {
        return " ".repeat(indent + number.len() + 1);
    }
    String::new()
}

/// `# Title` → (1, "Title").
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    line[level..]
        .strip_prefix(' ')
        .map(|text| (level, text.trim()))
}

/// `1. item` or `1) item` → ("1.", "item").
fn numbered(line: &str) -> Option<(&str, &str)> {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 3 {
        return None;
    }
    let rest = &line[digits..];
    if (rest.starts_with(". ") || rest.starts_with(") ")) && rest.len() > 2 {
        Some((&line[..digits + 1], &rest[2..]))
    } else {
        None
    }
}

fn is_rule(line: &str) -> bool {
    let line = line.trim_end();
    line.len() >= 3
        && ["-", "*", "_"]
            .iter()
            .any(|c| line.chars().all(|x| x.to_string() == *c || x == ' '))
        && line.chars().filter(|c| !c.is_whitespace()).count() >= 3
}

/// `code` spans and **bold**; the rest as written. Unclosed markers stay
/// as text.
pub fn inline(text: &str, s: Style) -> String {
    if !s.color {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        let tick = rest.find('`');
        let star = rest.find("**");
        match (tick, star) {
            (Some(t), st) if st.is_none_or(|st| t < st) => {
                if let Some(len) = rest[t + 1..].find('`') {
                    out.push_str(&rest[..t]);
                    out.push_str(&s.code(&rest[t + 1..t + 1 + len]));
                    rest = &rest[t + 2 + len..];
                } else {
                    out.push_str(rest);
                    break;
                }
            }
            (_, Some(st)) => {
                if let Some(len) = rest[st + 2..].find("**") {
                    out.push_str(&rest[..st]);
                    out.push_str(&s.bold(&rest[st + 2..st + 2 + len]));
                    rest = &rest[st + 4 + len..];
                } else {
                    out.push_str(rest);
                    break;
                }
            }
            _ => {
                out.push_str(rest);
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str) -> String {
        let mut md = Markdown::new(Style::plain());
        let mut out = md.push(text, 200);
        out.push_str(&md.flush(true));
        out
    }

    #[test]
    fn lines_render_only_when_complete() {
        let mut md = Markdown::new(Style::plain());
        assert_eq!(md.push("Hello ", 80), "");
        assert_eq!(md.push("world\nand", 80), "Hello world\n");
        assert_eq!(md.flush(true), "and\n");
    }

    #[test]
    fn long_lines_stream_as_wrapped_rows() {
        let mut md = Markdown::new(Style::plain());
        assert_eq!(md.push("- alpha beta gamma", 20), "");
        assert_eq!(md.push(" delta epsilon", 20), "• alpha beta gamma\n");
        assert_eq!(md.push(" zeta\nnext", 20), "  delta epsilon zeta\n");
        // A pause shows the held part; the line goes on in the next row.
        assert_eq!(md.flush(false), "next\n");
        assert_eq!(md.push(" and more\n", 20), "and more\n");
        // Code is never wrapped.
        assert_eq!(
            md.push("```\nlet a_very_long_line_of_code = 1;", 20),
            "  ╭─\n"
        );
    }

    #[test]
    fn fences_are_framed_and_indented() {
        assert_eq!(
            plain("Look:\n```rust\nfn main() {}\n```\ndone\n"),
            "Look:\n  ╭─ rust\n  │ fn main() {}\n  ╰─\ndone\n"
        );
        // An unclosed fence is closed at the end of the stream.
        assert_eq!(plain("```\nx"), "  ╭─\n  │ x\n  ╰─\n");
        // Markdown inside a fence is code.
        assert_eq!(
            plain("~~~\n# no\n- no\n~~~\n"),
            "  ╭─\n  │ # no\n  │ - no\n  ╰─\n"
        );
    }

    #[test]
    fn lists_quotes_and_rules() {
        assert_eq!(
            plain("- one\n  * two\n3. three\n> said\n---\n"),
            "• one\n  • two\n3. three\n│ said\n────────────────────────────────────────\n"
        );
    }

    #[test]
    fn colour_styles_headings_code_and_bold() {
        let s = Style { color: true };
        let mut md = Markdown::new(s);
        assert_eq!(md.line("# Title"), "\x1b[1;4mTitle\x1b[0m");
        assert_eq!(md.line("### Sub"), "\x1b[1mSub\x1b[0m");
        assert_eq!(
            md.line("run `cargo test` **now**"),
            "run \x1b[33mcargo test\x1b[0m \x1b[1mnow\x1b[0m"
        );
        assert_eq!(md.line("a ` lone tick"), "a ` lone tick");
        // Without colour a heading keeps its marks.
        assert_eq!(Markdown::new(Style::plain()).line("## Two"), "## Two");
    }
}
