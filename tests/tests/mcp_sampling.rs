//! MCP sampling through the daemon, with server-everything's
//! `trigger-sampling-request`: the server's `sampling/createMessage` made
//! during a session's call goes through the policy (the pseudo tool
//! `mcp_sampling` of the server, ask by default) and then to the session's
//! model (the fake model API): approved from a second attached client, the
//! server gets the model's text; a policy rule or a session nobody can ask
//! refuses it, and the model is never asked.

mod peers;

use std::time::Duration;

use geminid_protocol::EventPayload;
use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::tool::{CallState, ConfirmationOutcome, ConfirmationRequest};
use geminid_tests::fake_model::{FakeModel, gemini};
use geminid_tests::{Client, ConfirmPlain, TestDaemon};
use jsonrpsee::core::client::Subscription;
use peers::*;
use serde_json::json;

const TOOL: &str = "everything__trigger-sampling-request";
const SAMPLING: &str = "everything__mcp_sampling";
const ANSWER: &str = "Sampled by the fake model: the sky is blue.";

/// Lets the server's tool itself run without asking, so that only its
/// sampling request is decided.
const ALLOW_TOOL: &str = r#"
[[rule]]
mcpName = "everything"
toolName = "trigger-sampling-request"
decision = "allow"
priority = 100
"#;

struct Setup {
    d: TestDaemon,
    fake: FakeModel,
    c: Client,
}

/// A daemon whose model is the fake and whose user server is
/// server-everything, with `policy` as the user's policy file.
async fn setup(policy: &str) -> Setup {
    setup_with(
        policy,
        FakeModel::scripted(vec![gemini::answer(&[ANSWER])]).await,
    )
    .await
}

async fn setup_with(policy: &str, fake: FakeModel) -> Setup {
    let p = peers();
    let mut d = TestDaemon::prepared(&[
        ("GEMINI_API_KEY", "test-key"),
        ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
        ("GEMINI_MODEL", "gemini-2.5-flash"),
    ]);
    let gemini_dir = d.home().join(".gemini");
    std::fs::create_dir_all(gemini_dir.join("policies")).expect("policies dir");
    std::fs::write(
        gemini_dir.join("settings.json"),
        json!({"mcpServers": {"everything": {"command": everything(&p)}}}).to_string(),
    )
    .expect("settings");
    std::fs::write(gemini_dir.join("policies/sampling.toml"), policy).expect("policy");
    d.spawn();
    let c = d.client().await;
    connected(&c, &["everything"]).await;
    Setup { d, fake, c }
}

async fn new_session(s: &Setup, interactive: bool) -> String {
    s.c.create_session(
        s.d.workspace.display().to_string(),
        None,
        None,
        Some(interactive),
        None,
        None,
        None,
    )
    .await
    .expect("session")
    .session_id
}

