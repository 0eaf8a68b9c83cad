//! How a session's events look in the chat: the model's text as
//! Markdown, thoughts dimmed (or shown, or hidden), tool calls as one line
//! each with a spinner while they run, edits as coloured diffs, and how
//! turns end.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use geminid_protocol::tool::{
    CallState, ConfirmationRequest, ContentPart, ToolCallSnapshot, ToolDisplay,
};

use super::Thoughts;
use super::markdown::Markdown;
use super::screen::{Screen, Spinner};
use super::style::Style;

/// A part of a line held longer than this (the model paused mid-line)
/// is shown.
const HOLD: Duration = Duration::from_millis(700);

/// Lines of a tool's text result shown under its line.
const RESULT_LINES: usize = 6;

/// Renders events onto the screen.
pub struct View {
    pub screen: Screen,
    style: Style,
    thoughts: Thoughts,
    text: Markdown,
    /// The incomplete last line of the thoughts.
    thought: String,
    spinner: Spinner,
    /// Executing calls, oldest first: their one-line descriptions.
    running: BTreeMap<u64, String>,
    /// Incomplete last lines of running calls' output.
    output: HashMap<String, String>,
    /// Calls whose diff was already shown (in their confirmation).
    diff_shown: HashSet<String>,
    /// When the last text or thought delta came.
    last_delta: Instant,
}

impl View {
    pub fn new(screen: Screen, thoughts: Thoughts) -> View {
        let style = screen.style;
        View {
            spinner: Spinner::new(screen.clone()),
            screen,
            style,
            thoughts,
            text: Markdown::new(style),
            thought: String::new(),
            running: BTreeMap::new(),
            output: HashMap::new(),
            diff_shown: HashSet::new(),
            last_delta: Instant::now(),
        }
    }

    pub fn style(&self) -> Style {
        self.style
    }

    pub fn print(&self, text: &str) {
        self.screen.print(text);
    }

    /// A delta of the model's answer.
    pub fn text(&mut self, delta: &str) {
        self.flush_thought();
        self.last_delta = Instant::now();
        let out = self
            .text
            .push(delta, super::screen::width().saturating_sub(1));
        self.screen.print(&out);
    }

    /// A delta of the model's thoughts.
    pub fn thought(&mut self, delta: &str) {
        if self.thoughts == Thoughts::Hide {
            return;
        }
        let flushed = self.text.flush(false);
        self.screen.print(&flushed);
        self.last_delta = Instant::now();
        self.thought.push_str(delta);
        if let Some(end) = self.thought.rfind('\n') {
            let complete: String = self.thought.drain(..=end).collect();
            let out: String = complete
                .lines()
                .map(|l| self.thought_line(l) + "\n")
                .collect();
            self.screen.print(&out);
        }
    }

    fn thought_line(&self, line: &str) -> String {
        match self.thoughts {
            Thoughts::Show => format!("  {line}"),
            Thoughts::Dim | Thoughts::Hide => self.style.dim_italic(&format!("  ┊ {line}")),
        }
    }

    fn flush_thought(&mut self) {
        if !self.thought.is_empty() {
            let line = std::mem::take(&mut self.thought);
            let out = self.thought_line(&line);
            self.screen.print(&out);
        }
    }

    /// Called now and then: shows a partial line the model paused on.
    pub fn tick(&mut self) {
        if (self.text.holds() || !self.thought.is_empty()) && self.last_delta.elapsed() >= HOLD {
            self.flush(false);
        }
    }

    /// Prints what is buffered of the streams (before other output).
    pub fn flush(&mut self, end_of_stream: bool) {
        self.flush_thought();
        let out = self.text.flush(end_of_stream);
        self.screen.print(&out);
    }

