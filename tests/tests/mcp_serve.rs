//! `gemctl mcp serve`: the daemon's tools as an MCP server on stdio,
//! spoken to raw, then by the MCP inspector CLI and the Python SDK (the
//! conformance suite's server scenarios are in mcp_serve_conformance.rs).

mod peers;
mod stdio;

use std::process::Command;
use std::time::{Duration, Instant};

use geminid_protocol::tool::{CallState, ConfirmationOutcome};
use geminid_tests::*;
use serde_json::{Value, json};
use stdio::{StdioPeer, is_response};

async fn initialize(server: &mut StdioPeer) -> Value {
    let (r, _) = server
        .call(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "mcp-serve-test", "version": "0"}}),
        )
        .await;
    server.notify("notifications/initialized", json!({})).await;
    r
}

async fn call(server: &mut StdioPeer, name: &str, args: Value) -> Value {
    let (r, _) = server
        .call("tools/call", json!({"name": name, "arguments": args}))
        .await;
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_listed_and_called_through_the_session() {
    let d = TestDaemon::start();
    std::fs::write(d.workspace.join("notes.txt"), "alpha beta\n").unwrap();
    let c = d.client().await;
    let session = new_session(&c, &d.workspace).await;
    let mut server = StdioPeer::spawn(d.gemctl(&["mcp", "serve", "--session", &session]));

    // Newer SDK clients probe before initializing: an unknown request gets
    // an error, not silence, and the connection stays usable.
    let (probe, _) = server.call("frobnicate", json!({})).await;
    assert!(probe.get("error").is_some(), "{probe}");

    let init = initialize(&mut server).await;
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "geminid");

    let (list, _) = server.call("tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().expect("tools");
    let read = tools
        .iter()
        .find(|t| t["name"] == "read_file")
        .expect("read_file listed");
    assert_eq!(read["inputSchema"]["type"], "object");
    assert!(
        read["inputSchema"]["properties"]["absolute_path"].is_object(),
        "{read}"
    );
    assert_eq!(read["annotations"]["readOnlyHint"], true);

    let notes = d.workspace.join("notes.txt").display().to_string();
    let r = call(&mut server, "read_file", json!({"absolute_path": notes})).await;
    assert_eq!(r["result"]["content"][0]["type"], "text", "{r}");
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("alpha beta")
    );
    assert_ne!(r["result"]["isError"], true);

    // A call that asks waits for a person in an attached terminal.
    let mut events = c.subscribe_session(session.clone(), None).await.unwrap();
    let target = d.workspace.join("out.txt").display().to_string();
    let id = server
        .request(
            "tools/call",
            json!({"name": "write_file",
                  "arguments": {"file_path": target, "content": "x"}}),
        )
        .await;
    let waiting = collect_until(&mut events, |e| {
        matches!(&e.payload,
        geminid_protocol::EventPayload::ToolCall(c) if c.state == CallState::AwaitingApproval)
    })
    .await;
    let geminid_protocol::EventPayload::ToolCall(pending) = &waiting.last().unwrap().payload else {
        unreachable!()
    };
    c.confirm_tool(
        session.clone(),
        pending.call_id.clone(),
        ConfirmationOutcome::ProceedOnce,
        None,
    )
    .await
    .unwrap();
    let r = server.until(|m| is_response(m, id)).await.pop().unwrap();
    assert_ne!(r["result"]["isError"], true, "{r}");
    assert_eq!(
        std::fs::read_to_string(d.workspace.join("out.txt")).unwrap(),
        "x"
    );

    // Failures are results with isError; unknown tools too.
    let outside = call(
        &mut server,
        "read_file",
        json!({"absolute_path": "/etc/passwd"}),
    )
    .await;
    assert_eq!(outside["result"]["isError"], true, "{outside}");
    let unknown = call(&mut server, "no_such_tool", json!({})).await;
    assert!(
        unknown["result"]["isError"] == true || unknown.get("error").is_some(),
        "{unknown}"
    );
    assert_eq!(server.close().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_interactive_session_denies_what_would_ask() {
    let d = TestDaemon::start();
    let ws = d.workspace.display().to_string();
    let mut server =
        StdioPeer::spawn(d.gemctl(&["mcp", "serve", "--cwd", &ws, "--non-interactive"]));
    initialize(&mut server).await;
    let target = d.workspace.join("out.txt").display().to_string();
    let r = call(
        &mut server,
        "write_file",
        json!({"file_path": target, "content": "x"}),
    )
    .await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(!d.workspace.join("out.txt").exists());

    // In yolo mode the same call runs.
    let mut yolo = StdioPeer::spawn(d.gemctl(&[
        "mcp",
        "serve",
        "--cwd",
        &ws,
        "--mode",
        "yolo",
        "--non-interactive",
    ]));
    initialize(&mut yolo).await;
    let r = call(
        &mut yolo,
        "write_file",
        json!({"file_path": target, "content": "x"}),
    )
    .await;
    assert_ne!(r["result"]["isError"], true, "{r}");
    assert!(d.workspace.join("out.txt").exists());
}

/// The `gemctl mcp serve` command line for a yolo, non-interactive session.
fn serve_command(d: &TestDaemon) -> Vec<String> {
    [
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
    .into()
}

fn npx(peers: &std::path::Path, args: &[&str]) -> (bool, String) {
    let out = Command::new("npx")
        .args(args)
        .current_dir(peers)
        .output()
        .expect("npx");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn the_inspector_cli_lists_and_calls_tools() {
    let p = peers::peers();
    let d = TestDaemon::start();
    std::fs::write(d.workspace.join("notes.txt"), "alpha beta\n").unwrap();
    let server = serve_command(&d);
    let server: Vec<&str> = server.iter().map(String::as_str).collect();

    let mut args = vec!["mcp-inspector", "--cli", "--method", "tools/list", "--"];
    args.extend(&server);
    let (ok, text) = npx(&p, &args);
    assert!(ok && text.contains("\"read_file\""), "{text}");

    let notes = format!("absolute_path={}", d.workspace.join("notes.txt").display());
    let mut args = vec![
        "mcp-inspector",
        "--cli",
        "--method",
        "tools/call",
        "--tool-name",
        "read_file",
        "--tool-arg",
        &notes,
        "--",
    ];
    args.extend(&server);
    let (ok, text) = npx(&p, &args);
    assert!(ok && text.contains("alpha beta"), "{text}");
}

#[test]
fn the_python_sdk_client_probes_then_calls() {
    let p = peers::peers();
    let d = TestDaemon::start();
    std::fs::write(d.workspace.join("notes.txt"), "alpha beta\n").unwrap();
    let args = json!({"absolute_path": d.workspace.join("notes.txt")}).to_string();
    // mcp 2.x first sends `server/discover`, then speaks whichever
    // lifecycle the answer allows.
    let out = Command::new(p.join(".venv/bin/python"))
        .arg(p.join("py_client.py"))
        .args(["read_file", &args, "--"])
        .args(serve_command(&d))
        .output()
        .expect("python client");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("alpha beta"),
        "{text}"
    );
}

/// Live processes whose command line contains `m`.
fn pgrep(m: &str) -> Vec<String> {
    let out = Command::new("pgrep")
        .args(["-a", "-f", m])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.contains("pgrep"))
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_tools_call_is_cancelled_in_the_daemon() {
    let d = TestDaemon::start();
    let ws = d.workspace.display().to_string();
    let mut server = StdioPeer::spawn(d.gemctl(&["mcp", "serve", "--cwd", &ws, "--mode", "yolo"]));
    initialize(&mut server).await;
    let m = format!("gmdserve{}xcancel", std::process::id());
    let id = server
        .request(
            "tools/call",
            json!({"name": "run_shell_command", "arguments": {"command": format!("exec -a {m} sleep 40")}}),
        )
        .await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while pgrep(&m).is_empty() {
        assert!(Instant::now() < deadline, "the command never ran");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let cancelled = Instant::now();
    server
        .notify(
            "notifications/cancelled",
            json!({"requestId": id, "reason": "the user pressed stop"}),
        )
        .await;
    while !pgrep(&m).is_empty() {
        assert!(
            cancelled.elapsed() < Duration::from_secs(20),
            "the command (a 40 s sleep) outlived the cancel"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The daemon recorded a cancelled call.
    let c = d.client().await;
    let sessions = c.list_sessions().await.unwrap();
    assert_eq!(sessions.len(), 1);
    let mut events = c
        .subscribe_session(sessions[0].session_id.clone(), Some(0))
        .await
        .unwrap();
    collect_until(&mut events, |e| {
        matches!(&e.payload, geminid_protocol::EventPayload::ToolCall(call)
            if call.state == CallState::Cancelled)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_reuses_its_session_and_survives_a_daemon_restart() {
    let mut d = TestDaemon::start();
    std::fs::write(d.workspace.join("notes.txt"), "alpha\n").unwrap();
    let ws = d.workspace.display().to_string();
    let notes = d.workspace.join("notes.txt").display().to_string();
    let mut first = StdioPeer::spawn(d.gemctl(&["mcp", "serve", "--cwd", &ws]));
    initialize(&mut first).await;
    assert_eq!(first.close().await, Some(0));
    let mut server = StdioPeer::spawn(d.gemctl(&["mcp", "serve", "--cwd", &ws]));
    initialize(&mut server).await;
    let c = d.client().await;
    assert_eq!(
        c.list_sessions().await.unwrap().len(),
        1,
        "the session is reused"
    );
    drop(c);
    let r = call(&mut server, "read_file", json!({"absolute_path": notes})).await;
    assert_ne!(r["result"]["isError"], true, "{r}");

    d.terminate();
    d.spawn();
    let r = call(&mut server, "read_file", json!({"absolute_path": notes})).await;
    assert_ne!(r["result"]["isError"], true, "after the restart: {r}");
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("alpha")
    );
    let c = d.client().await;
    assert_eq!(c.list_sessions().await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_daemon_to_reach_every_request_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("none/geminid.sock");
    // A bare environment, as MCP clients and editors start their servers,
    // and no geminid that could be started.
    let bare = |args: &[&str]| {
        let mut cmd = std::process::Command::new(gemctl_bin());
        cmd.env_clear()
            .env("GEMINID_BIN", dir.path().join("no-geminid"))
            .arg("--socket")
            .arg(&socket)
            .args(args);
        cmd
    };
    let mut server = StdioPeer::spawn(bare(&["mcp", "serve", "--cwd", "/tmp"]));
    initialize(&mut server).await;
    let (list, _) = server.call("tools/list", json!({})).await;
    let message = list["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("cannot start"), "{list}");

    let mut acp = StdioPeer::spawn(bare(&["acp"]));
    let (init, _) = acp
        .call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    let message = init["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("cannot reach geminid"), "{init}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_reports_progress_and_logs_at_the_level_set() {
    let d = TestDaemon::start();
    let ws = d.workspace.display().to_string();
    let mut server = StdioPeer::spawn(d.gemctl(&["mcp", "serve", "--cwd", &ws, "--mode", "yolo"]));
    let init = initialize(&mut server).await;
    assert!(
        init["result"]["capabilities"]["logging"].is_object(),
        "{init}"
    );
    let command = "for i in 1 2 3; do echo line$i; sleep 0.3; done";

    // At the default level (warning) a call that goes well logs nothing,
    // and without a progressToken it reports no progress.
    let (r, before) = server
        .call(
            "tools/call",
            json!({"name": "run_shell_command", "arguments": {"command": command}}),
        )
        .await;
    assert_ne!(r["result"]["isError"], true, "{r}");
    assert!(before.is_empty(), "{before:?}");

    let (set, _) = server
        .call("logging/setLevel", json!({"level": "info"}))
        .await;
    assert_eq!(set["result"], json!({}), "{set}");
    let (r, before) = server
        .call(
            "tools/call",
            json!({"name": "run_shell_command", "arguments": {"command": command},
                   "_meta": {"progressToken": "tok-7"}}),
        )
        .await;
    assert_ne!(r["result"]["isError"], true, "{r}");
    let progress: Vec<&Value> = before
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert!(progress.len() >= 3, "{before:?}");
    let values: Vec<f64> = progress
        .iter()
        .map(|m| {
            assert_eq!(m["params"]["progressToken"], "tok-7");
            m["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
    let said: String = progress
        .iter()
        .filter_map(|m| m["params"]["message"].as_str())
        .collect();
    for line in ["line1", "line2", "line3"] {
        assert!(said.contains(line), "{said}");
    }
    let logs: Vec<&Value> = before
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .collect();
    let states: Vec<&str> = logs
        .iter()
        .map(|m| {
            assert_eq!(m["params"]["level"], "info");
            m["params"]["data"]["state"].as_str().unwrap()
        })
        .collect();
    assert_eq!(states, ["executing", "success"], "{logs:?}");

    // A failure is an error-level log at any level up to error.
    server
        .call("logging/setLevel", json!({"level": "error"}))
        .await;
    let (r, before) = server
        .call(
            "tools/call",
            json!({"name": "read_file", "arguments": {"absolute_path": "/etc/passwd"}}),
        )
        .await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(before[0]["params"]["level"], "error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_call_says_where_to_approve_it() {
    let d = TestDaemon::start();
    let ws = d.workspace.display().to_string();
    let mut server = StdioPeer::spawn(d.gemctl(&["mcp", "serve", "--cwd", &ws]));
    initialize(&mut server).await;
    let target = d.workspace.join("out.txt").display().to_string();
    server
        .request(
            "tools/call",
            json!({"name": "write_file", "arguments": {"file_path": target, "content": "x"}}),
        )
        .await;
    let seen = server
        .until(|m| m["method"] == "notifications/message")
        .await;
    let log = &seen.last().unwrap()["params"];
    assert_eq!(log["level"], "warning");
    let session = log["data"]["session"].as_str().unwrap();
    assert!(
        log["data"]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("gemctl attach {session}")),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_pages_cover_every_tool_once() {
    let d = TestDaemon::start();
    let ws = d.workspace.display().to_string();
    let mut whole = StdioPeer::spawn(d.gemctl(&["mcp", "serve", "--cwd", &ws]));
    initialize(&mut whole).await;
    let (all, _) = whole.call("tools/list", json!({})).await;
    assert!(all["result"].get("nextCursor").is_none(), "{all}");
    let mut expected: Vec<String> = all["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    expected.sort();
    assert!(expected.len() > 6, "{expected:?}");

    let mut paged = StdioPeer::spawn(d.gemctl(&["mcp", "serve", "--cwd", &ws, "--page-size", "3"]));
    initialize(&mut paged).await;
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let (page, _) = paged.call("tools/list", params).await;
        let tools = page["result"]["tools"].as_array().expect("tools");
        assert!(tools.len() <= 3, "{page}");
        seen.extend(tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        match page["result"]["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, expected);
    let (bad, _) = paged.call("tools/list", json!({"cursor": "7"})).await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_and_history_are_resources_and_history_updates_are_sent() {
    use geminid_tests::fake_model::{FakeModel, gemini};
    let fake = FakeModel::scripted(vec![gemini::answer(&["Hello from the model"])]).await;
    let mut d = TestDaemon::start_with_env(&[
        ("GEMINI_API_KEY", "test-key"),
        ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
        ("GEMINI_MODEL", "gemini-2.5-flash"),
    ]);
    std::fs::write(d.workspace.join("GEMINI.md"), "Always answer in haiku.\n").unwrap();
    let c = d.client().await;
    let session = new_session(&c, &d.workspace).await;
    let mut server = StdioPeer::spawn(d.gemctl(&["mcp", "serve", "--session", &session]));
    let init = initialize(&mut server).await;
    assert_eq!(
        init["result"]["capabilities"]["resources"]["subscribe"], true,
        "{init}"
    );

    let (list, _) = server.call("resources/list", json!({})).await;
    let history = format!("geminid://session/{session}/history");
    let uris: Vec<&str> = list["result"]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(uris, ["geminid://memory", history.as_str()], "{list}");

    let (memory, _) = server
        .call("resources/read", json!({"uri": "geminid://memory"}))
        .await;
    let text = memory["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(text.contains("Always answer in haiku."), "{memory}");
    assert_eq!(memory["result"]["contents"][0]["mimeType"], "text/markdown");

    // Another session's history, or anything else, is not offered.
    for uri in ["geminid://session/other/history", "file:///etc/passwd"] {
        let (r, _) = server.call("resources/read", json!({"uri": uri})).await;
        assert_eq!(r["error"]["code"], -32002, "{r}");
        let (r, _) = server
            .call("resources/subscribe", json!({"uri": uri}))
            .await;
        assert_eq!(r["error"]["code"], -32002, "{r}");
    }

    let (sub, _) = server
        .call("resources/subscribe", json!({"uri": history}))
        .await;
    assert_eq!(sub["result"], json!({}), "{sub}");
    c.prompt(session.clone(), "say hello".into()).await.unwrap();
    let seen = server
        .until(|m| m["method"] == "notifications/resources/updated")
        .await;
    assert_eq!(seen.last().unwrap()["params"]["uri"], history.as_str());

    // Once the turn has finished, the history holds both sides.
    let mut events = c.subscribe_session(session.clone(), Some(0)).await.unwrap();
    collect_until(&mut events, |e| {
        matches!(
            e.payload,
            geminid_protocol::EventPayload::TurnFinished { .. }
        )
    })
    .await;
    let (read, _) = server.call("resources/read", json!({"uri": history})).await;
    let text = read["result"]["contents"][0]["text"].as_str().unwrap();
    let body: Value = serde_json::from_str(text).unwrap();
    let all = body["contents"].to_string();
    assert!(
        all.contains("say hello") && all.contains("Hello from the model"),
        "{all}"
    );

    // After a daemon restart the subscription follows the session again,
    // and says the history may have changed meanwhile.
    drop(events);
    drop(c);
    d.terminate();
    d.spawn();
    let seen = server
        .until(|m| m["method"] == "notifications/resources/updated")
        .await;
    assert_eq!(seen.last().unwrap()["params"]["uri"], history.as_str());

    let (unsub, _) = server
        .call("resources/unsubscribe", json!({"uri": history}))
        .await;
    assert_eq!(unsub["result"], json!({}), "{unsub}");
    assert_eq!(server.close().await, Some(0));
}

/// An MCP tool behind the daemon keeps its `outputSchema` and its
/// `structuredContent` when served on: a client validating one against
/// the other gets both, and the text is not glued to the JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_results_and_output_schemas_are_served_as_such() {
    let p = peers::peers();
    let d = peers::daemon_with_settings(
        &json!({"mcpServers": {"everything": {"command": peers::everything(&p)}}}),
    );
    let c = d.client().await;
    peers::connected(&c, &["everything"]).await;
    let mut server = StdioPeer::spawn(d.gemctl(&[
        "mcp",
        "serve",
        "--cwd",
        &d.workspace.display().to_string(),
        "--mode",
        "yolo",
        "--non-interactive",
    ]));
    initialize(&mut server).await;

    let mut tools = Vec::new();
    let mut cursor: Option<Value> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let (page, _) = server.call("tools/list", params).await;
        tools.extend(page["result"]["tools"].as_array().expect("tools").clone());
        match page["result"].get("nextCursor") {
            Some(next) if !next.is_null() => cursor = Some(next.clone()),
            _ => break,
        }
    }
    let listed = tools
        .iter()
        .find(|t| t["name"] == "get-structured-content")
        .expect("get-structured-content listed");
    assert_eq!(
        listed["outputSchema"]["type"], "object",
        "the server's output schema is served: {listed}"
    );
    assert!(
        listed["outputSchema"]["properties"]["temperature"].is_object(),
        "{listed}"
    );
    // A built-in tool has no output schema to offer.
    let read = tools.iter().find(|t| t["name"] == "read_file").unwrap();
    assert!(read.get("outputSchema").is_none(), "{read}");

    let r = call(
        &mut server,
        "get-structured-content",
        json!({"location": "New York"}),
    )
    .await;
    let result = &r["result"];
    assert_ne!(result["isError"], true, "{r}");
    assert!(
        result["structuredContent"]["temperature"].is_number(),
        "structured content kept as JSON: {r}"
    );
    let texts: Vec<&str> = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect();
    assert!(!texts.is_empty(), "{r}");
    assert_eq!(server.close().await, Some(0));
}

/// A new MCP server in the daemon's settings adds tools to the session:
/// the connected client is told (`notifications/tools/list_changed`, the
/// capability advertised), and its next `tools/list` has them.
#[tokio::test(flavor = "multi_thread")]
async fn a_new_daemon_server_announces_a_changed_tool_list() {
    let p = peers::peers();
    let d = TestDaemon::start();
    let ws = d.workspace.display().to_string();
    let mut server = StdioPeer::spawn(d.gemctl(&["mcp", "serve", "--cwd", &ws, "--mode", "yolo"]));
    let init = initialize(&mut server).await;
    assert_eq!(
        init["result"]["capabilities"]["tools"]["listChanged"], true,
        "{init}"
    );
    let names = |r: &Value| -> Vec<String> {
        r["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let (before, _) = server.call("tools/list", json!({})).await;
    assert!(!names(&before).iter().any(|n| n == "echo"), "{before}");

    let dir = d.home().join(".gemini");
    std::fs::create_dir_all(&dir).expect("gemini dir");
    std::fs::write(
        dir.join("settings.json"),
        json!({"mcpServers": {"everything": {"command": peers::everything(&p)}}}).to_string(),
    )
    .expect("settings");
    server
        .until(|m| m["method"] == "notifications/tools/list_changed")
        .await;
    let (after, _) = server.call("tools/list", json!({})).await;
    assert!(names(&after).iter().any(|n| n == "echo"), "{after}");
}

/// `tool.rediscover` runs the discovery command again: when the tools it
/// declares changed, the connected client is told
/// (`notifications/tools/list_changed`) and its next `tools/list` has
/// them.
#[tokio::test(flavor = "multi_thread")]
async fn a_rediscovery_announces_a_changed_tool_list() {
    let mut d = TestDaemon::start();
    let decls = d.home().join("declarations.json");
    let declare = |name: &str| {
        std::fs::write(
            &decls,
            json!([{"name": name, "description": "a discovered tool"}]).to_string(),
        )
        .expect("declarations")
    };
    declare("first_tool");
    d.terminate();
    let dir = d.home().join(".gemini");
    std::fs::create_dir_all(&dir).expect("gemini dir");
    let discover = format!("cat '{}'", decls.display());
    std::fs::write(
        dir.join("settings.json"),
        json!({"tools": {"discoveryCommand": discover, "callCommand": "true"}}).to_string(),
    )
    .expect("settings");
    d.spawn();
    let c = d.client().await;
    // The first run is over before the client connects.
    peers::wait_list(&c, 30, |l| {
        l.command
            .as_ref()
            .is_some_and(|s| s.tools == ["first_tool"])
    })
    .await;

    let ws = d.workspace.display().to_string();
    let mut server = StdioPeer::spawn(d.gemctl(&["mcp", "serve", "--cwd", &ws, "--mode", "yolo"]));
    initialize(&mut server).await;
    let names = |r: &Value| -> Vec<String> {
        r["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let (before, _) = server.call("tools/list", json!({})).await;
    assert!(names(&before).iter().any(|n| n == "first_tool"), "{before}");

    declare("second_tool");
    let state = c.rediscover_tools(None).await.expect("tool.rediscover");
    assert_eq!(state.tools, ["second_tool"], "{state:#?}");
    server
        .until(|m| m["method"] == "notifications/tools/list_changed")
        .await;
    let (after, _) = server.call("tools/list", json!({})).await;
    let after = names(&after);
    assert!(after.iter().any(|n| n == "second_tool"), "{after:?}");
    assert!(!after.iter().any(|n| n == "first_tool"), "{after:?}");
}
