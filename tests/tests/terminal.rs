//! `gemctl` as a person uses it all day, in a real terminal (tmux) against
//! a real daemon: Ctrl-C during a call or a prompt reaches the daemon
//! (`tool.cancel`, `session.cancel`) and exits 4, a question answered in
//! another pane ends the asking one without Enter, streamed text stays a
//! stream in `attach`, and every command behaves in a pipe.

use std::process::Command;
use std::time::{Duration, Instant};

use geminid_protocol::tool::CallState;
use geminid_tests::fake_model::{FakeModel, Reply, gemini};
use geminid_tests::tmux::Tmux;
use geminid_tests::*;
use serde_json::{Value, json};

/// The shell command that runs `gemctl ARGS` against `d`, in its workspace.
fn gemctl_command(d: &TestDaemon, args: &str) -> String {
    format!(
        "cd '{ws}' && env HOME='{home}' TERM=tmux-256color '{bin}' --socket '{socket}' {args}",
        ws = d.workspace.display(),
        home = d.home().display(),
        bin = gemctl_bin().display(),
        socket = d.socket.display(),
    )
}

fn marker(what: &str) -> String {
    format!("gmdterm{}x{what}", std::process::id())
}

/// Live processes whose command line starts with `m` (their `argv[0]`,
/// set with `exec -a`; gemctl's own command line only contains it).
fn pgrep(m: &str) -> Vec<String> {
    let out = Command::new("pgrep")
        .args(["-a", "-f", &format!("^{m}")])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.contains("pgrep"))
        .map(str::to_owned)
        .collect()
}

