//! A line-delimited JSON-RPC peer on a child's stdin/stdout, for the
//! stdio adapters (`gemctl acp`, `gemctl mcp serve`): send requests and
//! notifications, read every message, answer the child's requests.

#![allow(dead_code)]

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

pub struct StdioPeer {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl StdioPeer {
    /// Spawns `cmd` with piped stdin/stdout (stderr inherited).
    pub fn spawn(mut cmd: std::process::Command) -> StdioPeer {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = Command::from(cmd)
            .kill_on_drop(true)
            .spawn()
            .expect("spawn");
        let stdin = child.stdin.take().expect("stdin");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        StdioPeer {
            child,
            stdin,
            lines,
            next_id: 1,
        }
    }

    pub async fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.expect("write");
        self.stdin.flush().await.expect("flush");
    }

    /// Sends a request; returns its id.
    pub async fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(&message).await;
        id
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// Answers a request the child sent.
    pub async fn respond(&mut self, id: &Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
            .await;
    }

    /// The next message (panics after 30 s or at end of output).
    pub async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
            .await
            .expect("timed out waiting for a message")
            .expect("read")
            .expect("the child closed its stdout");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON: {line:?}: {e}"))
    }

    /// Reads messages until `done` holds for one; returns all of them, that
    /// one last.
    pub async fn until(&mut self, mut done: impl FnMut(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let message = self.next().await;
            let stop = done(&message);
            seen.push(message);
            if stop {
                return seen;
            }
        }
    }

    /// Sends a request and reads until its response; returns the response
    /// and what came before it.
    pub async fn call(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        let id = self.request(method, params).await;
        let mut seen = self.until(|m| is_response(m, id)).await;
        let response = seen.pop().expect("response");
        (response, seen)
    }

    /// Closes stdin and waits for the child to exit.
    pub async fn close(mut self) -> Option<i32> {
        drop(self.stdin);
        let status = tokio::time::timeout(Duration::from_secs(20), self.child.wait())
            .await
            .expect("the child did not exit after stdin closed")
            .expect("wait");
        status.code()
    }
}

pub fn is_response(message: &Value, id: u64) -> bool {
    message.get("method").is_none() && message["id"] == json!(id)
}

/// Whether `message` is a request (from the child) for `method`.
pub fn is_request(message: &Value, method: &str) -> bool {
    message["method"] == method && message.get("id").is_some()
}
