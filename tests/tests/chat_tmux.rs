//! `gemctl chat` in a real terminal: a detached tmux session runs it,
//! `tmux send-keys` types, `tmux capture-pane -p` reads the screen. The
//! daemon is real; the model is the local fake.

use geminid_protocol::session::ApprovalMode;
use geminid_tests::fake_model::{FakeModel, Reply, gemini};
use geminid_tests::tmux::Tmux;
use geminid_tests::*;
use serde_json::json;

/// The shell command that runs `gemctl chat ARGS` against `d`.
fn chat_command(d: &TestDaemon, args: &str) -> String {
    let home = d.home();
    format!(
        "cd '{ws}' && env HOME='{home}' XDG_STATE_HOME='{home}/state' VISUAL='{home}/edit.sh' EDITOR='{home}/edit.sh' TERM=tmux-256color '{bin}' --socket '{socket}' chat {args}",
        ws = d.workspace.display(),
        home = home.display(),
        bin = gemctl_bin().display(),
        socket = d.socket.display(),
    )
}

/// A line drawn by the spinner (indicatif's default frames).
fn is_spinner(line: &str) -> bool {
    line.starts_with(|c| "⠁⠂⠄⡀⢀⠠⠐⠈".contains(c))
}

fn count(screen: &str, text: &str) -> usize {
    screen.matches(text).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_in_a_terminal_streams_asks_cancels_and_shares_a_session() {
    let fake = FakeModel::scripted(vec![
        gemini::answer(&[
            "Hello from the **fake** model.\n",
            "```rust\nfn main() {}\n```\n",
            "- first point\n",
        ]),
        gemini::call_reply(&[(
            "write_file",
            json!({"file_path": "{WS}/hello.txt", "content": "hi\n"}),
        )]),
        gemini::answer(&["Wrote hello.txt."]),
        gemini::call_reply(&[(
            "write_file",
            json!({"file_path": "{WS}/other.txt", "content": "other\n"}),
        )]),
        gemini::answer(&["Other file done."]),
        Reply::StreamThenHang {
            events: vec![gemini::text("This answer goes on and on")],
        },
        gemini::call_reply(&[("run_shell_command", json!({"command": "sleep 1.5"}))]),
        gemini::answer(&["Slept well."]),
    ])
    .await;
    let d = TestDaemon::start_with_env(&[
        ("GEMINI_API_KEY", "k"),
        ("GOOGLE_GEMINI_BASE_URL", &fake.base_url),
    ]);
    fake.set_var("WS", &d.workspace.display().to_string());
    let tmux = Tmux::new(d.dir.path());
    // The "editor" of `e`: changes the content it is given.
    let editor = d.home().join("edit.sh");
    std::fs::write(&editor, "#!/bin/sh\nsed -i 's/\"hi/\"edited/' \"$1\"\n").unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let c = d.client().await;

    // A new interactive session in the current directory.
    tmux.start("a", &chat_command(&d, ""));
    tmux.wait_for("a", "gemctl chat session").await;
    let sessions = c.list_sessions().await.unwrap();
    assert_eq!(sessions.len(), 1);
    let session = sessions[0].session_id.clone();
    assert!(sessions[0].interactive);

    // A prompt streams the answer, rendered: no ** marks, a framed fence, a bullet.
    tmux.line("a", "say hello");
    let screen = tmux.wait_for("a", "Hello from the fake model.").await;
    let screen = if screen.contains("• first point") {
        screen
    } else {
        tmux.wait_for("a", "• first point").await
    };
    assert!(screen.contains("  │ fn main() {}"), "{screen}");
    assert!(screen.contains("╭─ rust"), "{screen}");
    // After the turn: the token account and how full the window is.
    let screen = tmux.wait_for("a", "in 1 model request").await;
    assert!(screen.contains("context 0% of 1048576"), "{screen}");
    tmux.line("a", "/stats");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while count(&tmux.screen("a"), "session total 10 in, 5 out") < 2 {
        assert!(std::time::Instant::now() < deadline, "{}", tmux.screen("a"));
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    // A call to write_file asks, with its diff; e edits the arguments in
    // $EDITOR (sent as modify_with_editor); the edited file is written.
    tmux.line("a", "write hello");
    let screen = tmux.wait_for("a", "Allow write_file?").await;
    assert!(screen.contains("+hi"), "the diff is shown: {screen}");
    assert!(!d.workspace.join("hello.txt").exists());
    tmux.line("a", "e");
    tmux.wait_for("a", "Wrote hello.txt.").await;
    assert_eq!(
        std::fs::read_to_string(d.workspace.join("hello.txt")).unwrap(),
        "edited\n"
    );

    // A second terminal joins the session: it shows the conversation so far.
    tmux.start("b", &chat_command(&d, &format!("--session {session}")));
    tmux.wait_for("b", "the session so far").await;
    assert!(tmux.screen("b").contains("Wrote hello.txt."));
    // It types a prompt; the first terminal shows it too, and both ask;
    // y approves.
    tmux.line("b", "write other");
    tmux.wait_for("a", "write other  (another terminal)").await;
    tmux.wait("a", "a second question", |s| {
        count(s, "Allow write_file?") == 2
    })
    .await;
    tmux.wait_for("b", "Allow write_file?").await;
    // The second answers first: the first's question is withdrawn.
    tmux.line("b", "y");
    tmux.wait_for("a", "answered elsewhere: approved").await;
    tmux.wait_for("a", "Other file done.").await;
    assert!(d.workspace.join("other.txt").exists());
    assert!(!tmux.screen("b").contains("answered elsewhere"));

    // A long answer is cancelled with Ctrl-C; the turn shows cancelled;
    // the chat goes on.
    tmux.line("a", "tell me everything");
    tmux.wait_for("a", "This answer goes on and on").await;
    tmux.keys("a", &["C-c"]);
    tmux.wait_for("a", "turn cancelled").await;
    tmux.wait_for("b", "turn cancelled").await;

    // /mode changes the session's mode in the daemon.
    tmux.line("a", "/mode yolo");
    tmux.wait_for("a", "approval mode is now yolo").await;
    assert_eq!(
        c.get_session(session.clone()).await.unwrap().approval_mode,
        ApprovalMode::Yolo
    );
    tmux.wait_for("b", "approval mode is now yolo").await;

    // A running tool shows a spinner with the elapsed time, as the line
    // above the prompt; when the call ends its line replaces the spinner.
    tmux.line("a", "sleep a bit");
    let screen = tmux
        .wait("a", "a spinner", |s| {
            s.lines().any(|l| is_spinner(l) && l.contains("sleep 1.5"))
        })
        .await;
    assert!(
        screen
            .lines()
            .any(|l| is_spinner(l) && l.trim_end().ends_with('s')),
        "{screen}"
    );
    let screen = tmux.wait_for("a", "Slept well.").await;
    assert!(screen.contains("✓ run_shell_command"), "{screen}");
    assert!(
        !screen.lines().any(is_spinner),
        "the spinner is gone: {screen}"
    );

    // Ctrl-D leaves, with status 0; the other terminal stays.
    tmux.keys("a", &["C-d"]);
    tmux.wait_for("a", "EXITED=0").await;
    // Ctrl-C twice with nothing running leaves too.
    tmux.keys("b", &["C-c"]);
    tmux.wait_for("b", "Ctrl-C again").await;
    tmux.keys("b", &["C-c"]);
    tmux.wait_for("b", "EXITED=0").await;

    // The prompts went to the history file.
    let history = std::fs::read_to_string(d.home().join("state/gemctl/chat_history")).unwrap();
    assert!(
        history.contains("say hello") && history.contains("/mode yolo"),
        "{history}"
    );
}

/// `/plan copy` (0.61: copy the approved plan to the clipboard): before
/// any approval it says there is nothing to copy; once the plan is
/// approved at the prompt, it prints the plan and sends it as OSC 52,
/// which tmux (`set-clipboard on`, as a terminal would) puts in its paste
/// buffer byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_copy_puts_the_approved_plan_on_the_clipboard() {
    const PLAN: &str = "# Parser plan\n\n1. Tokens first.\n2. Then the grammar, tested.\n";
    let fake = FakeModel::scripted(vec![
        gemini::call_reply(&[(
            "write_file",
            json!({"file_path": "parser-plan.md", "content": PLAN}),
        )]),
        gemini::call_reply(&[("exit_plan_mode", json!({"plan_filename": "parser-plan.md"}))]),
        gemini::answer(&["Implementing the plan now."]),
    ])
    .await;
    let d = TestDaemon::start_with_env(&[
        ("GEMINI_API_KEY", "k"),
        ("GOOGLE_GEMINI_BASE_URL", &fake.base_url),
    ]);
    let c = d.client().await;
    let session = session_in(&c, &d.workspace, Some(ApprovalMode::Plan), Some(true)).await;
    let tmux = Tmux::new(d.dir.path());
    tmux.start("p", &chat_command(&d, &format!("--session {session}")));
    tmux.wait_for("p", "gemctl chat session").await;
    let out = tmux.tmux(&["set-option", "-s", "set-clipboard", "on"]);
    assert!(out.status.success(), "{out:?}");

    tmux.line("p", "/plan copy");
    tmux.wait_for("p", "no approved plan to copy").await;

    tmux.line("p", "plan the parser");
    tmux.wait_for("p", "Allow exit_plan_mode?").await;
    tmux.line("p", "y");
    tmux.wait_for("p", "Implementing the plan now.").await;
    tmux.line("p", "/plan copy");
    let screen = tmux.wait_for("p", "to the clipboard (OSC 52)").await;
    assert!(screen.contains("2. Then the grammar, tested."), "{screen}");
    let buffer = tmux.tmux(&["show-buffer"]);
    assert!(buffer.status.success(), "{buffer:?}");
    assert_eq!(String::from_utf8_lossy(&buffer.stdout), PLAN);
}
