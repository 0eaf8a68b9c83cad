//! Tests for `google_web_search` against a fake Gemini API on 127.0.0.1
//! that answers with the real response shapes.

use std::sync::{Arc, Mutex};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::super::test_util::text_of;
use super::*;

/// A request as the fake API saw it.
#[derive(Debug, Clone)]
struct Seen {
    request_line: String,
    headers: String,
    body: Value,
}

type Responder = fn(&str) -> (u16, String, u64);

/// Serves `respond(path) -> (status, body, delay ms)` until the test ends;
/// returns the base URL and what was received.
async fn fake_api(respond: Responder) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let seen = seen2.clone();
            tokio::spawn(async move {
                let mut req = Vec::new();
                let mut buf = [0u8; 4096];
                let head_end = loop {
                    if let Some(i) = req.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                };
                let head = String::from_utf8_lossy(&req[..head_end]).into_owned();
                let len: usize = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse().ok())?
                    })
                    .unwrap_or(0);
                while req.len() < head_end + len {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                let body =
                    serde_json::from_slice(&req[head_end..head_end + len]).unwrap_or(Value::Null);
                let request_line = head.lines().next().unwrap_or("").to_owned();
                let path = request_line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or("/")
                    .to_owned();
                seen.lock().unwrap().push(Seen {
                    request_line,
                    headers: head.to_ascii_lowercase(),
                    body,
                });
                let (status, body, delay) = respond(&path);
                tokio::time::sleep(Duration::from_millis(delay)).await;
                let reply = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json; charset=UTF-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(reply.as_bytes()).await;
            });
        }
    });
    (format!("http://{addr}"), seen)
}

/// A grounded answer as the API sends it. "café" makes the byte offsets
/// differ from character offsets: the first sentence is 32 bytes (31
/// characters) long.
fn grounded() -> String {
    json!({
        "candidates": [{
            "content": {
                "parts": [{"text": "Rust 1.0 came out in 2015 café. It is fast."}],
                "role": "model"
            },
            "finishReason": "STOP",
            "groundingMetadata": {
                "searchEntryPoint": {"renderedContent": "<style>...</style>"},
                "groundingChunks": [
                    {"web": {"uri": "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AAA", "title": "rust-lang.org"}},
                    {"web": {"uri": "https://vertexaisearch.cloud.google.com/grounding-api-redirect/BBB", "title": "wikipedia.org"}}
                ],
                "groundingSupports": [
                    {"segment": {"endIndex": 32, "text": "Rust 1.0 came out in 2015 café."}, "groundingChunkIndices": [0, 1], "confidenceScores": [0.9, 0.8]},
                    {"segment": {"startIndex": 32, "endIndex": 44, "text": "It is fast."}, "groundingChunkIndices": [1], "confidenceScores": [0.7]}
                ],
                "webSearchQueries": ["rust 1.0 release date"]
            },
            "index": 0
        }],
        "usageMetadata": {"promptTokenCount": 8, "candidatesTokenCount": 14, "totalTokenCount": 22},
        "modelVersion": "gemini-2.5-flash"
    })
    .to_string()
}

fn api_error(code: u16, status: &str, message: &str, reason: Option<&str>) -> String {
    let mut e = json!({"error": {"code": code, "message": message, "status": status}});
    if let Some(r) = reason {
        e["error"]["details"] = json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": r, "domain": "googleapis.com"}]);
    }
    e.to_string()
}

