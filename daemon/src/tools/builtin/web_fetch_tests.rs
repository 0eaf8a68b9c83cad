//! Tests for `web_fetch` against a small HTTP server on 127.0.0.1.

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::super::contract::ContentPart;
use super::super::web_fetch_http::HopCheck;
use super::*;

/// Serves canned responses by path until the test ends.
async fn serve() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut req = Vec::new();
                let mut buf = [0u8; 1024];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                let req = String::from_utf8_lossy(&req).into_owned();
                let target = req.split_whitespace().nth(1).unwrap_or("/");
                let path = target.split('?').next().unwrap_or("/").to_owned();
                let (status, ctype, body, extra) = respond(&path).await;
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(&body).await;
            });
        }
    });
    format!("http://{addr}")
}

async fn respond(path: &str) -> (&'static str, &'static str, Vec<u8>, String) {
    match path {
        "/page" => (
            "200 OK",
            "text/html; charset=utf-8",
            b"<html><head><title>T</title><script>var x=1;</script></head><body><h1>Hello</h1><p>World <b>bold</b></p><ul><li>one</li><li>two</li></ul></body></html>".to_vec(),
            String::new(),
        ),
        "/text" => ("200 OK", "text/plain", b"plain text body\n".to_vec(), String::new()),
        "/big" => ("200 OK", "text/plain", vec![b'a'; 150_000], String::new()),
        "/bin" => ("200 OK", "image/png", vec![0x89, b'P', b'N', b'G', 0, 1], String::new()),
        "/moved" => ("302 Found", "text/plain", Vec::new(), "Location: /text\r\n".to_owned()),
        p if p.starts_with("/redirect/") => (
            "302 Found",
            "text/plain",
            Vec::new(),
            format!(
                "Location: http://127.0.0.1:{}/text\r\n",
                p.trim_start_matches("/redirect/")
            ),
        ),
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            ("200 OK", "text/plain", b"late".to_vec(), String::new())
        }
        _ => ("404 Not Found", "text/plain", b"nope".to_vec(), String::new()),
    }
}

/// The local test server is on 127.0.0.1: these tools may reach it.
fn tool() -> WebFetchTool {
    WebFetchTool::new(FetchConfig {
        timeout: Duration::from_millis(800),
        max_chars: DEFAULT_MAX_CHARS,
        use_env_proxy: false,
        allow_private: true,
    })
}

/// A tool as the daemon builds it: private addresses refused.
fn guarded_tool() -> WebFetchTool {
    WebFetchTool::new(FetchConfig {
        allow_private: false,
        ..tool().config.clone()
    })
}

fn ctx() -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(dir.path()).unwrap();
    (dir, ctx)
}

async fn run(prompt: String) -> Result<String, ToolError> {
    let (_d, ctx) = ctx();
    let inv = tool().build(&ctx, &json!({ "prompt": prompt }))?;
    let r = inv
        .execute(CancellationToken::new(), OutputSink::discard())
        .await?;
    match &r.llm_content[0] {
        ContentPart::Text { text } => Ok(text.clone()),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn fetches_html_as_text_with_the_prompt() {
    let base = serve().await;
    let prompt = format!("Summarize {base}/page please.");
    let out = run(prompt.clone()).await.unwrap();
    assert!(
        out.starts_with(&format!("The user asked: {prompt}\n")),
        "{out}"
    );
    assert!(out.contains(&format!("Content of {base}/page:\n")), "{out}");
    assert!(
        out.contains("Hello") && out.contains("World") && out.contains("two"),
        "{out}"
    );
    assert!(!out.contains("<p>") && !out.contains("var x"), "{out}");
}

#[tokio::test]
async fn several_urls_redirects_errors_and_binary() {
    let base = serve().await;
    let prompt = format!("Compare ({base}/text), {base}/moved, {base}/missing and {base}/bin");
    let out = run(prompt).await.unwrap();
    let text_at = out.find(&format!("Content of {base}/text:")).unwrap();
    let moved_at = out.find(&format!("Content of {base}/moved:")).unwrap();
    assert!(text_at < moved_at, "{out}");
    assert_eq!(out.matches("plain text body").count(), 2, "{out}");
    assert!(out.contains("[Error: HTTP 404 Not Found]"), "{out}");
    assert!(
        out.contains("[Binary content (image/png), 6 bytes, not shown]"),
        "{out}"
    );
}

#[tokio::test]
async fn long_content_is_cut_with_a_note() {
    let base = serve().await;
    let out = run(format!("read {base}/big")).await.unwrap();
    assert!(
        out.contains("[Content truncated: showing the first 100000 of 150000 characters]"),
        "{}",
        &out[out.len() - 200..]
    );
    assert!(out.len() < 100_500);
}

#[tokio::test]
async fn slow_or_failing_urls_are_errors() {
    let base = serve().await;
    let started = std::time::Instant::now();
    let err = run(format!("get {base}/slow")).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(err.kind, ToolErrorKind::Execution);
    assert!(err.message.contains("timed out"), "{}", err.message);
    let err = run(format!("get {base}/missing")).await.unwrap_err();
    assert!(err.message.contains("404"), "{}", err.message);
}

#[tokio::test]
async fn cancel_returns_cancelled() {
    let base = serve().await;
    let (_d, ctx) = ctx();
    let inv = tool()
        .build(&ctx, &json!({"prompt": format!("{base}/slow")}))
        .unwrap();
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        c2.cancel();
    });
    let err = inv
        .execute(cancel, OutputSink::discard())
        .await
        .unwrap_err();
    assert_eq!(err.kind, ToolErrorKind::Cancelled);
}

