//! Questions a session asks its people, through a real daemon: an MCP
//! server's elicitation (server-everything's `trigger-elicitation-request`)
//! and the model's `ask_user` go to every attached client as a
//! `questionAsked` event; the first `session.answer` wins, the others are
//! told who answered, and a `questionClosed` event withdraws it from
//! everyone. Nobody to ask (a non-interactive session, or no client
//! attached) declines at once; a cancel or the timeout ends the question.

mod peers;

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::event::{EventPayload, SessionEvent};
use geminid_protocol::question::{AnswerAction, QuestionAsker};
use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::CallState;
use geminid_tests::*;
use jsonrpsee::core::client::Subscription;
use peers::*;
use serde_json::json;

const ELICIT: &str = "everything__trigger-elicitation-request";

fn everything_daemon(env: &[(&str, &str)]) -> TestDaemon {
    let p = peers();
    let mut d = TestDaemon::prepared(env);
    let dir = d.home().join(".gemini");
    std::fs::create_dir_all(&dir).expect("gemini dir");
    std::fs::write(
        dir.join("settings.json"),
        json!({"mcpServers": {"everything": {"command": everything(&p)}}}).to_string(),
    )
    .expect("settings");
    d.spawn();
    d
}

async fn subscribe(c: &Client, sid: &str) -> Subscription<SessionEvent> {
    let last = c.get_session(sid.into()).await.expect("info").last_seq;
    c.subscribe_session(sid.into(), Some(last))
        .await
        .expect("subscribe")
}

/// Waits for the next `questionAsked`; its id and event.
async fn asked(sub: &mut Subscription<SessionEvent>) -> (String, EventPayload) {
    let events = collect_until(sub, |e| {
        matches!(e.payload, EventPayload::QuestionAsked { .. })
    })
    .await;
    let payload = events.last().expect("an event").payload.clone();
    let EventPayload::QuestionAsked { question_id, .. } = &payload else {
        unreachable!()
    };
    (question_id.clone(), payload)
}

/// Waits for `questionClosed` of `id`: action, by, reason.
async fn closed(
    sub: &mut Subscription<SessionEvent>,
    id: &str,
) -> (AnswerAction, Option<String>, Option<String>) {
    let events = collect_until(sub, |e| {
        matches!(&e.payload, EventPayload::QuestionClosed { question_id, .. } if question_id == id)
    })
    .await;
    match &events.last().expect("an event").payload {
        EventPayload::QuestionClosed {
            action, by, reason, ..
        } => (*action, by.clone(), reason.clone()),
        _ => unreachable!(),
    }
}

async fn start_call(c: &Client, sid: &str, tool: &str) -> String {
    c.call_tool(sid.into(), tool.into(), Some(json!({})), Some(false))
        .await
        .expect("tool.call")
        .call_id
}