    /// A tool call's new snapshot.
    pub fn call(&mut self, call: &ToolCallSnapshot) {
        let s = self.style;
        if let Some(delta) = &call.output_delta {
            self.output_delta(call, delta);
            return;
        }
        let key = order_key(&call.call_id);
        match call.state {
            CallState::Validating | CallState::Scheduled | CallState::AwaitingApproval => {}
            CallState::Executing => {
                self.flush(false);
                self.running.insert(key, describe(call));
                self.update_spinner();
            }
            CallState::Success
            | CallState::Error
            | CallState::Cancelled
            | CallState::Interrupted => {
                self.flush(false);
                self.running.remove(&key);
                self.update_spinner();
                let mut out = String::new();
                if let Some(rest) = self.output.remove(&call.call_id).filter(|r| !r.is_empty()) {
                    out.push_str(&s.dim(&format!("  │ {rest}")));
                    out.push('\n');
                }
                let what = describe(call);
                let line = match call.state {
                    CallState::Success => format!("{} {what}", s.green("✓")),
                    CallState::Cancelled => format!(
                        "{} {what}: {}",
                        s.yellow("⊘"),
                        s.yellow(&error_message(call, "cancelled"))
                    ),
                    _ => format!(
                        "{} {what}: {}",
                        s.red("✗"),
                        s.red(&error_message(call, "failed"))
                    ),
                };
                out.push_str(&line);
                out.push('\n');
                if let Some(result) = &call.result {
                    match &result.display {
                        ToolDisplay::FileDiff(diff) => {
                            if !self.diff_shown.remove(&call.call_id) {
                                out.push_str(&colored_diff(&diff.file_diff, s));
                            }
                        }
                        ToolDisplay::Text { text } | ToolDisplay::Markdown { text } => {
                            out.push_str(&excerpt(result.summary.as_deref().unwrap_or(text), s));
                        }
                    }
                    for part in &result.llm_content {
                        if let ContentPart::InlineData { mime_type, data } = part {
                            out.push_str(&s.dim(&format!(
                                "  [inline {mime_type}, {} base64 bytes]\n",
                                data.len()
                            )));
                        }
                    }
                }
                self.diff_shown.remove(&call.call_id);
                self.screen.print(&out);
            }
        }
    }

    fn output_delta(&mut self, call: &ToolCallSnapshot, delta: &str) {
        let buffer = self.output.entry(call.call_id.clone()).or_default();
        buffer.push_str(delta);
        let Some(end) = buffer.rfind('\n') else {
            return;
        };
        let complete: String = buffer.drain(..=end).collect();
        let out: String = complete
            .lines()
            .map(|l| self.style.dim(&format!("  │ {l}")) + "\n")
            .collect();
        self.flush(false);
        self.screen.print(&out);
    }

    fn update_spinner(&mut self) {
        let mut running = self.running.values();
        match (running.next(), self.running.len()) {
            (None, _) => self.spinner.stop(),
            (Some(first), 1) => self.spinner.show(first),
            (Some(first), n) => self.spinner.show(&format!("{first} (+{} more)", n - 1)),
        }
    }

    /// The question block of a call awaiting approval.
    pub fn confirmation(&mut self, call: &ToolCallSnapshot) -> String {
        self.flush(false);
        let s = self.style;
        let mut out = String::new();
        match &call.confirmation {
            Some(ConfirmationRequest::Edit { title, diff }) => {
                out.push_str(&s.bold(title));
                out.push('\n');
                out.push_str(&colored_diff(&diff.file_diff, s));
                self.diff_shown.insert(call.call_id.clone());
            }
            Some(ConfirmationRequest::Exec { title, command, .. }) => {
                out.push_str(&format!(
                    "{}\n  {} {}\n",
                    s.bold(title),
                    s.dim("$"),
                    s.cyan(command)
                ));
            }
            Some(ConfirmationRequest::Mcp {
                title,
                server_name,
                tool_name,
            }) => out.push_str(&format!(
                "{}\n  MCP server {}, tool {}\n",
                s.bold(title),
                s.cyan(server_name),
                s.cyan(tool_name)
            )),
            Some(ConfirmationRequest::Info {
                title,
                prompt,
                urls,
            }) => {
                out.push_str(&format!("{}\n  {prompt}\n", s.bold(title)));
                for url in urls {
                    out.push_str(&format!("  {}\n", s.cyan(url)));
                }
            }
            Some(ConfirmationRequest::Plan {
                title,
                plan_path,
                plan,
            }) => {
                out.push_str(&format!("{}\n  {}\n", s.bold(title), s.cyan(plan_path)));
                for line in plan.lines() {
                    out.push_str(&format!("  │ {line}\n"));
                }
            }
            None => {}
        }
        out.push_str(&format!(
            "{}\n{}\n",
            s.bold_yellow(&format!(
                "Allow {}? [{}]",
                call.name,
                crate::answers::keys(call)
            )),
            s.yellow(&crate::answers::menu(call))
        ));
        out
    }

