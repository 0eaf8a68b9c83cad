//! What discovery starts runs in the sandbox too when the settings turn it
//! on: the `tools.discoveryCommand` and stdio MCP servers cannot write
//! outside the temp dir (a server whose entry says `"sandbox": false` can),
//! and both still do their work.

mod peers;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::CallState;
use geminid_tests::*;
use peers::*;
use serde_json::json;

fn script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path.display().to_string()
}

/// A daemon with its own TMPDIR (the one temp dir commands may write) and
/// `settings` in its home; the directory "outside" the sandbox.
fn daemon(
    settings: impl FnOnce(&Path, &Path) -> serde_json::Value,
) -> (TestDaemon, PathBuf, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let tmpdir = tmp.path().canonicalize().unwrap();
    let mut d = TestDaemon::prepared(&[("TMPDIR", tmpdir.to_str().unwrap())]);
    let outside = d.workspace.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let home = d.home();
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    let settings = settings(&home, &outside);
    std::fs::write(home.join(".gemini/settings.json"), settings.to_string()).unwrap();
    d.spawn();
    (d, outside, tmp)
}

#[tokio::test(flavor = "multi_thread")]
async fn stdio_servers_run_sandboxed_unless_their_entry_opts_out() {
    let p = peers();
    let server = everything(&p);
    let (d, outside, _tmp) = daemon(|home, outside| {
        let wrap = |name: &str| {
            script(
                home,
                &format!("{name}.sh"),
                &format!(
                    "touch '{}/{name}' 2>/dev/null\nexec '{server}' \"$@\"",
                    outside.display()
                ),
            )
        };
        json!({
            "sandbox": {"mode": "workspace-write"},
            "mcpServers": {
                "boxed": {"command": wrap("boxed"), "includeTools": ["echo"]},
                "free": {"command": wrap("free"), "includeTools": ["echo"], "sandbox": false},
            }
        })
    });
    let c = d.client().await;
    connected(&c, &["boxed", "free"]).await;
    assert!(
        !outside.join("boxed").exists(),
        "a sandboxed server wrote outside"
    );
    assert!(
        outside.join("free").exists(),
        "`\"sandbox\": false` runs the server outside the sandbox"
    );
    // The sandboxed server still works.
    let sid = session(&c, &d, ApprovalMode::Yolo).await;
    let ok = run(&c, &sid, "boxed__echo", json!({"message": "hi"})).await;
    assert_eq!(ok.state, CallState::Success, "{ok:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_sandbox_entry_leaves_the_server_out() {
    let p = peers();
    let server = everything(&p);
    let (d, _outside, _tmp) = daemon(|_, _| {
        json!({"mcpServers": {
            "odd": {"command": server, "sandbox": "off"},
            "ok": {"command": server, "includeTools": ["echo"]},
        }})
    });
    let c = d.client().await;
    let list = connected(&c, &["ok"]).await;
    assert!(list.servers.iter().all(|s| s.name != "odd"), "{list:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_discovery_command_runs_sandboxed() {
    let (d, outside, _tmp) = daemon(|home, outside| {
        let discover = script(
            home,
            "discover.sh",
            &format!(
                "touch '{}/discovered' 2>/dev/null\necho '[{{\"name\": \"noop\", \"description\": \"nothing\"}}]'",
                outside.display()
            ),
        );
        json!({
            "sandbox": {"mode": "workspace-write"},
            "tools": {"discoveryCommand": discover, "callCommand": "true"},
        })
    });
    let c = d.client().await;
    let list = wait_list(&c, 30, |l| l.command.is_some()).await;
    assert_eq!(list.command.unwrap().tools, vec!["noop"]);
    assert!(
        !outside.join("discovered").exists(),
        "the discovery command wrote outside the sandbox"
    );
}
