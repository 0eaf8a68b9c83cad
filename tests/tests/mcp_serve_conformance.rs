//! The MCP conformance suite's server scenarios against `gemctl mcp serve`
//! (through supergateway, which the suite needs for HTTP): every scenario
//! whose feature geminid offers, on one gateway, each run by the suite's
//! own client. The scenarios left out are listed below with why.

mod peers;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use geminid_tests::*;

/// The scenarios of features `mcp serve` offers.
const OFFERED: &[&str] = &[
    "server-initialize",
    "ping",
    "logging-set-level",
    "tools-list",
    // An unknown tool is a failing call: `isError` with the reason.
    "tools-call-error",
    "server-sse-multiple-streams",
    "resources-list",
];

// Left out, and why:
// * tools-call-simple-text, -image, -audio, -embedded-resource,
//   -mixed-content, -with-logging, -with-progress, server-sse-polling,
//   json-schema-2020-12: each calls or inspects a fixture tool of the
//   suite's own (`test_simple_text`, `test_tool_with_progress`,
//   `test_reconnection`, ...). geminid's tools are Gemini CLI's; progress
//   and log messages of real calls are tested in mcp_serve.rs.
// * tools-call-sampling, tools-call-elicitation, elicitation-sep1034-defaults,
//   elicitation-sep1330-enums: fixture tools that ask the client for a
//   model or a form; geminid's tools ask a person in `gemctl attach`.
// * completion-complete, prompts-*: geminid has no prompts to offer (and
//   so nothing to complete).
// * resources-read-*, resources-templates-read, resources-subscribe,
//   resources-unsubscribe: fixture resources (`test://static-text`,
//   `test://watched-resource`, ...). A URI that is not one of the session's
//   resources is refused with -32002 rather than subscribed to in vain;
//   reading and subscribing to geminid's own are tested in mcp_serve.rs.
// * dns-rebinding-protection: checks the HTTP transport's Host check,
//   which is supergateway's; `mcp serve` speaks stdio only (a TCP port
//   would let other local users in, which the daemon's socket refuses).

/// supergateway bridging `gemctl mcp serve` to streamable HTTP; SIGINT on drop.
struct Gateway(Child);

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.0.id() as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
        }
        let _ = self.0.wait();
    }
}

fn gateway(peers: &std::path::Path, d: &TestDaemon) -> (Gateway, String) {
    let serve = [
        gemctl_bin().display().to_string(),
        "--socket".into(),
        d.socket.display().to_string(),
        "mcp".into(),
        "serve".into(),
        "--cwd".into(),
        d.workspace.display().to_string(),
        "--mode".into(),
        "yolo".into(),
        "--non-interactive".into(),
    ]
    .join(" ");
    let port = peers::free_port();
    let child = Command::new(peers.join("node_modules/.bin/node"))
        .arg(peers.join("node_modules/.bin/supergateway"))
        .args([
            "--stdio",
            &serve,
            "--outputTransport",
            "streamableHttp",
            "--stateful",
            "--port",
            &port.to_string(),
            "--logLevel",
            "none",
        ])
        .current_dir(peers)
        .stdout(Stdio::null())
        .spawn()
        .expect("supergateway");
    let gateway = Gateway(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "supergateway never listened");
        std::thread::sleep(Duration::from_millis(100));
    }
    (gateway, format!("http://localhost:{port}/mcp"))
}

/// Runs one scenario; its passed/total checks and the suite's report.
fn scenario(peers: &std::path::Path, url: &str, name: &str) -> (bool, String) {
    let out = tempfile::tempdir().expect("tempdir");
    let run = Command::new("npx")
        .args([
            "conformance",
            "server",
            "--url",
            url,
            "--scenario",
            name,
            "-o",
        ])
        .arg(out.path())
        .current_dir(peers)
        .output()
        .expect("npx conformance");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let tally = text
        .lines()
        .find(|l| l.starts_with("Passed:"))
        .unwrap_or("no tally")
        .to_owned();
    let ok = run.status.success() && tally.contains(" 0 failed");
    (ok, if ok { tally } else { text })
}

#[test]
fn every_offered_server_scenario_passes() {
    let p = peers::peers();
    let d = TestDaemon::start();
    let (_gateway, url) = gateway(&p, &d);
    let mut failed = Vec::new();
    for name in OFFERED {
        let (ok, report) = scenario(&p, &url, name);
        eprintln!("{name}: {}", report.lines().next().unwrap_or_default());
        if !ok {
            failed.push(format!("{name}:\n{report}"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}
