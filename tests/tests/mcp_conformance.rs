//! The MCP conformance suite's core client scenarios that need no OAuth,
//! with `gemctl mcp probe` as the client under test: the daemon's MCP
//! client, reached through `mcp.probe`.

mod peers;

use std::process::Command;

use geminid_tests::TestDaemon;

fn scenario(name: &str) {
    let p = peers::peers();
    let daemon = TestDaemon::start();
    let out_dir = tempfile::tempdir().expect("tempdir");
    let command = format!("{} mcp probe", geminid_tests::gemctl_bin().display());
    // `npx` inside the peers folder runs the suite on its Node 22.
    let out = Command::new("npx")
        .args([
            "conformance",
            "client",
            "--command",
            &command,
            "--scenario",
            name,
            "-o",
        ])
        .arg(out_dir.path())
        .current_dir(&p)
        .env("GEMINID_SOCKET", &daemon.socket)
        .output()
        .expect("npx conformance");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("OVERALL: PASSED"),
        "{name} ({}): {text}",
        out.status
    );
}

#[test]
fn initialize() {
    scenario("initialize");
}

#[test]
fn tools_call() {
    scenario("tools_call");
}

#[test]
fn elicitation_defaults() {
    scenario("elicitation-sep1034-client-defaults");
}

#[test]
fn sse_retry() {
    scenario("sse-retry");
}
