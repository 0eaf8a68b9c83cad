//! The line editor (rustyline) on its own thread. It reads one line each
//! time the chat loop says so ([`Input::read`]): the loop answers a
//! line before the next is read, so `$EDITOR` can have the terminal in
//! between, and each read gets the prompt that fits the moment.
//! Everything else is printed through the editor's `ExternalPrinter`
//! (see `screen.rs`).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rustyline::Editor;
use rustyline::config::Config;
use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;
use tokio::sync::mpsc;

use super::screen::Printer;

/// What the person did at the prompt.
#[derive(Debug)]
pub enum Line {
    Text(String),
    /// Ctrl-C.
    Interrupted,
    /// Ctrl-D on an empty line, or the end of input.
    Eof,
    Failed(String),
}

/// The chat loop's end of the input thread.
pub struct Input {
    go: std::sync::mpsc::Sender<(String, String)>,
    pub lines: mpsc::UnboundedReceiver<Line>,
    /// Whether a read is under way (rustyline owns the terminal).
    reading: bool,
}

impl Input {
    /// Starts the thread. Returns the printer when stdin and stdout are
    /// terminals (rustyline only offers one then).
    pub fn start(
        history: Option<PathBuf>,
        entered: Arc<AtomicBool>,
    ) -> Result<(Input, Option<Printer>), String> {
        let (go_tx, go_rx) = std::sync::mpsc::channel::<(String, String)>();
        let (line_tx, line_rx) = mpsc::unbounded_channel();
        let (printer_tx, printer_rx) =
            std::sync::mpsc::channel::<Result<Option<Printer>, String>>();
        std::thread::Builder::new()
            .name("gemctl-chat-input".into())
            .spawn(move || {
                let config = Config::builder()
                    .auto_add_history(false)
                    .max_history_size(1000)
                    .and_then(|b| b.history_ignore_dups(true))
                    .map(|b| b.history_ignore_space(true).build());
                let editor = config.and_then(Editor::<(), DefaultHistory>::with_config);
                let mut editor = match editor {
                    Ok(editor) => editor,
                    Err(e) => {
                        let _ = printer_tx.send(Err(e.to_string()));
                        return;
                    }
                };
                if let Some(path) = &history {
                    let _ = editor.load_history(path);
                }
                let printer = editor
                    .create_external_printer()
                    .ok()
                    .map(|p| Box::new(p) as Printer);
                let _ = printer_tx.send(Ok(printer));
                while let Ok((raw, styled)) = go_rx.recv() {
                    let line = match editor.readline(&(raw.as_str(), styled.as_str())) {
                        Ok(text) => {
                            entered.store(true, Ordering::SeqCst);
                            if !text.trim().is_empty()
                                && editor.add_history_entry(text.as_str()).unwrap_or(false)
                                && let Some(path) = &history
                            {
                                if let Some(dir) = path.parent() {
                                    let _ = std::fs::create_dir_all(dir);
                                }
                                let _ = editor.append_history(path);
                            }
                            Line::Text(text)
                        }
                        Err(ReadlineError::Interrupted) => {
                            entered.store(true, Ordering::SeqCst);
                            Line::Interrupted
                        }
                        Err(ReadlineError::Eof) => Line::Eof,
                        Err(e) => Line::Failed(e.to_string()),
                    };
                    let last = matches!(line, Line::Eof | Line::Failed(_));
                    if line_tx.send(line).is_err() || last {
                        return;
                    }
                }
            })
            .map_err(|e| format!("cannot start the input thread: {e}"))?;
        let printer = printer_rx
            .recv()
            .map_err(|_| "the input thread ended at once".to_owned())??;
        Ok((
            Input {
                go: go_tx,
                lines: line_rx,
                reading: false,
            },
            printer,
        ))
    }

    /// Reads the next line with this prompt (`raw` and its styled form of
    /// the same width), unless a read is under way.
    pub fn read(&mut self, raw: &str, styled: &str) {
        if !self.reading && self.go.send((raw.to_owned(), styled.to_owned())).is_ok() {
            self.reading = true;
        }
    }

    /// Waits for the line; the next `read` starts another.
    pub async fn next(&mut self) -> Option<Line> {
        let line = self.lines.recv().await;
        self.reading = false;
        line
    }
}

/// `$XDG_STATE_HOME/gemctl/chat_history`, else
/// `~/.local/state/gemctl/chat_history`.
pub fn history_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|home| PathBuf::from(home).join(".local/state"))
        })?;
    Some(base.join("gemctl/chat_history"))
}
