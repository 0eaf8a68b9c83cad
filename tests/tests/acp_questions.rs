//! A session's questions (here the model's `ask_user`) in `gemctl acp`:
//! an editor that advertised form elicitation is asked with
//! `elicitation/create` (withdrawn with `$/cancel_request` when a terminal
//! answers first); one that did not sees the question declined, with a
//! note in the agent's message. A URL-mode question goes as a URL
//! elicitation to an editor that advertised `url`, and is declined with
//! a note elsewhere. Driven raw over stdio, then by the ACP SDK's client.

mod acp_setup;
mod peers;
mod stdio;

use acp_setup::{Setup, prompt, text_of, updates};
use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::question::AnswerAction;
use geminid_tests::fake_model::{FakeModel, gemini};
use geminid_tests::*;
use serde_json::{Value, json};
use stdio::{is_request, is_response};

fn ask_args() -> Value {
    json!({"questions": [
        {"question": "Which database?", "header": "DB", "type": "choice",
         "options": [{"label": "Postgres", "description": "solid"}, {"label": "SQLite", "description": "small"}]},
        {"question": "Project name?", "header": "Name", "type": "text"}
    ]})
}

/// The text of every function response the model was sent.
fn function_responses(fake: &FakeModel) -> String {
    fake.seen()
        .iter()
        .flat_map(|s| s.body["contents"].as_array().cloned().unwrap_or_default())
        .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p.get("functionResponse").map(|r| r.to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_that_elicits_is_asked_and_withdrawn_when_a_terminal_answers_first() {
    let s = Setup::new(vec![
        gemini::call_reply(&[("ask_user", ask_args())]),
        gemini::answer(&["Noted."]),
        gemini::call_reply(&[("ask_user", ask_args())]),
        gemini::answer(&["Noted again."]),
    ])
    .await;
    let mut agent = s.agent_with(json!({"elicitation": {"form": {}}})).await;
    let session = s.new_session(&mut agent).await;

    let id = agent
        .request("session/prompt", prompt(&session, "set it up"))
        .await;
    let before = agent.until(|m| is_request(m, "elicitation/create")).await;
    let ask = before.last().unwrap().clone();
    let params = &ask["params"];
    assert_eq!(params["sessionId"], session.as_str(), "{ask}");
    assert_eq!(params["mode"], "form");
    assert_eq!(
        params["message"],
        "the model asks: Asking user: Which database?, Project name?"
    );
    // Tied to the call the editor was shown.
    let call = updates(&before)
        .into_iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .expect("the ask_user call");
    assert_eq!(params["toolCallId"], call["toolCallId"], "{ask}");
    let schema = &params["requestedSchema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["0"]["title"], "DB", "{schema}");
    assert_eq!(schema["properties"]["1"]["type"], "string");
    agent
        .respond(
            &ask["id"],
            json!({"action": "accept", "content": {"0": "SQLite", "1": "shop"}}),
        )
        .await;
    let rest = agent.until(|m| is_response(m, id)).await;
    assert_eq!(rest.last().unwrap()["result"]["stopReason"], "end_turn");
    assert_eq!(text_of(&rest, "agent_message_chunk"), "Noted.");
    assert!(
        function_responses(&s.fake).contains(r#"{\"answers\":{\"0\":\"SQLite\",\"1\":\"shop\"}}"#),
        "{}",
        function_responses(&s.fake)
    );

    // The next question is answered in a terminal first: the editor's
    // form is withdrawn, and its late answer changes nothing.
    let terminal = s.d.client().await;
    let id = agent
        .request("session/prompt", prompt(&session, "once more"))
        .await;
    let ask = agent.until(|m| is_request(m, "elicitation/create")).await;
    let ask = ask.last().unwrap().clone();
    // From the start: the second question asked is the open one.
    let mut events = terminal
        .subscribe_session(session.clone(), Some(0))
        .await
        .unwrap();
    let mut questions = 0;
    let asked = collect_until(&mut events, |e| {
        if matches!(
            e.payload,
            geminid_protocol::EventPayload::QuestionAsked { .. }
        ) {
            questions += 1;
        }
        questions == 2
    })
    .await;
    let geminid_protocol::EventPayload::QuestionAsked { question_id, .. } =
        &asked.last().unwrap().payload
    else {
        unreachable!()
    };
    terminal
        .answer_question(
            session.clone(),
            question_id.clone(),
            AnswerAction::Accept,
            Some(json!({"0": "Postgres", "1": "from the terminal"})),
        )
        .await
        .expect("the terminal answers first");
    let withdrawn = agent.until(|m| m["method"] == "$/cancel_request").await;
    assert_eq!(withdrawn.last().unwrap()["params"]["requestId"], ask["id"]);
    agent
        .respond(&ask["id"], json!({"action": "decline"}))
        .await;
    let rest = agent.until(|m| is_response(m, id)).await;
    assert_eq!(rest.last().unwrap()["result"]["stopReason"], "end_turn");
    assert!(
        function_responses(&s.fake).contains("from the terminal"),
        "{}",
        function_responses(&s.fake)
    );
    assert_eq!(agent.close().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_without_elicitation_sees_the_question_declined_with_a_note() {
    let s = Setup::new(vec![
        gemini::call_reply(&[("ask_user", ask_args())]),
        gemini::answer(&["Fine."]),
    ])
    .await;
    let mut agent = s.agent().await;
    let session = s.new_session(&mut agent).await;
    let (r, seen) = agent
        .call("session/prompt", prompt(&session, "set it up"))
        .await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert!(
        !seen.iter().any(|m| is_request(m, "elicitation/create")),
        "{seen:?}"
    );
    let text = text_of(&seen, "agent_message_chunk");
    assert!(
        text.contains(
            "the model asked \"Asking user: Which database?, Project name?\"; declined: this editor offers no elicitation"
        ),
        "{text}"
    );
    assert!(text.contains(&format!("gemctl attach {session}")), "{text}");
    assert!(
        function_responses(&s.fake).contains("User dismissed ask_user dialog without answering."),
        "{}",
        function_responses(&s.fake)
    );
}

/// The repository's `acp-client.mjs` next to the installed SDK: a folder
/// with the script and a link to the peers' `node_modules`.
fn acp_client_script(peers: &std::path::Path) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("dir");
    std::os::unix::fs::symlink(peers.join("node_modules"), dir.path().join("node_modules"))
        .expect("link node_modules");
    let script = dir.path().join("acp-client.mjs");
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/acp-client.mjs"),
        &script,
    )
    .expect("copy acp-client.mjs");
    (dir, script)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_acp_sdk_client_answers_a_question_as_an_elicitation() {
    let p = peers::peers();
    let s = Setup::new(vec![
        gemini::call_reply(&[("ask_user", ask_args())]),
        gemini::answer(&["Noted."]),
    ])
    .await;
    let (_dir, script) = acp_client_script(&p);
    let node = p.join("node_modules/.bin/node");
    let out = tokio::process::Command::new(node)
        .arg(&script)
        .args(["--cwd", &s.ws(), "--prompt", "set it up", "--elicit"])
        .arg(json!({"0": "SQLite", "1": "sdk"}).to_string())
        .arg("--")
        .arg(gemctl_bin())
        .args(["--socket", &s.d.socket.display().to_string(), "acp"])
        .output()
        .await
        .expect("run the ACP client");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    let elicitation = text
        .lines()
        .find_map(|l| l.strip_prefix("elicitation "))
        .expect("the SDK client was asked");
    let elicitation: Value = serde_json::from_str(elicitation).expect("JSON");
    assert_eq!(elicitation["mode"], "form", "{elicitation}");
    assert!(
        text.contains(r#"session/prompt {"stopReason":"end_turn"}"#),
        "{text}"
    );
    assert!(
        function_responses(&s.fake).contains(r#"{\"answers\":{\"0\":\"SQLite\",\"1\":\"sdk\"}}"#),
        "{}",
        function_responses(&s.fake)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_open_when_an_editor_loads_the_session_is_asked_after_the_history() {
    let s = Setup::new(vec![
        gemini::call_reply(&[("ask_user", ask_args())]),
        gemini::answer(&["Loaded and answered."]),
    ])
    .await;
    // A terminal starts the turn; the question is open before any editor.
    let terminal = s.d.client().await;
    let session = session_in(&terminal, &s.d.workspace, None, Some(true)).await;
    let mut events = terminal
        .subscribe_session(session.clone(), Some(0))
        .await
        .unwrap();
    terminal
        .prompt(session.clone(), "set it up".into())
        .await
        .expect("prompt");
    collect_until(&mut events, |e| {
        matches!(
            e.payload,
            geminid_protocol::EventPayload::QuestionAsked { .. }
        )
    })
    .await;

    let mut agent = s.agent_with(json!({"elicitation": {"form": {}}})).await;
    let id = agent
        .request(
            "session/load",
            json!({"sessionId": session, "cwd": s.ws(), "mcpServers": []}),
        )
        .await;
    let seen = agent.until(|m| is_request(m, "elicitation/create")).await;
    let loaded = seen
        .iter()
        .position(|m| is_response(m, id))
        .expect("session/load answered before the question");
    assert!(loaded < seen.len() - 1);
    let ask = seen.last().unwrap().clone();
    agent
        .respond(
            &ask["id"],
            json!({"action": "accept", "content": {"0": "Postgres", "1": "loaded"}}),
        )
        .await;
    collect_until(&mut events, |e| {
        matches!(
            e.payload,
            geminid_protocol::EventPayload::TurnFinished { .. }
        )
    })
    .await;
    assert!(
        function_responses(&s.fake).contains(r#"\"1\":\"loaded\""#),
        "{}",
        function_responses(&s.fake)
    );
}

/// A setup whose daemon also runs the URL-mode elicitation server
/// (`tests/peers/py_url_server.py`, trusted: its calls need no approval).
async fn url_setup(replies: Vec<geminid_tests::fake_model::Reply>) -> Setup {
    let p = peers::peers();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/py_url_server.py");
    let fake = FakeModel::scripted(replies).await;
    let mut d = TestDaemon::prepared(&[
        ("GEMINI_API_KEY", "test-key"),
        ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
        ("GEMINI_MODEL", "gemini-2.5-flash"),
    ]);
    let dir = d.home().join(".gemini");
    std::fs::create_dir_all(&dir).expect("gemini dir");
    std::fs::write(
        dir.join("settings.json"),
        json!({"mcpServers": {"web": {
            "command": p.join(".venv/bin/python").display().to_string(),
            "args": [script.display().to_string()],
            "trust": true,
        }}})
        .to_string(),
    )
    .expect("settings");
    d.spawn();
    let c = d.client().await;
    peers::connected(&c, &["web"]).await;
    Setup { d, fake }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_that_shows_links_gets_a_url_question_as_such_and_others_a_note() {
    let s = url_setup(vec![
        gemini::call_reply(&[("web__login", json!({}))]),
        gemini::answer(&["Signed in."]),
        gemini::call_reply(&[("web__login", json!({}))]),
        gemini::answer(&["Not signed in."]),
    ])
    .await;
    let mut agent = s
        .agent_with(json!({"elicitation": {"form": {}, "url": {}}}))
        .await;
    let session = s.new_session(&mut agent).await;
    let id = agent
        .request("session/prompt", prompt(&session, "sign in"))
        .await;
    let before = agent.until(|m| is_request(m, "elicitation/create")).await;
    let ask = before.last().unwrap().clone();
    let params = &ask["params"];
    assert_eq!(params["mode"], "url", "{ask}");
    assert_eq!(params["url"], "https://auth.example.test/login?state=abc");
    assert_eq!(
        params["message"],
        "MCP server web asks: Sign in to Example to continue"
    );
    assert!(params["elicitationId"].as_str().unwrap().starts_with("q-"));
    assert!(params.get("requestedSchema").is_none(), "{ask}");
    let elicitation_id = params["elicitationId"].clone();
    agent.respond(&ask["id"], json!({"action": "accept"})).await;
    // The server says the interaction is over: the editor is told, and the
    // call ends with the server's reading of the answer. The notification
    // and the turn's end travel apart: wait for both, in either order.
    let mut completed = false;
    let mut ended = false;
    let seen = agent
        .until(|m| {
            completed |= m["method"] == "elicitation/complete"
                && m["params"]["elicitationId"] == elicitation_id;
            ended |= is_response(m, id);
            completed && ended
        })
        .await;
    let end = seen.iter().find(|m| is_response(m, id)).unwrap();
    assert_eq!(end["result"]["stopReason"], "end_turn", "{end}");
    assert!(
        function_responses(&s.fake).contains("action=accept"),
        "{}",
        function_responses(&s.fake)
    );
    assert_eq!(agent.close().await, Some(0));

    // An editor that offers only forms: the link is declined, with a note.
    let mut agent = s.agent_with(json!({"elicitation": {"form": {}}})).await;
    let session = s.new_session(&mut agent).await;
    let (r, seen) = agent
        .call("session/prompt", prompt(&session, "sign in again"))
        .await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert!(
        !seen.iter().any(|m| is_request(m, "elicitation/create")),
        "{seen:?}"
    );
    let text = text_of(&seen, "agent_message_chunk");
    assert!(
        text.contains("declined: this editor offers no URL elicitation"),
        "{text}"
    );
    assert!(
        function_responses(&s.fake).contains("action=decline"),
        "{}",
        function_responses(&s.fake)
    );
}
