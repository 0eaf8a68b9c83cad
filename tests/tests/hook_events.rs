//! The session's lifecycle hooks through a real daemon, the fake model and
//! real hook scripts: SessionStart (`startup` for a new session, `resume`
//! after a restart) adds context the model reads before the next prompt;
//! SessionEnd (`exit` when the daemon shuts down) runs as the session
//! stops; every run is a `hookRun` event. An idle unload and its reload
//! fire neither.

use std::path::{Path, PathBuf};

use geminid_protocol::event::{EventPayload, SessionEvent};
use geminid_tests::fake_model::{FakeModel, gemini};
use geminid_tests::*;
use serde_json::{Value, json};

/// A hook that appends its stdin to `log` and, for SessionStart, adds
/// context naming its source.
fn logging_hook(d: &TestDaemon, log: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = d.home().join("hooks");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("lifecycle.py");
    let text = format!(
        r#"#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
with open({log:?}, "a") as f:
    f.write(json.dumps(data) + "\n")
if data["hook_event_name"] == "SessionStart":
    print(json.dumps({{"continue": False, "decision": "deny",
        "hookSpecificOutput": {{"additionalContext": "tide <high> at " + data["source"]}}}}))
"#,
        log = log.display().to_string()
    );
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn logged(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn hook_runs(events: &[SessionEvent]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::HookRun {
                event, decision, ..
            } => Some((event.clone(), decision.clone())),
            _ => None,
        })
        .collect()
}

async fn all_events(c: &Client, session: &str) -> Vec<SessionEvent> {
    let mut sub = c
        .subscribe_session(session.to_owned(), Some(0))
        .await
        .unwrap();
    let last = c.get_session(session.to_owned()).await.unwrap().last_seq;
    collect_until(&mut sub, |e| e.seq >= last).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_start_context_reaches_the_model_and_session_end_runs_at_exit() {
    let fake = FakeModel::scripted(vec![gemini::answer(&["one"]), gemini::answer(&["two"])]).await;
    let mut d = TestDaemon::prepared(&[
        ("GEMINI_API_KEY", "test-key"),
        ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
        ("GEMINI_MODEL", "gemini-2.5-flash"),
    ]);
    let log = d.home().join("lifecycle.log");
    let hook = logging_hook(&d, &log);
    let command = json!([{"hooks": [{"type": "command", "command": hook.display().to_string()}]}]);
    let dir = d.home().join(".gemini");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("settings.json"),
        serde_json::to_vec(&json!({"hooks": {
            "SessionStart": command,
            "SessionEnd": [{"matcher": "exit", "hooks": command[0]["hooks"]}],
        }}))
        .unwrap(),
    )
    .unwrap();
    d.spawn();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    let turn = run_turn(&c, &session, "hello").await;
    let end = turn.last().map(|e| &e.payload);
    assert!(
        matches!(end, Some(EventPayload::TurnFinished { reason, .. }) if reason == "completed"),
        "SessionStart cannot stop anything: {end:?}"
    );
    let seen = fake.seen();
    let first = seen[0].body.to_string();
    assert!(
        first.contains("<hook_context>tide &lt;high&gt; at startup</hook_context>"),
        "the model reads SessionStart's context, escaped: {first}"
    );
    assert!(
        hook_runs(&all_events(&c, &session).await)
            .contains(&("SessionStart".into(), "stop".into())),
        "the run is an event"
    );
    let starts: Vec<Value> = logged(&log);
    assert_eq!(starts.len(), 1, "{starts:?}");
    assert_eq!(starts[0]["source"], "startup");
    assert_eq!(starts[0]["session_id"], session.as_str());

    drop(c);
    d.terminate();
    let after_exit = logged(&log);
    let ends: Vec<&Value> = after_exit
        .iter()
        .filter(|v| v["hook_event_name"] == "SessionEnd")
        .collect();
    assert_eq!(
        ends.len(),
        1,
        "SessionEnd ran once as the daemon stopped: {after_exit:?}"
    );
    assert_eq!(ends[0]["reason"], "exit");

    // After a restart the stored session is resumed: its next prompt
    // carries the new context, once.
    d.spawn();
    let c = d.client().await;
    run_turn(&c, &session, "again").await;
    let seen = fake.seen();
    let second = seen[1].body.to_string();
    assert!(
        second.contains("tide &lt;high&gt; at resume"),
        "the resumed session's context: {second}"
    );
    assert_eq!(
        second.matches("at startup").count(),
        1,
        "the first context stays in the history once: {second}"
    );
    let sources: Vec<Value> = logged(&log)
        .into_iter()
        .filter(|v| v["hook_event_name"] == "SessionStart")
        .map(|v| v["source"].clone())
        .collect();
    assert_eq!(sources, vec![json!("startup"), json!("resume")]);
}

