//! `google_web_search` through a real daemon, against a fake Gemini API on
//! 127.0.0.1: registered only with an API key, allowed by the default
//! policy, and answering with numbered citations and sources.

use std::sync::{Arc, Mutex};

use geminid_protocol::tool::{CallState, ContentPart};
use geminid_tests::*;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A fake `generateContent` endpoint: records each request's head and body
/// and answers every request with `(status, body)`.
async fn fake_gemini(status: u16, body: Value) -> (String, Arc<Mutex<Vec<(String, Value)>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let body = body.to_string();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let (seen, body) = (seen2.clone(), body.clone());
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
                let head = String::from_utf8_lossy(&req[..head_end]).to_ascii_lowercase();
                let len: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                while req.len() < head_end + len {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                let sent = serde_json::from_slice(&req[head_end..]).unwrap_or(Value::Null);
                seen.lock().unwrap().push((head, sent));
                let reply = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(reply.as_bytes()).await;
            });
        }
    });
    (format!("http://{addr}"), seen)
}

fn grounded_answer() -> Value {
    json!({
        "candidates": [{
            "content": {"role": "model", "parts": [{"text": "Tokio is an async runtime. It is written in Rust."}]},
            "finishReason": "STOP",
            "groundingMetadata": {
                "webSearchQueries": ["what is tokio"],
                "groundingChunks": [
                    {"web": {"uri": "https://tokio.rs/", "title": "tokio.rs"}},
                    {"web": {"uri": "https://docs.rs/tokio", "title": "docs.rs"}}
                ],
                "groundingSupports": [
                    {"segment": {"endIndex": 26, "text": "Tokio is an async runtime."}, "groundingChunkIndices": [0]},
                    {"segment": {"startIndex": 27, "endIndex": 49, "text": "It is written in Rust."}, "groundingChunkIndices": [0, 1]}
                ]
            }
        }],
        "modelVersion": "gemini-test"
    })
}

fn start(base: &str) -> TestDaemon {
    TestDaemon::start_with_env(&[
        ("GEMINI_API_KEY", "test-key-123"),
        ("GOOGLE_GEMINI_BASE_URL", base),
        ("GEMINI_MODEL", "gemini-test"),
        ("NO_PROXY", "127.0.0.1,localhost"),
        ("no_proxy", "127.0.0.1,localhost"),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_through_the_daemon_cites_numbered_sources() {
    let (base, seen) = fake_gemini(200, grounded_answer()).await;
    let d = start(&base);
    let client = d.client().await;
    let tools = client.list_tools(None).await.unwrap();
    let info = tools
        .iter()
        .find(|t| t.name == "google_web_search")
        .expect("registered with an API key");
    assert_eq!(info.kind, "search");
    assert_eq!(info.display_name, "GoogleSearch");

    // Default approval mode: a search is read-only and runs without asking.
    let session = new_session(&client, &d.workspace).await;
    let done = client
        .call_tool(
            session,
            "google_web_search".into(),
            Some(json!({"query": "what is tokio"})),
            Some(true),
        )
        .await
        .unwrap()
        .outcome
        .expect("wait: true returns the final snapshot");
    assert_eq!(done.state, CallState::Success, "{done:?}");
    let result = done.result.unwrap();
    let ContentPart::Text { text } = &result.llm_content[0] else {
        panic!("{result:?}")
    };
    assert_eq!(
        text,
        "Web search results for \"what is tokio\":\n\n\
         Tokio is an async runtime.[1] It is written in Rust.[1][2]\n\n\
         Sources:\n[1] tokio.rs (https://tokio.rs/)\n[2] docs.rs (https://docs.rs/tokio)"
    );

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let (head, body) = &seen[0];
    assert!(
        head.starts_with("post /v1beta/models/gemini-test:generatecontent http/1.1"),
        "{head}"
    );
    assert!(
        head.contains("\r\nx-goog-api-key: test-key-123\r\n"),
        "{head}"
    );
    assert_eq!(body["tools"], json!([{"googleSearch": {}}]));
    assert_eq!(body["contents"][0]["parts"][0]["text"], "what is tokio");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_errors_reach_the_client_clearly() {
    let (base, _) = fake_gemini(
        429,
        json!({"error": {"code": 429, "message": "Quota exceeded.", "status": "RESOURCE_EXHAUSTED"}}),
    )
    .await;
    let d = start(&base);
    let client = d.client().await;
    let session = new_session(&client, &d.workspace).await;
    let call = |args: Value| {
        client.call_tool(
            session.clone(),
            "google_web_search".into(),
            Some(args),
            Some(true),
        )
    };
    let done = call(json!({"query": "x"})).await.unwrap().outcome.unwrap();
    assert_eq!(done.state, CallState::Error);
    let error = done.error.unwrap();
    assert!(
        error.message.contains("HTTP 429") && error.message.contains("rate limit"),
        "{error:?}"
    );
    assert!(!error.message.contains("test-key-123"), "{error:?}");

    let done = call(json!({"query": "  "})).await.unwrap().outcome.unwrap();
    assert_eq!(done.state, CallState::Error);
    assert_eq!(done.error.unwrap().kind, "invalid_params");
}

#[tokio::test]
async fn not_registered_without_an_api_key() {
    // The harness keeps the machine's GEMINI_API_KEY away from the daemon.
    let d = TestDaemon::start();
    let client = d.client().await;
    let tools = client.list_tools(None).await.unwrap();
    assert!(!tools.iter().any(|t| t.name == "google_web_search"));
    assert!(tools.iter().any(|t| t.name == "web_fetch"));
}
