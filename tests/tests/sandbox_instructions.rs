//! Instruction places that do not exist yet, through a real daemon: a
//! sandboxed command cannot create `.gemini/settings.json` (or its
//! policies, hooks, extensions) in a repository that lacks `.gemini`, nor
//! `.git/hooks` (all of `.git` is held), and ordinary work inside the
//! workspace still succeeds. Roots without `.git`: `sandbox_git.rs`.

use std::path::Path;

use geminid_protocol::tool::{CallState, ToolCallSnapshot};
use geminid_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_without_gemini_cannot_be_given_one() {
    let (d, _tmp) = daemon_with_own_tmpdir();
    let c = d.client().await;
    let ws: &Path = &d.workspace;
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    let session = yolo_session(&c, ws).await;
    for a in [
        "mkdir -p .gemini && echo '{}' > .gemini/settings.json",
        "echo '{}' > .gemini/settings.json",
        "mkdir -p .gemini/policies .gemini/hooks .gemini/extensions/x",
        "rm -rf .gemini; mkdir .gemini; echo '{}' > .gemini/settings.json",
        "mv .gemini .gemini.old && mkdir .gemini && echo '{}' > .gemini/settings.json",
        "mkdir -p src/g && echo '{}' > src/g/settings.json && rmdir .gemini; mv src/g .gemini",
    ] {
        let snap = shell_ok(&c, &session, a).await;
        let made: Vec<_> = std::fs::read_dir(ws.join(".gemini"))
            .map(|r| r.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(made.is_empty(), "{a}: {made:?} {}", call_text(&snap));
        assert!(!ws.join(".gemini.old").exists(), "{a}");
    }
    // Work in the workspace goes on, at its top level too.
    let snap = shell_ok(
        &c,
        &session,
        "mkdir -p sub/deep && echo x > sub/deep/f && echo y > top.txt",
    )
    .await;
    assert!(exited_zero(&snap), "{}", call_text(&snap));
    assert!(ws.join("sub/deep/f").is_file() && ws.join("top.txt").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_without_hooks_cannot_be_given_them() {
    let (d, _tmp) = daemon_with_own_tmpdir();
    let c = d.client().await;
    let ws: &Path = &d.workspace;
    std::fs::create_dir_all(ws.join(".git/objects")).unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    let session = yolo_session(&c, ws).await;
    for a in [
        "mkdir -p .git/hooks; echo '#!/bin/sh' > .git/hooks/pre-commit",
        "echo '#!/bin/sh' > .git/hooks/post-checkout",
        "mkdir -p .git/objects/ab",
    ] {
        let snap = shell_ok(&c, &session, a).await;
        assert!(!ws.join(".git/hooks").exists(), "{a}: {}", call_text(&snap));
        assert!(!ws.join(".git/objects/ab").exists(), "{a}");
    }
    // The refusal says what is read-only.
    let snap = shell_ok(&c, &session, "mkdir .git/hooks").await;
    assert!(
        call_text(&snap).contains(".git and .gemini are read-only"),
        "{}",
        call_text(&snap)
    );
    // The workspace's own files, and new top-level ones, are writable.
    let snap = shell_ok(&c, &session, "echo x > new.txt").await;
    assert!(exited_zero(&snap), "{}", call_text(&snap));
    assert!(ws.join("new.txt").is_file());
}

/// A shell call that must succeed as a call (its command may still fail).
async fn shell_ok(c: &Client, session: &str, command: &str) -> ToolCallSnapshot {
    let snap = shell_call(c, session, command).await;
    assert_eq!(snap.state, CallState::Success, "{}", call_text(&snap));
    snap
}
