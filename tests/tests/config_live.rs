//! Configuration that applies live, through a real daemon: an idle daemon
//! opens no configuration file, a policy directory created after start is
//! watched, edits apply within a second, settings.json may hold comments,
//! a problem is reported once (log, `daemon status`, one event), SIGHUP
//! reloads and SIGTERM stops in order.

mod peers;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use geminid_protocol::EventPayload;
use geminid_tests::*;
use serde_json::json;

const GIT_STATUS_DENIED: &str = r#"
[[rule]]
toolName = "run_shell_command"
commandPrefix = "git status"
decision = "deny"
priority = 100
"#;

async fn decision(client: &Client, command: &str) -> String {
    client
        .check_policy(
            None,
            None,
            "run_shell_command".into(),
            Some(json!({"command": command})),
            None,
            None,
        )
        .await
        .unwrap()
        .decision
}

/// Polls until `command`'s decision is `want`; returns how long it took.
async fn until_decision(client: &Client, command: &str, want: &str) -> Duration {
    let start = Instant::now();
    // Generous: a loaded machine may be slow to reload; how fast a reload
    // is is a figure (`figures_idle_opens_and_reload_latency`), not a test.
    while start.elapsed() < Duration::from_secs(30) {
        if decision(client, command).await == want {
            return start.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!(
        "`{command}` never became {want}: {}",
        decision(client, command).await
    );
}

/// A realistic `~/.gemini`: settings with comments, three policy files,
/// two MCP servers (that need not start for this), a GEMINI.md.
fn realistic_gemini_dir(home: &Path) {
    let gemini = home.join(".gemini");
    std::fs::create_dir_all(gemini.join("policies")).unwrap();
    std::fs::write(
        gemini.join("settings.json"),
        r#"{
  // the model and the look
  "model": {"name": "gemini-2.5-pro"},
  /* two servers */
  "mcpServers": {
    "one": {"command": "/bin/false"},
    "two": {"httpUrl": "http://127.0.0.1:9/mcp"}
  },
  "tools": {"exclude": ["web_fetch"]}
}"#,
    )
    .unwrap();
    for (name, prefix) in [("a.toml", "git log"), ("b.toml", "ls"), ("c.toml", "cat")] {
        std::fs::write(
            gemini.join("policies").join(name),
            format!(
                "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"{prefix}\"\ndecision = \"allow\"\npriority = 100\n"
            ),
        )
        .unwrap();
    }
    std::fs::write(gemini.join("GEMINI.md"), "Be brief.\n").unwrap();
}

/// strace following `pid`'s opens and stats (the figure of the idle
/// benchmark).
struct Strace(std::process::Child);

impl Strace {
    /// Returns once strace traces every thread of `pid`: a trace that
    /// has not attached yet sees nothing, which would pass the idle check
    /// and fail the control on a loaded machine.
    fn attach(pid: u32) -> Strace {
        let strace = Command::new("strace")
            .args(["-f", "-qq", "-e", "trace=openat,open,stat,statx,newfstatat"])
            .arg("-p")
            .arg(pid.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("strace is needed for this test (apt-get install strace): {e}")
            });
        let deadline = Instant::now() + Duration::from_secs(30);
        while !all_threads_traced(pid) {
            assert!(Instant::now() < deadline, "strace did not attach to {pid}");
            std::thread::sleep(Duration::from_millis(10));
        }
        Strace(strace)
    }

    /// Stops tracing; the config files opened meanwhile.
    fn config_opens(self, home: &Path) -> Vec<String> {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(self.0.id() as i32).unwrap(),
            rustix::process::Signal::INT,
        );
        let out = self.0.wait_with_output().unwrap();
        config_lines(&String::from_utf8_lossy(&out.stderr), home)
    }
}

/// Whether every thread of `pid` has a tracer.
fn all_threads_traced(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.filter_map(Result::ok).all(|task| {
        std::fs::read_to_string(task.path().join("status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("TracerPid:"))
                    .map(|v| v.trim() != "0")
            })
            // A thread that just ended has no status: not a miss.
            .unwrap_or(true)
    })
}

