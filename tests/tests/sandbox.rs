//! The sandbox around what the model runs, through a real daemon: in a
//! yolo session (the policy allows every command), `run_shell_command`
//! cannot write outside the workspace however the path is spelled
//! (absolute, `..`, a symlink placed in the workspace, a hard link,
//! `/proc/self/root`, `/dev/shm`, the daemon's data dir), cannot change
//! `.git/config` or `.git/hooks`, cannot read a hidden secret, cannot
//! connect to a listener outside its network namespace, and a process it
//! double-forks is still confined after the call ends; writes inside the
//! workspace still work, and the result says what was refused.
//!
//! Each daemon gets its own TMPDIR (the one temp dir commands may write),
//! so "outside" is a sibling of the workspace under the test's directory.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::CallState;
use geminid_tests::*;
use serde_json::json;

struct Setup {
    d: TestDaemon,
    /// Not writable by commands.
    outside: PathBuf,
    _tmp: tempfile::TempDir,
}

fn setup() -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let tmpdir = tmp.path().canonicalize().unwrap();
    let d = TestDaemon::start_with_env(&[("TMPDIR", tmpdir.to_str().unwrap())]);
    let outside = d.workspace.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    // A repository, as most workspaces are: a root without `.git` takes
    // no new top-level entries (`sandbox_git.rs`).
    std::fs::create_dir_all(d.workspace.join(".git")).unwrap();
    Setup {
        d,
        outside,
        _tmp: tmp,
    }
}

async fn session_with(c: &Client, root: &Path, sandbox: Option<&str>) -> String {
    c.create_session(
        root.display().to_string(),
        Some(ApprovalMode::Yolo),
        None,
        Some(false),
        None,
        sandbox.map(str::to_owned),
        None,
    )
    .await
    .expect("session.create")
    .session_id
}

