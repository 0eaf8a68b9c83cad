//! `gemctl prompt`, headless: output formats, exit statuses, stdin,
//! `--detach`, and `gemctl daemon status` / `gemctl memory show`.

use std::io::Write;
use std::process::Stdio;

use geminid_tests::fake_model::{FakeModel, gemini};
use geminid_tests::*;
use serde_json::{Value, json};

async fn setup(replies: Vec<geminid_tests::fake_model::Reply>) -> (FakeModel, TestDaemon) {
    let fake = FakeModel::scripted(replies).await;
    let d = TestDaemon::start_with_env(&[
        ("GEMINI_API_KEY", "k"),
        ("GOOGLE_GEMINI_BASE_URL", &fake.base_url),
    ]);
    fake.set_var("WS", &d.workspace.display().to_string());
    (fake, d)
}

fn run(d: &TestDaemon, args: &[&str]) -> (i32, String, String) {
    let out = d.gemctl(args).current_dir(&d.workspace).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_output_is_the_answer_and_json_has_calls_and_stats() {
    let (_fake, d) = setup(vec![
        gemini::answer(&["Hello ", "there."]),
        gemini::call_reply(&[("glob", json!({"pattern": "*"}))]),
        gemini::answer(&["Found nothing much."]),
    ])
    .await;
    let (code, out, err) = run(&d, &["prompt", "say hello"]);
    assert_eq!((code, out.as_str()), (0, "Hello there.\n"), "{err}");
    let (code, out, err) = run(&d, &["prompt", "--output-format", "json", "look around"]);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["response"], "Found nothing much.");
    assert_eq!(doc["toolCalls"][0]["name"], "glob");
    assert_eq!(doc["toolCalls"][0]["state"], "success");
    assert_eq!(doc["stats"]["reason"], "completed");
    assert!(doc["stats"]["inputTokens"].as_u64().unwrap() > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_json_is_one_event_per_line_and_stdin_is_the_prompt() {
    let (_fake, d) = setup(vec![gemini::answer(&["a", "b"])]).await;
    let mut child = d
        .gemctl(&["prompt", "--output-format", "stream-json"])
        .current_dir(&d.workspace)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"from stdin")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let types: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        types,
        [
            "promptQueued",
            "turnStarted",
            "userMessage",
            "modelText",
            "modelText",
            "tokenUsage",
            "turnFinished"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_statuses_say_how_the_turn_ended() {
    let (_fake, d) = setup(vec![
        gemini::call_reply(&[("run_shell_command", json!({"command": "touch x"}))]),
        gemini::answer(&["I was not allowed."]),
        gemini::error(500, "INTERNAL", "boom"),
    ])
    .await;
    // Non-interactive by default: the shell call is denied, the turn completes.
    let (code, _, err) = run(&d, &["prompt", "touch x"]);
    assert_eq!(code, 3, "{err}");
    assert!(!d.workspace.join("x").exists());
    // 500 five times (retries) then a model error.
    let (code, _, err) = run(&d, &["prompt", "fail"]);
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("HTTP 500"), "{err}");
    // No model configured: a model error too.
    let bare = TestDaemon::start();
    let (code, _, err) = run(&bare, &["prompt", "hi"]);
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("GEMINI_API_KEY"), "{err}");
    // Unreachable daemon.
    let out = std::process::Command::new(gemctl_bin())
        .args(["--socket", "/nonexistent/geminid.sock", "prompt", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(69));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn detach_prints_the_turn_which_then_finishes_alone() {
    let (_fake, d) = setup(vec![gemini::answer(&["done in the background"])]).await;
    let c = d.client().await;
    let session = new_session(&c, &d.workspace).await;
    let (code, out, _) = run(&d, &["prompt", "--session", &session, "--detach", "work"]);
    assert_eq!(code, 0);
    let turn = out.split_whitespace().nth(1).unwrap().to_owned();
    let mut sub = c.subscribe_session(session.clone(), None).await.unwrap();
    collect_until(&mut sub, |e| {
        matches!(&e.payload, geminid_protocol::EventPayload::TurnFinished { turn_id, .. } if *turn_id == turn)
    })
    .await;
    let (code, status, _) = run(&d, &["daemon", "status"]);
    assert_eq!(code, 0);
    assert!(
        status.contains("gemini-2.5-flash via gemini")
            && status.contains("key from GEMINI_API_KEY"),
        "{status}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_show_prints_the_tree_and_text() {
    let (_fake, d) = setup(vec![]).await;
    std::fs::write(d.workspace.join("GEMINI.md"), "Root rules @./more.md").unwrap();
    std::fs::write(d.workspace.join("more.md"), "More rules.").unwrap();
    let (code, out, err) = run(&d, &["memory", "show"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("GEMINI.md\n") && out.contains("    ") && out.contains("more.md"),
        "{out}"
    );
    assert!(out.contains("More rules."), "{out}");
}
