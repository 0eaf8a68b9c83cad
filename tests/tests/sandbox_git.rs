//! Git's instruction places through a real daemon, in a yolo session (the
//! sandbox on): a sandboxed command can neither give a workspace root
//! without `.git` one (a directory, a `gitdir:` file, a link, a rename,
//! `git init`) nor redirect an existing repository (renaming `.git` away,
//! `commondir`, a submodule's configuration); the sandbox leaves nothing
//! in the user's tree, and the work that should succeed still does.

use std::collections::BTreeSet;
use std::path::Path;

use geminid_protocol::tool::{CallState, ToolCallSnapshot};
use geminid_tests::*;

fn top_level(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_without_git_cannot_be_given_one() {
    let (d, tmp) = daemon_with_own_tmpdir();
    let c = d.client().await;
    let ws: &Path = &d.workspace;
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("notes.txt"), "a\n").unwrap();
    let evil = tmp.path().canonicalize().unwrap().join("evil");
    std::fs::create_dir_all(&evil).unwrap();
    let before = top_level(ws);
    let session = yolo_session(&c, ws).await;
    let attempts = [
        "mkdir .git && echo '[core]' > .git/config".to_owned(),
        "git init -q .".to_owned(),
        format!("echo 'gitdir: {}' > .git", evil.display()),
        format!("ln -s {} .git", evil.display()),
        "mkdir src/g && mv src/g .git".to_owned(),
        "mv notes.txt .git".to_owned(),
        "cd src && mkdir ../.git".to_owned(),
        "mkdir -p .gemini && echo '{}' > .gemini/settings.json".to_owned(),
        "mkdir .gemini; mkdir -p .gemini/hooks .gemini/policies .gemini/extensions".to_owned(),
        "mv src .gemini".to_owned(),
        "rm -rf src".to_owned(),
    ];
    for a in &attempts {
        let snap = shell_ok(&c, &session, a).await;
        let text = call_text(&snap);
        assert!(
            std::fs::symlink_metadata(ws.join(".git")).is_err(),
            "{a}: {text}"
        );
        assert!(
            std::fs::symlink_metadata(ws.join(".gemini")).is_err(),
            "{a}: {text}"
        );
        assert_eq!(top_level(ws), before, "{a}: {text}");
    }
    // The refusal is explained: no new entries at this root's top level.
    let snap = shell_ok(&c, &session, "echo y > top.txt").await;
    let text = call_text(&snap);
    assert!(!ws.join("top.txt").exists(), "{text}");
    assert!(text.contains("has no .git"), "{text}");
    // Work below the top level, and in its existing files, goes on.
    let snap = shell_ok(
        &c,
        &session,
        "mkdir -p src/deep && echo x > src/deep/f && mv src/deep src/moved && echo b >> notes.txt \
         && rm src/moved/f",
    )
    .await;
    assert!(exited_zero(&snap), "{}", call_text(&snap));
    assert!(ws.join("src/moved").is_dir());
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "a\nb\n"
    );
    assert_eq!(top_level(ws), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_cannot_be_redirected() {
    let (d, tmp) = daemon_with_own_tmpdir();
    let c = d.client().await;
    let ws: &Path = &d.workspace;
    std::fs::create_dir_all(ws.join(".git/objects")).unwrap();
    std::fs::create_dir_all(ws.join(".git/refs")).unwrap();
    std::fs::write(ws.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    let evil = tmp.path().canonicalize().unwrap().join("evil");
    std::fs::create_dir_all(&evil).unwrap();
    std::fs::write(evil.join("config"), "[core]\n\tfsmonitor = evil\n").unwrap();
    let session = yolo_session(&c, ws).await;
    let attempts = [
        "mv .git .git.old && mkdir .git && echo evil > .git/config".to_owned(),
        "rm -rf .git; mkdir .git && echo evil > .git/config".to_owned(),
        format!("echo {} > .git/commondir", evil.display()),
        "mkdir -p .git/modules/m && echo evil > .git/modules/m/config".to_owned(),
        "echo evil > .git/config.worktree".to_owned(),
        "mkdir -p .git/info && echo '* filter=x' > .git/info/attributes".to_owned(),
    ];
    for a in &attempts {
        let snap = shell_ok(&c, &session, a).await;
        let text = call_text(&snap);
        assert_eq!(
            std::fs::read_to_string(ws.join(".git/config")).unwrap(),
            "[core]\n",
            "{a}: {text}"
        );
        for p in ["commondir", "modules", "config.worktree", "info"] {
            assert!(!ws.join(".git").join(p).exists(), "{a}: {p}: {text}");
        }
        assert!(!ws.join(".git.old").exists(), "{a}: {text}");
    }
    // The workspace's own files stay writable, at the top level too.
    let snap = shell_ok(
        &c,
        &session,
        "echo x > new.txt && mkdir -p src && echo y > src/f",
    )
    .await;
    assert!(exited_zero(&snap), "{}", call_text(&snap));
    assert!(ws.join("new.txt").is_file() && ws.join("src/f").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_users_git_configuration_cannot_be_made_in_a_writable_home() {
    let (d, _tmp) = daemon_with_own_tmpdir();
    let c = d.client().await;
    let home = d.home().canonicalize().unwrap();
    // The home is the workspace, a repository (dotfiles); git's user
    // configuration does not exist yet.
    std::fs::create_dir_all(home.join(".git")).unwrap();
    std::fs::create_dir_all(home.join(".config/other")).unwrap();
    let session = yolo_session(&c, &home).await;
    for a in [
        format!("echo '[core]' > {}/.gitconfig", home.display()),
        "mkdir -p .config/git && echo '[core]' > .config/git/config".to_owned(),
        "mv .config/other .config/git".to_owned(),
    ] {
        let snap = shell_ok(&c, &session, &a).await;
        let text = call_text(&snap);
        assert!(!home.join(".gitconfig").exists(), "{a}: {text}");
        assert!(!home.join(".config/git").exists(), "{a}: {text}");
    }
    let snap = shell_ok(&c, &session, "echo x > .config/other/f").await;
    assert!(exited_zero(&snap), "{}", call_text(&snap));
}

/// A shell call that must succeed as a call (its command may still fail).
async fn shell_ok(c: &Client, session: &str, command: &str) -> ToolCallSnapshot {
    let snap = shell_call(c, session, command).await;
    assert_eq!(snap.state, CallState::Success, "{}", call_text(&snap));
    snap
}
