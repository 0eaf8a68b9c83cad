//! Filesystem abuse: a corpus of path attacks, each run through every tool
//! that takes a path (and `run_shell_command`'s `directory`), in a yolo
//! session so policy never masks confinement. Canaries live outside the
//! workspace: a secret file's content and a file's name. Zero escapes means
//! no canary appears in any result or event, nothing outside the workspace
//! changes, and no path outside it comes into existence. A second test
//! swaps a symlink in and out (RENAME_EXCHANGE) while calls run, to catch
//! check-then-use races.

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::CallState;
use geminid_tests::*;
use serde_json::{Value, json};

const SECRET: &str = "TOPSECRET-7f3a9c";
const CANARY_NAME: &str = "CANARYNAME-51d0e2.txt";
const SHARED: &str = "shared-word";

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

struct Fixture {
    d: TestDaemon,
    c: Client,
    session: String,
    outside: PathBuf,
}

async fn fixture() -> Fixture {
    let d = TestDaemon::start();
    let ws = d.workspace.clone();
    let outside = ws.parent().unwrap().join("outside");
    std::fs::create_dir_all(outside.join("dir")).unwrap();
    std::fs::write(outside.join("secret.txt"), format!("{SECRET} {SHARED}\n")).unwrap();
    std::fs::write(outside.join("dir").join(CANARY_NAME), SECRET).unwrap();
    std::fs::write(outside.join(CANARY_NAME), SECRET).unwrap();
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::write(ws.join("inside.txt"), format!("inside {SHARED}\n")).unwrap();
    let links: [(&str, PathBuf); 12] = [
        ("link_file", outside.join("secret.txt")),
        ("link_dir", outside.clone()),
        ("chain1", ws.join("chain2")),
        ("chain2", ws.join("sub/chain3")),
        ("sub/chain3", "../link_dir".into()),
        ("rel_link", "../outside".into()),
        ("sub/deep_link", "../../outside".into()),
        ("dangling", outside.join("nothing")),
        ("dangling_chain", "dangling".into()),
        ("loop1", "loop2".into()),
        ("loop2", "loop1".into()),
        ("link_root", "/".into()),
    ];
    for (name, target) in links {
        symlink(target, ws.join(name)).unwrap();
    }
    symlink("/proc/self/root", ws.join("link_proc")).unwrap();
    let c = d.client().await;
    let session = c
        .create_session(
            ws.display().to_string(),
            Some(ApprovalMode::Yolo),
            None,
            None,
            None,
        )
        .await
        .unwrap()
        .session_id;
    Fixture {
        d,
        c,
        session,
        outside,
    }
}

/// Every file under `dir` (not following symlinks) with its content.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let meta = p.symlink_metadata().unwrap();
            if meta.is_dir() {
                stack.push(p.clone());
            }
            let content = if meta.is_file() {
                std::fs::read(&p).unwrap()
            } else {
                Vec::new()
            };
            out.insert(p, content);
        }
    }
    out
}

impl Fixture {
    fn expand(&self, template: &str) -> String {
        template
            .replace("{ws}", &self.d.workspace.display().to_string())
            .replace("{out}", &self.outside.display().to_string())
    }

    /// Runs one call; returns what went wrong (a leak, or an `R` row that a
    /// strict tool did not refuse).
    async fn run(&self, tool: &str, args: Value, must_refuse: bool) -> Option<String> {
        let done = self
            .c
            .call_tool(
                self.session.clone(),
                tool.into(),
                Some(args.clone()),
                Some(true),
            )
            .await
            .unwrap_or_else(|e| panic!("{tool} {args}: {e}"))
            .outcome
            .unwrap();
        let text = serde_json::to_string(&done).unwrap();
        let leaked = text.contains(SECRET) || text.contains(CANARY_NAME);
        if leaked || (must_refuse && done.state == CallState::Success) {
            let shown: String = text.chars().take(600).collect();
            return Some(format!("{tool} {args}: leaked={leaked} {shown}"));
        }
        None
    }

    /// No canary in any event of the session, from the first on.
    async fn assert_no_leak_in_events(&self) {
        let info = self.c.get_session(self.session.clone()).await.unwrap();
        let mut sub = self
            .c
            .subscribe_session(self.session.clone(), Some(0))
            .await
            .unwrap();
        let last = info.last_seq;
        let events = collect_until(&mut sub, |e| e.seq >= last).await;
        let text = serde_json::to_string(&events).unwrap();
        assert!(!text.contains(SECRET), "an event carried the secret");
        assert!(!text.contains(CANARY_NAME), "an event named the canary");
    }
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
