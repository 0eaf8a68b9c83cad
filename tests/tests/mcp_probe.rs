//! `gemctl mcp probe` and `mcp.probe`: one connection to an MCP server
//! that is not configured, made by the daemon with the client code its
//! configured servers use. The server here is a small stdio one in Python
//! (the conformance suite probes HTTP servers: `mcp_conformance.rs`).

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use geminid_protocol::mcp::McpProbeContent;
use geminid_tests::*;
use serde_json::{Value, json};

/// A stdio MCP server: `hello` answers with its working directory and
/// `$PROBE_MARK`, `ask` asks the client to elicit a name (default `Ada`)
/// and answers with what came back, `count` reports sixty steps of
/// progress in one burst, `slow` never answers. Its arguments are ignored (a marker to
/// find the process by).
const SERVER: &str = r#"
import json, os, sys

def send(msg):
    print(json.dumps(msg), flush=True)

def text(s):
    return {"content": [{"type": "text", "text": s}]}

tools = [{"name": n, "inputSchema": {"type": "object"}} for n in ("hello", "ask", "count", "slow")]
lines = iter(sys.stdin)
for line in lines:
    msg = json.loads(line)
    if "id" not in msg or "method" not in msg:
        continue
    method, params = msg["method"], msg.get("params") or {}
    if method == "initialize":
        result = {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "probe-peer", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": tools}
    elif method == "tools/call":
        name = params["name"]
        if name == "hello":
            result = text("cwd=%s mark=%s" % (os.getcwd(), os.environ.get("PROBE_MARK")))
        elif name == "ask":
            send({"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create", "params": {
                "mode": "form", "message": "your name?", "requestedSchema": {"type": "object",
                "properties": {"name": {"type": "string", "default": "Ada"}}}}})
            for answer in lines:
                answer = json.loads(answer)
                if answer.get("id") == "ask-1":
                    break
            result = text(json.dumps(answer.get("result") or answer.get("error"), sort_keys=True))
        elif name == "count":
            token = params.get("_meta", {}).get("progressToken")
            for step in range(1, 61):
                send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
                    "progressToken": token, "progress": step, "total": 60, "message": "step %d" % step}})
            result = text("counted")
        elif name == "slow":
            continue
        else:
            send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": "no tool " + name}})
            continue
    else:
        result = {}
    send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
"#;

fn write_server(dir: &Path) {
    std::fs::write(dir.join("probe_peer.py"), SERVER).expect("write the server");
}

fn run(mut cmd: Command) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.stdin(Stdio::null()).output().expect("run gemctl");
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

#[test]
fn probe_starts_the_daemon_when_none_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().canonicalize().expect("canonical");
    write_server(&base);
    let socket = base.join("run/geminid.sock");
    let gemctl = |args: &[&str]| {
        let mut cmd = Command::new(gemctl_bin());
        cmd.args(args)
            .current_dir(&base)
            .env("GEMINID_SOCKET", &socket)
            .env("GEMINID_BIN", geminid_bin())
            .env("GEMINID_DATA_DIR", base.join("data"))
            .env("GEMINID_LOG", "warn")
            .env("HOME", base.join("home"))
            .env("GEMINID_ADMIN_POLICY_DIR", base.join("no-admin-policies"))
            .env(
                "GEMINID_SYSTEM_SETTINGS",
                base.join("no-system-settings.json"),
            );
        cmd
    };
    // Whatever happens below, the daemon the probe starts is stopped.
    struct Stop<F: Fn()>(F);
    impl<F: Fn()> Drop for Stop<F> {
        fn drop(&mut self) {
            (self.0)()
        }
    }
    let _stop = Stop(|| {
        let _ = gemctl(&["daemon", "stop"]).output();
    });
    let (code, out, err) = run(gemctl(&["mcp", "probe", "python3", "probe_peer.py"]));
    let log = std::fs::read_to_string(base.join("run/geminid.sock.log")).unwrap_or_default();
    assert_eq!(code, 0, "{out}{err}\ndaemon log:\n{log}");
    assert_eq!(out, "server: probe-peer\ntools: hello, ask, count, slow\n");
    assert!(err.contains("started geminid (pid "), "{err}");

    // The second probe finds it running.
    let (code, out, err) = run(gemctl(&["--json", "mcp", "probe", "python3 probe_peer.py"]));
    assert_eq!(code, 0, "{out}{err}");
    assert!(!err.contains("started geminid"), "{err}");
    let report: Value = serde_json::from_str(out.trim()).expect("JSON");
    assert_eq!(report["server"]["serverInfo"]["name"], json!("probe-peer"));
    assert_eq!(report["tools"][0]["name"], json!("hello"));
    assert_eq!(report["result"], Value::Null);

    let (code, out, err) = run(gemctl(&["daemon", "stop"]));
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, _) = run(gemctl(&["daemon", "status"]));
    assert_eq!(code, 69, "the daemon the probe started stopped");
}

