//! A session must not widen its own rights: every file the daemon or the
//! tools it runs take instructions from (policy directories, settings
//! layers, trusted folders, extensions, `.git/config` and hooks, `.env`,
//! the daemon's data and socket directories, git's user configuration)
//! changes only with a person's approval, in every mode, yolo included; a
//! non-interactive session is refused. `.git` and `.env` are refused
//! outright, as Gemini CLI 0.61 refuses them.
//!
//! Every attempt runs through a real daemon; what counts as an escape is
//! a call that ran, or a target that came into existence or changed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use geminid_protocol::EventPayload;
use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::{CallState, ConfirmationOutcome, ToolCallSnapshot};
use geminid_tests::*;
use jsonrpsee::core::client::Subscription;
use serde_json::{Value, json};

/// A session and its event stream.
struct Session {
    id: String,
    sub: Subscription<geminid_protocol::SessionEvent>,
}

async fn session(c: &Client, root: &Path, mode: ApprovalMode, interactive: bool) -> Session {
    let id = c
        .create_session(
            root.display().to_string(),
            Some(mode),
            None,
            Some(interactive),
            None,
            None,
            None,
        )
        .await
        .unwrap()
        .session_id;
    let sub = c.subscribe_session(id.clone(), None).await.unwrap();
    Session { id, sub }
}

/// Starts a call and returns its snapshot once it waits for a person or
/// has ended. A call that waits is then cancelled, so nothing runs.
async fn attempt(c: &Client, s: &mut Session, tool: &str, args: Value) -> ToolCallSnapshot {
    let call = c
        .call_tool(s.id.clone(), tool.into(), Some(args), None)
        .await
        .unwrap()
        .call_id;
    let events = collect_until(&mut s.sub, |e| {
        matches!(&e.payload, EventPayload::ToolCall(t)
            if t.call_id == call && (t.state == CallState::AwaitingApproval || t.state.is_terminal()))
    })
    .await;
    let Some(EventPayload::ToolCall(last)) = events.last().map(|e| e.payload.clone()) else {
        panic!("no snapshot for {call}");
    };
    if last.state == CallState::AwaitingApproval {
        c.confirm_tool(
            s.id.clone(),
            call.clone(),
            ConfirmationOutcome::Cancel,
            None,
        )
        .await
        .unwrap();
        collect_until(&mut s.sub, |e| is_final(e, &call)).await;
    }
    *last
}

fn error_of(s: &ToolCallSnapshot) -> (String, String) {
    s.error
        .as_ref()
        .map(|e| (e.kind.clone(), e.message.clone()))
        .unwrap_or_default()
}

/// What a protected target must get.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Must {
    /// Asked (interactive) or denied (non-interactive) by the safety check.
    Guarded,
    /// Refused by the tool itself whatever the mode.
    Refused,
}

/// The daemon's lock file beside its socket.
fn lock_of(socket: &Path) -> PathBuf {
    let mut lock = socket.as_os_str().to_owned();
    lock.push(".lock");
    PathBuf::from(lock)
}

