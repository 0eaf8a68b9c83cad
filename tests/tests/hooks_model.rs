//! The hooks around each model request through a real daemon, the fake
//! model and real hook scripts: BeforeModel blocks (exit status 2), stops,
//! answers in the model's stead, or rewrites the messages and settings the
//! model receives (calls and responses kept); BeforeToolSelection limits
//! the tools the model is offered; AfterModel replaces the text of each
//! chunk before anyone sees it.

use std::path::Path;

use geminid_protocol::event::{EventPayload, SessionEvent};
use geminid_tests::fake_model::{FakeModel, Reply, gemini};
use geminid_tests::*;
use serde_json::{Value, json};

fn one(command: &Path, args: &str) -> Value {
    json!([{"hooks": [{"type": "command", "command": format!("{} {args}", command.display())}]}])
}

async fn daemon(fake: &FakeModel) -> TestDaemon {
    TestDaemon::prepared(&[
        ("GEMINI_API_KEY", "test-key"),
        ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
        ("GEMINI_MODEL", "gemini-2.5-flash"),
    ])
}

fn turn_end(events: &[SessionEvent]) -> (String, Option<String>) {
    events
        .iter()
        .rev()
        .find_map(|e| match &e.payload {
            EventPayload::TurnFinished {
                reason, message, ..
            } => Some((reason.clone(), message.clone())),
            _ => None,
        })
        .unwrap()
}

/// The model text shown in the last turn of `events`.
fn shown_text(events: &[SessionEvent]) -> String {
    let last = events.iter().rev().find_map(|e| match &e.payload {
        EventPayload::TurnFinished { turn_id, .. } => Some(turn_id.clone()),
        _ => None,
    });
    events
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::ModelText { turn_id, delta } if Some(turn_id) == last.as_ref() => {
                Some(delta.as_str())
            }
            _ => None,
        })
        .collect()
}

fn runs_of(events: &[SessionEvent], name: &str) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::HookRun {
                event, decision, ..
            } if event == name => Some(decision.clone()),
            _ => None,
        })
        .collect()
}

