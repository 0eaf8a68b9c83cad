//! Tests for `run_shell_command`, with real processes in temp dirs.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::super::contract::ContentPart;
use super::super::shell_proc::{group_members, read_stat};
use super::*;

struct Fx {
    _dir: tempfile::TempDir,
    ctx: ToolContext,
    spill: PathBuf,
}

fn fixture() -> Fx {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("ws");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    std::fs::write(root.join("file.txt"), "x").unwrap();
    std::os::unix::fs::symlink(base.join("outside"), root.join("link_out")).unwrap();
    Fx {
        ctx: ToolContext::new(&root).unwrap(),
        spill: base.join("spill"),
        _dir: dir,
    }
}

fn tool(fx: &Fx, timeout: Duration, cap: usize) -> ShellTool {
    ShellTool::new(ShellConfig {
        timeout,
        output_cap_bytes: cap,
        spill_dir: fx.spill.clone(),
        ..ShellConfig::default()
    })
}

fn text_of(r: &ToolResult) -> String {
    match &r.llm_content[0] {
        ContentPart::Text { text } => text.clone(),
        other => panic!("unexpected content {other:?}"),
    }
}

async fn run(fx: &Fx, args: Value) -> Result<ToolResult, ToolError> {
    let t = tool(fx, Duration::from_secs(30), 64 * 1024);
    let inv = t.build(&fx.ctx, &args)?;
    inv.execute(CancellationToken::new(), OutputSink::discard())
        .await
}

fn pgid_in(text: &str) -> i32 {
    let line = text
        .lines()
        .find(|l| l.starts_with("Process Group PGID: "))
        .unwrap();
    line["Process Group PGID: ".len()..].trim().parse().unwrap()
}

fn alive(pid: i32) -> bool {
    read_stat(pid).is_some_and(|s| s.state != 'Z')
}

#[tokio::test]
async fn merges_output_and_reports_exit_code() {
    let fx = fixture();
    let r = run(&fx, json!({"command": "for i in 1 2 3; do echo out$i; echo err$i >&2; done; printf '\\033[31mred\\033[0m\\n'; exit 3"}))
        .await
        .unwrap();
    let t = text_of(&r);
    assert!(t.contains("Command: for i in 1 2 3;"), "{t}");
    assert!(t.contains("Directory: (root)"), "{t}");
    assert!(t.contains("out1\nerr1\nout2\nerr2\nout3\nerr3\nred"), "{t}");
    assert!(!t.contains('\x1b'), "{t}");
    assert!(t.contains("Exit Code: 3"), "{t}");
    assert!(t.contains("Signal: (none)"), "{t}");
    assert!(t.contains("Background PIDs: (none)"), "{t}");
    assert!(pgid_in(&t) > 1);
}

#[tokio::test]
async fn runs_in_the_given_directory() {
    let fx = fixture();
    let r = run(&fx, json!({"command": "pwd", "directory": "sub"}))
        .await
        .unwrap();
    let t = text_of(&r);
    assert!(
        t.contains(&format!("{}/sub", fx.ctx.workspace_root.display())),
        "{t}"
    );
    assert!(t.contains("Directory: sub"), "{t}");
}

#[tokio::test]
async fn reports_and_leaves_background_jobs_on_normal_exit() {
    let fx = fixture();
    let r = run(&fx, json!({"command": "sleep 1000 & echo started"}))
        .await
        .unwrap();
    let t = text_of(&r);
    let line = t
        .lines()
        .find(|l| l.starts_with("Background PIDs: "))
        .unwrap();
    let pids: Vec<i32> = line["Background PIDs: ".len()..]
        .split(", ")
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 1, "{t}");
    assert!(alive(pids[0]));
    super::super::shell_proc::terminate_tree(pgid_in(&t), "no-such-marker").await;
    assert!(!alive(pids[0]));
}

/// Starts a command that backgrounds sleepers (one in its own session) and
/// ignores SIGTERM, waits for "ready", then ends it with `stop`.
async fn assert_tree_killed(timeout: Duration, cancel_after_ready: bool) -> ToolError {
    let fx = fixture();
    let t = tool(&fx, timeout, 64 * 1024);
    let cmd = "sleep 1000 & echo $! > bg.pid; setsid sleep 1000 & echo $! > ss.pid; \
               trap '' TERM; echo ready; sleep 1000";
    let inv = t.build(&fx.ctx, &json!({"command": cmd})).unwrap();
    let cancel = CancellationToken::new();
    let seen = Arc::new(Mutex::new(String::new()));
    let (seen2, cancel2) = (seen.clone(), cancel.clone());
    let sink = OutputSink::new(move |d| {
        let mut s = seen2.lock().unwrap();
        s.push_str(&d);
        if cancel_after_ready && s.contains("ready") {
            cancel2.cancel();
        }
    });
    let started = Instant::now();
    let err = inv.execute(cancel, sink).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(seen.lock().unwrap().contains("ready"));
    let pgid = pgid_in(&err.message);
    assert!(group_members(pgid).is_empty(), "group {pgid} survived");
    for f in ["bg.pid", "ss.pid"] {
        let pid: i32 = std::fs::read_to_string(fx.ctx.workspace_root.join(f))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(!alive(pid), "{f} {pid} survived");
    }
    err
}