fn sandbox_available() -> bool {
    // The self-test the daemon runs is the same; the tests need it.
    std::process::Command::new("unshare")
        .args(["-rn", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_outside_the_workspace_are_refused_however_spelled() {
    assert!(sandbox_available(), "this machine has no user namespaces");
    let s = setup();
    let c = s.d.client().await;
    let ws = &s.d.workspace;
    let session = yolo_session(&c, ws).await;
    let out = &s.outside;
    std::fs::write(out.join("victim.txt"), "orig").unwrap();
    let shm = format!("/dev/shm/geminid-sandbox-test-{}", std::process::id());
    let data_dir_target = s.d.data_dir.join("planted");
    let cases: Vec<(&str, String, PathBuf)> = vec![
        (
            "absolute",
            format!("echo x > {}/abs.txt", out.display()),
            out.join("abs.txt"),
        ),
        (
            "dotdot",
            "echo x > ../outside/dotdot.txt".to_owned(),
            out.join("dotdot.txt"),
        ),
        (
            "symlink in the workspace",
            format!("ln -s {} link && echo x > link/sym.txt", out.display()),
            out.join("sym.txt"),
        ),
        (
            "/proc/self/root",
            format!("echo x > /proc/self/root{}/proc.txt", out.display()),
            out.join("proc.txt"),
        ),
        ("/dev/shm", format!("echo x > {shm}"), PathBuf::from(&shm)),
        (
            "the daemon's data dir",
            format!("echo x > {}", data_dir_target.display()),
            data_dir_target.clone(),
        ),
        (
            "cp to outside",
            format!(
                "echo x > inside.txt && cp inside.txt {}/copied.txt",
                out.display()
            ),
            out.join("copied.txt"),
        ),
        (
            "mkdir outside",
            format!("mkdir {}/newdir", out.display()),
            out.join("newdir"),
        ),
    ];
    for (name, command, target) in &cases {
        let snap = shell_call(&c, &session, command).await;
        let text = call_text(&snap);
        assert!(
            !target.exists(),
            "{name}: {} was written\n{text}",
            target.display()
        );
        assert!(text.contains("Sandbox: workspace-write"), "{name}: {text}");
    }
    // A hard link to a file outside, then a write through it.
    let snap = shell_call(
        &c,
        &session,
        &format!(
            "ln {}/victim.txt hard; echo pwned > hard; echo pwned > {}/victim.txt",
            out.display(),
            out.display()
        ),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(out.join("victim.txt")).unwrap(),
        "orig",
        "{}",
        call_text(&snap)
    );
    // The result names what was refused, and how to ask.
    let snap = shell_call(&c, &session, &format!("touch {}/named.txt", out.display())).await;
    let text = call_text(&snap);
    assert!(text.contains("The sandbox may have refused"), "{text}");
    assert!(
        text.contains(&format!("{}/named.txt", out.display())),
        "{text}"
    );
    assert!(text.contains("\"sandbox\": false"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workspace_writes_still_work() {
    let s = setup();
    let c = s.d.client().await;
    let ws = &s.d.workspace;
    let session = yolo_session(&c, ws).await;
    let snap = shell_call(
        &c,
        &session,
        "mkdir -p sub/deep && echo hi > sub/deep/a.txt && mv sub/deep/a.txt b.txt \
         && ln -s b.txt c.txt && ln b.txt d.txt && rm d.txt && echo tmp > \"$TMPDIR/t\" \
         && cat \"$TMPDIR/t\" && echo done > /dev/null && echo ok > e.txt",
    )
    .await;
    assert_eq!(snap.state, CallState::Success, "{}", call_text(&snap));
    assert!(
        call_text(&snap).contains("Exit Code: 0"),
        "{}",
        call_text(&snap)
    );
    assert_eq!(std::fs::read_to_string(ws.join("b.txt")).unwrap(), "hi\n");
    assert_eq!(std::fs::read_to_string(ws.join("e.txt")).unwrap(), "ok\n");
    assert!(ws.join("c.txt").is_symlink());
    assert!(
        !call_text(&snap).contains("may have refused"),
        "{}",
        call_text(&snap)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_config_and_hooks_are_read_only_inside_the_workspace() {
    let s = setup();
    let c = s.d.client().await;
    let ws = &s.d.workspace;
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(ws.join(".gemini")).unwrap();
    let session = yolo_session(&c, ws).await;
    let attempts = [
        "echo '\tfsmonitor = evil' >> .git/config",
        "echo '#!/bin/sh' > .git/hooks/pre-commit",
        "rm -f .git/config",
        "mv .git/config .git/config.old",
        "mv .git/hooks .git/hooks.old",
        "echo '{}' > .gemini/settings.json",
        "mkdir -p .gemini/policies && echo x > .gemini/policies/p.toml",
        "cd .gemini && echo '{}' > settings.json",
    ];
    for a in attempts {
        let snap = shell_call(&c, &session, a).await;
        assert_eq!(
            std::fs::read_to_string(ws.join(".git/config")).unwrap(),
            "[core]\n",
            "{a}: {}",
            call_text(&snap)
        );
        assert!(!ws.join(".git/hooks/pre-commit").exists(), "{a}");
        assert!(ws.join(".git/hooks").is_dir(), "{a}");
        assert!(!ws.join(".gemini/settings.json").exists(), "{a}");
        assert!(!ws.join(".gemini/policies").exists(), "{a}");
    }
    // All of .git is held (as 0.61 does); the workspace's own files are not.
    let snap = shell_call(&c, &session, "mkdir -p .git/objects/ab").await;
    assert!(!ws.join(".git/objects/ab").exists(), "{}", call_text(&snap));
    let snap = shell_call(&c, &session, "echo x > new.txt && mkdir -p src/a").await;
    assert!(
        call_text(&snap).contains("Exit Code: 0"),
        "{}",
        call_text(&snap)
    );
    assert!(ws.join("new.txt").is_file() && ws.join("src/a").is_dir());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_is_hidden() {
    let s = setup();
    let c = s.d.client().await;
    let ssh = s.d.home().join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_ed25519"), "SECRET-KEY-MATERIAL").unwrap();
    let session = yolo_session(&c, &s.d.workspace).await;
    for command in [
        "cat ~/.ssh/id_ed25519",
        "cat $HOME/.ssh/../.ssh/id_ed25519",
        "cat /proc/self/root$HOME/.ssh/id_ed25519",
        "ls -la ~/.ssh; base64 ~/.ssh/*",
        &format!("cat {}/*", s.d.data_dir.display()),
    ] {
        let snap = shell_call(&c, &session, command).await;
        let text = call_text(&snap);
        assert!(!text.contains("SECRET-KEY-MATERIAL"), "{command}: {text}");
        assert!(!text.contains("U0VDUkVU"), "{command}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_connection_leaves_the_sandbox() {
    let s = setup();
    let c = s.d.client().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let session = yolo_session(&c, &s.d.workspace).await;
    let snap = shell_call(
        &c,
        &session,
        &format!(
            "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3); print('CONN' + 'ECTED')\""
        ),
    )
    .await;
    let text = call_text(&snap);
    assert!(!text.contains("CONNECTED"), "{text}");
    assert!(listener.accept().is_err(), "a connection arrived");
    assert!(text.contains("Refused network access"), "{text}");
    // The daemon's own socket is out of reach too (a command that could
    // talk to the daemon could start an unsandboxed session).
    let snap = shell_call(
        &c,
        &session,
        &format!(
            "python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{}\"); print(\"REA\" + \"CHED\")'",
            s.d.socket.display()
        ),
    )
    .await;
    assert!(
        !call_text(&snap).contains("REACHED"),
        "{}",
        call_text(&snap)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_double_fork_stays_confined_after_the_call() {
    let s = setup();
    let c = s.d.client().await;
    let ws = &s.d.workspace;
    let out = &s.outside;
    let session = yolo_session(&c, ws).await;
    let snap = shell_call(
        &c,
        &session,
        &format!(
            "( setsid bash -c 'sleep 1; echo ran > {ws}/late-marker; echo x > {out}/late.txt; \
               echo y > {out}/late2.txt' >/dev/null 2>&1 & ) ; echo started",
            ws = ws.display(),
            out = out.display()
        ),
    )
    .await;
    assert!(call_text(&snap).contains("started"), "{}", call_text(&snap));
    let deadline = Instant::now() + Duration::from_secs(15);
    while !ws.join("late-marker").exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        ws.join("late-marker").exists(),
        "the background job never ran"
    );
    assert!(!out.join("late.txt").exists());
    assert!(!out.join("late2.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_decides_and_leaving_the_sandbox_asks() {
    let s = setup();
    let c = s.d.client().await;
    let ws = &s.d.workspace;
    let out = &s.outside;
    // sandbox "off" at session.create: a yolo session runs unsandboxed.
    let off = session_with(&c, ws, Some("off")).await;
    let snap = shell_call(&c, &off, &format!("echo x > {}/off.txt", out.display())).await;
    assert!(out.join("off.txt").exists(), "{}", call_text(&snap));
    // An unknown mode is refused at create.
    let bad = c
        .create_session(
            ws.display().to_string(),
            None,
            None,
            None,
            None,
            Some("sometimes".into()),
            None,
        )
        .await;
    assert!(bad.is_err());
    // A default-mode session is not sandboxed unless asked...
    let on = c
        .create_session(
            ws.display().to_string(),
            Some(ApprovalMode::Yolo),
            None,
            Some(false),
            None,
            Some("read-only".into()),
            None,
        )
        .await
        .unwrap()
        .session_id;
    let snap = shell_call(&c, &on, "echo x > ro.txt").await;
    assert!(!ws.join("ro.txt").exists(), "{}", call_text(&snap));
    assert!(
        call_text(&snap).contains("Sandbox: read-only"),
        "{}",
        call_text(&snap)
    );
    // Asking to leave the sandbox is a separate decision: refused in a
    // non-interactive yolo session, whatever the policy says.
    let started = c
        .call_tool(
            on.clone(),
            "run_shell_command".into(),
            Some(json!({"command": format!("echo x > {}/escape.txt", out.display()), "sandbox": false})),
            Some(true),
        )
        .await
        .unwrap();
    let snap = started.outcome.unwrap();
    assert_ne!(snap.state, CallState::Success, "{}", call_text(&snap));
    assert!(!out.join("escape.txt").exists());
    assert!(
        snap.decided_by
            .as_deref()
            .unwrap_or_default()
            .contains("Unsandboxed Command")
            || call_text(&snap).contains("outside the sandbox"),
        "{snap:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemctl_sandbox_check_runs_its_self_test() {
    let s = setup();
    let out =
        s.d.gemctl(&["sandbox", "check", "--cwd", s.d.workspace.to_str().unwrap()])
            .output()
            .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("sandbox: available"), "{text}");
    assert!(text.contains("may write under"), "{text}");
    assert!(text.contains("ok   write inside the workspace"), "{text}");
    assert!(text.contains("ok   .git/config stays read-only"), "{text}");
    assert!(
        text.contains("ok   a root without .git cannot be given one"),
        "{text}"
    );
    assert!(!text.contains("FAIL"), "{text}");
    let status = s.d.gemctl(&["daemon", "status"]).output().unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("sandbox      available"), "{status}");
}

/// The added latency of a sandboxed `run_shell_command "true"` over an
/// unsandboxed one, in the same daemon, interleaved (BENCHMARKS.md). The
/// bound asserted is loose (a debug build on a shared machine); the
/// figures are printed. `SANDBOX_NETWORK=1` gives sandboxed commands the
/// network (`sandbox.network`), which leaves out the network namespace: the
/// difference is what that namespace costs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_latency() {
    let s = if std::env::var("SANDBOX_NETWORK").is_ok_and(|v| v == "1") {
        let tmp = tempfile::tempdir().unwrap();
        let tmpdir = tmp.path().canonicalize().unwrap();
        let mut d = TestDaemon::prepared(&[("TMPDIR", tmpdir.to_str().unwrap())]);
        let home = d.home();
        std::fs::create_dir_all(home.join(".gemini")).unwrap();
        std::fs::write(
            home.join(".gemini/settings.json"),
            json!({"sandbox": {"network": true}}).to_string(),
        )
        .unwrap();
        d.spawn();
        let outside = d.workspace.parent().unwrap().join("outside");
        Setup {
            d,
            outside,
            _tmp: tmp,
        }
    } else {
        setup()
    };
    let c = s.d.client().await;
    let ws = &s.d.workspace;
    let on = yolo_session(&c, ws).await;
    let off = session_with(&c, ws, Some("off")).await;
    let rounds: usize = std::env::var("SANDBOX_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    // Warm both paths (the kernel probe runs once).
    shell_call(&c, &on, "true").await;
    shell_call(&c, &off, "true").await;
    let (mut t_on, mut t_off) = (Vec::new(), Vec::new());
    for i in 0..rounds {
        let order = if i % 2 == 0 { [&on, &off] } else { [&off, &on] };
        for session in order {
            let start = Instant::now();
            let snap = shell_call(&c, session, "true").await;
            let took = start.elapsed().as_secs_f64() * 1000.0;
            assert_eq!(snap.state, CallState::Success, "{}", call_text(&snap));
            if session == &on {
                t_on.push(took);
            } else {
                t_off.push(took);
            }
        }
    }
    let pct = |v: &mut Vec<f64>, p: f64| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[((v.len() - 1) as f64 * p).round() as usize]
    };
    // Each round's two calls ran back to back, so their difference is
    // less moved by the machine's load drifting than the medians are.
    let mut paired: Vec<f64> = t_on.iter().zip(&t_off).map(|(a, b)| a - b).collect();
    let paired50 = pct(&mut paired, 0.5);
    let (on50, on90) = (pct(&mut t_on, 0.5), pct(&mut t_on, 0.9));
    let (off50, off90) = (pct(&mut t_off, 0.5), pct(&mut t_off, 0.9));
    println!(
        "sandbox latency, {rounds} interleaved rounds: sandboxed p50 {on50:.2} ms p90 {on90:.2} ms; \
         unsandboxed p50 {off50:.2} ms p90 {off90:.2} ms; added p50 {:.2} ms; \
         median of the rounds' differences {paired50:.2} ms",
        on50 - off50
    );
    // A guard against gross regressions, not the figure (< 5 ms, measured
    // over 200 rounds): the rounds' own differences, which the load moves
    // least, within 50 ms, or half an unsandboxed call when the machine
    // is so loaded that a call takes over 100 ms (the difference of the
    // medians went over 50 ms with calls at 230-290 ms).
    let limit = 50.0_f64.max(off50 / 2.0);
    assert!(
        paired50 < limit,
        "the sandbox adds {paired50:.2} ms (limit {limit:.0} ms; p50 {on50:.2} against {off50:.2} ms)"
    );
}

/// A discovered tool's call command runs in the session's sandbox too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovered_call_commands_are_sandboxed() {
    use std::os::unix::fs::PermissionsExt;
    let mut s = setup();
    let home = s.d.home();
    let target = s.outside.join("discovered.txt");
    let write = |name: &str, body: String| {
        let path = home.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.display().to_string()
    };
    let discover = write(
        "discover.sh",
        r#"echo '[{"name": "plant", "description": "writes a file", "parameters": {"type": "object", "properties": {}}}]'"#.to_owned(),
    );
    let call = write("call.sh", format!("echo x > {}", target.display()));
    s.d.kill9();
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(
        home.join(".gemini/settings.json"),
        json!({"tools": {"discoveryCommand": discover, "callCommand": call}}).to_string(),
    )
    .unwrap();
    s.d.spawn();
    let c = s.d.client().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !c
        .list_tools(None)
        .await
        .unwrap()
        .iter()
        .any(|t| t.name == "plant")
    {
        assert!(Instant::now() < deadline, "the tool was never discovered");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let sandboxed = yolo_session(&c, &s.d.workspace).await;
    let snap = call_and_wait(&c, &sandboxed, "plant", json!({}))
        .await
        .outcome
        .unwrap();
    assert!(!target.exists(), "{}", call_text(&snap));
    assert!(
        call_text(&snap).contains("Sandbox: workspace-write"),
        "{}",
        call_text(&snap)
    );
    // The same call unsandboxed writes it: the command did run above.
    let off = session_with(&c, &s.d.workspace, Some("off")).await;
    let snap = call_and_wait(&c, &off, "plant", json!({}))
        .await
        .outcome
        .unwrap();
    assert!(target.exists(), "{}", call_text(&snap));
}