fn logged(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

const BEFORE_MODEL_PY: &str = r#"#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
with open(sys.argv[1], "a") as f:
    f.write(json.dumps(data) + "\n")
req = data["llm_request"]
last = [m for m in req["messages"] if m["role"] == "user"][-1]["content"]
# Earlier prompts of the turn's history share its message: the end decides.
if last.endswith("forbidden"):
    sys.stderr.write("forbidden topic")
    sys.exit(2)
if last.endswith("halt"):
    print(json.dumps({"continue": False, "stopReason": "halted by policy"}))
elif last.endswith("cached"):
    print(json.dumps({"decision": "deny", "hookSpecificOutput": {"llm_response":
        {"candidates": [{"content": {"role": "model", "parts": ["from ", "the cache"]}}]}}}))
else:
    for m in req["messages"]:
        m["content"] = m["content"].replace("hunter2", "[redacted]")
    req["config"]["temperature"] = 0.25
    print(json.dumps({"hookSpecificOutput": {"llm_request": req}}))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_model_blocks_stops_answers_or_rewrites_the_request() {
    let fake = FakeModel::scripted(vec![
        gemini::call_reply(&[("list_directory", json!({"path": "{WS}"}))]),
        gemini::answer(&["listed"]),
    ])
    .await;
    let mut d = daemon(&fake).await;
    fake.set_var("WS", &d.workspace.display().to_string());
    let log = d.home().join("before_model.log");
    let hook = home_script(&d, "before_model.py", BEFORE_MODEL_PY);
    write_user_hooks(
        &d,
        json!({"BeforeModel": one(&hook, &log.display().to_string())}),
    );
    d.spawn();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;

    let blocked = run_turn(&c, &session, "this question is forbidden").await;
    assert_eq!(
        turn_end(&blocked),
        ("blocked".into(), Some("forbidden topic".into()))
    );
    assert_eq!(runs_of(&blocked, "BeforeModel"), vec!["deny"]);
    let stopped = run_turn(&c, &session, "now halt").await;
    assert_eq!(
        turn_end(&stopped),
        ("stopped".into(), Some("halted by policy".into()))
    );
    let cached = run_turn(&c, &session, "this one is cached").await;
    assert_eq!(turn_end(&cached).0, "completed");
    assert_eq!(shown_text(&cached), "from the cache");
    assert!(fake.seen().is_empty(), "no request reached the model");

    let asked = run_turn(&c, &session, "my password is hunter2, list the files").await;
    assert_eq!(turn_end(&asked).0, "completed", "{asked:#?}");
    let seen = fake.seen();
    assert_eq!(seen.len(), 2, "the call and the answer after it");
    for request in &seen {
        let body = request.body.to_string();
        assert!(!body.contains("hunter2"), "redacted before sending: {body}");
        assert!(body.contains("[redacted]"), "{body}");
        assert_eq!(request.body["generationConfig"]["temperature"], 0.25);
        assert_eq!(
            request.body["generationConfig"]["topK"], 64,
            "settings the hook kept stay"
        );
    }
    let second = seen[1].body["contents"].to_string();
    assert!(
        second.contains("functionCall") && second.contains("functionResponse"),
        "the call and its response survive the rewrite: {second}"
    );
    assert!(
        second.contains("from the cache"),
        "the hook's answer is in the history"
    );
    // What the hook read: 0.61's stable request.
    let runs = logged(&log);
    let last = &runs.last().unwrap()["llm_request"];
    assert_eq!(last["model"], "gemini-2.5-flash");
    assert_eq!(last["config"]["temperature"], 1);
    assert!(
        last["messages"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["content"].is_string()
                && ["user", "model"].contains(&m["role"].as_str().unwrap())),
        "{last}"
    );
    assert_eq!(runs.last().unwrap()["hook_event_name"], "BeforeModel");
}

const SELECT_SH: &str = r#"#!/bin/bash
cat >> "$1"
echo '{"hookSpecificOutput": {"hookEventName": "BeforeToolSelection", "toolConfig": {"mode": "ANY", "allowedFunctionNames": ["read_file", "glob"]}}}'
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_tool_selection_limits_the_tools_the_model_sees() {
    let fake = FakeModel::scripted(vec![gemini::answer(&["ok"]), gemini::answer(&["ok"])]).await;
    let mut d = daemon(&fake).await;
    let log = d.home().join("select.log");
    let hook = home_script(&d, "select.sh", SELECT_SH);
    write_user_hooks(
        &d,
        json!({"BeforeToolSelection": one(&hook, &log.display().to_string())}),
    );
    d.spawn();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    let turn = run_turn(&c, &session, "look around").await;
    assert_eq!(turn_end(&turn).0, "completed");
    assert_eq!(runs_of(&turn, "BeforeToolSelection"), vec!["allow"]);
    let body = &fake.seen()[0].body;
    let mut names: Vec<&str> = body["tools"][0]["functionDeclarations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, vec!["glob", "read_file"]);
    assert_eq!(
        body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["glob", "read_file"]}})
    );
    let input = &logged(&log)[0];
    assert_eq!(input["hook_event_name"], "BeforeToolSelection");
    assert!(
        input["llm_request"]["messages"]
            .to_string()
            .contains("look around")
    );
}

const AFTER_MODEL_PY: &str = r#"#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
with open(sys.argv[1], "a") as f:
    f.write(json.dumps(data) + "\n")
resp = data["llm_response"]
parts = resp["candidates"][0]["content"]["parts"]
if any("STOP-NOW" in p for p in parts):
    print(json.dumps({"decision": "deny", "reason": "unsafe output"}))
