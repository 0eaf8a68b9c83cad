//! One call's progress on its way to the call's output: a server may send
//! thousands of notifications a second; each would be an event in the
//! session's log, so they go out in batches, at most one per
//! [`PROGRESS_EVERY`], of at most [`PROGRESS_KEEP_BYTES`]. Which call a
//! notification belongs to is `calls.rs`'s business.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::ProgressNotificationParam;

use crate::tools::OutputSink;

/// A call's progress goes out at most this often; what arrives in between
/// is batched into one output delta.
pub const PROGRESS_EVERY: Duration = Duration::from_millis(100);
/// How much progress text one batch keeps (the newest lines; older ones
/// are counted as skipped).
pub const PROGRESS_KEEP_BYTES: usize = 16 * 1024;

pub struct Progress {
    sink: OutputSink,
    pending: Mutex<Pending>,
}

#[derive(Default)]
struct Pending {
    lines: std::collections::VecDeque<String>,
    bytes: usize,
    skipped: u64,
    last_sent: Option<tokio::time::Instant>,
    flush_scheduled: bool,
}

/// The line a progress notification becomes.
pub fn line(params: &ProgressNotificationParam) -> String {
    let amount = match params.total {
        Some(total) => format!("{}/{}", params.progress, total),
        None => params.progress.to_string(),
    };
    match &params.message {
        Some(message) => format!("[{amount}] {message}\n"),
        None => format!("[{amount}]\n"),
    }
}

impl Progress {
    pub fn new(sink: OutputSink) -> Arc<Progress> {
        Arc::new(Progress {
            sink,
            pending: Mutex::new(Pending::default()),
        })
    }

    /// The call's sink (and through it, its asker).
    pub fn sink(&self) -> &OutputSink {
        &self.sink
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn push(self: &Arc<Self>, line: String) {
        let mut p = self.lock();
        p.bytes += line.len();
        p.lines.push_back(line);
        while p.bytes > PROGRESS_KEEP_BYTES && p.lines.len() > 1 {
            if let Some(old) = p.lines.pop_front() {
                p.bytes -= old.len();
                p.skipped += 1;
            }
        }
        if p.flush_scheduled {
            return;
        }
        let now = tokio::time::Instant::now();
        match p.last_sent {
            Some(at) if now < at + PROGRESS_EVERY => {
                p.flush_scheduled = true;
                let this = self.clone();
                tokio::spawn(async move {
                    tokio::time::sleep_until(at + PROGRESS_EVERY).await;
                    this.flush_locked(&mut this.lock());
                });
            }
            Some(_) | None => self.flush_locked(&mut p),
        }
    }

    /// Sends what is pending (the call is over, or a batch is due).
    pub fn flush(&self) {
        self.flush_locked(&mut self.lock());
    }

    /// Sends what is pending (under the lock, so batches stay in order).
    fn flush_locked(&self, p: &mut Pending) {
        p.flush_scheduled = false;
        if p.lines.is_empty() {
            return;
        }
        let mut text = String::with_capacity(p.bytes + 64);
        if p.skipped > 0 {
            text.push_str(&format!(
                "[... {} progress updates skipped ...]\n",
                p.skipped
            ));
        }
        text.extend(p.lines.drain(..));
        p.bytes = 0;
        p.skipped = 0;
        p.last_sent = Some(tokio::time::Instant::now());
        self.sink.send(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_progress_flood_is_batched_and_the_rest_flushed_at_the_end() {
        let sent = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = {
            let sent = sent.clone();
            OutputSink::new(move |text| sent.lock().unwrap().push(text))
        };
        let progress = Progress::new(sink);
        for i in 0..2000 {
            progress.push(format!("[{i}/2000] {}\n", "x".repeat(80)));
        }
        // The call ends.
        progress.flush();
        tokio::time::sleep(PROGRESS_EVERY * 2).await;
        let sent = sent.lock().unwrap();
        // The first line at once, everything else in one batch when the
        // call ended (the scheduled flush then finds nothing).
        assert_eq!(
            sent.len(),
            2,
            "{:?}",
            sent.iter().map(String::len).collect::<Vec<_>>()
        );
        assert!(sent[0].starts_with("[0/2000]"), "{}", sent[0]);
        assert!(sent[1].starts_with("[... "), "{}", &sent[1][..40]);
        assert!(sent[1].ends_with(&format!("[1999/2000] {}\n", "x".repeat(80))));
        assert!(
            sent[1].len() <= PROGRESS_KEEP_BYTES + 64,
            "{}",
            sent[1].len()
        );
    }
}
