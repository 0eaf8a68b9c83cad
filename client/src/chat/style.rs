//! ANSI styling, off when `NO_COLOR` is set or stdout is not a terminal.

use std::io::IsTerminal;

/// Whether to colour, and the few styles the chat uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    pub color: bool,
}

impl Style {
    /// Colours only on a terminal, and never with `NO_COLOR` set (to
    /// anything but the empty string, as no-color.org says).
    pub fn detect() -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style {
            color: !no_color && std::io::stdout().is_terminal(),
        }
    }

    #[cfg(test)]
    pub fn plain() -> Style {
        Style { color: false }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.color && !text.is_empty() {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    pub fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }
    pub fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }
    pub fn dim_italic(self, text: &str) -> String {
        self.paint("2;3", text)
    }
    pub fn heading(self, text: &str) -> String {
        self.paint("1;4", text)
    }
    pub fn red(self, text: &str) -> String {
        self.paint("31", text)
    }
    pub fn green(self, text: &str) -> String {
        self.paint("32", text)
    }
    pub fn yellow(self, text: &str) -> String {
        self.paint("33", text)
    }
    pub fn bold_yellow(self, text: &str) -> String {
        self.paint("1;33", text)
    }
    pub fn cyan(self, text: &str) -> String {
        self.paint("36", text)
    }
    pub fn magenta(self, text: &str) -> String {
        self.paint("35", text)
    }
    pub fn code(self, text: &str) -> String {
        self.paint("33", text)
    }
}
