//! The workspace directory *itself* replaced by a symlink to somewhere
//! else, in a loop while every tool runs, and then left replaced. A
//! session's root is pinned when it is created (`tools/root.rs`): every
//! call keeps working in that directory, so nothing outside is read,
//! listed or written. Counts calls, swaps and escapes.

use std::os::unix::fs::symlink;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use geminid_tests::abuse::*;
use geminid_tests::*;
use serde_json::{Value, json};

/// Every call a root swap is tried with: all tools, paths spelled under
/// the workspace's name (which the swap redirects), writes creating new
/// names in the root, in a subdirectory and in a new directory.
fn root_calls(ws: &str, round: usize) -> Vec<(&'static str, Value)> {
    vec![
        (
            "read_file",
            json!({"absolute_path": format!("{ws}/secret.txt")}),
        ),
        (
            "read_file",
            json!({"absolute_path": format!("{ws}/sub/a.txt")}),
        ),
        (
            "write_file",
            json!({"file_path": format!("{ws}/new-{round}.txt"), "content": "PWNED"}),
        ),
        (
            "write_file",
            json!({"file_path": format!("{ws}/sub/new-{round}.txt"), "content": "PWNED"}),
        ),
        (
            "write_file",
            json!({"file_path": format!("{ws}/dir-{round}/new.txt"), "content": "PWNED"}),
        ),
        (
            "replace",
            json!({"file_path": format!("{ws}/secret.txt"), "old_string": SHARED, "new_string": "PWNED"}),
        ),
        (
            "replace",
            json!({"file_path": format!("{ws}/made-{round}.txt"), "old_string": "", "new_string": "PWNED"}),
        ),
        ("list_directory", json!({"path": ws})),
        ("list_directory", json!({"path": format!("{ws}/sub")})),
        ("glob", json!({"pattern": "**/*", "path": ws})),
        ("glob", json!({"pattern": "**/*.txt"})),
        (
            "search_file_content",
            json!({"pattern": "TOPSECRET|CANARY|shared", "path": ws}),
        ),
        (
            "search_file_content",
            json!({"pattern": "TOPSECRET|CANARY"}),
        ),
        ("read_many_files", json!({"paths": ["*", "**/*.txt"]})),
        (
            "read_many_files",
            json!({"paths": [format!("{ws}/secret.txt"), format!("{ws}/sub")]}),
        ),
        (
            "run_shell_command",
            json!({"command": "cat secret.txt; ls -a . sub; echo PWNED > shell-out.txt"}),
        ),
        (
            "run_shell_command",
            json!({"command": "cat a.txt; ls", "directory": "sub"}),
        ),
    ]
}

/// The workspace directory *itself* exchanged with a symlink to the
/// canaries (RENAME_EXCHANGE of `ws` and `ws_alt`) as fast as a thread
/// can while every tool runs, then left swapped. The session's root was
/// pinned at `session.create`: every call works in that directory, so
/// nothing outside is read, listed or written, and no name outside comes
/// into existence.
#[tokio::test(flavor = "multi_thread")]
async fn swapping_the_workspace_root_never_escapes() {
    let f = fixture().await;
    let ws = f.d.workspace.clone();
    let base = ws.parent().unwrap().to_path_buf();
    std::fs::write(ws.join("secret.txt"), format!("harmless {SHARED}\n")).unwrap();
    std::fs::write(ws.join("sub/a.txt"), format!("inner {SHARED}\n")).unwrap();
    // A repository: the shell writes at the top level.
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    symlink(&f.outside, base.join("ws_alt")).unwrap();
    let before = tree(&f.outside);
    let outside_names_before: Vec<PathBuf> = tree(&f.outside).into_keys().collect();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let base = base.clone();
        std::thread::spawn(move || {
            let dir = rustix::fs::open(
                &base,
                rustix::fs::OFlags::DIRECTORY,
                rustix::fs::Mode::empty(),
            )
            .unwrap();
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    &dir,
                    "ws",
                    &dir,
                    "ws_alt",
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    let shown = ws.display().to_string();
    let mut wrong = Vec::new();
    let mut calls = 0usize;
    for round in 0..20 {
        for (tool, args) in root_calls(&shown, round) {
            calls += 1;
            wrong.extend(f.run(tool, args, false).await);
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    // Left swapped: the workspace's name is now the symlink to outside.
    let now_symlink = ws.symlink_metadata().unwrap().file_type().is_symlink();
    if !now_symlink {
        rustix::fs::renameat_with(
            rustix::fs::CWD,
            &ws,
            rustix::fs::CWD,
            base.join("ws_alt"),
            rustix::fs::RenameFlags::EXCHANGE,
        )
        .unwrap();
    }
    assert!(ws.symlink_metadata().unwrap().file_type().is_symlink());
    for (tool, args) in root_calls(&shown, 99) {
        calls += 1;
        wrong.extend(f.run(tool, args, false).await);
    }
    // Escapes: calls whose result or events showed something from
    // outside, and entries outside that were created or changed.
    let after = tree(&f.outside);
    let touched = after
        .iter()
        .filter(|(p, content)| before.get(*p) != Some(*content))
        .count();
    println!(
        "root swap: {calls} calls, {swaps} swaps, {} leaking calls, {touched} entries written outside",
        wrong.len()
    );
    assert!(
        wrong.is_empty(),
        "{} escape(s) in {calls} calls:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert_eq!(touched, 0, "entries outside were created or changed");
    assert_eq!(before, after, "something outside changed");
    let outside_names_after: Vec<PathBuf> = after.into_keys().collect();
    assert_eq!(
        outside_names_before, outside_names_after,
        "a name appeared outside"
    );
    // What the left-swapped calls saw is the pinned directory.
    let read =
        f.c.call_tool(
            f.session.clone(),
            "read_file".into(),
            Some(json!({"absolute_path": format!("{shown}/sub/a.txt")})),
            Some(true),
        )
        .await
        .unwrap()
        .outcome
        .unwrap();
    let text = serde_json::to_string(&read.result).unwrap();
    assert!(text.contains("inner"), "{text}");
    let real = base.join("ws_alt");
    assert!(
        real.join("new-99.txt").is_file(),
        "the write went to the pinned directory"
    );
    assert!(real.join("dir-99/new.txt").is_file());
    assert!(real.join("shell-out.txt").is_file());
    f.assert_no_leak_in_events().await;
}
