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
    /// When the reply to request `n` was written out: `(n, instant)`.
    answered: Arc<Mutex<Vec<(usize, Instant)>>>,
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

    /// A model with a context window of `window` tokens: each request's
    /// prompt is counted ([`prompt_tokens`]); one over the window gets the
    /// Gemini API's 400, the others `inner`'s reply with its
    /// `usageMetadata` set as the real API sets it (`promptTokenCount` the
    /// count, `cachedContentTokenCount` the prefix shared with the
    /// previous request, `totalTokenCount` the sum).
    pub async fn windowed(window: u64, inner: Responder) -> FakeModel {
        let previous = Arc::new(Mutex::new(String::new()));
        Self::start(Arc::new(move |seen, n| {
            let count = prompt_tokens(&seen.body);
            if count > window {
                return gemini::error(
                    400,
                    "INVALID_ARGUMENT",
                    &format!(
                        "The input token count ({count}) exceeds the maximum number of tokens allowed ({window})."
                    ),
                );
            }
            let contents = seen.body["contents"].to_string();
            let cached = {
                let mut previous = previous.lock().unwrap();
                let shared = previous
                    .bytes()
                    .zip(contents.bytes())
                    .take_while(|(a, b)| a == b)
                    .count() as u64;
                *previous = contents;
                shared / 4
            };
            match inner(seen, n) {
                Reply::Stream { events, gap } => Reply::Stream {
                    events: events
                        .into_iter()
                        .map(|e| with_usage(e, count, cached))
                        .collect(),
                    gap,
                },
                other => other,
            }
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
        let answered = Arc::new(Mutex::new(Vec::new()));
        let done = answered.clone();
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
                let done = done.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, responder, log, count, done).await;
                });
            }
        });
        FakeModel {
            base_url: format!("http://{addr}"),
            seen,
            answered,
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

    /// When each reply was written out, by request number (in order of
    /// writing).
    pub fn answered(&self) -> Vec<(usize, Instant)> {
        self.answered.lock().unwrap().clone()
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// The fake's token count of a request: a quarter of the characters of
/// its contents, system instruction and tools as JSON.
pub fn prompt_tokens(body: &Value) -> u64 {
    let len = |v: &Value| {
        if v.is_null() {
            0
        } else {
            v.to_string().len() as u64
        }
    };
    (len(&body["contents"]) + len(&body["systemInstruction"]) + len(&body["tools"])).div_ceil(4)
}

/// `event` with its `usageMetadata` (if any) counting `prompt` tokens,
/// `cached` of them from the cache.
fn with_usage(event: String, prompt: u64, cached: u64) -> String {
    let Ok(mut value) = serde_json::from_str::<Value>(&event) else {
        return event;
    };
    let Some(usage) = value.get_mut("usageMetadata") else {
        return event;
    };
    let output = usage["candidatesTokenCount"].as_u64().unwrap_or(0);
    let thoughts = usage["thoughtsTokenCount"].as_u64().unwrap_or(0);
    usage["promptTokenCount"] = json!(prompt);
    usage["cachedContentTokenCount"] = json!(cached);
    usage["totalTokenCount"] = json!(prompt + output + thoughts);
    value.to_string()
}

/// Serves the requests of one connection (keep-alive).
async fn serve(
    mut stream: TcpStream,
    responder: Responder,
    log: Arc<Mutex<Vec<Seen>>>,
    count: Arc<std::sync::atomic::AtomicUsize>,
    answered: Arc<Mutex<Vec<(usize, Instant)>>>,
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
        answered.lock().unwrap().push((n, Instant::now()));
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

    /// The last chunk with every count the API reports.
    pub fn done_full(input: u64, output: u64, cached: u64, thoughts: u64) -> String {
        json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": input, "candidatesTokenCount": output,
                "cachedContentTokenCount": cached, "thoughtsTokenCount": thoughts,
                "totalTokenCount": input + output + thoughts}
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
