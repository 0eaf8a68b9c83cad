//! `web_fetch` through a real daemon, as Gemini CLI 0.61 has it: it asks in
//! default mode (denied headless), and never reaches a loopback, private or
//! link-local address, whatever the spelling, unless the user's settings
//! say `geminid.webFetch.allowPrivateNetwork`.

use geminid_protocol::EventPayload;
use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::{CallState, ConfirmationOutcome, ToolCallSnapshot};
use geminid_tests::*;
use serde_json::{Value, json};

const SECRET: &str = "INTERNAL-SITE-77b1";

async fn session(
    c: &Client,
    root: &std::path::Path,
    mode: ApprovalMode,
    interactive: bool,
) -> String {
    c.create_session(
        root.display().to_string(),
        Some(mode),
        None,
        Some(interactive),
        None,
        None,
        None,
    )
    .await
    .unwrap()
    .session_id
}

/// The call's snapshot once it waits for a person (then cancelled) or ended.
async fn attempt(c: &Client, session: &str, tool: &str, args: Value) -> ToolCallSnapshot {
    let mut sub = c.subscribe_session(session.into(), None).await.unwrap();
    let call = c
        .call_tool(session.into(), tool.into(), Some(args), None)
        .await
        .unwrap()
        .call_id;
    let events = collect_until(&mut sub, |e| {
        matches!(&e.payload, EventPayload::ToolCall(t)
            if t.call_id == call && (t.state == CallState::AwaitingApproval || t.state.is_terminal()))
    })
    .await;
    let Some(EventPayload::ToolCall(last)) = events.last().map(|e| e.payload.clone()) else {
        panic!("no snapshot for {call}");
    };
    if last.state == CallState::AwaitingApproval {
        c.confirm_tool(
            session.into(),
            call.clone(),
            ConfirmationOutcome::Cancel,
            None,
        )
        .await
        .unwrap();
        collect_until(&mut sub, |e| is_final(e, &call)).await;
    }
    *last
}

fn text(s: &ToolCallSnapshot) -> String {
    serde_json::to_string(&s.result).unwrap()
}

fn error(s: &ToolCallSnapshot) -> (String, String) {
    s.error
        .as_ref()
        .map(|e| (e.kind.clone(), e.message.clone()))
        .unwrap_or_default()
}

/// A local server that counts the requests it gets and would hand out a
/// canary.
async fn counting_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let counter = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = [0u8; 2048];
                let _ = sock.read(&mut buf).await;
                let body = format!("internal {SECRET}");
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(reply.as_bytes()).await;
            });
        }
    });
    (format!("http://{addr}"), hits)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_fetch_asks_by_default_and_never_reaches_a_private_address() {
    let (site, hits) = counting_server().await;
    let port = site.rsplit(':').next().unwrap().to_owned();
    let d = TestDaemon::start_with_env(&[("NO_PROXY", "*"), ("no_proxy", "*")]);
    let c = d.client().await;
    let ws = d.workspace.clone();
    // Asks in default mode, denied headless, let through in autoEdit and
    // yolo (where the address check then refuses it).
    let ask = session(&c, &ws, ApprovalMode::Default, true).await;
    let snap = attempt(
        &c,
        &ask,
        "web_fetch",
        json!({"prompt": format!("get {site}/x")}),
    )
    .await;
    assert_eq!(snap.state, CallState::AwaitingApproval, "{snap:?}");
    let headless = session(&c, &ws, ApprovalMode::Default, false).await;
    let snap = attempt(
        &c,
        &headless,
        "web_fetch",
        json!({"prompt": format!("get {site}/x")}),
    )
    .await;
    assert_eq!(error(&snap).0, "denied", "{snap:?}");
    for mode in [ApprovalMode::AutoEdit, ApprovalMode::Yolo] {
        let s = session(&c, &ws, mode, false).await;
        for url in [
            format!("{site}/x"),
            format!("http://localhost:{port}/x"),
            format!("http://127.1:{port}/x"),
            format!("http://[::ffff:127.0.0.1]:{port}/x"),
            "http://169.254.169.254/latest/meta-data/".to_owned(),
        ] {
            let snap = attempt(&c, &s, "web_fetch", json!({"prompt": format!("get {url}")})).await;
            let (kind, message) = error(&snap);
            assert_eq!(kind, "execution", "{url}: {snap:?}");
            assert!(
                message.starts_with("All requested URLs were skipped: [Blocked Host]"),
                "{url}: {message}"
            );
            assert!(!text(&snap).contains(SECRET));
        }
    }
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "a private host was reached"
    );
    // The setting lets a session reach it.
    std::fs::create_dir_all(d.home().join(".gemini")).unwrap();
    std::fs::write(
        d.home().join(".gemini/settings.json"),
        r#"{"geminid": {"webFetch": {"allowPrivateNetwork": true}}}"#,
    )
    .unwrap();
    let s = session(&c, &ws, ApprovalMode::Yolo, false).await;
    let snap = attempt(
        &c,
        &s,
        "web_fetch",
        json!({"prompt": format!("get {site}/x")}),
    )
    .await;
    assert_eq!(snap.state, CallState::Success, "{snap:?}");
    assert!(text(&snap).contains(SECRET));
}
