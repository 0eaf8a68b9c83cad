//! JSON-RPC 2.0 with the editor: one JSON object per line on stdio. The
//! editor is a peer: it sends us requests and notifications, and answers
//! the requests we send it (`session/request_permission`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

/// JSON-RPC error codes we send.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// ACP's `auth_required`: the editor shows its login flow.
    pub const AUTH_REQUIRED: i64 = -32000;
}

/// What the editor answered to one of our requests: its `result`, or its
/// `error` object.
pub type Answer = Result<Value, Value>;

/// Our side of the connection to the editor. Every message goes through one
/// channel to one writer, so they leave in the order they were sent.
pub struct Peer {
    out: mpsc::UnboundedSender<String>,
    next_id: AtomicU64,
    waiting: Mutex<HashMap<u64, oneshot::Sender<Answer>>>,
}

impl Peer {
    /// A peer and the lines it wants written to stdout.
    pub fn new() -> (Arc<Peer>, mpsc::UnboundedReceiver<String>) {
        let (out, lines) = mpsc::unbounded_channel();
        let peer = Peer {
            out,
            next_id: AtomicU64::new(1),
            waiting: Mutex::new(HashMap::new()),
        };
        (Arc::new(peer), lines)
    }

    fn send(&self, message: Value) {
        // The writer only goes away when stdout is closed; then nobody reads.
        let _ = self.out.send(message.to_string());
    }

    pub fn notify(&self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    pub fn respond(&self, id: Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    pub fn respond_error(&self, id: Value, code: i64, message: impl Into<String>) {
        let error = json!({"code": code, "message": message.into()});
        self.send(json!({"jsonrpc": "2.0", "id": id, "error": error}));
    }

    /// Sends a request; returns its id and where its answer will arrive.
    pub fn request(&self, method: &str, params: Value) -> (u64, oneshot::Receiver<Answer>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        (id, rx)
    }

    /// Withdraws a request the editor has not answered yet (`$/cancel_request`);
    /// its waiter gets an error. A request already answered is left alone.
    pub fn cancel_request(&self, id: u64) {
        let waiter = self
            .waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        if let Some(waiter) = waiter {
            self.notify("$/cancel_request", json!({"requestId": id}));
            let _ = waiter.send(Err(json!({"code": -32800, "message": "withdrawn"})));
        }
    }

    /// Routes the editor's answer to the request it answers.
    pub fn resolve(&self, message: &Value) {
        let Some(id) = message.get("id").and_then(Value::as_u64) else {
            return;
        };
        let waiter = self
            .waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        if let Some(waiter) = waiter {
            let answer = match message.get("error") {
                Some(error) => Err(error.clone()),
                None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
            };
            let _ = waiter.send(answer);
        }
    }
}

/// Writes each line to stdout as it comes, until every sender is gone.
pub async fn write_lines(mut lines: mpsc::UnboundedReceiver<String>) {
    let mut stdout = tokio::io::stdout();
    while let Some(mut line) = lines.recv().await {
        line.push('\n');
        if stdout.write_all(line.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
            return;
        }
    }
}

/// A daemon error as a JSON-RPC error for the editor: its code and message
/// are passed on.
pub fn daemon_error(e: &jsonrpsee::core::ClientError) -> (i64, String) {
    match e {
        // No model to talk to is what ACP calls `auth_required`.
        jsonrpsee::core::ClientError::Call(err)
            if err.code() == geminid_protocol::error::MODEL_NOT_CONFIGURED =>
        {
            (code::AUTH_REQUIRED, err.message().to_owned())
        }
        jsonrpsee::core::ClientError::Call(err) => {
            (i64::from(err.code()), err.message().to_owned())
        }
        other => (code::INTERNAL_ERROR, format!("geminid: {other}")),
    }
}
