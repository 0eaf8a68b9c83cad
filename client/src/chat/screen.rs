//! Everything the chat prints goes through [`Screen`], which writes via
//! rustyline's `ExternalPrinter` (so output lands above the prompt line
//! and the line being typed is redrawn below it), or straight to stdout
//! when there is no line editor (stdin not a terminal).
//!
//! The spinner: indicatif runs it (frames, elapsed time, its own steady
//! tick thread) but draws into [`Capture`], a `TermLike` that only keeps
//! the rendered line. The screen then shows that line as the last line
//! above the prompt, replacing the previous frame in place (cursor up one
//! line, clear it) in the same external print that rustyline wraps with
//! clearing and redrawing the prompt. Ordinary output overwrites the
//! spinner line and puts the spinner back below itself. So the spinner
//! never writes while rustyline draws, works under tmux, and needs no
//! pause of the line editor.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};
use rustyline::ExternalPrinter;

use super::style::Style;

/// Up one line, to its start, and clear it.
const OVERWRITE_LAST: &str = "\x1b[1A\r\x1b[2K";

pub type Printer = Box<dyn ExternalPrinter + Send>;

/// The terminal, shared by the chat loop and the spinner's tick thread.
#[derive(Clone)]
pub struct Screen {
    inner: Arc<Mutex<Inner>>,
    /// Set by the input thread when a line was entered: the echoed line
    /// now sits between the spinner and the cursor.
    entered: Arc<AtomicBool>,
    pub style: Style,
    /// Whether the cursor can be moved (a terminal): the spinner only
    /// draws then.
    pub animate: bool,
}

struct Inner {
    printer: Option<Printer>,
    /// The spinner's current line, while one runs.
    spinner: Option<String>,
    /// Whether the last line on screen is the spinner's (or its last
    /// frame), so the next print may overwrite it.
    spinner_last: bool,
    /// While $EDITOR owns the terminal nothing is drawn.
    suspended: bool,
    /// Lines printed while suspended, shown on resume.
    held: String,
}

impl Screen {
    pub fn new(printer: Option<Printer>, style: Style, animate: bool) -> Screen {
        Screen {
            inner: Arc::new(Mutex::new(Inner {
                printer,
                spinner: None,
                spinner_last: false,
                suspended: false,
                held: String::new(),
            })),
            entered: Arc::new(AtomicBool::new(false)),
            style,
            animate,
        }
    }

    /// Prints through the line editor from now on.
    pub fn set_printer(&self, printer: Option<Printer>) {
        self.lock().printer = printer;
    }

    /// The flag the input thread raises when a line is entered.
    pub fn entered_flag(&self) -> Arc<AtomicBool> {
        self.entered.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Prints text (one or more lines) above the prompt.
    pub fn print(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        let mut text = text.to_owned();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let mut inner = self.lock();
        if inner.suspended {
            inner.held.push_str(&text);
            return;
        }
        let overwrite = self.take_spinner_last(&mut inner);
        let mut msg = String::new();
        if overwrite {
            msg.push_str(OVERWRITE_LAST);
        }
        msg.push_str(&text);
        if let Some(spinner) = &inner.spinner {
            msg.push_str(spinner);
            msg.push('\n');
            inner.spinner_last = true;
        }
        inner.write(msg);
    }

    /// Shows (or, with `None`, stops showing) the spinner line. Its last
    /// frame stays until the next print overwrites it.
    pub fn spinner(&self, line: Option<String>) {
        let mut inner = self.lock();
        let Some(line) = line else {
            inner.spinner = None;
            return;
        };
        if inner.suspended || !self.animate {
            return;
        }
        let mut msg = String::new();
        if self.take_spinner_last(&mut inner) {
            msg.push_str(OVERWRITE_LAST);
        }
        msg.push_str(&line);
        msg.push('\n');
        inner.spinner = Some(line);
        inner.spinner_last = true;
        inner.write(msg);
    }

    fn take_spinner_last(&self, inner: &mut Inner) -> bool {
        if self.entered.swap(false, Ordering::SeqCst) {
            inner.spinner_last = false;
        }
        std::mem::take(&mut inner.spinner_last)
    }

    /// Stops drawing (while another program uses the terminal).
    pub fn suspend(&self) {
        let mut inner = self.lock();
        inner.suspended = true;
        inner.spinner_last = false;
    }

    pub fn resume(&self) {
        let held = {
            let mut inner = self.lock();
            inner.suspended = false;
            std::mem::take(&mut inner.held)
        };
        self.print(&held);
    }
}

impl Inner {
    fn write(&mut self, msg: String) {
        if let Some(printer) = self.printer.as_mut()
            && printer.print(msg.clone()).is_ok()
        {
            return;
        }
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(msg.as_bytes());
        let _ = out.flush();
    }
}

/// The width to draw in, from the terminal (80 when unknown).
pub fn width() -> usize {
    let term = console::Term::stdout();
    match term.size_checked() {
        Some((_, cols)) if cols > 10 => usize::from(cols),
        _ => 80,
    }
}

/// Cuts `text` to at most `max` characters (with an ellipsis).
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A `TermLike` that keeps what indicatif draws and hands the line to
/// the screen on flush.
struct Capture {
    line: Mutex<String>,
    sink: Box<dyn Fn(String) + Send + Sync>,
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture").finish_non_exhaustive()
    }
}

impl TermLike for Capture {
    fn width(&self) -> u16 {
        u16::try_from(width()).unwrap_or(80)
    }
    fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.write_str(s)
    }
    fn write_str(&self, s: &str) -> std::io::Result<()> {
        self.line
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_str(s);
        Ok(())
    }
    fn clear_line(&self) -> std::io::Result<()> {
        Ok(())
    }
    fn flush(&self) -> std::io::Result<()> {
        let line = std::mem::take(&mut *self.line.lock().unwrap_or_else(|p| p.into_inner()));
        let line = line.replace('\r', "");
        let line = line.trim_end();
        if !line.is_empty() {
            (self.sink)(line.to_owned());
        }
        Ok(())
    }
}

/// The running tools' spinner: `⠹ Writing x.txt 3s`.
pub struct Spinner {
    screen: Screen,
    bar: Option<ProgressBar>,
}

impl Spinner {
    pub fn new(screen: Screen) -> Spinner {
        Spinner { screen, bar: None }
    }

    /// Shows `message` (starting the spinner and its clock if needed).
    pub fn show(&mut self, message: &str) {
        if !self.screen.animate {
            return;
        }
        let message = truncate(message, width().saturating_sub(16).max(20));
        if let Some(bar) = &self.bar {
            bar.set_message(message);
            return;
        }
        let screen = self.screen.clone();
        let style = self.screen.style;
        let capture = Capture {
            line: Mutex::new(String::new()),
            sink: Box::new(move |line| screen.spinner(Some(style.cyan(&line)))),
        };
        let bar =
            ProgressBar::with_draw_target(None, ProgressDrawTarget::term_like(Box::new(capture)));
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_message(message);
        bar.enable_steady_tick(Duration::from_millis(120));
        self.bar = Some(bar);
    }

    /// Stops the spinner; the next print replaces its last frame.
    pub fn stop(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        self.screen.spinner(None);
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop();
    }
}