/// Points the realistic settings' two servers at servers that connect:
/// one that never does is retried with backoff (spawned again, its
/// environment and settings read again), which is not idling.
fn connecting_servers(home: &Path) {
    let everything = peers::everything(&peers::peers());
    let settings = home.join(".gemini/settings.json");
    let text = std::fs::read_to_string(&settings)
        .unwrap()
        .replace("\"/bin/false\"", &format!("\"{everything}\""))
        .replace(
            "\"httpUrl\": \"http://127.0.0.1:9/mcp\"",
            &format!("\"command\": \"{everything}\""),
        );
    std::fs::write(&settings, text).unwrap();
}

#[tokio::test]
async fn an_idle_daemon_reads_no_configuration_file() {
    let mut d = TestDaemon::prepared(&[]);
    realistic_gemini_dir(&d.home());
    connecting_servers(&d.home());
    d.spawn();
    let c = d.client().await;
    let _session = new_session(&c, &d.workspace).await;
    assert_eq!(decision(&c, "ls -l").await, "allow");
    // Idle: the servers are up (no start-up work left), then a little
    // slack for the session's own start. A negative check: the window is
    // a lower bound on how long the daemon stays quiet.
    peers::connected(&c, &["one", "two"]).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let trace = Strace::attach(d.pid());
    std::thread::sleep(Duration::from_secs(2));
    let opens = trace.config_opens(&d.home());
    assert!(
        opens.is_empty(),
        "an idle daemon touched its configuration:\n{}",
        opens.join("\n")
    );
    // The control: the same tracing sees the reload an edit causes,
    // traced until the edit applies (however long a loaded machine takes).
    let trace = Strace::attach(d.pid());
    std::fs::write(
        d.home().join(".gemini/policies/b.toml"),
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"ls\"\ndecision = \"deny\"\npriority = 100\n",
    )
    .unwrap();
    until_decision(&c, "ls -l", "deny").await;
    let opens = trace.config_opens(&d.home());
    assert!(
        opens.iter().any(|l| l.contains("b.toml")),
        "strace saw no reload after an edit: {opens:?}"
    );
}

#[tokio::test]
async fn a_policy_directory_created_after_start_is_watched() {
    let d = TestDaemon::start();
    assert!(!d.home().join(".gemini").exists());
    let c = d.client().await;
    assert_eq!(decision(&c, "git status").await, "ask_user");
    let policies = d.home().join(".gemini/policies");
    std::fs::create_dir_all(&policies).unwrap();
    std::fs::write(policies.join("u.toml"), GIT_STATUS_DENIED).unwrap();
    until_decision(&c, "git status", "deny").await;
    // And removed again, then made anew.
    std::fs::remove_dir_all(d.home().join(".gemini")).unwrap();
    until_decision(&c, "git status", "ask_user").await;
    std::fs::create_dir_all(&policies).unwrap();
    std::fs::write(policies.join("v.toml"), GIT_STATUS_DENIED).unwrap();
    until_decision(&c, "git status", "deny").await;
}