#[test]
fn a_command_runs_in_the_callers_directory_with_its_environment() {
    let d = TestDaemon::start();
    write_server(&d.workspace);
    let mark = format!("mark-{}", std::process::id());
    let mut cmd = d.gemctl(&[
        "mcp",
        "probe",
        "--call",
        "hello",
        "python3",
        "probe_peer.py",
    ]);
    // Neither is the daemon's: it runs in the test's directory, without
    // PROBE_MARK.
    cmd.current_dir(&d.workspace).env("PROBE_MARK", &mark);
    let (code, out, err) = run(cmd);
    assert_eq!(code, 0, "{out}{err}");
    let result = json!({"tool": "hello", "content": [
        {"type": "text", "text": format!(
            "<untrusted_context>\ncwd={} mark={mark}\n</untrusted_context>",
            d.workspace.display()
        )}
    ]});
    assert_eq!(
        out,
        format!("server: probe-peer\ntools: hello, ask, count, slow\n{result}\n")
    );
}

#[test]
fn progress_goes_to_stderr_and_bad_input_fails() {
    let d = TestDaemon::start();
    write_server(&d.workspace);
    let probe = |args: &[&str]| {
        let mut all = vec!["mcp", "probe"];
        all.extend_from_slice(args);
        let mut cmd = d.gemctl(&all);
        cmd.current_dir(&d.workspace);
        run(cmd)
    };
    let (code, out, err) = probe(&["--call", "count", "python3", "probe_peer.py"]);
    assert_eq!(code, 0, "{out}{err}");
    let result = json!({"tool": "count", "content": [{"type": "text", "text": "<untrusted_context>\ncounted\n</untrusted_context>"}]});
    assert!(out.ends_with(&format!("\n{result}\n")), "{out}");
    // rmcp hands each notification to a task of its own; a burst must
    // still come out in the order the server sent it.
    let steps: Vec<&str> = err.lines().filter(|l| l.contains("step")).collect();
    let sent: Vec<String> = (1..=60).map(|i| format!("[{i}/60] step {i}")).collect();
    assert_eq!(steps, sent, "{err}");

    let (code, _, err) = probe(&["--call", "hello", "--args", "[1]", "python3 probe_peer.py"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("the arguments are not a JSON object: [1]"),
        "{err}"
    );
    let (code, _, err) = probe(&["--header", "no-colon", "http://127.0.0.1:9/mcp"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = probe(&["/nonexistent/mcp-server"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("cannot start `/nonexistent/mcp-server`"),
        "{err}"
    );
    let (code, _, err) = probe(&["--call", "nope", "python3 probe_peer.py"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no tool nope"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn elicitation_is_declined_unless_the_probe_accepts_defaults() {
    let d = TestDaemon::start();
    write_server(&d.workspace);
    let c = d.client().await;
    let ask = |accept: Option<bool>| {
        let c = &c;
        let script = d.workspace.join("probe_peer.py").display().to_string();
        async move {
            let report = c
                .probe_mcp(
                    vec!["python3".into(), script],
                    Some("ask".into()),
                    None,
                    None,
                    None,
                    None,
                    accept,
                    None,
                )
                .await
                .expect("mcp.probe");
            let call = report.result.expect("a call result");
            match call.content.as_slice() {
                [McpProbeContent::Text { text }] => {
                    let inner = text
                        .strip_prefix("<untrusted_context>\n")
                        .and_then(|t| t.strip_suffix("\n</untrusted_context>"))
                        .expect("wrapped as untrusted");
                    serde_json::from_str::<Value>(inner).expect("the server's JSON")
                }
                other => panic!("{other:?}"),
            }
        }
    };
    let accepted = ask(Some(true)).await;
    assert_eq!(
        accepted,
        json!({"action": "accept", "content": {"name": "Ada"}})
    );
    for declined in [ask(Some(false)).await, ask(None).await] {
        assert_eq!(declined["action"], json!("decline"), "{declined}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_goes_away_ends_the_probe_and_its_server() {
    let d = TestDaemon::start();
    write_server(&d.workspace);
    let marker = format!("gmdprobe{}", std::process::id());
    let script = d.workspace.join("probe_peer.py").display().to_string();
    let c = d.client().await;
    let arg = marker.clone();
    let probe = tokio::spawn(async move {
        let _ = c
            .probe_mcp(
                vec!["python3".into(), script, arg],
                Some("slow".into()),
                None,
                None,
                None,
                None,
                None,
                None,
            )
            .await;
    });
    let running = |m: &str| {
        let out = Command::new("pgrep")
            .args(["-f", m])
            .output()
            .expect("pgrep (apt-get install procps)");
        !out.stdout.is_empty()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !running(&marker) {
        assert!(Instant::now() < deadline, "the probed server never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The client goes away mid-call (its connection closes with the task).
    probe.abort();
    let _ = probe.await;
    // Answers get a 5 s grace after the client's EOF; then the probe stops.
    let deadline = Instant::now() + Duration::from_secs(30);
    while running(&marker) {
        assert!(
            Instant::now() < deadline,
            "the probed server outlived its client by 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