#[tokio::test]
async fn confirmation_lists_the_urls() {
    let (_d, ctx) = ctx();
    let inv = tool()
        .build(
            &ctx,
            &json!({"prompt": "see https://a.example/x and http://b.example/y."}),
        )
        .unwrap();
    match inv.confirmation().await.unwrap() {
        ConfirmationDetails::Info { urls, prompt, .. } => {
            assert_eq!(urls, ["https://a.example/x", "http://b.example/y"]);
            assert!(prompt.starts_with("see "));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn private_hosts_are_refused_unless_the_setting_allows_them() {
    let base = serve().await;
    let port = base.rsplit(':').next().unwrap().to_owned();
    let (_d, ctx) = ctx();
    for url in [
        format!("{base}/text"),
        format!("http://localhost:{port}/text"),
        format!("http://127.1:{port}/text"),
        format!("http://[::1]:{port}/text"),
        format!("http://[::ffff:127.0.0.1]:{port}/text"),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "http://10.0.0.1/".to_owned(),
    ] {
        let inv = guarded_tool()
            .build(&ctx, &json!({ "prompt": format!("get {url}") }))
            .unwrap();
        let err = inv
            .execute(CancellationToken::new(), OutputSink::discard())
            .await
            .unwrap_err();
        assert!(
            err.message
                .starts_with("All requested URLs were skipped: [Blocked Host]"),
            "{url}: {}",
            err.message
        );
    }
    // The session's setting lets the same fetch through.
    let mut allowed = ctx.clone();
    allowed.settings.web_fetch_allow_private = true;
    let inv = guarded_tool()
        .build(&allowed, &json!({ "prompt": format!("get {base}/text") }))
        .unwrap();
    let r = inv
        .execute(CancellationToken::new(), OutputSink::discard())
        .await
        .unwrap();
    assert!(format!("{:?}", r.llm_content).contains("plain text body"));
}

/// Every redirect hop is checked before it is requested: a first hop that
/// is let through cannot redirect the fetch somewhere that is not.
#[tokio::test]
async fn every_redirect_hop_is_checked() {
    let a = serve().await;
    let b = serve().await;
    let b_port = b.rsplit(':').next().unwrap().to_owned();
    let allowed_host = reqwest::Url::parse(&a).unwrap().port();
    let check: HopCheck = std::sync::Arc::new(move |url: reqwest::Url| {
        Box::pin(async move {
            if url.port() == allowed_host {
                Ok(())
            } else {
                Err(format!("access to {url} is blocked"))
            }
        })
    });
    let config = tool().config.clone();
    let url = format!("{a}/redirect/{b_port}");
    let got = fetch_all(&config, &[(url.clone(), url)], check)
        .await
        .unwrap();
    let err = got[0].error.clone().unwrap_or_default();
    assert!(err.contains("is blocked"), "{err}");
    assert!(got[0].text.is_empty());
}

#[tokio::test]
async fn each_host_is_fetched_at_most_ten_times_a_minute() {
    let base = serve().await;
    let (_d, ctx) = ctx();
    let tool = tool();
    let urls: Vec<String> = (0..11).map(|i| format!("{base}/text?n={i}")).collect();
    let inv = tool
        .build(&ctx, &json!({ "prompt": urls.join(" ") }))
        .unwrap();
    let r = inv
        .execute(CancellationToken::new(), OutputSink::discard())
        .await
        .unwrap();
    let text = format!("{:?}", r.llm_content);
    assert!(
        text.contains("[Warning] The following URLs were skipped"),
        "{text}"
    );
    assert!(
        text.contains(&format!("[Rate limit exceeded] {}", urls[10])),
        "{text}"
    );
    // The window is shared by later calls (and sessions) of the daemon.
    let inv = tool
        .build(&ctx, &json!({ "prompt": format!("{base}/page") }))
        .unwrap();
    let err = inv
        .execute(CancellationToken::new(), OutputSink::discard())
        .await
        .unwrap_err();
    assert!(
        err.message.contains("[Rate limit exceeded]"),
        "{}",
        err.message
    );
}

#[test]
fn urls_are_extracted_and_github_blobs_made_raw() {
    assert_eq!(
        extract_urls("a <https://x.org/a?b=1>, \"http://y.org\". https://x.org/a?b=1 ftp://z"),
        ["https://x.org/a?b=1", "http://y.org/"]
    );
    assert_eq!(
        github_raw("https://github.com/o/r/blob/main/src/lib.rs"),
        "https://raw.githubusercontent.com/o/r/main/src/lib.rs"
    );
    assert_eq!(
        github_raw("https://github.com/o/r/tree/main/src"),
        "https://github.com/o/r/tree/main/src"
    );
}

#[test]
fn bad_inputs_are_refused() {
    let (_d, ctx) = ctx();
    let many: Vec<String> = (0..21).map(|i| format!("https://h{i}.example/")).collect();
    let cases = [
        json!({"prompt": ""}),
        json!({"prompt": "   "}),
        json!({"prompt": "no links here"}),
        json!({"prompt": "only ftp://x.org/file and file:///etc/passwd"}),
        json!({"prompt": many.join(" ")}),
        json!({"prompt": 3}),
        json!({}),
    ];
    for args in cases {
        let err = tool()
            .build(&ctx, &args)
            .err()
            .unwrap_or_else(|| panic!("{args} accepted"));
        assert_eq!(err.kind, ToolErrorKind::InvalidParams, "{args}");
        assert!(err.message.contains("`prompt`"), "{args}: {}", err.message);
    }
}
