//! A policy rule can give a sandboxed command the network
//! (`sandboxNetwork = true`, geminid's own field): only the commands every
//! part of which such a rule let run; every other command stays offline.

use std::io::Read;

use geminid_protocol::tool::{ContentPart, ToolCallSnapshot};
use geminid_tests::*;
use serde_json::json;

fn text_of(s: &ToolCallSnapshot) -> String {
    let result: String = s
        .result
        .iter()
        .flat_map(|r| &r.llm_content)
        .filter_map(|p| match p {
            ContentPart::Text { text } => Some(text.as_str()),
            ContentPart::InlineData { .. } => None,
        })
        .collect();
    format!("{result}{:?}", s.error)
}

async fn shell(c: &Client, session: &str, command: &str) -> String {
    let snap = call_and_wait(
        c,
        session,
        "run_shell_command",
        json!({ "command": command }),
    )
    .await
    .outcome
    .expect("final snapshot");
    text_of(&snap)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_with_sandbox_network_lets_its_commands_connect() {
    let tmp = tempfile::tempdir().unwrap();
    let tmpdir = tmp.path().canonicalize().unwrap();
    let mut d = TestDaemon::prepared(&[("TMPDIR", tmpdir.to_str().unwrap())]);
    let policies = d.home().join(".gemini/policies");
    std::fs::create_dir_all(&policies).unwrap();
    std::fs::write(
        policies.join("net.toml"),
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"python3\"\ndecision = \"allow\"\nsandboxNetwork = true\n",
    )
    .unwrap();
    d.spawn();
    let c = d.client().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let session = yolo_session(&c, &d.workspace).await;
    let connect = format!(
        "python3 -c \"import socket; s=socket.create_connection(('127.0.0.1', {port}), 3); s.sendall(b'hi'); print('CONN' + 'ECTED')\""
    );
    let text = shell(&c, &session, &connect).await;
    assert!(text.contains("CONNECTED"), "{text}");
    assert!(text.contains("network on"), "{text}");
    let (mut stream, _) = listener.accept().unwrap();
    let mut got = String::new();
    stream.read_to_string(&mut got).unwrap();
    assert_eq!(got, "hi");

    // A part no such rule let run keeps the whole command offline.
    listener.set_nonblocking(true).unwrap();
    let text = shell(&c, &session, &format!("true && {connect}")).await;
    assert!(!text.contains("CONNECTED"), "{text}");
    assert!(text.contains("network off"), "{text}");
    assert!(listener.accept().is_err(), "a connection arrived");
}
