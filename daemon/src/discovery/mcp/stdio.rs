//! The stdio transport: rmcp's line transport over the child's pipes, with
//! the child's stdout watched for lines that are not JSON.
//!
//! rmcp skips a line that does not parse (as the other MCP SDKs do), so an
//! answer to `tools/call` that is not JSON would leave the call waiting for
//! its timeout (ten minutes by default) with nothing said. The watcher
//! reports such a line to the connection (`Hooks::invalid_json` in
//! `connect.rs`); calls in flight on the server then fail at once, naming
//! the server and quoting the line.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rmcp::RoleClient;
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// Where a line that is not JSON is reported (what was wrong with it).
pub type ReportInvalid = Arc<dyn Fn(String) + Send + Sync>;

/// How much of a bad line an error quotes.
const QUOTE_CHARS: usize = 120;

/// A spawned stdio server: its process and the transport over its pipes.
pub struct ChildTransport {
    /// Killed when the transport is dropped (`kill_on_drop`).
    _child: Child,
    inner: AsyncRwTransport<RoleClient, WatchJson<ChildStdout>, ChildStdin>,
}

impl ChildTransport {
    /// Takes the child's stdin and stdout (both must be piped).
    pub fn new(mut child: Child, report: ReportInvalid) -> std::io::Result<ChildTransport> {
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(std::io::Error::other(
                "the server's stdin and stdout are not pipes",
            ));
        };
        Ok(ChildTransport {
            _child: child,
            inner: AsyncRwTransport::new_client(WatchJson::new(stdout, report), stdin),
        })
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: rmcp::service::TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(
        &mut self,
    ) -> impl Future<Output = Option<rmcp::service::RxJsonRpcMessage<RoleClient>>> + Send {
        self.inner.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Passes bytes through unchanged and checks each complete line: one that
/// is not empty and not JSON is reported.
pub struct WatchJson<R> {
    inner: R,
    line: Vec<u8>,
    /// The current line is too long to check (rmcp drops it anyway).
    skipping: bool,
    report: ReportInvalid,
}

impl<R> WatchJson<R> {
    pub fn new(inner: R, report: ReportInvalid) -> WatchJson<R> {
        WatchJson {
            inner,
            line: Vec::new(),
            skipping: false,
            report,
        }
    }

    fn scan(&mut self, mut bytes: &[u8]) {
        while let Some(end) = bytes.iter().position(|b| *b == b'\n') {
            if !self.skipping {
                self.line.extend_from_slice(&bytes[..end]);
                check_line(&self.line, &*self.report);
            }
            self.line.clear();
            self.skipping = false;
            bytes = &bytes[end + 1..];
        }
        if self.skipping {
            return;
        }
        if self.line.len() + bytes.len() > DEFAULT_MAX_LINE_LENGTH {
            self.line = Vec::new();
            self.skipping = true;
        } else {
            self.line.extend_from_slice(bytes);
        }
    }
}

fn check_line(line: &[u8], report: &(dyn Fn(String) + Send + Sync)) {
    let line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
    if line.trim_ascii().is_empty() {
        return;
    }
    if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(line) {
        let text = String::from_utf8_lossy(line);
        let mut quote: String = text.chars().take(QUOTE_CHARS).collect();
        if quote.len() < text.len() {
            quote.push_str("...");
        }
        report(format!("{e}; the line was {quote:?}"));
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for WatchJson<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let this = &mut *self;
            this.scan(&buf.filled()[before..]);
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lines_that_are_not_json_are_reported() {
        let (tx, mut seen) = tokio::sync::watch::channel(None);
        let report: ReportInvalid = Arc::new(move |problem| {
            tx.send_replace(Some(problem));
        });
        let mut w = WatchJson::new(tokio::io::empty(), report);
        w.scan(b"{\"jsonrpc\":\"2.0\"}\n\n  \r\n\xef\xbb\xbf{}\n{\"a\":");
        assert!(!seen.has_changed().unwrap());
        w.scan(b"[1]}\n{\"split\":");
        assert!(!seen.has_changed().unwrap(), "a line split across reads");
        w.scan(b" true}\n{\"truncated\": [\n");
        assert!(seen.has_changed().unwrap());
        let message = seen.borrow_and_update().clone().unwrap();
        assert!(message.contains("truncated"), "{message}");
    }
}