/// The next event `pick` accepts (within 60 s).
async fn next_event<T>(
    sub: &mut Subscription<geminid_protocol::SessionEvent>,
    pick: impl Fn(&EventPayload) -> Option<T>,
) -> T {
    let wait = async {
        loop {
            let event = sub.next().await.expect("event stream open").expect("event");
            if let Some(found) = pick(&event.payload) {
                return found;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), wait)
        .await
        .expect("the event never came")
}

/// What a finished call says: its result's text, or its error.
fn said(snapshot: &geminid_protocol::tool::ToolCallSnapshot) -> String {
    match &snapshot.result {
        Some(_) => result_json(snapshot)["llmContent"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["text"].as_str())
            .collect(),
        None => snapshot
            .error
            .as_ref()
            .map(|e| e.message.clone())
            .unwrap_or_default(),
    }
}

async fn trigger(c: &Client, session: &str) -> geminid_protocol::tool::ToolCallSnapshot {
    run(
        c,
        session,
        TOOL,
        json!({"prompt": "What colour is the sky?", "maxTokens": 100}),
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sampling_request_approved_by_an_attached_client_gets_the_session_s_model_answer() {
    let s = setup(ALLOW_TOOL).await;
    let session = new_session(&s, true).await;
    // A second client, attached to the session, answers the confirmation.
    let other = s.d.client().await;
    let mut sub = other
        .subscribe_session(session.clone(), None)
        .await
        .expect("subscribe");
    let approver = {
        let session = session.clone();
        tokio::spawn(async move {
            let (call_id, request) = next_event(&mut sub, |p| match p {
                EventPayload::ToolCall(call)
                    if call.name == SAMPLING && call.state == CallState::AwaitingApproval =>
                {
                    Some((call.call_id.clone(), call.confirmation.clone()))
                }
                _ => None,
            })
            .await;
            let Some(ConfirmationRequest::Info { title, prompt, .. }) = request else {
                panic!("a sampling request is shown as such: {request:?}");
            };
            assert!(title.contains("everything"), "{title}");
            assert!(prompt.contains("maxTokens 100"), "{prompt}");
            assert!(
                prompt.contains(
                    "user: Resource trigger-sampling-request context: What colour is the sky?"
                ),
                "{prompt}"
            );
            let answered = other
                .confirm_tool(
                    session.clone(),
                    call_id.clone(),
                    ConfirmationOutcome::ProceedOnce,
                    None,
                )
                .await
                .expect("tool.confirm");
            assert!(answered.accepted);
            let sampled = next_event(&mut sub, |p| match p {
                EventPayload::McpSampling {
                    server,
                    call_id,
                    model,
                    request,
                    ..
                } => Some((server.clone(), call_id.clone(), model.clone(), *request)),
                _ => None,
            })
            .await;
            let usage = next_event(&mut sub, |p| match p {
                EventPayload::TokenUsage {
                    purpose, tokens, ..
                } if purpose == "sampling" => Some(tokens.clone()),
                _ => None,
            })
            .await;
            (call_id, sampled, usage)
        })
    };
    let outer = trigger(&s.c, &session).await;
    assert_eq!(outer.state, CallState::Success, "{outer:#?}");
    let text = said(&outer);
    assert!(text.contains(ANSWER), "{text}");
    assert!(text.contains("\"model\": \"gemini-2.5-flash\""), "{text}");
    assert!(text.contains("\"role\": \"assistant\""), "{text}");
    assert!(text.contains("\"stopReason\": \"endTurn\""), "{text}");
    let (call_id, (server, sampled_call, model, request), tokens) =
        approver.await.expect("approver");
    assert_eq!(server, "everything");
    assert_eq!(sampled_call, call_id);
    assert_eq!(model, "gemini-2.5-flash");
    assert_eq!(request.output, 5);
    assert_eq!(tokens.requests, 1);
    // The model was asked once, with the server's system prompt and
    // limits and no tools.
    let seen = s.fake.seen();
    assert_eq!(seen.len(), 1);
    let body = &seen[0].body;
    assert_eq!(
        body["systemInstruction"]["parts"][0]["text"],
        "You are a helpful test server."
    );
    assert_eq!(body["generationConfig"]["maxOutputTokens"], 100);
    assert_eq!(body["generationConfig"]["temperature"], 0.7);
    assert!(body.get("tools").is_none(), "{body}");
    assert_eq!(
        body["contents"][0]["parts"][0]["text"],
        "Resource trigger-sampling-request context: What colour is the sky?"
    );
}

/// The server's call ends refused, naming why, and the model never heard
/// of it.
async fn refused(s: &Setup, session: &str, why: &str) {
    let outer = trigger(&s.c, session).await;
    let text = said(&outer);
    assert!(text.contains("sampling request was denied"), "{text}");
    assert!(text.contains(why), "{text}");
    assert!(!text.contains(ANSWER), "{text}");
    assert!(s.fake.seen().is_empty(), "the model was asked");
    // The refusal is in the session's record as the pseudo call's end.
    let mut sub =
        s.c.subscribe_session(session.to_owned(), Some(0))
            .await
            .expect("subscribe");
    let error = next_event(&mut sub, |p| match p {
        EventPayload::ToolCall(call) if call.name == SAMPLING && call.state == CallState::Error => {
            call.error.clone()
        }
        _ => None,
    })
    .await;
    assert_eq!(error.kind, "denied");
    assert!(error.message.contains(why), "{error:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_policy_rule_denies_a_server_s_sampling() {
    let policy = format!(
        "{ALLOW_TOOL}\n[[rule]]\nmcpName = \"everything\"\ntoolName = \"mcp_sampling\"\ndecision = \"deny\"\npriority = 100\ndenyMessage = \"no sampling here\"\n"
    );
    let s = setup(&policy).await;
    let session = new_session(&s, true).await;
    refused(&s, &session, "no sampling here").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_nobody_can_ask_refuses_sampling() {
    let s = setup(ALLOW_TOOL).await;
    let session = new_session(&s, false).await;
    refused(&s, &session, "non-interactive").await;
}

/// The figure: what the daemon adds to a sampling round trip. The same
/// server's `echo` is the baseline (a tool call through the daemon and the
/// server); the fake model's own time (request read to answer written) is
/// taken out. Run with
/// `cargo test -p geminid-tests --test mcp_sampling -- --ignored --nocapture`
/// (`--release` for an optimized daemon).
#[tokio::test(flavor = "multi_thread")]
#[ignore = "a measurement, not a check"]
async fn sampling_round_trip_overhead() {
    const ROUNDS: usize = 40;
    let fake = FakeModel::start(std::sync::Arc::new(
        |_: &geminid_tests::fake_model::Seen, _| gemini::answer(&[ANSWER]),
    ))
    .await;
    let policy = format!(
        "{ALLOW_TOOL}\n[[rule]]\nmcpName = \"everything\"\ntoolName = [\"mcp_sampling\", \"echo\"]\ndecision = \"allow\"\npriority = 100\n"
    );
    let s = setup_with(&policy, fake).await;
    let session = new_session(&s, true).await;
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let mut echo = Vec::new();
    let mut sampled = Vec::new();
    for _ in 0..ROUNDS {
        let started = std::time::Instant::now();
        let done = run(&s.c, &session, "everything__echo", json!({"message": "hi"})).await;
        echo.push(started.elapsed());
        assert_eq!(done.state, CallState::Success, "{done:#?}");
        let started = std::time::Instant::now();
        let done = trigger(&s.c, &session).await;
        sampled.push(started.elapsed());
        assert!(said(&done).contains(ANSWER), "{done:#?}");
    }
    let answered = s.fake.answered();
    let model: Vec<Duration> = s
        .fake
        .seen()
        .iter()
        .enumerate()
        .filter_map(|(n, seen)| {
            let (_, at) = answered.iter().find(|(i, _)| *i == n)?;
            Some(at.saturating_duration_since(seen.at))
        })
        .collect();
    let (echo, sampled, model) = (median(echo), median(sampled), median(model));
    println!(
        "sampling round trip (median of {ROUNDS}): {sampled:?}; echo call {echo:?}; fake model {model:?}; daemon overhead {:?}",
        sampled.saturating_sub(echo).saturating_sub(model)
    );
}