const GATE_PY: &str = r#"#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
prompt = data["prompt"]
if "secret" in prompt:
    print(json.dumps({"decision": "deny", "reason": "no secrets"}))
elif "pause" in prompt:
    print(json.dumps({"continue": False, "stopReason": "paused"}))
else:
    print(json.dumps({"hookSpecificOutput": {"additionalContext": "checked: " + prompt}}))
"#;

/// How the last turn in `events` ended.
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_agent_blocks_stops_or_adds_context_to_a_prompt() {
    use std::os::unix::fs::PermissionsExt;
    let fake = FakeModel::scripted(vec![gemini::answer(&["fine"])]).await;
    let mut d = TestDaemon::prepared(&[
        ("GEMINI_API_KEY", "test-key"),
        ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
        ("GEMINI_MODEL", "gemini-2.5-flash"),
    ]);
    let dir = d.home().join("hooks");
    std::fs::create_dir_all(&dir).unwrap();
    let gate = dir.join("gate.py");
    std::fs::write(&gate, GATE_PY).unwrap();
    std::fs::set_permissions(&gate, std::fs::Permissions::from_mode(0o755)).unwrap();
    let settings = d.home().join(".gemini");
    std::fs::create_dir_all(&settings).unwrap();
    std::fs::write(
        settings.join("settings.json"),
        serde_json::to_vec(&json!({"hooks": {"BeforeAgent": [{"hooks": [
            {"type": "command", "command": gate.display().to_string()}]}]}}))
        .unwrap(),
    )
    .unwrap();
    d.spawn();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;

    let blocked = run_turn(&c, &session, "tell me the secret").await;
    assert_eq!(
        turn_end(&blocked),
        (
            "blocked".into(),
            Some("Agent execution blocked by hook: no secrets".into())
        )
    );
    assert_eq!(
        hook_runs(&blocked),
        vec![("BeforeAgent".into(), "deny".into())]
    );
    let stopped = run_turn(&c, &session, "pause here").await;
    assert_eq!(
        turn_end(&stopped),
        (
            "stopped".into(),
            Some("Agent execution stopped by hook: paused".into())
        )
    );
    assert!(fake.seen().is_empty(), "neither reached the model");

    let ok = run_turn(&c, &session, "hello").await;
    assert_eq!(turn_end(&ok).0, "completed");
    let sent = fake.seen()[0].body.to_string();
    assert!(
        sent.contains("<hook_context>checked: hello</hook_context>"),
        "the context follows the prompt: {sent}"
    );
    assert!(
        sent.contains("pause here"),
        "a stopped prompt stays in the history"
    );
    assert!(
        !sent.contains("tell me the secret"),
        "a blocked prompt is not kept"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_compress_runs_before_a_manual_compression_with_its_trigger() {
    let mut replies: Vec<_> = (0..6)
        .map(|i| gemini::answer(&[&format!("answer {i} ").repeat(40)]))
        .collect();
    replies.push(gemini::answer(&[
        "<state_snapshot>summary</state_snapshot>",
    ]));
    replies.push(gemini::answer(&[
        "<state_snapshot>summary</state_snapshot>",
    ]));
    let fake = FakeModel::scripted(replies).await;
    let mut d = TestDaemon::prepared(&[
        ("GEMINI_API_KEY", "test-key"),
        ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
        ("GEMINI_MODEL", "gemini-2.5-flash"),
    ]);
    let log = d.home().join("compress.log");
    let hook = logging_hook(&d, &log);
    let settings = d.home().join(".gemini");
    std::fs::create_dir_all(&settings).unwrap();
    std::fs::write(
        settings.join("settings.json"),
        serde_json::to_vec(&json!({"hooks": {
            "PreCompress": [{"matcher": "manual", "hooks": [{"type": "command", "command": hook.display().to_string()}]}],
        }}))
        .unwrap(),
    )
    .unwrap();
    d.spawn();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    for i in 0..6 {
        run_turn(&c, &session, &format!("question {i} ").repeat(40)).await;
    }
    assert!(logged(&log).is_empty(), "no compression yet");
    let _ = c.compress(session.clone()).await;
    let runs = logged(&log);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["hook_event_name"], "PreCompress");
    assert_eq!(runs[0]["trigger"], "manual");
    assert!(
        hook_runs(&all_events(&c, &session).await)
            .iter()
            .any(|(event, _)| event == "PreCompress"),
        "the run is an event"
    );
}

const REVIEW_PY: &str = r#"#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
with open(sys.argv[1], "a") as f:
    f.write(json.dumps(data) + "\n")
if not data["stop_hook_active"]:
    print(json.dumps({"decision": "block", "reason": "please check again"}))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_agent_block_sends_its_reason_back_to_the_model_once() {
    use std::os::unix::fs::PermissionsExt;
    let fake = FakeModel::scripted(vec![
        gemini::answer(&["first try"]),
        gemini::answer(&["checked"]),
    ])
    .await;
    let mut d = TestDaemon::prepared(&[
        ("GEMINI_API_KEY", "test-key"),
        ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
        ("GEMINI_MODEL", "gemini-2.5-flash"),
    ]);
    let dir = d.home().join("hooks");
    std::fs::create_dir_all(&dir).unwrap();
    let review = dir.join("review.py");
    std::fs::write(&review, REVIEW_PY).unwrap();
    std::fs::set_permissions(&review, std::fs::Permissions::from_mode(0o755)).unwrap();
    let log = d.home().join("review.log");
    let settings = d.home().join(".gemini");
    std::fs::create_dir_all(&settings).unwrap();
    std::fs::write(
        settings.join("settings.json"),
        serde_json::to_vec(&json!({"hooks": {"AfterAgent": [{"hooks": [
            {"type": "command", "command": format!("{} {}", review.display(), log.display())}]}]}}))
        .unwrap(),
    )
    .unwrap();
    d.spawn();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    let turn = run_turn(&c, &session, "do it").await;
    assert_eq!(turn_end(&turn).0, "completed");
    let seen = fake.seen();
    assert_eq!(seen.len(), 2, "the block asked the model again");
    assert!(seen[1].body.to_string().contains("please check again"));
    let runs = logged(&log);
    let summary: Vec<(Value, Value, Value)> = runs
        .iter()
        .map(|r| {
            (
                r["prompt"].clone(),
                r["prompt_response"].clone(),
                r["stop_hook_active"].clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (json!("do it"), json!("first try"), json!(false)),
            (json!("please check again"), json!("checked"), json!(true)),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_unload_and_its_reload_fire_no_lifecycle_hooks() {
    let fake = FakeModel::scripted(vec![gemini::answer(&["one"]), gemini::answer(&["two"])]).await;
    let mut d = TestDaemon::prepared(&[
        ("GEMINI_API_KEY", "test-key"),
        ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
        ("GEMINI_MODEL", "gemini-2.5-flash"),
        ("GEMINID_SESSION_IDLE", "1"),
    ]);
    let log = d.home().join("lifecycle.log");
    let hook = logging_hook(&d, &log);
    let command = json!([{"hooks": [{"type": "command", "command": hook.display().to_string()}]}]);
    let dir = d.home().join(".gemini");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("settings.json"),
        serde_json::to_vec(&json!({"hooks": {"SessionStart": command, "SessionEnd": command}}))
            .unwrap(),
    )
    .unwrap();
    d.spawn();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    run_turn(&c, &session, "hello").await;
    // Nothing attached, nothing running: the session leaves memory.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while c.status().await.unwrap().sessions_loaded > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the session stayed loaded"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let turn = run_turn(&c, &session, "again").await;
    assert!(
        matches!(turn.last().map(|e| &e.payload), Some(EventPayload::TurnFinished { reason, .. }) if reason == "completed")
    );
    let events: Vec<(Value, Value)> = logged(&log)
        .into_iter()
        .map(|v| (v["hook_event_name"].clone(), v["source"].clone()))
        .collect();
    assert_eq!(
        events,
        vec![(json!("SessionStart"), json!("startup"))],
        "the unload and the reload are invisible: no SessionEnd, no SessionStart resume"
    );
    let second = fake.seen()[1].body.to_string();
    assert_eq!(
        second.matches("tide &lt;high&gt;").count(),
        1,
        "no second context: {second}"
    );
    // A restart is a resume, and the shutdown before it an exit.
    drop(c);
    d.terminate();
    d.spawn();
    let c = d.client().await;
    c.get_session(session.clone()).await.unwrap();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let names: Vec<Value> = logged(&log)
            .into_iter()
            .map(|v| json!([v["hook_event_name"], v["source"], v["reason"]]))
            .collect();
        if names.len() >= 3 {
            assert_eq!(
                names,
                vec![
                    json!(["SessionStart", "startup", null]),
                    json!(["SessionEnd", null, "exit"]),
                    json!(["SessionStart", "resume", null]),
                ]
            );
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{names:?}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