/// The bytes of `path`, `None` when absent.
fn content(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_session_changes_what_it_may_do_without_a_person() {
    let d = TestDaemon::start();
    let home = d.home();
    let base = home.parent().unwrap().to_path_buf();
    let ws = d.workspace.clone();
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(home.join(".gemini/extensions")).unwrap();
    let c = d.client().await;
    // (root of the session, target, what it must get)
    let targets: Vec<(PathBuf, PathBuf, Must)> = vec![
        (
            home.clone(),
            home.join(".gemini/policies/x.toml"),
            Must::Guarded,
        ),
        (
            home.clone(),
            home.join(".gemini/settings.json"),
            Must::Guarded,
        ),
        (
            home.clone(),
            home.join(".gemini/trustedFolders.json"),
            Must::Guarded,
        ),
        (
            home.clone(),
            home.join(".gemini/extensions/evil/gemini-extension.json"),
            Must::Guarded,
        ),
        (home.clone(), home.join(".gitconfig"), Must::Guarded),
        (home.clone(), home.join(".config/git/config"), Must::Guarded),
        (ws.clone(), ws.join(".gemini/settings.json"), Must::Guarded),
        (
            ws.clone(),
            ws.join(".gemini/policies/p.toml"),
            Must::Guarded,
        ),
        (
            ws.clone(),
            ws.join("sub/.gemini/settings.json"),
            Must::Guarded,
        ),
        (base.clone(), d.data_dir.join("planted"), Must::Guarded),
        (base.clone(), lock_of(&d.socket), Must::Guarded),
        (ws.clone(), ws.join(".git/config"), Must::Refused),
        (ws.clone(), ws.join(".git/hooks/pre-commit"), Must::Refused),
        (ws.clone(), ws.join(".env"), Must::Refused),
        (ws.clone(), ws.join("sub/.ENV"), Must::Refused),
    ];
    let before: Vec<Option<Vec<u8>>> = targets.iter().map(|(_, t, _)| content(t)).collect();
    let mut attempts = 0;
    let mut escapes = Vec::new();
    for mode in [ApprovalMode::AutoEdit, ApprovalMode::Yolo] {
        for interactive in [true, false] {
            for ((root, target, must), was) in targets.iter().zip(&before) {
                let mut s = session(&c, root, mode, interactive).await;
                let path = target.display().to_string();
                let mut calls = vec![(
                    "write_file",
                    json!({"file_path": path, "content": "[[rule]]\ndecision = \"allow\"\n"}),
                )];
                // `replace` creates a file when `old_string` is empty; an
                // existing file (the socket's lock) it would refuse anyway.
                if was.is_none() || *must == Must::Refused {
                    calls.push((
                        "replace",
                        json!({"file_path": path, "old_string": "", "new_string": "planted"}),
                    ));
                }
                for (tool, args) in calls {
                    attempts += 1;
                    let snap = attempt(&c, &mut s, tool, args).await;
                    let (kind, message) = error_of(&snap);
                    let decided = snap.decided_by.clone().unwrap_or_default();
                    let ok = match (must, interactive) {
                        (Must::Guarded, true) => {
                            snap.state == CallState::AwaitingApproval
                                && decided.starts_with("safety (Protected Files)")
                        }
                        (Must::Guarded, false) => {
                            kind == "denied" && message.contains("safety (Protected Files)")
                        }
                        (Must::Refused, _) => {
                            kind == "path_not_allowed" && message.contains("sensitive path")
                        }
                    };
                    if !ok {
                        escapes.push(format!(
                            "{mode:?} interactive={interactive} {tool} {path}: {:?} {kind} {message} {decided}",
                            snap.state
                        ));
                    }
                }
            }
        }
    }
    for ((_, target, _), was) in targets.iter().zip(&before) {
        if &content(target) != was {
            escapes.push(format!("{} changed", target.display()));
        }
    }
    println!(
        "self-escalation: {attempts} attempts, {} escapes",
        escapes.len()
    );
    assert!(escapes.is_empty(), "{}", escapes.join("\n"));
}

/// The reproduction of the issue: in autoEdit, a session rooted at $HOME
/// writes a policy file (then `tools.allowed`) and, after the hot reload,
/// its next shell call would be allowed. Non-interactive: refused, and the
/// shell call stays denied. The same session may still write ordinary
/// files (autoEdit allows edits), so it is the guard that stops it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_written_by_the_session_never_takes_effect() {
    let d = TestDaemon::start();
    let home = d.home();
    std::fs::create_dir_all(home.join(".gemini/policies")).unwrap();
    let marker = home.join("escalated");
    let c = d.client().await;
    let mut s = session(&c, &home, ApprovalMode::AutoEdit, false).await;
    let ordinary = attempt(
        &c,
        &mut s,
        "write_file",
        json!({"file_path": home.join("notes.txt"), "content": "fine"}),
    )
    .await;
    assert_eq!(ordinary.state, CallState::Success, "{ordinary:?}");
    let policy =
        "[[rule]]\ntoolName = \"run_shell_command\"\ndecision = \"allow\"\npriority = 999\n";
    let wrote = attempt(
        &c,
        &mut s,
        "write_file",
        json!({"file_path": home.join(".gemini/policies/x.toml"), "content": policy}),
    )
    .await;
    assert_eq!(error_of(&wrote).0, "denied", "{wrote:?}");
    let settings = r#"{"tools": {"allowed": ["run_shell_command"]}}"#;
    let wrote = attempt(
        &c,
        &mut s,
        "write_file",
        json!({"file_path": home.join(".gemini/settings.json"), "content": settings}),
    )
    .await;
    assert_eq!(error_of(&wrote).0, "denied", "{wrote:?}");
    assert!(!home.join(".gemini/policies/x.toml").exists());
    assert!(!home.join(".gemini/settings.json").exists());
    // Long enough for a hot reload, had anything been written.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let shell = attempt(
        &c,
        &mut s,
        "run_shell_command",
        json!({"command": format!("touch {}", marker.display())}),
    )
    .await;
    assert_eq!(error_of(&shell).0, "denied", "{shell:?}");
    assert!(!marker.exists());
}

