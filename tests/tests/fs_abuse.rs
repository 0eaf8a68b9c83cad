//! Filesystem abuse: a corpus of path attacks, each run through every tool
//! that takes a path (and `run_shell_command`'s `directory`), in a yolo
//! session so policy never masks confinement. Canaries live outside the
//! workspace: a secret file's content and a file's name. Zero escapes means
//! no canary appears in any result or event, nothing outside the workspace
//! changes, and no path outside it comes into existence. A second test
//! swaps a symlink in and out (RENAME_EXCHANGE) while calls run, to catch
//! check-then-use races; `root_swap.rs` does the same to the workspace
//! directory itself.

use std::os::unix::fs::symlink;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use geminid_tests::abuse::*;
use serde_json::{Value, json};

/// Whether every single-path tool must refuse the row outright (`R`), or
/// the row may be legal (a look-alike name that just creates a file inside
/// the workspace) as long as nothing escapes (`A`).
#[derive(Clone, Copy, PartialEq)]
enum Must {
    R,
    A,
}
use Must::{A, R};

/// `{ws}` is the workspace, `{out}` the directory of canaries next to it.
fn corpus() -> Vec<(Must, String)> {
    let long_name = "n".repeat(300);
    let long_path = format!("{{ws}}/{}x", format!("{}/", "d".repeat(200)).repeat(22));
    let climb = format!("{{ws}}/{}{{out}}/secret.txt", "../".repeat(1500));
    let rows: Vec<(Must, &str)> = vec![
        // `..`, however spelled
        (R, "{ws}/../outside/secret.txt"),
        (R, "{ws}/sub/../../outside/secret.txt"),
        (R, "{ws}/./../outside/secret.txt"),
        (R, "{ws}//..//outside//secret.txt"),
        (R, "{ws}/sub/../../../../../../..{out}/secret.txt"),
        (R, "{ws}/missing/../../outside/secret.txt"),
        (R, "{ws}/missing/../../outside/new.txt"),
        (R, "{ws}/.."),
        (R, "{ws}/sub/../link_dir/secret.txt"),
        // symlinks and chains of them out of the root
        (R, "{ws}/link_file"),
        (R, "{ws}/link_dir"),
        (R, "{ws}/link_dir/"),
        (R, "{ws}/link_dir/secret.txt"),
        (R, "{ws}/link_dir/new.txt"),
        (R, "{ws}/chain1"),
        (R, "{ws}/chain1/secret.txt"),
        (R, "{ws}/chain1/new.txt"),
        (R, "{ws}/rel_link/secret.txt"),
        (R, "{ws}/sub/deep_link/secret.txt"),
        (R, "{ws}/sub/deep_link/dir"),
        (R, "{ws}/dangling"),
        (R, "{ws}/dangling_chain"),
        (R, "{ws}/loop1"),
        (R, "{ws}/loop1/x"),
        (R, "{ws}/link_root/etc/passwd"),
        (R, "{ws}/link_proc{out}/secret.txt"),
        // absolute paths elsewhere
        (R, "{out}/secret.txt"),
        (R, "{out}"),
        (R, "{out}/"),
        (R, "{out}/new.txt"),
        (R, "{out}/dir"),
        (R, "/etc/passwd"),
        (R, "/etc"),
        (R, "/"),
        (R, "/tmp/geminid-escaped-abuse.txt"),
        // /proc magic links
        (R, "/proc/self/root{out}/secret.txt"),
        (R, "/proc/self/root{ws}/../outside/secret.txt"),
        (R, "/proc/self/root{out}"),
        (R, "/proc/self/cwd"),
        (R, "/proc/self/cwd/../outside/secret.txt"),
        (R, "/proc/self/root/etc/passwd"),
        (R, "/proc/self/environ"),
        (R, "/proc/1/root{out}/secret.txt"),
        (R, "/proc/self/fd/0"),
        // unicode look-alikes: legal names inside the workspace, never `..`
        (A, "{ws}/\u{2024}\u{2024}/outside/secret.txt"),
        (A, "{ws}/\u{2025}/outside/secret.txt"),
        (A, "{ws}/\u{FF0E}\u{FF0E}/outside/secret.txt"),
        (A, "{ws}/..\u{FF0F}outside\u{FF0F}secret.txt"),
        (A, "{ws}/.\u{0338}./outside/secret.txt"),
        (A, "{ws}/..\u{200B}/outside/secret.txt"),
        (A, "{ws}/\u{2215}..\u{2215}outside"),
        (A, "{ws}/%2e%2e/outside/secret.txt"),
        (A, "{ws}/..%2foutside%2fsecret.txt"),
        (A, "{ws}/.../outside/secret.txt"),
        (A, "{ws}/..\\outside\\secret.txt"),
        // newlines, NUL bytes, trailing slashes
        (R, "{ws}/new\nline/../../outside/secret.txt"),
        (A, "{ws}/name\nwith newline.txt"),
        (R, "{ws}/inside.txt\0/../../outside/secret.txt"),
        (R, "{out}/secret.txt\0.txt"),
        (R, "{ws}\0"),
        (R, "{ws}/inside.txt/"),
        // `~`, empty, relative
        (R, "~"),
        (R, "~/secret.txt"),
        (R, "~root/.bashrc"),
        (R, ""),
        (R, "."),
        (R, ".."),
        (R, "../outside/secret.txt"),
        (R, "outside/secret.txt"),
        (R, " {ws}/../outside/secret.txt"),
        (R, "file://{out}/secret.txt"),
        (R, "\\..\\outside\\secret.txt"),
    ];
    let mut out: Vec<(Must, String)> = rows.into_iter().map(|(m, p)| (m, p.to_owned())).collect();
    // NAME_MAX and PATH_MAX overflow
    out.push((R, format!("{{ws}}/{long_name}")));
    out.push((R, long_path));
    out.push((R, climb));
    out
}