#[tokio::test]
async fn cancel_kills_the_whole_tree() {
    let err = assert_tree_killed(Duration::from_secs(60), true).await;
    assert_eq!(err.kind, ToolErrorKind::Cancelled);
}

#[tokio::test]
async fn timeout_kills_the_whole_tree() {
    let err = assert_tree_killed(Duration::from_millis(700), false).await;
    assert_eq!(err.kind, ToolErrorKind::Timeout);
}

#[tokio::test]
async fn long_output_is_cut_and_spilled() {
    let fx = fixture();
    let t = tool(&fx, Duration::from_secs(30), 1000);
    let inv = t
        .build(&fx.ctx, &json!({"command": "seq 1 20000"}))
        .unwrap();
    let r = inv
        .execute(CancellationToken::new(), OutputSink::discard())
        .await
        .unwrap();
    let text = text_of(&r);
    assert!(text.contains("Output: 1\n2\n"), "{text}");
    assert!(text.contains("bytes truncated ...]"), "{text}");
    assert!(text.contains("19999\n20000\n"), "{text}");
    assert!(text.len() < 2000, "{}", text.len());
    let path = text
        .lines()
        .last()
        .unwrap()
        .split("saved in: ")
        .nth(1)
        .unwrap();
    let full = std::fs::read_to_string(path).unwrap();
    let expected: String = (1..=20000).map(|i| format!("{i}\n")).collect();
    assert_eq!(full, expected);
}

#[tokio::test]
async fn streams_coalesced_deltas() {
    let fx = fixture();
    let t = tool(&fx, Duration::from_secs(30), 64 * 1024);
    let cmd = "for i in 1 2 3; do echo $i; sleep 0.25; done";
    let inv = t.build(&fx.ctx, &json!({"command": cmd})).unwrap();
    let deltas = Arc::new(Mutex::new(Vec::<String>::new()));
    let d2 = deltas.clone();
    let sink = OutputSink::new(move |d| d2.lock().unwrap().push(d));
    inv.execute(CancellationToken::new(), sink).await.unwrap();
    let deltas = deltas.lock().unwrap();
    assert!(deltas.len() >= 3, "{deltas:?}");
    assert_eq!(deltas.concat(), "1\n2\n3\n");
}

#[tokio::test]
async fn bad_inputs_are_refused() {
    let fx = fixture();
    let t = tool(&fx, Duration::from_secs(30), 1024);
    let cases = [
        (
            json!({"command": ""}),
            ToolErrorKind::InvalidParams,
            "command",
        ),
        (
            json!({"command": "   "}),
            ToolErrorKind::InvalidParams,
            "command",
        ),
        (json!({}), ToolErrorKind::InvalidParams, "command"),
        (
            json!({"command": "ls", "directory": "/tmp"}),
            ToolErrorKind::PathNotAllowed,
            "directory",
        ),
        (
            json!({"command": "ls", "directory": "../outside"}),
            ToolErrorKind::PathNotAllowed,
            "directory",
        ),
        (
            json!({"command": "ls", "directory": "link_out"}),
            ToolErrorKind::PathNotAllowed,
            "directory",
        ),
        (
            json!({"command": "ls", "directory": "missing"}),
            ToolErrorKind::NotFound,
            "directory",
        ),
        (
            json!({"command": "ls", "directory": "file.txt"}),
            ToolErrorKind::InvalidParams,
            "directory",
        ),
        (
            json!({"command": "ls", "bogus": 1}),
            ToolErrorKind::InvalidParams,
            "bogus",
        ),
    ];
    for (args, kind, word) in cases {
        let err = t
            .build(&fx.ctx, &args)
            .err()
            .unwrap_or_else(|| panic!("{args} accepted"));
        assert_eq!(err.kind, kind, "{args}: {}", err.message);
        assert!(err.message.contains(word), "{args}: {}", err.message);
    }
}

#[tokio::test]
async fn confirmation_names_root_commands() {
    let fx = fixture();
    let t = tool(&fx, Duration::from_secs(30), 1024);
    let cmd = "FOO=1 git status && npm test | grep x; ls -la || (echo y) & wait";
    let inv = t.build(&fx.ctx, &json!({"command": cmd})).unwrap();
    match inv.confirmation().await.unwrap() {
        ConfirmationDetails::Exec {
            command,
            root_commands,
            ..
        } => {
            assert_eq!(command, cmd);
            assert_eq!(root_commands, ["git", "npm", "grep", "ls", "echo", "wait"]);
        }
        other => panic!("{other:?}"),
    }
    assert!(inv.description().starts_with("FOO=1 git status"));
}