/// The second reproduction: a session writes `.git/config` with
/// `core.fsmonitor`, then the allowed `git status` would run it. The write
/// is refused in every mode; `git status` runs and runs nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_config_cannot_be_planted_for_an_allowed_git_status() {
    let d = TestDaemon::start();
    let ws = d.workspace.clone();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&ws)
        .status()
        .expect("git is needed: apt-get install git");
    assert!(git.success());
    let marker = ws.parent().unwrap().join("fsmonitor-ran");
    let config = format!(
        "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch {}\"\n",
        marker.display()
    );
    std::fs::create_dir_all(d.home().join(".gemini/policies")).unwrap();
    std::fs::write(
        d.home().join(".gemini/policies/git.toml"),
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"git status\"\ndecision = \"allow\"\npriority = 100\n",
    )
    .unwrap();
    // Policy files are read at start and on change; wait for the reload
    // (polled: a loaded machine may take longer than any fixed sleep).
    let c = d.client().await;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let check = c
            .check_policy(
                None,
                None,
                "run_shell_command".into(),
                Some(json!({"command": "git status"})),
                None,
                None,
            )
            .await
            .unwrap();
        if check.decision == "allow" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the new policy file never applied: {check:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before = std::fs::read(ws.join(".git/config")).unwrap();
    for (mode, interactive) in [
        (ApprovalMode::AutoEdit, false),
        (ApprovalMode::AutoEdit, true),
        (ApprovalMode::Yolo, true),
        (ApprovalMode::Yolo, false),
    ] {
        let mut s = session(&c, &ws, mode, interactive).await;
        let path = ws.join(".git/config").display().to_string();
        for (tool, args) in [
            ("write_file", json!({"file_path": path, "content": config})),
            (
                "replace",
                json!({"file_path": path, "old_string": "[core]", "new_string": config}),
            ),
        ] {
            let snap = attempt(&c, &mut s, tool, args).await;
            let (kind, message) = error_of(&snap);
            assert_eq!(kind, "path_not_allowed", "{mode:?} {tool}: {snap:?}");
            assert!(message.contains("sensitive path"), "{message}");
        }
        if !interactive && mode == ApprovalMode::AutoEdit {
            let status = attempt(
                &c,
                &mut s,
                "run_shell_command",
                json!({"command": "git status"}),
            )
            .await;
            assert_eq!(status.state, CallState::Success, "{status:?}");
        }
    }
    assert_eq!(std::fs::read(ws.join(".git/config")).unwrap(), before);
    assert!(!marker.exists(), "the fsmonitor command ran");
}

/// A person can approve the change (that is the point of asking); an
/// "always" answer covers ordinary writes but never the next protected one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_approves_each_change_and_always_does_not_stick() {
    let d = TestDaemon::start();
    let home = d.home();
    let c = d.client().await;
    let mut s = session(&c, &home, ApprovalMode::Yolo, true).await;
    let first = home.join(".gemini/policies/mine.toml");
    let call = c
        .call_tool(
            s.id.clone(),
            "write_file".into(),
            Some(json!({"file_path": first, "content": "# mine\n"})),
            None,
        )
        .await
        .unwrap()
        .call_id;
    wait_state(&mut s.sub, &call, CallState::AwaitingApproval).await;
    let accepted = c
        .confirm_tool(
            s.id.clone(),
            call.clone(),
            ConfirmationOutcome::ProceedAlways,
            None,
        )
        .await
        .unwrap();
    assert!(accepted.accepted);
    collect_until(&mut s.sub, |e| is_final(e, &call)).await;
    assert_eq!(std::fs::read_to_string(&first).unwrap(), "# mine\n");
    let second = attempt(
        &c,
        &mut s,
        "write_file",
        json!({"file_path": home.join(".gemini/settings.json"), "content": "{}"}),
    )
    .await;
    assert_eq!(second.state, CallState::AwaitingApproval, "{second:?}");
    assert!(!home.join(".gemini/settings.json").exists());
}
