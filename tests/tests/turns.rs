//! The agent loop through the daemon, against the local fake model:
//! prompts, parallel calls, confirmations from another client, cancel,
//! retries, restarts, detached turns, loop detection and the limits.

use std::time::Duration;

use geminid_protocol::error as code;
use geminid_protocol::event::{EventPayload, SessionEvent};
use geminid_protocol::tool::{CallState, ConfirmationOutcome};
use geminid_tests::fake_model::{FakeModel, Reply, gemini};
use geminid_tests::*;
use jsonrpsee::core::client::Subscription;
use serde_json::{Value, json};

/// A daemon talking to a fake Gemini API, a client and a session.
struct Turns {
    d: TestDaemon,
    fake: FakeModel,
    c: Client,
    session: String,
}

impl Turns {
    async fn new(replies: Vec<Reply>) -> Turns {
        Self::with(replies, &[], None).await
    }

    async fn with(replies: Vec<Reply>, env: &[(&str, &str)], interactive: Option<bool>) -> Turns {
        let fake = FakeModel::scripted(replies).await;
        let mut all = vec![
            ("GEMINI_API_KEY", "test-key"),
            ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
            ("GEMINI_MODEL", "gemini-2.5-flash"),
        ];
        all.extend_from_slice(env);
        let d = TestDaemon::start_with_env(&all);
        fake.set_var("WS", &d.workspace.display().to_string());
        let c = d.client().await;
        let session = c
            .create_session(
                d.workspace.display().to_string(),
                None,
                None,
                interactive,
                None,
                None,
                None,
            )
            .await
            .unwrap()
            .session_id;
        Turns {
            d,
            fake,
            c,
            session,
        }
    }

    async fn yolo(&self) {
        self.c
            .set_approval_mode(
                self.session.clone(),
                geminid_protocol::session::ApprovalMode::Yolo,
            )
            .await
            .unwrap();
    }

    async fn subscribe(&self) -> Subscription<SessionEvent> {
        self.c
            .subscribe_session(self.session.clone(), None)
            .await
            .unwrap()
    }

    async fn prompt(&self, text: &str) -> String {
        self.c
            .prompt(self.session.clone(), text.into())
            .await
            .unwrap()
            .turn_id
    }
}

fn finished(turn: &str) -> impl FnMut(&SessionEvent) -> bool + '_ {
    move |e| matches!(&e.payload, EventPayload::TurnFinished { turn_id, .. } if turn_id == turn)
}

/// The `turnFinished` of `turn` in `events`: reason, message, tokens.
fn end_of(events: &[SessionEvent], turn: &str) -> (String, Option<String>, Option<u64>) {
    events
        .iter()
        .find_map(|e| match &e.payload {
            EventPayload::TurnFinished {
                turn_id,
                reason,
                message,
                input_tokens,
                ..
            } if turn_id == turn => Some((reason.clone(), message.clone(), *input_tokens)),
            _ => None,
        })
        .expect("turnFinished")
}