#[tokio::test]
async fn settings_with_comments_apply_and_a_broken_file_is_reported_once() {
    let d = TestDaemon::start();
    let gemini = d.home().join(".gemini");
    std::fs::create_dir_all(&gemini).unwrap();
    let settings = gemini.join("settings.json");
    std::fs::write(
        &settings,
        "{\n  // no shell for me\n  \"tools\": {\"exclude\": [\"run_shell_command\"]},\n}\n",
    )
    .unwrap();
    let c = d.client().await;
    let session = new_session(&c, &d.workspace).await;
    let mut events = c.subscribe_session(session.clone(), None).await.unwrap();
    // A trailing comma is an error in 0.61 too: reported with its line.
    let status = until_problem(&c, "settings.json").await;
    let problem = status
        .iter()
        .find(|p| p.file.ends_with("settings.json"))
        .unwrap();
    assert_eq!(problem.line, Some(4), "{problem:?}");
    // Fixed: comments are fine and the exclusion applies.
    std::fs::write(
        &settings,
        "{\n  // no shell for me\n  \"tools\": {\"exclude\": [\"run_shell_command\"]}\n}\n",
    )
    .unwrap();
    until_decision(&c, "echo hi", "deny").await;
    assert!(c.status().await.unwrap().config_problems.is_empty());
    // Broken again: the exclusion stays (fail closed), one event per
    // change, nothing repeated while the daemon sits idle.
    // Saved whole (renamed into place, as editors do): a truncate-then-write
    // seen half way by a loaded machine would be a second, real change.
    save_whole(&settings, "{ \"tools\": ");
    until_problem(&c, "settings.json").await;
    assert_eq!(decision(&c, "echo hi").await, "deny");
    let got = collect_until(&mut events, |e| {
        matches!(&e.payload, EventPayload::Error { message } if message.contains("settings.json"))
    })
    .await;
    assert!(!got.is_empty());
    // touch: same bytes, nothing new.
    save_whole(&settings, "{ \"tools\": ");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        count_errors(&c, &session).await,
        1,
        "one problem, one event"
    );
}

async fn until_problem(
    c: &Client,
    file_part: &str,
) -> Vec<geminid_protocol::session::ConfigProblemInfo> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let status = c.status().await.unwrap();
        if status
            .config_problems
            .iter()
            .any(|p| p.file.contains(file_part))
        {
            return status.config_problems;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no problem with {file_part} in daemon.status");
}

/// `error` events in the session's stored history.
/// Writes `text` to a temporary file beside `path` and renames it over
/// `path`, so no reader ever sees it half written.
fn save_whole(path: &std::path::Path, text: &str) {
    let tmp = path.with_extension("saving");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

async fn count_errors(c: &Client, session: &str) -> usize {
    let mut events = c
        .subscribe_session(session.to_owned(), Some(0))
        .await
        .unwrap();
    let info = c.get_session(session.to_owned()).await.unwrap();
    let mut errors = 0;
    let mut seen = 0;
    while seen < info.last_seq {
        let Ok(Some(Ok(event))) =
            tokio::time::timeout(Duration::from_secs(20), events.next()).await
        else {
            break;
        };
        seen = event.seq;
        if matches!(event.payload, EventPayload::Error { .. }) {
            errors += 1;
        }
    }
    errors
}

#[tokio::test]
async fn sighup_reloads_and_sigterm_stops_in_order() {
    // systemd's notification socket, ours.
    let mut d = TestDaemon::prepared(&[]);
    let notify_path = d.dir.path().join("notify.sock");
    let notify = std::os::unix::net::UnixDatagram::bind(&notify_path).unwrap();
    notify
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    d.env
        .push(("NOTIFY_SOCKET".into(), notify_path.display().to_string()));
    d.spawn();
    let mut buf = [0u8; 256];
    let n = notify.recv(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).contains("READY=1"));
    let c = d.client().await;
    assert_eq!(decision(&c, "git status").await, "ask_user");
    let policies: PathBuf = d.home().join(".gemini/policies");
    std::fs::create_dir_all(&policies).unwrap();
    std::fs::write(policies.join("u.toml"), GIT_STATUS_DENIED).unwrap();
    let pid = rustix::process::Pid::from_raw(d.pid() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::HUP).unwrap();
    until_decision(&c, "git status", "deny").await;
    assert!(d.is_running(), "SIGHUP must not stop the daemon");
    drop(c);
    assert_eq!(d.terminate(), Some(0));
    let n = notify.recv(&mut buf).unwrap();
    assert!(
        String::from_utf8_lossy(&buf[..n]).contains("STOPPING=1"),
        "{}",
        String::from_utf8_lossy(&buf[..n])
    );
}