/// The argument sets that put `p` (a workspace-relative `rel` for the
/// shell) in every path parameter of every tool. The bool says whether the
/// tool must refuse an `R` row (pattern tools may instead match nothing).
fn calls(p: &str, rel: &str) -> Vec<(&'static str, Value, bool)> {
    // An empty `path` means the workspace root to glob and grep.
    let dir_strict = !p.is_empty();
    vec![
        ("read_file", json!({"absolute_path": p}), true),
        (
            "write_file",
            json!({"file_path": p, "content": "PWNED"}),
            true,
        ),
        (
            "replace",
            json!({"file_path": p, "old_string": SHARED, "new_string": "PWNED"}),
            true,
        ),
        ("list_directory", json!({"path": p}), true),
        ("read_many_files", json!({"paths": [p]}), false),
        (
            "read_many_files",
            json!({"paths": ["inside.txt"], "include": [p]}),
            false,
        ),
        ("glob", json!({"pattern": "**/*", "path": p}), dir_strict),
        ("glob", json!({"pattern": p}), false),
        (
            "search_file_content",
            json!({"pattern": "TOPSECRET|CANARY|root:", "path": p}),
            dir_strict,
        ),
        (
            "run_shell_command",
            json!({"command": "cat secret.txt; ls -a . dir; pwd", "directory": rel}),
            // `.` and the like are the root itself: only leaks count.
            false,
        ),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn no_path_attack_escapes_any_tool() {
    let f = fixture().await;
    let before = tree(&f.outside);
    let corpus = corpus();
    assert!(corpus.len() >= 50, "the corpus has {} rows", corpus.len());
    // Paths outside the workspace that did not exist must not appear.
    let absent: Vec<PathBuf> = corpus
        .iter()
        .map(|(_, t)| PathBuf::from(f.expand(t)))
        .filter(|p| p.is_absolute() && !p.starts_with(&f.d.workspace))
        .filter(|p| p.symlink_metadata().is_err())
        .collect();
    let mut wrong = Vec::new();
    let mut runs = 0;
    for (must, template) in &corpus {
        let p = f.expand(template);
        // The shell's `directory` is workspace-relative: strip `{ws}/`.
        let rel = template.strip_prefix("{ws}/").map(|r| f.expand(r));
        let rel = rel.unwrap_or_else(|| p.clone());
        for (tool, args, strict) in calls(&p, &rel) {
            runs += 1;
            wrong.extend(f.run(tool, args, strict && *must == R).await);
        }
    }
    assert!(
        wrong.is_empty(),
        "{} escape(s):\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert_eq!(before, tree(&f.outside), "something outside changed");
    for p in absent {
        assert!(p.symlink_metadata().is_err(), "{} was created", p.display());
    }
    f.assert_no_leak_in_events().await;
    println!("{} rows x tools = {runs} calls, zero escapes", corpus.len());
}

/// Swaps `{ws}/swap` (a real directory) with `{ws}/swap_alt` (a symlink to
/// the canaries) as fast as it can while every tool works on `swap`.
#[tokio::test(flavor = "multi_thread")]
async fn a_symlink_swapped_between_check_and_use_never_escapes() {
    let f = fixture().await;
    let ws = f.d.workspace.clone();
    std::fs::create_dir(ws.join("swap")).unwrap();
    std::fs::write(ws.join("swap/secret.txt"), format!("harmless {SHARED}\n")).unwrap();
    std::fs::create_dir(ws.join("swap/dir")).unwrap();
    symlink(&f.outside, ws.join("swap_alt")).unwrap();
    let before = tree(&f.outside);
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let ws = ws.clone();
        std::thread::spawn(move || {
            let dir = rustix::fs::open(
                &ws,
                rustix::fs::OFlags::DIRECTORY,
                rustix::fs::Mode::empty(),
            )
            .unwrap();
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    &dir,
                    "swap",
                    &dir,
                    "swap_alt",
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    let p = ws.join("swap").display().to_string();
    let files = [format!("{p}/secret.txt"), format!("{p}/dir/new.txt")];
    let mut wrong = Vec::new();
    for round in 0..25 {
        let file = &files[round % 2];
        let mut rows = calls(file, "swap");
        rows.extend(calls(&p, "swap/dir"));
        rows.push((
            "read_many_files",
            json!({"paths": ["swap/*", "swap/**"]}),
            false,
        ));
        rows.push(("glob", json!({"pattern": "swap/**"}), false));
        for (tool, args, _) in rows {
            // Either outcome is fine; a leak is not.
            wrong.extend(f.run(tool, args, false).await);
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(
        wrong.is_empty(),
        "{} escape(s):\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert_eq!(before, tree(&f.outside), "something outside changed");
    f.assert_no_leak_in_events().await;
    println!("{swaps} swaps during the calls, zero escapes");
}