async fn wait_until(secs: u64, what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The pane's exit line, once the command ended.
async fn exit_status(tmux: &Tmux, pane: &str) -> i32 {
    let screen = tmux.wait_for(pane, "EXITED=").await;
    let line = screen
        .lines()
        .find_map(|l| l.strip_prefix("EXITED="))
        .unwrap();
    line.trim().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_on_a_call_kills_its_process_group_and_exits_4() {
    let d = TestDaemon::start();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    let tmux = Tmux::new(d.dir.path());
    let m = marker("call");
    // A command with a child in the background and one in the foreground.
    let args = json!({"command": format!("(exec -a {m}-bg sleep 40) & exec -a {m}-fg sleep 40; echo done")})
        .to_string();
    tmux.run_in_shell(
        "a",
        &gemctl_command(
            &d,
            &format!(
                "call --session {} run_shell_command '{args}'",
                &session[..8]
            ),
        ),
    );
    wait_until(20, "both sleeps run", || pgrep(&m).len() == 2).await;
    let pressed = Instant::now();
    tmux.keys("a", &["C-c"]);
    wait_until(20, "the process group is gone", || pgrep(&m).is_empty()).await;
    let gone = pressed.elapsed();
    assert_eq!(exit_status(&tmux, "a").await, 4, "{}", tmux.screen("a"));
    let screen = tmux.screen("a");
    assert!(screen.contains("cancelling call-"), "{screen}");
    assert!(!screen.lines().any(|l| l.trim() == "done"), "{screen}");
    println!(
        "ctrl-c to process group gone: {:.0} ms",
        gone.as_secs_f64() * 1000.0
    );

    // The daemon recorded the call as cancelled by the client.
    let events = c.subscribe_session(session.clone(), Some(0)).await.unwrap();
    let mut events = events;
    collect_until(&mut events, |e| {
        matches!(&e.payload, geminid_protocol::EventPayload::ToolCall(call)
            if call.state == CallState::Cancelled)
    })
    .await;

    // A second Ctrl-C leaves at once, even while the command resists
    // (SIGTERM ignored) and the daemon is still ending it.
    let m2 = marker("stubborn");
    let args = json!({"command": format!("trap '' TERM; exec -a {m2} sleep 40")}).to_string();
    tmux.run_in_shell(
        "b",
        &gemctl_command(
            &d,
            &format!("call --session {session} run_shell_command '{args}'"),
        ),
    );
    wait_until(20, "the sleep runs", || pgrep(&m2).len() == 1).await;
    tmux.keys("b", &["C-c"]);
    tmux.wait_for("b", "Ctrl-C again").await;
    tmux.keys("b", &["C-c"]);
    assert_eq!(exit_status(&tmux, "b").await, 4);
    // And the daemon still ends it (SIGKILL after its grace).
    wait_until(30, "the stubborn sleep is killed", || pgrep(&m2).is_empty()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_cancel_cancels_one_call_and_knows_finished_and_unknown_ones() {
    let d = TestDaemon::start();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    let m = marker("rpc");
    let slow = c
        .call_tool(
            session.clone(),
            "run_shell_command".into(),
            Some(json!({"command": format!("exec -a {m} sleep 40")})),
            Some(false),
        )
        .await
        .unwrap();
    let quick = call_and_wait(
        &c,
        &session,
        "run_shell_command",
        json!({"command": "true"}),
    )
    .await;
    wait_until(20, "the sleep runs", || pgrep(&m).len() == 1).await;
    let ack = c
        .cancel_tool(session.clone(), slow.call_id.clone())
        .await
        .unwrap();
    assert!(ack.ok);
    wait_until(20, "the sleep is gone", || pgrep(&m).is_empty()).await;
    // A finished call: nothing to do.
    let ack = c
        .cancel_tool(session.clone(), quick.call_id.clone())
        .await
        .unwrap();
    assert!(!ack.ok);
    // An unknown one is an error naming it.
    let err = c
        .cancel_tool(session.clone(), "call-999999".into())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("call-999999"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_approved_in_another_pane_prints_its_result_and_exits() {
    let d = TestDaemon::start();
    let c = d.client().await;
    let session = new_session(&c, &d.workspace).await;
    let tmux = Tmux::new(d.dir.path());
    let file = d.workspace.join("from-a.txt");
    let args = json!({"file_path": file.display().to_string(), "content": "hello\n"}).to_string();
    tmux.start(
        "a",
        &gemctl_command(&d, &format!("call --session {session} write_file '{args}'")),
    );
    let screen = tmux.wait_for("a", "Allow write_file?").await;
    // Every answer the daemon offers, in words.
    assert!(screen.contains("yes, once"), "{screen}");
    assert!(screen.contains("saved to ~/.gemini/policies"), "{screen}");
    tmux.start(
        "b",
        &gemctl_command(&d, &format!("attach {}", &session[..6])),
    );
    tmux.wait_for("b", "Allow write_file?").await;
    tmux.line("b", "y");
    // A ends by itself: no Enter pressed there.
    assert_eq!(exit_status(&tmux, "a").await, 0, "{}", tmux.screen("a"));
    assert!(tmux.screen("a").contains("answered by another client"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hello\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_on_an_interactive_prompt_cancels_the_waiting_turn() {
    let fake = FakeModel::scripted(vec![gemini::call_reply(&[(
        "write_file",
        json!({"file_path": "{WS}/never.txt", "content": "x\n"}),
    )])])
    .await;
    let d = TestDaemon::start_with_env(&[
        ("GEMINI_API_KEY", "k"),
        ("GOOGLE_GEMINI_BASE_URL", &fake.base_url),
    ]);
    fake.set_var("WS", &d.workspace.display().to_string());
    let c = d.client().await;
    let tmux = Tmux::new(d.dir.path());
    tmux.run_in_shell("a", &gemctl_command(&d, "prompt --interactive 'write it'"));
    tmux.wait_for("a", "Allow write_file?").await;
    tmux.keys("a", &["C-c"]);
    assert_eq!(exit_status(&tmux, "a").await, 4, "{}", tmux.screen("a"));
    // The turn is over, not awaiting approval forever.
    let sessions = c.list_sessions().await.unwrap();
    let session = sessions[0].session_id.clone();
    let mut events = c.subscribe_session(session, Some(0)).await.unwrap();
    let seen = collect_until(&mut events, |e| {
        matches!(
            &e.payload,
            geminid_protocol::EventPayload::TurnFinished { .. }
        )
    })
    .await;
    let Some(geminid_protocol::EventPayload::TurnFinished { reason, .. }) =
        seen.last().map(|e| &e.payload)
    else {
        unreachable!()
    };
    assert_eq!(reason, "cancelled");
    assert!(!d.workspace.join("never.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_shows_a_streamed_answer_as_one_text() {
    let fake = FakeModel::scripted(vec![Reply::Stream {
        events: vec![
            gemini::text("The answer "),
            gemini::text("comes in "),
            gemini::text("pieces.\nSecond line."),
            gemini::done(3, 4),
        ],
        gap: Duration::from_millis(50),
    }])
    .await;
    let d = TestDaemon::start_with_env(&[
        ("GEMINI_API_KEY", "k"),
        ("GOOGLE_GEMINI_BASE_URL", &fake.base_url),
    ]);
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    let tmux = Tmux::new(d.dir.path());
    tmux.start("b", &gemctl_command(&d, &format!("attach {session}")));
    tmux.wait_for("b", "attached to").await;
    c.prompt(session.clone(), "go".into()).await.unwrap();
    let screen = tmux.wait_for("b", "finished: completed").await;
    assert!(
        screen.contains("The answer comes in pieces.\nSecond line.\n"),
        "{screen}"
    );
}

/// Runs `gemctl ARGS` with its stdout read by nobody (the reader has
/// exited before gemctl writes); returns gemctl's status and stderr.
fn into_closed_pipe(d: &TestDaemon, args: &str) -> (i32, String) {
    let script = format!(
        "(sleep 0.3; exec '{bin}' --socket '{socket}' {args} 2>'{err}') | true; echo ${{PIPESTATUS[0]}}",
        bin = gemctl_bin().display(),
        socket = d.socket.display(),
        err = d.dir.path().join("pipe.err").display(),
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(&d.workspace)
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let stderr = std::fs::read_to_string(d.dir.path().join("pipe.err")).unwrap_or_default();
    (status, stderr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_listing_command_ends_quietly_on_a_closed_pipe() {
    let d = TestDaemon::start();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    new_session(&c, &d.workspace).await;
    let check = r#"run_shell_command '{"command": "git status"}'"#;
    for args in [
        "session list".to_owned(),
        "--json session list".to_owned(),
        "tools".to_owned(),
        "daemon status".to_owned(),
        format!("policy check {check}"),
        "policy list".to_owned(),
        "mcp list".to_owned(),
        format!("session show {session}"),
        "completions bash".to_owned(),
    ] {
        let (status, stderr) = into_closed_pipe(&d, &args);
        assert_eq!(status, 0, "gemctl {args}: {stderr}");
        assert!(!stderr.contains("panicked"), "gemctl {args}: {stderr}");
    }
    // And the ordinary `| head -1` gives the first line.
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "'{}' --socket '{}' session list | head -1",
            gemctl_bin().display(),
            d.socket.display()
        ))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_prints_its_result_once_and_json_means_json() {
    let d = TestDaemon::start();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    let out = d
        .gemctl(&[
            "call",
            "--session",
            &session,
            "run_shell_command",
            r#"{"command": "printf 'x%sy\\n' once"}"#,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("xoncey").count(), 1, "{stdout}");
    // The live output went to the status stream.
    assert!(String::from_utf8_lossy(&out.stderr).contains("xoncey"));

    // Without --session: a one-off session in the current directory,
    // gone afterwards.
    let before = c.list_sessions().await.unwrap().len();
    let out = d
        .gemctl(&[
            "call",
            "list_directory",
            &json!({"path": d.workspace}).to_string(),
        ])
        .current_dir(&d.workspace)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(c.list_sessions().await.unwrap().len(), before);

    // An error with --json is JSON on stdout.
    let out = d
        .gemctl(&[
            "--json",
            "session",
            "show",
            "ffffffffffffffffffffffffffffffff",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no session"),
        "{doc}"
    );

    // An unknown tool says what it may have meant, and how to list them.
    let out = d
        .gemctl(&["call", "--session", &session, "read_fil", "{}"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("did you mean `read_file`"), "{stderr}");
    assert!(stderr.contains("gemctl tools"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn piped_input_goes_before_the_prompt_argument_and_json_prompt_is_json() {
    let fake = FakeModel::scripted(vec![gemini::answer(&["Looks fine."])]).await;
    let d = TestDaemon::start_with_env(&[
        ("GEMINI_API_KEY", "k"),
        ("GOOGLE_GEMINI_BASE_URL", &fake.base_url),
    ]);
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "echo DIFF | '{}' --socket '{}' --json prompt 'review this'",
            gemctl_bin().display(),
            d.socket.display()
        ))
        .current_dir(&d.workspace)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["response"], "Looks fine.");
    let seen = fake.seen();
    let sent = seen[0].body.to_string();
    assert!(sent.contains(r#"DIFF\n\n\nreview this"#), "{sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_keeps_every_line_typed_during_a_turn_in_order() {
    let slow = |text: &str| Reply::Stream {
        events: vec![
            gemini::text(text),
            gemini::text(" ..."),
            gemini::text(" done."),
            gemini::done(3, 4),
        ],
        gap: Duration::from_millis(400),
    };
    let fake = FakeModel::scripted(vec![slow("first"), slow("second"), slow("third")]).await;
    let d = TestDaemon::start_with_env(&[
        ("GEMINI_API_KEY", "k"),
        ("GOOGLE_GEMINI_BASE_URL", &fake.base_url),
    ]);
    let c = d.client().await;
    let tmux = Tmux::new(d.dir.path());
    let chat = format!(
        "cd '{ws}' && env HOME='{home}' XDG_STATE_HOME='{home}/state' TERM=tmux-256color '{bin}' --socket '{socket}' chat",
        ws = d.workspace.display(),
        home = d.home().display(),
        bin = gemctl_bin().display(),
        socket = d.socket.display(),
    );
    tmux.start("a", &chat);
    tmux.wait_for("a", "gemctl chat session").await;
    tmux.line("a", "p0");
    tmux.wait_for("a", "first").await;
    // Typed ahead while the turn streams, in one burst.
    tmux.keys(
        "a",
        &["p1-a", "Enter", "p1-b", "Enter", "/mode autoEdit", "Enter"],
    );
    tmux.wait_for("a", "third ... done.").await;
    let sessions = c.list_sessions().await.unwrap();
    let session = &sessions[0];
    assert_eq!(
        session.approval_mode,
        geminid_protocol::session::ApprovalMode::AutoEdit,
        "{}",
        tmux.screen("a")
    );
    let mut events = c
        .subscribe_session(session.session_id.clone(), Some(0))
        .await
        .unwrap();
    let mut prompts = Vec::new();
    collect_until(&mut events, |e| {
        if let geminid_protocol::EventPayload::PromptQueued { text, .. } = &e.payload {
            prompts.push(text.clone());
        }
        prompts.len() == 3
    })
    .await;
    assert_eq!(prompts, ["p0", "p1-a", "p1-b"]);
    let screen = tmux.screen("a");
    assert!(screen.contains("queued"), "{screen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_have_titles_origins_and_times_and_take_prefixes() {
    let fake = FakeModel::scripted(vec![gemini::answer(&["Hi."])]).await;
    let d = TestDaemon::start_with_env(&[
        ("GEMINI_API_KEY", "k"),
        ("GOOGLE_GEMINI_BASE_URL", &fake.base_url),
    ]);
    let out = d
        .gemctl(&["prompt", "say hello\nand more"])
        .current_dir(&d.workspace)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let out = d
        .gemctl(&[
            "session",
            "new",
            "--cwd",
            &d.workspace.display().to_string(),
        ])
        .output()
        .unwrap();
    let plain = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let out = d.gemctl(&["--json", "session", "list"]).output().unwrap();
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2);
    // Most recently used first: the plain session was created last.
    assert_eq!(list[0]["sessionId"], json!(plain));
    let prompted = &list[1];
    assert_eq!(prompted["title"], json!("say hello"));
    assert_eq!(prompted["origin"], json!("prompt"));
    assert!(prompted["updatedAt"].as_u64().unwrap() >= prompted["createdAt"].as_u64().unwrap());

    // The table: a header and aligned rows.
    let out = d.gemctl(&["session", "list"]).output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("ID") && lines[0].contains("ORIGIN"),
        "{table}"
    );
    let origin_at = lines[0].find("ORIGIN").unwrap();
    assert_eq!(
        lines[2].get(origin_at..origin_at + 6),
        Some("prompt"),
        "{table}"
    );

    // Prefixes everywhere an id is taken; rm of several.
    let prompted_id = prompted["sessionId"].as_str().unwrap().to_owned();
    let out = d
        .gemctl(&["session", "show", &prompted_id[..5]])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("origin       prompt"));
    let out = d
        .gemctl(&["session", "rm", &prompted_id[..6], &plain[..6]])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let out = d.gemctl(&["--json", "session", "list"]).output().unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        json!([])
    );

    // Prune: only sessions unused for longer than asked.
    let c = d.client().await;
    // The sleep makes `old` at least 4 s old; `fresh` has 2 s until the
    // prune, which a loaded machine may take a while to start.
    let old = new_session(&c, &d.workspace).await;
    tokio::time::sleep(Duration::from_millis(4000)).await;
    let fresh = new_session(&c, &d.workspace).await;
    let out = d
        .gemctl(&["session", "prune", "--older-than", "2s"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let left: Vec<String> = c
        .list_sessions()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.session_id)
        .collect();
    assert_eq!(left, [fresh]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(&old));
}
