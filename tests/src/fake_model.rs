//! A local fake of the remote model APIs (the only stand-in the tests
//! use): a tiny HTTP/1.1 server on 127.0.0.1 that answers each request
//! with the next scripted reply, in the real wire formats: Gemini
//! `streamGenerateContent?alt=sse` chunks (candidates, parts,
//! functionCall, usageMetadata) and OpenAI chat-completion chunks
//! (choices[].delta with tool_calls deltas, `[DONE]`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// 200 with these SSE `data:` payloads, `gap` apart.
    Stream { events: Vec<String>, gap: Duration },
    /// Like `Stream`, then the connection stays open, silent, until the
    /// client goes away (a model that stalls mid-answer).
    StreamThenHang { events: Vec<String> },
    /// An HTTP error with a body and extra headers.
    Status {
        code: u16,
        body: String,
        headers: Vec<(String, String)>,
    },
}

/// A request the fake received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` when it is not JSON).
    pub body: Value,
    /// The body as text (form posts to a token endpoint, say).
    pub raw: String,
    pub at: Instant,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Chooses the reply to request number `n` (0-based).
pub type Responder = Arc<dyn Fn(&Seen, usize) -> Reply + Send + Sync>;

/// A running fake; stops when dropped.
pub struct FakeModel {
    pub base_url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    vars: Arc<Mutex<Vec<(String, String)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeModel {
    /// Answers requests with `replies` in order; once they run out, with a
    /// 500 that says so.
    pub async fn scripted(replies: Vec<Reply>) -> FakeModel {
        let queue = Arc::new(Mutex::new(VecDeque::from(replies)));
        Self::start(Arc::new(move |_, _| {
            queue.lock().unwrap().pop_front().unwrap_or(Reply::Status {
                code: 500,
                body:
                    json!({"error": {"code": 500, "message": "fake model: no scripted reply left"}})
                        .to_string(),
                headers: Vec::new(),
            })
        }))
        .await
    }

    /// Answers each request with what `responder` says.
    pub async fn start(responder: Responder) -> FakeModel {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind fake model");
        let addr = listener.local_addr().expect("addr");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let vars: Arc<Mutex<Vec<(String, String)>>> = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let substitute = vars.clone();
        // Replies may name `{WS}` and other variables set once the daemon
        // (and its workspace) exists.
        let responder: Responder = Arc::new(move |seen, n| {
            let vars = substitute.lock().unwrap().clone();
            let fill = |s: &String| {
                vars.iter()
                    .fold(s.clone(), |acc, (k, v)| acc.replace(&format!("{{{k}}}"), v))
            };
            match responder(seen, n) {
                Reply::Stream { events, gap } => Reply::Stream {
                    events: events.iter().map(fill).collect(),
                    gap,
                },
                Reply::StreamThenHang { events } => Reply::StreamThenHang {
                    events: events.iter().map(fill).collect(),
                },
                other => other,
            }
        });
        let task = tokio::spawn(async move {
            let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            while let Ok((stream, _)) = listener.accept().await {
                let responder = responder.clone();
                let log = log.clone();
                let count = count.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, responder, log, count).await;
                });
            }
        });
        FakeModel {
            base_url: format!("http://{addr}"),
            seen,
            vars,
            task,
        }
    }

    /// Sets `{name}` in replies sent from now on to `value` (JSON-escaped).
    pub fn set_var(&self, name: &str, value: &str) {
        let escaped = serde_json::to_string(value).unwrap();
        let escaped = escaped[1..escaped.len() - 1].to_owned();
        self.vars.lock().unwrap().push((name.to_owned(), escaped));
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// Serves the requests of one connection (keep-alive).
async fn serve(
    mut stream: TcpStream,
    responder: Responder,
    log: Arc<Mutex<Vec<Seen>>>,
    count: Arc<std::sync::atomic::AtomicUsize>,
) -> std::io::Result<()> {
    // Like real servers: no Nagle delay between a head and its chunks.
    stream.set_nodelay(true)?;
    let mut buffer = Vec::new();
    loop {
        let Some(seen) = read_request(&mut stream, &mut buffer).await? else {
            return Ok(());
        };
        let n = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        log.lock().unwrap().push(seen.clone());
        match responder(&seen, n) {
            Reply::Stream { events, gap } => {
                write_stream_head(&mut stream).await?;
                for (i, event) in events.iter().enumerate() {
                    if i > 0 && !gap.is_zero() {
                        tokio::time::sleep(gap).await;
                    }
                    write_chunk(&mut stream, format!("data: {event}\r\n\r\n").as_bytes()).await?;
                }
                write_chunk(&mut stream, b"").await?;
            }
            Reply::StreamThenHang { events } => {
                write_stream_head(&mut stream).await?;
                for event in &events {
                    write_chunk(&mut stream, format!("data: {event}\r\n\r\n").as_bytes()).await?;
                }
                // Hold the connection until the client closes it.
                let mut sink = [0u8; 64];
                while stream.read(&mut sink).await? > 0 {}
                return Ok(());
            }
            Reply::Status {
                code,
                body,
                headers,
            } => {
                let mut head = format!(
                    "HTTP/1.1 {code} Fake\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
                    body.len()
                );
                for (k, v) in headers {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                stream.write_all(head.as_bytes()).await?;
                stream.write_all(body.as_bytes()).await?;
            }
        }
    }
}

async fn write_stream_head(stream: &mut TcpStream) -> std::io::Result<()> {
    stream
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        .await
}

/// One HTTP chunk (empty: the last one).
async fn write_chunk(stream: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    let mut out = format!("{:x}\r\n", bytes.len()).into_bytes();
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
    stream.write_all(&out).await?;
    stream.flush().await
}

async fn read_request(
    stream: &mut TcpStream,
    buffer: &mut Vec<u8>,
) -> std::io::Result<Option<Seen>> {
    let head_end = loop {
        if let Some(pos) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
        let mut chunk = [0u8; 8192];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let at = Instant::now();
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let path = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("")
        .to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let length = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    while buffer.len() < head_end + length {
        let mut chunk = [0u8; 65536];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let bytes = &buffer[head_end..head_end + length];
    let body = serde_json::from_slice(bytes).unwrap_or(Value::Null);
    let raw = String::from_utf8_lossy(bytes).into_owned();
    buffer.drain(..head_end + length);
    Ok(Some(Seen {
        path,
        headers,
        body,
        raw,
        at,
    }))
}

/// Gemini API chunks.
pub mod gemini {
    use super::*;

    /// A chunk with these parts.
    pub fn parts(parts: Value) -> String {
        json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]})
            .to_string()
    }

    pub fn text(text: &str) -> String {
        parts(json!([{ "text": text }]))
    }

    pub fn thought(text: &str) -> String {
        parts(json!([{ "text": text, "thought": true }]))
    }

    /// Function calls in one chunk, as `(name, args)`.
    pub fn calls(calls: &[(&str, Value)]) -> String {
        parts(Value::Array(
            calls
                .iter()
                .map(|(name, args)| json!({"functionCall": {"name": name, "args": args}}))
                .collect(),
        ))
    }

    /// The last chunk: finish reason and usage.
    pub fn done(input: u64, output: u64) -> String {
        json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": input, "candidatesTokenCount": output, "totalTokenCount": input + output}
        })
        .to_string()
    }

    /// A whole answer: text deltas then `done`.
    pub fn answer(deltas: &[&str]) -> Reply {
        let mut events: Vec<String> = deltas.iter().map(|d| text(d)).collect();
        events.push(done(10, 5));
        Reply::Stream {
            events,
            gap: Duration::ZERO,
        }
    }

    /// A response asking for these calls.
    pub fn call_reply(calls_: &[(&str, Value)]) -> Reply {
        Reply::Stream {
            events: vec![calls(calls_), done(10, 3)],
            gap: Duration::ZERO,
        }
    }

    /// An API error as the Gemini API sends it.
    pub fn error(code: u16, status: &str, message: &str) -> Reply {
        Reply::Status {
            code,
            body: json!({"error": {"code": code, "message": message, "status": status}})
                .to_string(),
            headers: Vec::new(),
        }
    }
}

/// OpenAI chat-completion chunks.
pub mod openai {
    use super::*;

    fn chunk(delta: Value, finish: Option<&str>) -> String {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "fake",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
    }

    pub fn text(text: &str) -> String {
        chunk(json!({"role": "assistant", "content": text}), None)
    }

    /// A tool call split into pieces the way servers stream them: the
    /// name first, then the arguments in two halves.
    pub fn call_pieces(index: u64, id: &str, name: &str, args: &Value) -> Vec<String> {
        let args = args.to_string();
        let (a, b) = args.split_at(args.len() / 2);
        vec![
            chunk(
                json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": a}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": b}}]}),
                None,
            ),
        ]
    }

    /// The end: finish reason, usage, `[DONE]`.
    pub fn done(finish: &str) -> Vec<String> {
        vec![
            chunk(json!({}), Some(finish)),
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
                   "usage": {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16}})
            .to_string(),
            "[DONE]".to_owned(),
        ]
    }
}
