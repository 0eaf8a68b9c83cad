//! `gemctl mcp serve` and the session's questions: a question the served
//! call asks (here server-everything's elicitation, through the daemon) is
//! forwarded to the MCP client as `elicitation/create` and its answer goes
//! back to the session; a client that advertised no elicitation has it
//! declined. The client is the Python SDK's (`tests/peers/py_client.py`).

mod peers;

use std::process::Command;

use geminid_tests::*;
use peers::*;
use serde_json::json;

const ELICIT: &str = "trigger-elicitation-request";

/// A daemon whose settings run server-everything.
fn everything_daemon() -> TestDaemon {
    let p = peers();
    let mut d = TestDaemon::prepared(&[]);
    let dir = d.home().join(".gemini");
    std::fs::create_dir_all(&dir).expect("gemini dir");
    std::fs::write(
        dir.join("settings.json"),
        json!({"mcpServers": {"everything": {"command": everything(&p)}}}).to_string(),
    )
    .expect("settings");
    d.spawn();
    d
}

/// A daemon whose settings run the URL-mode elicitation server.
fn url_server_daemon() -> TestDaemon {
    let p = peers();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/py_url_server.py");
    let mut d = TestDaemon::prepared(&[]);
    let dir = d.home().join(".gemini");
    std::fs::create_dir_all(&dir).expect("gemini dir");
    std::fs::write(
        dir.join("settings.json"),
        json!({"mcpServers": {"web": {
            "command": p.join(".venv/bin/python").display().to_string(),
            "args": [script.display().to_string()],
        }}})
        .to_string(),
    )
    .expect("settings");
    d.spawn();
    d
}

/// Runs the repository's `py_client.py` (on the peers' Python SDK) against
/// an interactive `gemctl mcp serve` session in yolo mode; its output.
fn python_client(
    d: &TestDaemon,
    legacy: bool,
    elicit: Option<serde_json::Value>,
) -> (bool, String) {
    python_client_calls(d, ELICIT, legacy, elicit)
}

/// The same, calling `tool`.
fn python_client_calls(
    d: &TestDaemon,
    tool: &str,
    legacy: bool,
    elicit: Option<serde_json::Value>,
) -> (bool, String) {
    let p = peers();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/py_client.py");
    let mut cmd = Command::new(p.join(".venv/bin/python"));
    cmd.arg(script);
    if legacy {
        cmd.arg("--legacy");
    }
    if let Some(content) = elicit {
        cmd.args(["--elicit", &content.to_string()]);
    }
    let out = cmd
        .args([tool, "{}", "--"])
        .arg(gemctl_bin())
        .args(["--socket", &d.socket.display().to_string(), "mcp", "serve"])
        .args([
            "--cwd",
            &d.workspace.display().to_string(),
            "--mode",
            "yolo",
        ])
        .output()
        .expect("python client");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_of_the_served_call_is_the_clients_elicitation() {
    let d = everything_daemon();
    let c = d.client().await;
    connected(&c, &["everything"]).await;

    // A client on the `initialize` lifecycle can be sent requests.
    let (ok, text) = python_client(
        &d,
        true,
        Some(json!({"name": "Ada Lovelace", "check": true})),
    );
    assert!(ok, "{text}");
    let asked = text
        .lines()
        .find_map(|l| l.strip_prefix("elicitation: "))
        .unwrap_or_else(|| panic!("the client was asked: {text}"));
    let asked: serde_json::Value = serde_json::from_str(asked).expect("JSON");
    assert!(
        asked["message"]
            .as_str()
            .unwrap_or_default()
            .contains("Please provide inputs"),
        "{asked}"
    );
    let schema = &asked["requestedSchema"];
    assert!(
        schema["required"]
            .as_array()
            .is_some_and(|r| r.contains(&json!("name"))),
        "{schema}"
    );
    assert_eq!(schema["properties"]["integer"]["default"], 42, "{schema}");
    // The answer reached the server (defaults filled in by the daemon).
    assert!(text.contains("- Name: Ada Lovelace"), "{text}");
    assert!(text.contains("- Favorite Integer: 42"), "{text}");

    // Without elicitation the question is declined, and the server says so.
    let (ok, text) = python_client(&d, true, None);
    assert!(ok, "{text}");
    assert!(!text.contains("elicitation: "), "{text}");
    assert!(text.contains("User declined"), "{text}");

    // On the 2026-07-28 lifecycle (`server/discover`, no requests from the
    // server outside a multi-round-trip result, which `mcp serve` does not
    // send yet) the question is declined, never left waiting.
    let (ok, text) = python_client(&d, false, Some(json!({"name": "Ada"})));
    assert!(ok, "{text}");
    assert!(text.contains("protocol: 2026-07-28"), "{text}");
    assert!(!text.contains("elicitation: "), "{text}");
    assert!(text.contains("User declined"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_question_of_the_served_call_is_the_clients_url_elicitation() {
    let d = url_server_daemon();
    let c = d.client().await;
    connected(&c, &["web"]).await;
    let (ok, text) = python_client_calls(&d, "web__login", true, Some(json!({})));
    assert!(ok, "{text}");
    let asked = text
        .lines()
        .find_map(|l| l.strip_prefix("elicitation: "))
        .unwrap_or_else(|| panic!("the client was asked: {text}"));
    let asked: serde_json::Value = serde_json::from_str(asked).expect("JSON");
    assert_eq!(asked["mode"], "url", "{asked}");
    assert_eq!(asked["url"], "https://auth.example.test/login?state=abc");
    assert_eq!(asked["message"], "Sign in to Example to continue");
    assert!(text.contains("action=accept"), "{text}");
}
