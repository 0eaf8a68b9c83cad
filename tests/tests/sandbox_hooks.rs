//! Hooks run in the sandbox when the user's `sandbox.mode` turns it on: a
//! hook cannot write outside the session's workspace roots and the temp
//! dirs, nor its instruction places, nor read a denied secret, and an
//! ordinary hook still does its work (writes the workspace and its
//! include directories, answers, lets the call run). Without the setting
//! the same hook runs free, so the refusals are the sandbox's.

use std::path::{Path, PathBuf};

use geminid_protocol::tool::CallState;
use geminid_tests::*;
use serde_json::json;

/// Tries what the sandbox refuses, records each outcome in the workspace,
/// then allows the call.
const PROBE: &str = r#"#!/bin/bash
cat >/dev/null
report="$GEMINI_PROJECT_DIR/hook-report"
if echo escaped > "$OUTSIDE/escaped" 2>/dev/null; then echo "write outside: ok" >> "$report"; else echo "write outside: refused" >> "$report"; fi
if cat "$HOME/.ssh/id_test" >/dev/null 2>&1; then echo "read secret: ok" >> "$report"; else echo "read secret: refused" >> "$report"; fi
echo '{"decision":"allow"}'
"#;

/// A daemon whose user settings hold the probe as a BeforeTool hook and
/// `sandbox`; the directory outside the workspace.
/// The daemon gets its own TMPDIR (the temp dir a sandboxed hook may
/// write), away from the workspace's parent.
fn daemon(sandbox: Option<serde_json::Value>) -> (TestDaemon, PathBuf, tempfile::TempDir) {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let tmpdir = tmp.path().canonicalize().unwrap();
    let mut d = TestDaemon::prepared(&[("TMPDIR", tmpdir.to_str().unwrap())]);
    let outside = d.workspace.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    // A repository: the hook writes its report at the top level.
    std::fs::create_dir_all(d.workspace.join(".git")).unwrap();
    let home = d.home();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_test"), "secret").unwrap();
    let hooks = home.join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let probe = hooks.join("probe.sh");
    std::fs::write(
        &probe,
        PROBE.replace("$OUTSIDE", &outside.display().to_string()),
    )
    .unwrap();
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut settings = json!({"hooks": {"BeforeTool": [{"matcher": "run_shell_command",
        "hooks": [{"type": "command", "command": probe.display().to_string()}]}]}});
    if let Some(sandbox) = sandbox {
        settings["sandbox"] = sandbox;
    }
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(home.join(".gemini/settings.json"), settings.to_string()).unwrap();
    d.spawn();
    (d, outside, tmp)
}

/// Runs `echo ran` through the hook; the call's output and the report.
async fn probe(d: &TestDaemon) -> (String, String) {
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    let done = call_and_wait(
        &c,
        &session,
        "run_shell_command",
        json!({"command": "echo ran"}),
    )
    .await
    .outcome
    .expect("final snapshot");
    assert_eq!(done.state, CallState::Success, "{done:#?}");
    let output = serde_json::to_string(&done.result).unwrap();
    let report = std::fs::read_to_string(d.workspace.join("hook-report")).unwrap_or_default();
    (output, report)
}

fn escaped(outside: &Path) -> bool {
    outside.join("escaped").exists()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_hook_cannot_write_outside_or_read_a_secret_and_still_works() {
    let (d, outside, _tmp) = daemon(Some(json!({"mode": "workspace-write"})));
    let (output, report) = probe(&d).await;
    assert!(!escaped(&outside), "a sandboxed hook wrote outside");
    assert_eq!(
        report, "write outside: refused\nread secret: refused\n",
        "the hook ran, wrote its workspace, and was refused the rest"
    );
    assert!(
        output.contains("ran"),
        "the hook allowed the call: {output}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_sandbox_the_same_hook_runs_free() {
    let (d, outside, _tmp) = daemon(None);
    let (output, report) = probe(&d).await;
    assert!(escaped(&outside), "report: {report}");
    assert_eq!(report, "write outside: ok\nread secret: ok\n");
    assert!(output.contains("ran"), "{output}");
}

/// Writes where the session's shell commands may, and tries the
/// instruction places of its workspace; reports each outcome to the temp
/// dir it was given.
const WRITER: &str = r#"#!/bin/bash
cat >/dev/null
report="$REPORT"
try() { if eval "$2" 2>/dev/null; then echo "$1: ok" >> "$report"; else echo "$1: refused" >> "$report"; fi; }
try "include dir" "echo log > '$EXTRA/hook.log'"
try "project" "echo log > '$GEMINI_PROJECT_DIR/hook.log'"
try "git config" "echo evil >> '$GEMINI_PROJECT_DIR/.git/config'"
try "gemini settings" "mkdir -p '$GEMINI_PROJECT_DIR/.gemini' && echo '{}' > '$GEMINI_PROJECT_DIR/.gemini/settings.json'"
try "outside" "echo x > '$OUTSIDE/escaped'"
echo '{"decision":"allow"}'
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_hook_writes_where_the_sessions_commands_may() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let tmpdir = tmp.path().canonicalize().unwrap();
    let mut d = TestDaemon::prepared(&[("TMPDIR", tmpdir.to_str().unwrap())]);
    let base = d.workspace.parent().unwrap().to_path_buf();
    let outside = base.join("outside");
    let extra = base.join("shared-lib");
    // Both roots are repositories (a root without `.git` takes no new
    // top-level entries, `sandbox_git.rs`).
    for dir in [&outside, &extra.join(".git"), &d.workspace.join(".git")] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(d.workspace.join(".git/config"), "[core]\n").unwrap();
    let report = tmpdir.join("writer-report");
    let home = d.home();
    let script = home.join("writer.sh");
    std::fs::write(
        &script,
        WRITER
            .replace("$REPORT", &report.display().to_string())
            .replace("$EXTRA", &extra.display().to_string())
            .replace("$OUTSIDE", &outside.display().to_string()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(
        home.join(".gemini/settings.json"),
        json!({
            "sandbox": {"mode": "workspace-write"},
            "context": {"includeDirectories": [extra]},
            "hooks": {"BeforeTool": [{"matcher": "run_shell_command",
                "hooks": [{"type": "command", "command": script.display().to_string()}]}]}
        })
        .to_string(),
    )
    .unwrap();
    d.spawn();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    let done = call_and_wait(
        &c,
        &session,
        "run_shell_command",
        json!({"command": "echo ran"}),
    )
    .await
    .outcome
    .expect("final snapshot");
    assert_eq!(done.state, CallState::Success, "{done:#?}");
    assert_eq!(
        std::fs::read_to_string(&report).unwrap_or_default(),
        "include dir: ok\nproject: ok\ngit config: refused\ngemini settings: refused\noutside: refused\n"
    );
    assert!(extra.join("hook.log").is_file());
    assert_eq!(
        std::fs::read_to_string(d.workspace.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!d.workspace.join(".gemini/settings.json").exists());
    assert!(!outside.join("escaped").exists());
}