/// The figures of BENCHMARKS.md's configuration table (run with
/// `--ignored --nocapture`): configuration opens (and all opens) of an
/// idle daemon with a realistic `~/.gemini` over 10 s, and the time from
/// saving a policy file to the first decision that uses it.
#[tokio::test]
#[ignore = "a measurement: 10 s of strace and 20 reloads"]
async fn figures_idle_opens_and_reload_latency() {
    let mut d = TestDaemon::prepared(&[]);
    realistic_gemini_dir(&d.home());
    // Two servers that connect (the realistic case; failing ones retry).
    connecting_servers(&d.home());
    d.spawn();
    let c = d.client().await;
    let _session = new_session(&c, &d.workspace).await;
    peers::connected(&c, &["one", "two"]).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let window = Duration::from_secs(10);
    let strace = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=openat,open"])
        .arg("-p")
        .arg(d.pid().to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("strace");
    std::thread::sleep(window);
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_raw(strace.id() as i32).unwrap(),
        rustix::process::Signal::INT,
    );
    let out = strace.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    let all = text.lines().filter(|l| l.contains("open")).count();
    let mut kinds: std::collections::BTreeMap<String, usize> = Default::default();
    for line in text.lines().filter(|l| l.contains("open")) {
        let path = line.split('"').nth(1).unwrap_or("?");
        let short: String = path.split('/').take(4).collect::<Vec<_>>().join("/");
        *kinds.entry(short).or_default() += 1;
    }
    println!("opens by place: {kinds:?}");
    let config = config_lines(&text, &d.home()).len();
    println!(
        "idle over {window:?}: {config} configuration opens ({:.1}/s), {all} opens in all ({:.1}/s)",
        config as f64 / window.as_secs_f64(),
        all as f64 / window.as_secs_f64()
    );
    let policy = d.home().join(".gemini/policies/d.toml");
    let mut took = Vec::new();
    for i in 0..20 {
        let want = if i % 2 == 0 { "deny" } else { "ask_user" };
        let text = if want == "deny" {
            GIT_STATUS_DENIED
        } else {
            ""
        };
        tokio::time::sleep(Duration::from_millis(150)).await;
        std::fs::write(&policy, text).unwrap();
        took.push(until_decision(&c, "git status", want).await);
    }
    took.sort();
    println!(
        "save to decision: median {:?}, max {:?}",
        took[took.len() / 2],
        took[took.len() - 1]
    );
}

fn config_lines(text: &str, home: &Path) -> Vec<String> {
    let needle = home.join(".gemini").display().to_string();
    text.lines()
        .filter(|l| l.contains(&needle) || l.contains("/etc/gemini-cli"))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn default_approval_mode_applies_to_new_sessions_live() {
    let d = TestDaemon::start();
    let c = d.client().await;
    let gemini = d.home().join(".gemini");
    std::fs::create_dir_all(&gemini).unwrap();
    let mode_of_new = || async {
        c.create_session(
            d.workspace.display().to_string(),
            None,
            None,
            None,
            None,
            None,
            None,
        )
        .await
        .unwrap()
        .approval_mode
    };
    use geminid_protocol::session::ApprovalMode;
    assert_eq!(mode_of_new().await, ApprovalMode::Default);
    std::fs::write(
        gemini.join("settings.json"),
        "{ /* mine */ \"general\": {\"defaultApprovalMode\": \"auto_edit\"} }",
    )
    .unwrap();
    let start = Instant::now();
    while mode_of_new().await != ApprovalMode::AutoEdit {
        assert!(start.elapsed() < Duration::from_secs(30), "never applied");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // yolo cannot come from a settings file (as in 0.61): reported, default.
    std::fs::write(
        gemini.join("settings.json"),
        "{\"general\": {\"defaultApprovalMode\": \"yolo\"}, \"genral\": 1}",
    )
    .unwrap();
    let status = until_problem(&c, "settings").await;
    assert!(
        status
            .iter()
            .any(|p| p.message.contains("defaultApprovalMode")),
        "{status:?}"
    );
    assert_eq!(mode_of_new().await, ApprovalMode::Default);
    let unused = c.status().await.unwrap().unused_settings;
    assert!(unused.iter().any(|k| k.ends_with(": genral")), "{unused:?}");
}