fn respond(path: &str) -> (u16, String, u64) {
    let model = path
        .strip_prefix("/v1beta/models/")
        .and_then(|p| p.strip_suffix(":generateContent"))
        .unwrap_or("?");
    match model {
        "good" => (200, grounded(), 0),
        "plain" => (200, json!({"candidates": [{"content": {"parts": [{"text": "Just text."}]}}]}).to_string(), 0),
        "empty" => (200, json!({"candidates": [{"content": {"parts": []}, "finishReason": "SAFETY"}]}).to_string(), 0),
        "blocked" => (200, json!({"promptFeedback": {"blockReason": "SAFETY"}}).to_string(), 0),
        "thoughts" => (200, json!({"candidates": [{"content": {"parts": [{"text": "secret", "thought": true}, {"text": "Visible."}]}}]}).to_string(), 0),
        "badkey" => (400, api_error(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", Some("API_KEY_INVALID")), 0),
        "badreq" => (400, api_error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.", None), 0),
        "unauth" => (401, api_error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.", None), 0),
        "denied" => (403, api_error(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers.", None), 0),
        "limited" => (429, api_error(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota.", None), 0),
        "broken" => (500, api_error(500, "INTERNAL", "An internal error has occurred.", None), 0),
        "overloaded" => (503, "<html>Service Unavailable</html>".to_owned(), 0),
        "garbage" => (200, "not json".to_owned(), 0),
        "slow" => (200, grounded(), 5_000),
        _ => (404, api_error(404, "NOT_FOUND", "models/x is not found for API version v1beta.", None), 0),
    }
}

fn tool(base: &str, model: &str) -> WebSearchTool {
    WebSearchTool::new(WebSearchConfig {
        api_key: "sekrit-key".to_owned(),
        base_url: base.to_owned(),
        model: model.to_owned(),
        timeout: Duration::from_millis(800),
        use_env_proxy: false,
    })
}

async fn search(base: &str, model: &str, query: &str) -> Result<ToolResult, ToolError> {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(dir.path()).unwrap();
    let inv = tool(base, model).build(&ctx, &json!({ "query": query }))?;
    inv.execute(CancellationToken::new(), OutputSink::discard())
        .await
}

#[tokio::test]
async fn sends_the_documented_request() {
    let (base, seen) = fake_api(respond).await;
    search(&format!("{base}/"), "models/good", "when was rust 1.0")
        .await
        .unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].request_line,
        "POST /v1beta/models/good:generateContent HTTP/1.1"
    );
    assert!(
        seen[0]
            .headers
            .contains("\r\nx-goog-api-key: sekrit-key\r\n"),
        "{}",
        seen[0].headers
    );
    assert_eq!(
        seen[0].body,
        json!({
            "contents": [{"role": "user", "parts": [{"text": "when was rust 1.0"}]}],
            "tools": [{"googleSearch": {}}]
        })
    );
}

#[tokio::test]
async fn inserts_citations_at_byte_offsets_and_lists_sources() {
    let (base, _) = fake_api(respond).await;
    let r = search(&base, "good", "rust 1.0").await.unwrap();
    assert_eq!(
        text_of(&r),
        "Web search results for \"rust 1.0\":\n\n\
         Rust 1.0 came out in 2015 café.[1][2] It is fast.[2]\n\n\
         Sources:\n\
         [1] rust-lang.org (https://vertexaisearch.cloud.google.com/grounding-api-redirect/AAA)\n\
         [2] wikipedia.org (https://vertexaisearch.cloud.google.com/grounding-api-redirect/BBB)"
    );
    assert_eq!(
        r.summary.as_deref(),
        Some("Search results for \"rust 1.0\" returned (2 sources).")
    );
}

#[tokio::test]
async fn answers_without_grounding_or_text() {
    let (base, _) = fake_api(respond).await;
    let r = search(&base, "plain", "q").await.unwrap();
    assert_eq!(text_of(&r), "Web search results for \"q\":\n\nJust text.");
    let r = search(&base, "thoughts", "q").await.unwrap();
    assert_eq!(text_of(&r), "Web search results for \"q\":\n\nVisible.");
    let r = search(&base, "empty", "q").await.unwrap();
    assert_eq!(
        text_of(&r),
        "No search results or information found for query: \"q\""
    );
    let e = search(&base, "blocked", "q").await.unwrap_err();
    assert!(
        e.message.contains("blocked the query (SAFETY)"),
        "{}",
        e.message
    );
    let e = search(&base, "garbage", "q").await.unwrap_err();
    assert!(e.message.contains("invalid JSON"), "{}", e.message);
}

#[rustfmt::skip]
#[tokio::test]
async fn http_errors_say_what_they_mean() {
    let (base, _) = fake_api(respond).await;
    // (model, expected kind, words the message must contain)
    let cases: &[(&str, ToolErrorKind, &[&str])] = &[
        ("badkey", ToolErrorKind::Unavailable, &["HTTP 400", "API key was rejected", "GEMINI_API_KEY", "API key not valid"]),
        ("badreq", ToolErrorKind::Execution, &["HTTP 400", "invalid", "Invalid JSON payload"]),
        ("unauth", ToolErrorKind::Unavailable, &["HTTP 401", "missing or invalid", "GEMINI_API_KEY"]),
        ("denied", ToolErrorKind::Unavailable, &["HTTP 403", "not allowed", "PERMISSION_DENIED"]),
        ("no-such-model", ToolErrorKind::Unavailable, &["HTTP 404", "unknown model `no-such-model`", "GEMINI_MODEL", "not found"]),
        ("limited", ToolErrorKind::Unavailable, &["HTTP 429", "rate limit or quota", "RESOURCE_EXHAUSTED"]),
        ("broken", ToolErrorKind::Unavailable, &["HTTP 500", "try again later", "internal error"]),
        ("overloaded", ToolErrorKind::Unavailable, &["HTTP 503", "unavailable", "Service Unavailable"]),
    ];
    for (model, kind, words) in cases {
        let e = search(&base, model, "q").await.unwrap_err();
        assert_eq!(e.kind, *kind, "{model}: {}", e.message);
        for w in *words {
            assert!(e.message.contains(w), "{model}: {w:?} not in {}", e.message);
        }
        assert!(
            !e.message.contains("sekrit"),
            "the key leaked: {}",
            e.message
        );
    }
}

#[tokio::test]
async fn unreachable_slow_and_cancelled() {
    // A port nothing listens on.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let e = search(&format!("http://{closed}"), "good", "q")
        .await
        .unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::Unavailable, "{}", e.message);
    assert!(e.message.contains("cannot connect"), "{}", e.message);

    let (base, _) = fake_api(respond).await;
    let started = std::time::Instant::now();
    let e = search(&base, "slow", "q").await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(e.kind, ToolErrorKind::Timeout, "{}", e.message);
    assert!(e.message.contains("timed out after 0.8 s"), "{}", e.message);

    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(dir.path()).unwrap();
    let mut t = tool(&base, "slow");
    t.config.timeout = Duration::from_secs(30);
    let inv = t.build(&ctx, &json!({"query": "q"})).unwrap();
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        c2.cancel();
    });
    let started = std::time::Instant::now();
    let e = inv
        .execute(cancel, OutputSink::discard())
        .await
        .unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn bad_queries_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(dir.path()).unwrap();
    let t = tool("http://127.0.0.1:9", "good");
    for args in [
        json!({"query": ""}),
        json!({"query": " \n\t"}),
        json!({"query": 3}),
        json!({}),
        json!({"query": "x", "extra": 1}),
    ] {
        let e = t
            .build(&ctx, &args)
            .err()
            .unwrap_or_else(|| panic!("{args} accepted"));
        assert_eq!(e.kind, ToolErrorKind::InvalidParams, "{args}");
    }
    let inv = t.build(&ctx, &json!({"query": " rust "})).unwrap();
    assert_eq!(inv.description(), "Searching the web for: \"rust\"");
    assert_eq!(t.kind(), ToolKind::Search);
    assert_eq!(t.display_name(), "GoogleSearch");
    assert!(!format!("{:?}", t.config).contains("sekrit"));
}

/// (text, number of sources, supports, expected)
#[rustfmt::skip]
#[test]
fn citation_table() {
    type Supports = Vec<(usize, Vec<usize>)>;
    let cases: Vec<(&str, usize, Supports, &str)> = vec![
        ("abc", 1, vec![], "abc"),
        ("abc def", 2, vec![(3, vec![0]), (7, vec![1])], "abc[1] def[2]"),
        ("abc def", 2, vec![(7, vec![1]), (3, vec![0])], "abc[1] def[2]"),
        ("abc", 3, vec![(3, vec![2, 0, 2])], "abc[3][1]"),
        ("abc", 2, vec![(3, vec![0]), (3, vec![1]), (3, vec![0])], "abc[1][2]"),
        ("abc", 1, vec![(3, vec![5])], "abc"),
        ("abc", 1, vec![(99, vec![0])], "abc[1]"),
        ("é!", 1, vec![(1, vec![0])], "é[1]!"),
        ("日本語", 1, vec![(3, vec![0]), (9, vec![0])], "日[1]本語[1]"),
        ("ab", 1, vec![(0, vec![0])], "[1]ab"),
    ];
    for (text, n, supports, want) in cases {
        assert_eq!(insert_citations(text, n, &supports), want, "{text} {supports:?}");
    }
}

#[test]
fn endpoint_is_built_from_base_and_model() {
    let mut c = tool("https://g.example/", "models/gemini-x").config.clone();
    assert_eq!(
        c.endpoint(),
        "https://g.example/v1beta/models/gemini-x:generateContent"
    );
    c.base_url = "https://g.example".to_owned();
    c.model = "m".to_owned();
    assert_eq!(
        c.endpoint(),
        "https://g.example/v1beta/models/m:generateContent"
    );
}