async fn final_text(sub: &mut Subscription<SessionEvent>, call_id: &str) -> (CallState, String) {
    let events = collect_until(sub, |e| is_final(e, call_id)).await;
    match &events.last().expect("final").payload {
        EventPayload::ToolCall(call) => (call.state, call_text(call)),
        _ => unreachable!(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_elicitation_is_answered_from_a_second_client_and_withdrawn_from_the_first() {
    let d = everything_daemon(&[]);
    let a = d.client().await;
    let b = d.client().await;
    connected(&a, &["everything"]).await;
    let sid = session_in(&a, &d.workspace, Some(ApprovalMode::Yolo), Some(true)).await;
    let mut sub_a = subscribe(&a, &sid).await;
    let mut sub_b = subscribe(&b, &sid).await;
    let call_id = start_call(&a, &sid, ELICIT).await;

    let (qid, payload) = asked(&mut sub_a).await;
    let (qid_b, _) = asked(&mut sub_b).await;
    assert_eq!(qid, qid_b);
    let EventPayload::QuestionAsked {
        call_id: of_call,
        asked_by,
        message,
        fields,
        ..
    } = payload
    else {
        unreachable!()
    };
    assert_eq!(of_call.as_deref(), Some(call_id.as_str()));
    assert_eq!(
        asked_by,
        QuestionAsker::Mcp {
            server: "everything".into()
        }
    );
    assert!(message.contains("Please provide inputs"), "{message}");
    let field = |name: &str| fields.iter().find(|f| f.name == name).expect(name).clone();
    assert!(field("name").required);
    assert_eq!(field("integer").kind, "integer");
    assert_eq!(field("integer").default, Some(json!(42)));
    assert_eq!(field("titledMultipleSelectEnum").kind, "choices");
    assert_eq!(
        field("legacyTitledEnum").options[1].label.as_deref(),
        Some("Dogs")
    );

    // Content that does not fit is refused; the question stays open.
    for bad in [
        json!({"integer": 500, "name": "Ada"}),
        json!({"check": true}),
    ] {
        let err = b
            .answer_question(
                sid.clone(),
                qid.clone(),
                AnswerAction::Accept,
                Some(bad.clone()),
            )
            .await
            .expect_err("a bad answer");
        let text = err.to_string();
        assert!(text.contains("InvalidParams"), "{bad}: {text}");
        assert!(
            text.contains("integer") || text.contains("`name` is required"),
            "{text}"
        );
    }

    // The second client answers first; the first is told who did.
    let answer = b
        .answer_question(
            sid.clone(),
            qid.clone(),
            AnswerAction::Accept,
            Some(json!({"name": "Ada Lovelace", "check": true})),
        )
        .await
        .expect("the first answer wins");
    assert_eq!(answer.content.as_ref().expect("content")["integer"], 42);
    let late = a
        .answer_question(sid.clone(), qid.clone(), AnswerAction::Decline, None)
        .await
        .expect_err("a later answer")
        .to_string();
    assert!(late.contains("-32046"), "{late}");
    assert!(late.contains("already answered (accept) by"), "{late}");
    for sub in [&mut sub_a, &mut sub_b] {
        let (action, by, _) = closed(sub, &qid).await;
        assert_eq!(action, AnswerAction::Accept);
        assert!(by.expect("by").contains("connection"));
    }
    let (state, text) = final_text(&mut sub_a, &call_id).await;
    assert_eq!(state, CallState::Success, "{text}");
    assert!(
        text.contains("User provided the requested information"),
        "{text}"
    );
    assert!(text.contains("- Name: Ada Lovelace"), "{text}");
    assert!(text.contains("- Agreed to terms: true"), "{text}");
    assert!(text.contains("- Favorite Integer: 42"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn nobody_to_ask_declines_at_once() {
    let d = everything_daemon(&[]);
    let c = d.client().await;
    connected(&c, &["everything"]).await;

    // A non-interactive session, watched: declined, with an event saying so.
    let batch = session_in(&c, &d.workspace, Some(ApprovalMode::Yolo), Some(false)).await;
    let mut sub = subscribe(&c, &batch).await;
    let call_id = start_call(&c, &batch, ELICIT).await;
    let (qid, _) = asked(&mut sub).await;
    let (action, by, reason) = closed(&mut sub, &qid).await;
    assert_eq!(action, AnswerAction::Decline);
    assert_eq!(by, None);
    assert!(reason.expect("reason").contains("not interactive"));
    let (_, text) = final_text(&mut sub, &call_id).await;
    assert!(text.contains("User declined"), "{text}");

    // An interactive session nobody is attached to: declined as well.
    let alone = session_in(&c, &d.workspace, Some(ApprovalMode::Yolo), Some(true)).await;
    let done = c
        .call_tool(alone.clone(), ELICIT.into(), Some(json!({})), Some(true))
        .await
        .expect("tool.call");
    let text = call_text(done.outcome.as_ref().expect("final snapshot"));
    assert!(text.contains("User declined"), "{text}");
    let history = subscribe_from(&c, &alone, 0).await;
    let reason = history
        .iter()
        .find_map(|e| match &e.payload {
            EventPayload::QuestionClosed { reason, .. } => reason.clone(),
            _ => None,
        })
        .expect("a questionClosed event");
    assert!(reason.contains("no client is attached"), "{reason}");
}

/// Every stored event of `sid` after `since`, up to its current end.
async fn subscribe_from(c: &Client, sid: &str, since: u64) -> Vec<SessionEvent> {
    let last = c.get_session(sid.into()).await.expect("info").last_seq;
    let mut sub = c
        .subscribe_session(sid.into(), Some(since))
        .await
        .expect("subscribe");
    collect_until(&mut sub, |e| e.seq >= last).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_call_ends_its_question_and_a_late_answer_is_refused() {
    let d = everything_daemon(&[]);
    let c = d.client().await;
    connected(&c, &["everything"]).await;
    let sid = session_in(&c, &d.workspace, Some(ApprovalMode::Yolo), Some(true)).await;
    let mut sub = subscribe(&c, &sid).await;
    let call_id = start_call(&c, &sid, ELICIT).await;
    let (qid, _) = asked(&mut sub).await;
    assert!(
        c.cancel_tool(sid.clone(), call_id.clone())
            .await
            .expect("cancel")
            .ok
    );
    let (action, _, reason) = closed(&mut sub, &qid).await;
    assert_eq!(action, AnswerAction::Cancel);
    assert!(reason.expect("reason").contains("its call ended"));
    let (state, _) = final_text(&mut sub, &call_id).await;
    assert_eq!(state, CallState::Cancelled);
    let late = c
        .answer_question(sid, qid, AnswerAction::Accept, Some(json!({"name": "x"})))
        .await
        .expect_err("closed")
        .to_string();
    assert!(
        late.contains("-32046") && late.contains("its call ended"),
        "{late}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unanswered_question_ends_at_its_timeout() {
    let d = everything_daemon(&[("GEMINID_QUESTION_TIMEOUT", "2")]);
    let c = d.client().await;
    connected(&c, &["everything"]).await;
    let sid = session_in(&c, &d.workspace, Some(ApprovalMode::Yolo), Some(true)).await;
    let mut sub = subscribe(&c, &sid).await;
    let call_id = start_call(&c, &sid, ELICIT).await;
    let (qid, payload) = asked(&mut sub).await;
    assert!(matches!(
        payload,
        EventPayload::QuestionAsked {
            timeout_secs: 2,
            ..
        }
    ));
    let (action, _, reason) = closed(&mut sub, &qid).await;
    assert_eq!(action, AnswerAction::Cancel);
    assert!(reason.expect("reason").contains("no answer within 2 s"));
    let (state, text) = final_text(&mut sub, &call_id).await;
    assert_eq!(state, CallState::Success, "{text}");
    assert!(text.contains("User cancelled"), "{text}");
}

fn model_daemon(base_url: &str) -> TestDaemon {
    TestDaemon::start_with_env(&[
        ("GEMINI_API_KEY", "test-key"),
        ("GOOGLE_GEMINI_BASE_URL", base_url),
        ("GEMINI_MODEL", "gemini-2.5-flash"),
    ])
}

fn ask_args() -> serde_json::Value {
    json!({"questions": [
        {"question": "Which database?", "header": "DB", "type": "choice",
         "options": [{"label": "Postgres", "description": "solid"}, {"label": "SQLite", "description": "small"}]},
        {"question": "Project name?", "header": "Name", "type": "text"}
    ]})
}

/// The text of every function response the model was sent.
fn function_responses(fake: &geminid_tests::fake_model::FakeModel) -> String {
    fake.seen()
        .iter()
        .flat_map(|s| s.body["contents"].as_array().cloned().unwrap_or_default())
        .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p.get("functionResponse").map(|r| r.to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_user_is_answered_from_a_second_client_and_the_model_reads_the_answers() {
    use geminid_tests::fake_model::{FakeModel, gemini};
    let fake = FakeModel::scripted(vec![
        gemini::call_reply(&[("ask_user", ask_args())]),
        gemini::answer(&["thanks"]),
    ])
    .await;
    let d = model_daemon(fake.base_url.as_str());
    let a = d.client().await;
    let b = d.client().await;
    // Default mode: ask_user needs no approval, the question is enough.
    let sid = session_in(&a, &d.workspace, None, Some(true)).await;
    let mut sub_a = subscribe(&a, &sid).await;
    let mut sub_b = subscribe(&b, &sid).await;
    let turn = a
        .prompt(sid.clone(), "set it up".into())
        .await
        .expect("prompt")
        .turn_id;
    let (qid, payload) = asked(&mut sub_b).await;
    let EventPayload::QuestionAsked {
        asked_by,
        fields,
        message,
        ..
    } = payload
    else {
        unreachable!()
    };
    assert_eq!(asked_by, QuestionAsker::Model);
    assert_eq!(message, "Asking user: Which database?, Project name?");
    assert_eq!(fields[0].name, "0");
    assert_eq!(fields[0].title.as_deref(), Some("DB"));
    assert!(fields[0].other, "an Other answer is allowed");
    assert_eq!(fields[0].options[1].value, "SQLite");
    b.answer_question(
        sid.clone(),
        qid.clone(),
        AnswerAction::Accept,
        Some(json!({"0": "SQLite", "1": "shop"})),
    )
    .await
    .expect("answer");
    let (action, by, _) = closed(&mut sub_a, &qid).await;
    assert_eq!(action, AnswerAction::Accept);
    assert!(by.is_some());
    collect_until(
        &mut sub_a,
        |e| matches!(&e.payload, EventPayload::TurnFinished { turn_id, .. } if *turn_id == turn),
    )
    .await;
    let sent = function_responses(&fake);
    assert!(
        sent.contains(r#"{\"answers\":{\"0\":\"SQLite\",\"1\":\"shop\"}}"#),
        "{sent}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_user_is_refused_in_a_non_interactive_session_and_dismissed_when_declined() {
    use geminid_tests::fake_model::{FakeModel, gemini};
    let fake = FakeModel::scripted(vec![
        gemini::call_reply(&[("ask_user", ask_args())]),
        gemini::answer(&["ok"]),
        gemini::call_reply(&[("ask_user", ask_args())]),
        gemini::answer(&["ok"]),
    ])
    .await;
    let d = model_daemon(fake.base_url.as_str());
    let c = d.client().await;
    // Not offered, and refused, where nobody can answer (0.61's rule).
    let batch = session_in(&c, &d.workspace, Some(ApprovalMode::Yolo), Some(false)).await;
    let events = run_turn(&c, &batch, "go").await;
    let refused = events.iter().find_map(|e| match &e.payload {
        EventPayload::ToolCall(call) if call.name == "ask_user" && call.state.is_terminal() => {
            Some(call.clone())
        }
        _ => None,
    });
    let refused = refused.expect("the ask_user call");
    assert_eq!(refused.state, CallState::Error, "{refused:?}");
    assert!(
        call_text(&refused).contains("non-interactive"),
        "{refused:?}"
    );
    let first = &fake.seen()[0].body;
    assert!(
        !first.to_string().contains("\"ask_user\""),
        "declared: {first}"
    );

    // Interactive, and the person declines: the model reads 0.61's words.
    let sid = session_in(&c, &d.workspace, None, Some(true)).await;
    let mut sub = subscribe(&c, &sid).await;
    c.prompt(sid.clone(), "go".into()).await.expect("prompt");
    let (qid, _) = asked(&mut sub).await;
    c.answer_question(sid.clone(), qid, AnswerAction::Decline, None)
        .await
        .expect("decline");
    collect_until(&mut sub, |e| {
        matches!(&e.payload, EventPayload::TurnFinished { .. })
    })
    .await;
    assert!(
        function_responses(&fake).contains("User dismissed ask_user dialog without answering."),
        "{}",
        function_responses(&fake)
    );
}

fn gemctl_command(d: &TestDaemon, args: &str) -> String {
    format!(
        "cd '{ws}' && env HOME='{home}' TERM=tmux-256color '{bin}' --socket '{socket}' {args}",
        ws = d.workspace.display(),
        home = d.home().display(),
        bin = gemctl_bin().display(),
        socket = d.socket.display(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_asks_field_by_field_and_the_other_terminal_sees_it_withdrawn() {
    use geminid_tests::fake_model::{FakeModel, gemini};
    use geminid_tests::tmux::Tmux;
    let fake = FakeModel::scripted(vec![
        gemini::call_reply(&[("ask_user", ask_args())]),
        gemini::answer(&["noted"]),
    ])
    .await;
    let d = model_daemon(fake.base_url.as_str());
    let c = d.client().await;
    let sid = session_in(&c, &d.workspace, None, Some(true)).await;
    let tmux = Tmux::new(d.dir.path());
    for pane in ["a", "b"] {
        tmux.start(pane, &gemctl_command(&d, &format!("attach {sid}")));
        tmux.wait_for(pane, "attached to").await;
    }
    c.prompt(sid.clone(), "set it up".into())
        .await
        .expect("prompt");
    // Both terminals ask; the second answers the choice by number and the
    // text field, and the first one's question is withdrawn.
    tmux.wait_for("a", "1. Postgres: solid").await;
    let screen = tmux.wait_for("b", "number or text:").await;
    assert!(screen.contains("? the model asks"), "{screen}");
    tmux.line("b", "2");
    tmux.wait_for("b", "Project name?").await;
    tmux.line("b", "shop");
    let screen = tmux.wait_for("a", "accepted by").await;
    assert!(screen.contains("(question q-"), "{screen}");
    tmux.wait_for("a", "finished: completed").await;
    let sent = function_responses(&fake);
    assert!(
        sent.contains(r#"{\"answers\":{\"0\":\"SQLite\",\"1\":\"shop\"}}"#),
        "{sent}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_asks_field_by_field_and_withdraws_a_question_answered_elsewhere() {
    use geminid_tests::fake_model::{FakeModel, gemini};
    use geminid_tests::tmux::Tmux;
    let fake = FakeModel::scripted(vec![
        gemini::call_reply(&[("ask_user", ask_args())]),
        gemini::answer(&["noted the answers"]),
        gemini::call_reply(&[("ask_user", ask_args())]),
        gemini::answer(&["the other client answered"]),
    ])
    .await;
    let d = model_daemon(fake.base_url.as_str());
    let c = d.client().await;
    let sid = session_in(&c, &d.workspace, None, Some(true)).await;
    let tmux = Tmux::new(d.dir.path());
    tmux.start("a", &gemctl_command(&d, &format!("chat --session {sid}")));
    tmux.wait_for("a", "gemctl chat session").await;

    // The chat's own prompt asks; it is answered there, field by field.
    tmux.line("a", "set it up");
    let screen = tmux.wait_for("a", "number or text:").await;
    assert!(screen.contains("? the model asks (q-"), "{screen}");
    assert!(screen.contains("2. SQLite: small"), "{screen}");
    tmux.line("a", "2");
    tmux.wait_for("a", "Project name?").await;
    tmux.line("a", "shop");
    let screen = tmux.wait_for("a", "noted the answers").await;
    // Answered here: it is not asked again, nor shown as withdrawn.
    assert_eq!(screen.matches("? the model asks").count(), 1, "{screen}");
    assert!(!screen.contains("↳"), "{screen}");
    let sent = function_responses(&fake);
    assert!(
        sent.contains(r#"{\"answers\":{\"0\":\"SQLite\",\"1\":\"shop\"}}"#),
        "{sent}"
    );

    // The next question is answered by another client first: the chat
    // withdraws it, and its next line is a prompt again.
    let mut sub = subscribe(&c, &sid).await;
    tmux.line("a", "once more");
    let (qid, _) = asked(&mut sub).await;
    tmux.wait("a", "the second question", |s| {
        s.matches("? the model asks").count() == 2
    })
    .await;
    c.answer_question(
        sid.clone(),
        qid.clone(),
        AnswerAction::Accept,
        Some(json!({"0": "Postgres", "1": "elsewhere"})),
    )
    .await
    .expect("answer");
    let screen = tmux
        .wait_for("a", &format!("↳ (question {qid} accepted by"))
        .await;
    assert!(!screen.contains("not accepted"), "{screen}");
    tmux.wait_for("a", "the other client answered").await;
    assert!(
        function_responses(&fake).contains(r#"\"1\":\"elsewhere\""#),
        "{}",
        function_responses(&fake)
    );
    tmux.keys("a", &["C-d"]);
    tmux.wait_for("a", "EXITED=0").await;
}

/// A daemon whose settings run the URL-mode elicitation server.
fn url_server_daemon() -> TestDaemon {
    let p = peers();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/py_url_server.py");
    let mut d = TestDaemon::prepared(&[]);
    let dir = d.home().join(".gemini");
    std::fs::create_dir_all(&dir).expect("gemini dir");
    std::fs::write(
        dir.join("settings.json"),
        json!({"mcpServers": {"web": {
            "command": p.join(".venv/bin/python").display().to_string(),
            "args": [script.display().to_string()],
        }}})
        .to_string(),
    )
    .expect("settings");
    d.spawn();
    d
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_elicitation_is_a_link_question_and_its_completion_an_event() {
    let d = url_server_daemon();
    let c = d.client().await;
    connected(&c, &["web"]).await;
    let sid = session_in(&c, &d.workspace, Some(ApprovalMode::Yolo), Some(true)).await;
    let mut sub = subscribe(&c, &sid).await;

    let call_id = start_call(&c, &sid, "web__login").await;
    let (qid, payload) = asked(&mut sub).await;
    let EventPayload::QuestionAsked {
        url,
        fields,
        message,
        call_id: of_call,
        ..
    } = payload
    else {
        unreachable!()
    };
    assert_eq!(
        url.as_deref(),
        Some("https://auth.example.test/login?state=abc")
    );
    assert!(fields.is_empty());
    assert_eq!(message, "Sign in to Example to continue");
    assert_eq!(of_call.as_deref(), Some(call_id.as_str()));
    // A URL question takes no content.
    let refused = c
        .answer_question(
            sid.clone(),
            qid.clone(),
            AnswerAction::Accept,
            Some(json!({"password": "x"})),
        )
        .await
        .expect_err("content for a link");
    assert!(refused.to_string().contains("password"), "{refused}");
    c.answer_question(sid.clone(), qid.clone(), AnswerAction::Accept, None)
        .await
        .expect("accept");
    // The server then says the interaction is complete; the call ends
    // with the server's reading of the answer.
    let events = collect_until(&mut sub, |e| is_final(e, &call_id)).await;
    let completed = events.iter().any(|e| {
        matches!(&e.payload, EventPayload::ElicitationCompleted { question_id, server }
            if *question_id == qid && server == "web")
    });
    let events = if completed {
        events
    } else {
        // Notifications travel apart from the call's result.
        collect_until(&mut sub, |e| {
            matches!(&e.payload, EventPayload::ElicitationCompleted { question_id, .. } if *question_id == qid)
        })
        .await
    };
    assert!(!events.is_empty());
    let mut replay = c
        .subscribe_session(sid.clone(), Some(0))
        .await
        .expect("replay");
    let (state, text) = final_text(&mut replay, &call_id).await;
    assert_eq!(state, CallState::Success, "{text}");
    assert!(text.contains("action=accept"), "{text}");

    // Anything but an http(s) page is declined without asking anyone.
    let odd = start_call(&c, &sid, "web__odd_login").await;
    let events = collect_until(&mut sub, |e| is_final(e, &odd)).await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.payload, EventPayload::QuestionAsked { .. })),
        "{events:?}"
    );
    let (state, text) = match &events.last().expect("final").payload {
        EventPayload::ToolCall(call) => (call.state, call_text(call)),
        _ => unreachable!(),
    };
    assert_eq!(state, CallState::Success, "{text}");
    assert!(text.contains("action=decline"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_shows_a_links_host_and_takes_only_a_clear_yes() {
    use geminid_tests::tmux::Tmux;
    let d = url_server_daemon();
    let c = d.client().await;
    connected(&c, &["web"]).await;
    let sid = session_in(&c, &d.workspace, Some(ApprovalMode::Yolo), Some(true)).await;
    let tmux = Tmux::new(d.dir.path());
    tmux.start("a", &gemctl_command(&d, &format!("attach {sid}")));
    tmux.wait_for("a", "attached to").await;
    let mut sub = subscribe(&c, &sid).await;
    let call_id = start_call(&c, &sid, "web__login").await;
    let screen = tmux.wait_for("a", "going there? [Y/d/c]:").await;
    assert!(
        screen.contains("URL:  https://auth.example.test/login?state=abc"),
        "{screen}"
    );
    assert!(screen.contains("host: auth.example.test"), "{screen}");
    assert!(screen.contains("geminid does not open it"), "{screen}");
    tmux.line("a", "whatever");
    tmux.wait_for("a", "answer y (or Enter), d or c").await;
    tmux.line("a", "y");
    let (state, text) = final_text(&mut sub, &call_id).await;
    assert_eq!(state, CallState::Success, "{text}");
    assert!(text.contains("action=accept"), "{text}");
    tmux.wait_for("a", "says the interaction at its URL is complete")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_fields_bounds_reach_the_client_and_the_terminal_asks_again_within_them() {
    use geminid_tests::tmux::Tmux;
    let d = url_server_daemon();
    let c = d.client().await;
    connected(&c, &["web"]).await;
    let sid = session_in(&c, &d.workspace, Some(ApprovalMode::Yolo), Some(true)).await;
    let tmux = Tmux::new(d.dir.path());
    tmux.start("a", &gemctl_command(&d, &format!("attach {sid}")));
    tmux.wait_for("a", "attached to").await;
    let mut sub = subscribe(&c, &sid).await;
    let call_id = start_call(&c, &sid, "web__sign_up").await;

    // On the wire: the server's minLength/maxLength/format, as it sent them.
    let (_, payload) = asked(&mut sub).await;
    let EventPayload::QuestionAsked { fields, .. } = payload else {
        unreachable!()
    };
    let field = |name: &str| fields.iter().find(|f| f.name == name).expect(name).clone();
    assert_eq!(
        (field("user").min_length, field("user").max_length),
        (Some(3), Some(8))
    );
    assert_eq!(field("mail").format.as_deref(), Some("email"));

    // At the terminal: the bounds are shown, and a line outside them is
    // asked again before anything is sent (fields come in name order).
    tmux.wait_for("a", "mail (an email address): ").await;
    tmux.line("a", "not-an-address");
    tmux.wait_for("a", "mail must be an email address").await;
    tmux.line("a", "ada@example.test");
    let screen = tmux.wait_for("a", "user (3-8 characters): ").await;
    assert!(screen.contains("A user name"), "{screen}");
    tmux.line("a", "ab");
    tmux.wait_for("a", "user must be 3-8 characters (this is 2)")
        .await;
    tmux.line("a", "ada");
    let (state, text) = final_text(&mut sub, &call_id).await;
    assert_eq!(state, CallState::Success, "{text}");
    assert!(text.contains("user=ada mail=ada@example.test"), "{text}");
}