    /// A turn ended: flush its text and say how, unless it completed.
    pub fn turn_finished(&mut self, reason: &str, message: Option<&str>) {
        self.flush(true);
        self.running.clear();
        self.update_spinner();
        let s = self.style;
        let line = match (reason, message) {
            ("completed", _) => String::new(),
            ("cancelled", _) => s.yellow("⊘ turn cancelled"),
            ("interrupted", _) => s.yellow("⊘ turn interrupted (the daemon stopped)"),
            (reason, Some(message)) => s.red(&format!("✗ turn ended: {reason}: {message}")),
            (reason, None) => s.red(&format!("✗ turn ended: {reason}")),
        };
        if line.is_empty() {
            self.screen.print(" ");
        } else {
            self.screen.print(&format!("{line}\n "));
        }
    }
}

/// `write_file · Writing to hello.txt`.
pub fn describe(call: &ToolCallSnapshot) -> String {
    match &call.description {
        Some(description) if !description.is_empty() => format!("{} · {description}", call.name),
        _ => call.name.clone(),
    }
}

fn error_message(call: &ToolCallSnapshot, default: &str) -> String {
    call.error
        .as_ref()
        .map(|e| e.message.clone())
        .unwrap_or_else(|| default.to_owned())
}

fn order_key(call_id: &str) -> u64 {
    call_id
        .strip_prefix("call-")
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX)
}

/// The first lines of a result, dimmed and indented.
fn excerpt(text: &str, s: Style) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    for line in lines.iter().take(RESULT_LINES) {
        out.push_str(&s.dim(&format!("  {line}")));
        out.push('\n');
    }
    if lines.len() > RESULT_LINES {
        out.push_str(&s.dim(&format!("  … {} more lines", lines.len() - RESULT_LINES)));
        out.push('\n');
    }
    out
}

/// A unified diff, indented, additions green, removals red, hunks cyan.
pub fn colored_diff(diff: &str, s: Style) -> String {
    let mut out = String::new();
    for line in diff.lines() {
        let painted = if line.starts_with("+++") || line.starts_with("---") {
            s.bold(line)
        } else if line.starts_with("@@") {
            s.cyan(line)
        } else if line.starts_with('+') {
            s.green(line)
        } else if line.starts_with('-') {
            s.red(line)
        } else if line.starts_with('\\') {
            s.dim(line)
        } else {
            line.to_owned()
        };
        out.push_str("  ");
        out.push_str(&painted);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diffs_are_coloured_by_line_kind() {
        let s = Style { color: true };
        let out = colored_diff("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n same", s);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "  \x1b[1m--- a/x\x1b[0m");
        assert_eq!(lines[2], "  \x1b[36m@@ -1 +1 @@\x1b[0m");
        assert_eq!(lines[3], "  \x1b[31m-old\x1b[0m");
        assert_eq!(lines[4], "  \x1b[32m+new\x1b[0m");
        assert_eq!(lines[5], "   same");
        assert_eq!(colored_diff("+x", Style::plain()), "  +x\n");
    }

    #[test]
    fn long_results_are_cut() {
        let text: String = (1..=9).map(|i| format!("l{i}\n")).collect();
        let out = excerpt(&text, Style::plain());
        assert_eq!(out.lines().count(), RESULT_LINES + 1);
        assert!(out.ends_with("  … 3 more lines\n"));
    }
}
