//! The OpenAI-compatible provider, GEMINI.md memory in the system
//! instruction, and images sent back to the model, through the daemon.

use std::time::Duration;

use geminid_protocol::event::{EventPayload, SessionEvent};
use geminid_tests::fake_model::{FakeModel, Reply, gemini, openai};
use geminid_tests::*;
use serde_json::json;

fn reason(events: &[SessionEvent]) -> String {
    events
        .iter()
        .find_map(|e| match &e.payload {
            EventPayload::TurnFinished {
                reason, message, ..
            } => Some(format!("{reason} {message:?}")),
            _ => None,
        })
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openai_compatible_server_streams_text_and_tool_call_deltas() {
    let mut first = vec![openai::text("Checking. ")];
    first.extend(openai::call_pieces(
        0,
        "call_a",
        "glob",
        &json!({"pattern": "*.md"}),
    ));
    first.extend(openai::call_pieces(
        1,
        "call_b",
        "read_file",
        &json!({"absolute_path": "{WS}/a.md"}),
    ));
    first.extend(openai::done("tool_calls"));
    let mut second = vec![openai::text("a.md says hello")];
    second.extend(openai::done("stop"));
    let fake = FakeModel::scripted(vec![
        Reply::Stream {
            events: first,
            gap: Duration::ZERO,
        },
        Reply::Stream {
            events: second,
            gap: Duration::ZERO,
        },
    ])
    .await;
    let d = TestDaemon::start_with_env(&[("LOCAL_LLM_KEY", "sk-local")]);
    fake.set_var("WS", &d.workspace.display().to_string());
    std::fs::create_dir_all(d.home().join(".gemini")).unwrap();
    std::fs::write(
        d.home().join(".gemini/settings.json"),
        json!({"geminid": {"openaiCompatible": {"baseUrl": format!("{}/v1", fake.base_url), "model": "qwen-local", "apiKeyEnv": "LOCAL_LLM_KEY"}}}).to_string(),
    )
    .unwrap();
    std::fs::write(d.workspace.join("a.md"), "hello").unwrap();
    let c = d.client().await;
    let status = c.status().await.unwrap().model.unwrap();
    assert_eq!(
        (
            status.provider.as_str(),
            status.model.as_str(),
            status.key_present
        ),
        ("openai-compatible", "qwen-local", true)
    );
    let session = new_session(&c, &d.workspace).await;
    let events = run_turn(&c, &session, "what does a.md say?").await;
    assert!(
        reason(&events).starts_with("completed"),
        "{}",
        reason(&events)
    );
    let seen = fake.seen();
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[0].header("authorization"), Some("Bearer sk-local"));
    assert_eq!(seen[0].body["model"], "qwen-local");
    assert_eq!(seen[0].body["messages"][0]["role"], "system");
    assert!(
        seen[0].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["function"]["name"] == "read_file")
    );
    let messages = seen[1].body["messages"].as_array().unwrap();
    let assistant = &messages[2];
    assert_eq!(assistant["tool_calls"][0]["id"], "call_a");
    assert_eq!(
        assistant["tool_calls"][1]["function"]["arguments"],
        json!({"absolute_path": d.workspace.join("a.md").display().to_string()}).to_string()
    );
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["tool_call_id"], "call_a");
    assert_eq!(messages[4]["tool_call_id"], "call_b");
    assert!(messages[4]["content"].as_str().unwrap().contains("hello"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_goes_to_the_model_and_edits_are_seen_by_the_next_turn() {
    let fake = FakeModel::scripted(vec![gemini::answer(&["one"]), gemini::answer(&["two"])]).await;
    let d = TestDaemon::start_with_env(&[
        ("GEMINI_API_KEY", "k"),
        ("GOOGLE_GEMINI_BASE_URL", &fake.base_url),
    ]);
    std::fs::create_dir(d.workspace.join(".git")).unwrap();
    std::fs::write(d.workspace.join("GEMINI.md"), "Use tabs.\n@./style.md\n").unwrap();
    std::fs::write(d.workspace.join("style.md"), "Prefer small functions.").unwrap();
    std::fs::create_dir_all(d.home().join(".gemini")).unwrap();
    std::fs::write(d.home().join(".gemini/GEMINI.md"), "Call me Ada.").unwrap();
    let c = d.client().await;
    let session = new_session(&c, &d.workspace).await;

    let shown = c.show_memory(Some(session.clone()), None).await.unwrap();
    assert_eq!(shown.files.len(), 2, "{shown:#?}");
    assert!(
        shown.files[1].imports[0].path.ends_with("style.md"),
        "{shown:#?}"
    );
    assert!(shown.text.contains("Call me Ada.") && shown.text.contains("Prefer small functions."));

    run_turn(&c, &session, "hi").await;
    std::fs::write(d.workspace.join("style.md"), "Prefer long functions.").unwrap();
    // The watcher marks the memory stale; the next use reloads it (seen
    // through `memory.show`, which reads it as a turn does).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !c
        .show_memory(Some(session.clone()), None)
        .await
        .unwrap()
        .text
        .contains("Prefer long functions.")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the edit never reached the memory"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    run_turn(&c, &session, "again").await;
    let seen = fake.seen();
    let system = |i: usize| {
        seen[i].body["systemInstruction"]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(
        system(0).contains("Prefer small functions.") && system(0).contains("Call me Ada."),
        "{}",
        system(0)
    );
    assert!(
        system(1).contains("Prefer long functions."),
        "{}",
        system(1)
    );

    // A new file deep below is found by memory.reload.
    std::fs::create_dir_all(d.workspace.join("sub")).unwrap();
    std::fs::write(d.workspace.join("sub/GEMINI.md"), "Sub rules.").unwrap();
    let reloaded = c
        .reload_memory(None, Some(d.workspace.display().to_string()))
        .await
        .unwrap();
    assert!(reloaded.text.contains("Sub rules."), "{}", reloaded.text);
    let bad = c.show_memory(None, None).await.unwrap_err();
    assert!(bad.to_string().contains("sessionId"), "{bad}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_read_by_a_tool_goes_back_as_inline_data() {
    let fake = FakeModel::scripted(vec![
        gemini::call_reply(&[("read_file", json!({"absolute_path": "{WS}/dot.png"}))]),
        gemini::answer(&["a dot"]),
    ])
    .await;
    let d = TestDaemon::start_with_env(&[
        ("GEMINI_API_KEY", "k"),
        ("GOOGLE_GEMINI_BASE_URL", &fake.base_url),
    ]);
    fake.set_var("WS", &d.workspace.display().to_string());
    // A 1x1 PNG.
    let png: [u8; 67] = [
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f,
        0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0a, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00,
        0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49,
        0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
    ];
    std::fs::write(d.workspace.join("dot.png"), png).unwrap();
    let c = d.client().await;
    let session = new_session(&c, &d.workspace).await;
    let events = run_turn(&c, &session, "what is in dot.png?").await;
    assert!(
        reason(&events).starts_with("completed"),
        "{}",
        reason(&events)
    );
    let last = fake.seen()[1].body["contents"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "user");
    assert_eq!(last["parts"][0]["functionResponse"]["name"], "read_file");
    assert_eq!(last["parts"][1]["inlineData"]["mimeType"], "image/png");
    assert!(
        !last["parts"][1]["inlineData"]["data"]
            .as_str()
            .unwrap()
            .is_empty()
    );
}