elif any("hunter2" in p for p in parts):
    parts = [p.replace("hunter2", "*******") for p in parts]
    print(json.dumps({"hookSpecificOutput": {"llm_response": {"candidates": [{"content": {"role": "model", "parts": parts}}]}}}))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_model_replaces_each_chunk_before_anyone_sees_it() {
    let fake = FakeModel::scripted(vec![
        Reply::Stream {
            events: vec![
                gemini::text("the password "),
                gemini::text("is hunter2"),
                gemini::done(10, 5),
            ],
            gap: std::time::Duration::ZERO,
        },
        gemini::answer(&["fine, ", "then STOP-NOW"]),
    ])
    .await;
    let mut d = daemon(&fake).await;
    let log = d.home().join("after.log");
    let hook = home_script(&d, "after_model.py", AFTER_MODEL_PY);
    write_user_hooks(
        &d,
        json!({"AfterModel": one(&hook, &log.display().to_string())}),
    );
    d.spawn();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    let turn = run_turn(&c, &session, "what is the password?").await;
    assert_eq!(turn_end(&turn).0, "completed");
    assert_eq!(shown_text(&turn), "the password is *******");
    let runs = logged(&log);
    assert_eq!(runs.len(), 3, "one firing per chunk, as 0.61: {runs:?}");
    assert_eq!(
        runs[1]["llm_response"]["candidates"][0]["content"]["parts"],
        json!(["is hunter2"])
    );
    assert_eq!(runs[1]["llm_response"]["text"], "is hunter2");
    assert_eq!(
        runs[2]["llm_response"]["usageMetadata"]["totalTokenCount"], 15,
        "the last chunk carries the usage"
    );
    assert_eq!(
        runs[2]["llm_response"]["candidates"][0]["finishReason"],
        "STOP"
    );
    assert!(
        runs[1]["llm_response"]["candidates"][0]
            .get("finishReason")
            .is_none(),
        "a chunk the model did not end with has none: {}",
        runs[1]
    );
    assert!(
        runs[0]["llm_request"]["messages"]
            .to_string()
            .contains("what is the password?")
    );

    let blocked = run_turn(&c, &session, "and now?").await;
    assert_eq!(
        turn_end(&blocked),
        ("blocked".into(), Some("unsafe output".into()))
    );
    assert_eq!(
        shown_text(&blocked),
        "fine, ",
        "the blocked chunk is dropped"
    );
    let second = fake.seen()[1].body.to_string();
    assert!(
        !second.contains("hunter2") && second.contains("*******"),
        "the history holds what was shown: {second}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_model_reads_the_reason_the_model_stopped() {
    let cut_short = json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": " and so on"}]},
            "finishReason": "MAX_TOKENS", "index": 0}],
        "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 64, "totalTokenCount": 71}
    });
    let fake = FakeModel::scripted(vec![Reply::Stream {
        events: vec![gemini::text("a long story"), cut_short.to_string()],
        gap: std::time::Duration::ZERO,
    }])
    .await;
    let mut d = daemon(&fake).await;
    let log = d.home().join("after.log");
    let hook = home_script(&d, "after_model.py", AFTER_MODEL_PY);
    write_user_hooks(
        &d,
        json!({"AfterModel": one(&hook, &log.display().to_string())}),
    );
    d.spawn();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    let turn = run_turn(&c, &session, "tell me a story").await;
    assert_eq!(turn_end(&turn).0, "completed");
    assert_eq!(shown_text(&turn), "a long story and so on");
    let runs = logged(&log);
    assert_eq!(runs.len(), 2, "{runs:?}");
    let last = &runs[1]["llm_response"]["candidates"][0];
    assert_eq!(last["finishReason"], "MAX_TOKENS", "{last}");
    assert_eq!(last["content"]["parts"], json!([" and so on"]));
    assert!(
        runs[0]["llm_response"]["candidates"][0]
            .get("finishReason")
            .is_none()
    );
}