fn text_of(events: &[SessionEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::ModelText { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

fn final_calls(events: &[SessionEvent]) -> Vec<geminid_protocol::tool::ToolCallSnapshot> {
    events
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::ToolCall(c) if c.state.is_terminal() => Some((**c).clone()),
            _ => None,
        })
        .collect()
}

/// The function responses a request sent back, by name.
fn responses(body: &Value) -> Vec<(String, Value)> {
    body["contents"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| {
            let r = p.get("functionResponse")?;
            Some((r["name"].as_str()?.to_owned(), r["response"].clone()))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_step_turn_runs_parallel_calls_and_streams_everything() {
    let t = Turns::new(vec![
        Reply::Stream {
            events: vec![
                gemini::thought("I should look"),
                gemini::text("Let me look. "),
                gemini::calls(&[
                    ("read_file", json!({"absolute_path": "{WS}/notes.txt"})),
                    ("glob", json!({"pattern": "*.txt"})),
                ]),
                gemini::done(20, 8),
            ],
            gap: Duration::ZERO,
        },
        gemini::answer(&["The notes say ", "alpha beta."]),
    ])
    .await;
    std::fs::write(t.d.workspace.join("notes.txt"), "alpha beta").unwrap();
    let mut sub = t.subscribe().await;
    let turn = t.prompt("what do the notes say?").await;
    let events = collect_until(&mut sub, finished(&turn)).await;

    // Order: queued, started, the user's text, then the model and the calls.
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::PromptQueued { .. } => Some("queued"),
            EventPayload::TurnStarted { .. } => Some("started"),
            EventPayload::UserMessage { .. } => Some("user"),
            EventPayload::ModelThought { .. } => Some("thought"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["queued", "started", "user", "thought"]);
    assert_eq!(text_of(&events), "Let me look. The notes say alpha beta.");
    let calls = final_calls(&events);
    assert_eq!(calls.len(), 2, "{calls:#?}");
    assert!(
        calls.iter().all(|c| c.state == CallState::Success),
        "{calls:#?}"
    );
    // Both calls were executing before either finished: scheduled together.
    let first_final = events
        .iter()
        .position(|e| matches!(&e.payload, EventPayload::ToolCall(c) if c.state.is_terminal()))
        .unwrap();
    let executing = events[..first_final]
        .iter()
        .filter(
            |e| matches!(&e.payload, EventPayload::ToolCall(c) if c.state == CallState::Executing),
        )
        .count();
    assert_eq!(executing, 2, "both calls started before either finished");
    let (reason, _, input) = end_of(&events, &turn);
    assert_eq!(reason, "completed");
    assert_eq!(input, Some(30), "usage summed over both responses");

    // The wire: key header, system instruction, declarations, responses.
    let seen = t.fake.seen();
    assert_eq!(seen.len(), 2);
    assert!(
        seen[0]
            .path
            .starts_with("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"),
        "{}",
        seen[0].path
    );
    assert_eq!(seen[0].header("x-goog-api-key"), Some("test-key"));
    let system = seen[0].body["systemInstruction"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(system.contains(&t.d.workspace.display().to_string()));
    let names: Vec<&str> = seen[0].body["tools"][0]["functionDeclarations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert!(
        names.contains(&"read_file") && names.contains(&"run_shell_command"),
        "{names:?}"
    );
    let sent = responses(&seen[1].body);
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].0, "read_file");
    assert!(
        sent[0].1["output"].as_str().unwrap().contains("alpha beta"),
        "{sent:?}"
    );
    assert!(
        sent[1].1["output"].as_str().unwrap().contains("notes.txt"),
        "{sent:?}"
    );
    // The thought signature-free model turn went back as it came.
    assert_eq!(seen[1].body["contents"][1]["role"], "model");

    // History: user, model (calls), user (responses), model (answer).
    let page = t.c.history(t.session.clone(), None, None).await.unwrap();
    assert_eq!(page.total, 4);
    let roles: Vec<&str> = page
        .contents
        .iter()
        .map(|c| c["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "model", "user", "model"]);
    let second =
        t.c.history(t.session.clone(), Some(3), Some(10))
            .await
            .unwrap();
    assert_eq!((second.offset, second.contents.len()), (3, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confirmation_is_answered_by_a_second_client() {
    let t = Turns::new(vec![
        gemini::call_reply(&[(
            "write_file",
            json!({"file_path": "{WS}/out.txt", "content": "hi"}),
        )]),
        gemini::answer(&["Written."]),
    ])
    .await;
    let other = t.d.client().await;
    let mut sub = other
        .subscribe_session(t.session.clone(), None)
        .await
        .unwrap();
    let turn = t.prompt("write hi to out.txt").await;
    let events = collect_until(&mut sub, |e| {
        matches!(&e.payload, EventPayload::ToolCall(c) if c.state == CallState::AwaitingApproval)
    })
    .await;
    let call = final_calls(&events).len();
    assert_eq!(call, 0);
    let call_id = events
        .iter()
        .rev()
        .find_map(|e| match &e.payload {
            EventPayload::ToolCall(c) => Some(c.call_id.clone()),
            _ => None,
        })
        .unwrap();
    let accepted = other
        .confirm_tool(
            t.session.clone(),
            call_id.clone(),
            ConfirmationOutcome::ProceedOnce,
            None,
        )
        .await
        .unwrap();
    assert!(accepted.accepted);
    let late =
        t.c.confirm_tool(
            t.session.clone(),
            call_id,
            ConfirmationOutcome::Cancel,
            None,
        )
        .await
        .unwrap();
    assert!(!late.accepted, "the first answer wins");
    let rest = collect_until(&mut sub, finished(&turn)).await;
    assert_eq!(end_of(&rest, &turn).0, "completed");
    assert_eq!(
        std::fs::read_to_string(t.d.workspace.join("out.txt")).unwrap(),
        "hi"
    );
    assert_eq!(text_of(&rest), "Written.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_mid_stream_ends_the_turn_and_keeps_what_was_said() {
    let t = Turns::new(vec![
        Reply::StreamThenHang {
            events: vec![gemini::text("Thinking about it")],
        },
        gemini::answer(&["Fresh start."]),
    ])
    .await;
    let mut sub = t.subscribe().await;
    let turn = t.prompt("take your time").await;
    collect_until(&mut sub, |e| {
        matches!(e.payload, EventPayload::ModelText { .. })
    })
    .await;
    let started = std::time::Instant::now();
    assert!(t.c.cancel_session(t.session.clone()).await.unwrap().ok);
    let events = collect_until(&mut sub, finished(&turn)).await;
    assert_eq!(end_of(&events, &turn).0, "cancelled");
    // The model would hang forever: well under that is "at once".
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "cancel took {:?}",
        started.elapsed()
    );
    let page = t.c.history(t.session.clone(), None, None).await.unwrap();
    assert_eq!(page.total, 2);
    assert_eq!(page.contents[1]["parts"][0]["text"], "Thinking about it");
    // The session goes on.
    let next = t.prompt("again").await;
    let events = collect_until(&mut sub, finished(&next)).await;
    assert_eq!(text_of(&events), "Fresh start.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_calls_run_gives_every_call_a_response() {
    let t = Turns::with(
        vec![
            gemini::call_reply(&[("run_shell_command", json!({"command": "sleep 30"}))]),
            gemini::answer(&["ok"]),
        ],
        &[],
        None,
    )
    .await;
    t.yolo().await;
    let mut sub = t.subscribe().await;
    let turn = t.prompt("sleep").await;
    collect_until(
        &mut sub,
        |e| matches!(&e.payload, EventPayload::ToolCall(c) if c.state == CallState::Executing),
    )
    .await;
    t.c.cancel_session(t.session.clone()).await.unwrap();
    let events = collect_until(&mut sub, finished(&turn)).await;
    assert_eq!(end_of(&events, &turn).0, "cancelled");
    let page = t.c.history(t.session.clone(), None, None).await.unwrap();
    let last = page.contents.last().unwrap();
    assert_eq!(last["role"], "user");
    let response = &last["parts"][0]["functionResponse"];
    assert_eq!(response["name"], "run_shell_command");
    assert!(response["response"]["error"].is_string(), "{last}");
    assert_eq!(
        t.fake.seen().len(),
        1,
        "a cancelled turn asks the model nothing more"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_is_retried_after_the_asked_delay() {
    let t = Turns::new(vec![
        Reply::Status {
            code: 429,
            body: json!({"error": {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"}}).to_string(),
            headers: vec![("Retry-After".into(), "1".into())],
        },
        gemini::answer(&["after the wait"]),
    ])
    .await;
    let mut sub = t.subscribe().await;
    let turn = t.prompt("hello").await;
    let events = collect_until(&mut sub, finished(&turn)).await;
    assert_eq!(end_of(&events, &turn).0, "completed");
    assert_eq!(text_of(&events), "after the wait");
    let notice = events
        .iter()
        .find_map(|e| match &e.payload {
            EventPayload::Error { message } => Some(message.clone()),
            _ => None,
        })
        .expect("a retry notice");
    assert!(
        notice.contains("429") && notice.contains("retrying in 1.0 s"),
        "{notice}"
    );
    let seen = t.fake.seen();
    assert_eq!(seen.len(), 2);
    let waited = seen[1].at - seen[0].at;
    assert!(
        waited >= Duration::from_millis(950),
        "Retry-After honoured: {waited:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_errors_end_the_turn_with_a_clear_reason() {
    let t = Turns::new(vec![
        Reply::Status {
            code: 400,
            body: json!({"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT", "details": [{"reason": "API_KEY_INVALID"}]}}).to_string(),
            headers: Vec::new(),
        },
        gemini::error(404, "NOT_FOUND", "models/gemini-nope is not found"),
        Reply::Stream { events: vec![json!({"promptFeedback": {"blockReason": "SAFETY"}}).to_string()], gap: Duration::ZERO },
    ])
    .await;
    let mut sub = t.subscribe().await;
    for expected in ["GEMINI_API_KEY", "not found", "blocked"] {
        let turn = t.prompt("hi").await;
        let events = collect_until(&mut sub, finished(&turn)).await;
        let (reason, message, _) = end_of(&events, &turn);
        assert_eq!(reason, "error");
        let message = message.unwrap();
        assert!(message.contains(expected), "{expected}: {message}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_survives_a_restart_and_the_next_prompt_continues_it() {
    let mut t = Turns::new(vec![
        gemini::answer(&["Nice to meet you, Ada."]),
        gemini::answer(&["You are Ada."]),
    ])
    .await;
    let mut sub = t.subscribe().await;
    let first = t.prompt("my name is Ada").await;
    collect_until(&mut sub, finished(&first)).await;
    drop(sub);
    assert_eq!(t.d.terminate(), Some(0));
    t.d.spawn();
    t.c = t.d.client().await;
    let mut sub =
        t.c.subscribe_session(t.session.clone(), None)
            .await
            .unwrap();
    let second = t.prompt("what is my name?").await;
    let events = collect_until(&mut sub, finished(&second)).await;
    assert_eq!(end_of(&events, &second).0, "completed");
    let seen = t.fake.seen();
    let contents = seen[1].body["contents"].as_array().unwrap();
    // The session context part opens the first user content.
    let context = contents[0]["parts"][0]["text"].as_str().unwrap();
    assert!(context.starts_with("<session_context>"), "{context}");
    let texts: Vec<&str> = contents
        .iter()
        .map(|c| {
            let parts = c["parts"].as_array().unwrap();
            parts[parts.len() - 1]["text"].as_str().unwrap()
        })
        .collect();
    assert_eq!(
        texts,
        [
            "my name is Ada",
            "Nice to meet you, Ada.",
            "what is my name?"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_prompt_finishes_with_no_client_attached() {
    let t = Turns::new(vec![Reply::Stream {
        events: vec![
            gemini::text("working "),
            gemini::text("in the background"),
            gemini::done(1, 1),
        ],
        gap: Duration::from_millis(300),
    }])
    .await;
    let turn = {
        let detached = t.d.client().await;
        let turn = detached
            .prompt(t.session.clone(), "go".into())
            .await
            .unwrap()
            .turn_id;
        drop(detached);
        turn
    };
    drop(t.c);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let later = t.d.client().await;
    let mut sub = later
        .subscribe_session(t.session.clone(), None)
        .await
        .unwrap();
    let events = collect_until(&mut sub, finished(&turn)).await;
    assert_eq!(end_of(&events, &turn).0, "completed");
    assert_eq!(text_of(&events), "working in the background");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_queue_in_order_from_any_client() {
    let t = Turns::new(vec![
        // Long enough that the second prompt surely comes while the
        // first runs, even on a loaded machine.
        Reply::Stream {
            events: vec![gemini::text("one"), gemini::done(1, 1)],
            gap: Duration::from_millis(2000),
        },
        gemini::answer(&["two"]),
    ])
    .await;
    let mut sub = t.subscribe().await;
    let other = t.d.client().await;
    let a = t.c.prompt(t.session.clone(), "first".into()).await.unwrap();
    let b = other
        .prompt(t.session.clone(), "second".into())
        .await
        .unwrap();
    assert_eq!((a.queued_behind, b.queued_behind), (0, 1));
    let events = collect_until(&mut sub, finished(&b.turn_id)).await;
    let order: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::TurnStarted { turn_id } => Some(format!("start {turn_id}")),
            EventPayload::TurnFinished { turn_id, .. } => Some(format!("end {turn_id}")),
            _ => None,
        })
        .collect();
    assert_eq!(
        order,
        [
            format!("start {}", a.turn_id),
            format!("end {}", a.turn_id),
            format!("start {}", b.turn_id),
            format!("end {}", b.turn_id)
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_call_over_and_over_is_a_loop() {
    let call = || gemini::call_reply(&[("glob", json!({"pattern": "*.rs"}))]);
    let t = Turns::with(
        vec![call(), call(), call(), call()],
        &[("GEMINID_LOOP_THRESHOLD", "3")],
        None,
    )
    .await;
    let mut sub = t.subscribe().await;
    let turn = t.prompt("loop").await;
    let events = collect_until(&mut sub, finished(&turn)).await;
    let (reason, message, _) = end_of(&events, &turn);
    assert_eq!(reason, "loop_detected");
    assert!(message.unwrap().contains("`glob`"));
    assert_eq!(
        final_calls(&events).len(),
        2,
        "the third identical call never ran"
    );
    let page = t.c.history(t.session.clone(), None, None).await.unwrap();
    assert_eq!(
        page.contents.last().unwrap()["role"],
        "user",
        "the last call got a response"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_step_limit_ends_a_turn() {
    let call = |n: u32| gemini::call_reply(&[("glob", json!({"pattern": format!("*.{n}")}))]);
    let t = Turns::with(
        vec![call(1), call(2), call(3)],
        &[("GEMINID_MAX_STEPS", "2")],
        None,
    )
    .await;
    let mut sub = t.subscribe().await;
    let turn = t.prompt("go").await;
    let events = collect_until(&mut sub, finished(&turn)).await;
    assert_eq!(end_of(&events, &turn).0, "max_steps");
    assert_eq!(t.fake.seen().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_interactive_session_denies_instead_of_asking() {
    let t = Turns::with(
        vec![
            gemini::call_reply(&[("run_shell_command", json!({"command": "touch made-it"}))]),
            gemini::answer(&["could not"]),
        ],
        &[],
        Some(false),
    )
    .await;
    let mut sub = t.subscribe().await;
    let turn = t.prompt("touch a file").await;
    let events = collect_until(&mut sub, finished(&turn)).await;
    assert_eq!(end_of(&events, &turn).0, "completed");
    let calls = final_calls(&events);
    assert_eq!(calls[0].state, CallState::Error);
    assert!(!events.iter().any(|e| matches!(&e.payload, EventPayload::ToolCall(c) if c.state == CallState::AwaitingApproval)));
    assert!(!t.d.workspace.join("made-it").exists());
    let sent = responses(&t.fake.seen()[1].body);
    assert!(sent[0].1["error"].is_string(), "{sent:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_cut_by_kill_9_is_interrupted_and_the_queue_goes_on() {
    let mut t = Turns::new(vec![
        gemini::call_reply(&[("run_shell_command", json!({"command": "sleep 30"}))]),
        gemini::answer(&["second prompt answered"]),
    ])
    .await;
    t.yolo().await;
    let mut sub = t.subscribe().await;
    let first = t.prompt("sleep").await;
    let queued = t.prompt("then this").await;
    collect_until(
        &mut sub,
        |e| matches!(&e.payload, EventPayload::ToolCall(c) if c.state == CallState::Executing),
    )
    .await;
    drop(sub);
    t.d.kill9();
    t.d.spawn();
    t.c = t.d.client().await;
    let mut sub =
        t.c.subscribe_session(t.session.clone(), None)
            .await
            .unwrap();
    let events = collect_until(&mut sub, finished(&queued)).await;
    let (reason, message, _) = end_of(&events, &first);
    assert_eq!(reason, "interrupted");
    assert!(message.unwrap().contains("daemon stopped"));
    assert_eq!(
        end_of(&events, &queued).0,
        "completed",
        "the queued prompt ran after the restart"
    );
    // The interrupted call was answered in the history the model saw.
    let sent = responses(&t.fake.seen()[1].body);
    assert_eq!(sent.len(), 1);
    assert!(
        sent[0].1["error"].as_str().unwrap().contains("interrupted"),
        "{sent:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_model_prompts_fail_at_once_and_say_how_to_fix_it() {
    let d = TestDaemon::start();
    let c = d.client().await;
    let session = new_session(&c, &d.workspace).await;
    let err = c.prompt(session.clone(), "hi".into()).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(&code::MODEL_NOT_CONFIGURED.to_string()),
        "{text}"
    );
    assert!(text.contains("GEMINI_API_KEY"), "{text}");
    let status = c.status().await.unwrap();
    let model = status.model.unwrap();
    assert!(!model.key_present);
    assert!(model.problem.is_some());
    // Tools keep working.
    let done = call_and_wait(&c, &session, "glob", json!({"pattern": "*"})).await;
    assert_eq!(done.outcome.unwrap().state, CallState::Success);
}
