//! Shared by the MCP, ACP and discovery tests: where the real test peers
//! live (`GEMINID_TEST_PEERS`, else `target/test-peers`, installed by
//! `.ci/install-deps` from `tests/peers/`), settings files, and polling
//! helpers.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use geminid_protocol::mcp::{McpList, McpServerInfo};
use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::ToolCallSnapshot;
use geminid_tests::*;
use serde_json::Value;

/// What an installed copy of `tests/peers/` holds: the npm packages, the
/// Python SDK's venv and our scripts.
const INSTALLED: &[&str] = &[
    "node_modules/.bin/mcp-server-everything",
    "node_modules/.bin/mcp-server-filesystem",
    "node_modules/.bin/node",
    "node_modules/.bin/conformance",
    "node_modules/.bin/acpx",
    "node_modules/.bin/supergateway",
    ".venv/bin/python",
    "py_server.py",
    "py_client.py",
    "acp-client.mjs",
];

/// The installed peers. A test that needs them fails when they are
/// missing (anywhere, not only under CI), saying how to install them.
pub fn peers() -> PathBuf {
    let dir = std::env::var_os("GEMINID_TEST_PEERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-peers"));
    let missing: Vec<&str> = INSTALLED
        .iter()
        .copied()
        .filter(|path| !dir.join(path).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "the MCP/ACP test peers are not installed in {}: {} missing. \
         Install them with `bash .ci/install-deps` (from tests/peers/ into \
         target/test-peers), or set GEMINID_TEST_PEERS to an installed copy",
        dir.display(),
        missing.join(", ")
    );
    dir
}

pub fn everything(peers: &std::path::Path) -> String {
    peers
        .join("node_modules/.bin/mcp-server-everything")
        .display()
        .to_string()
}

/// A daemon whose `~/.gemini/settings.json` is `settings`.
pub fn daemon_with_settings(settings: &Value) -> TestDaemon {
    let mut d = TestDaemon::start();
    // A clean stop: a kill -9 this early can catch sled writing its
    // `conf` file, which the next start cannot read (a known sled limit).
    d.terminate();
    let dir = d.home().join(".gemini");
    std::fs::create_dir_all(&dir).expect("gemini dir");
    std::fs::write(dir.join("settings.json"), settings.to_string()).expect("settings");
    d.spawn();
    d
}

pub async fn session(c: &Client, d: &TestDaemon, mode: ApprovalMode) -> String {
    c.create_session(
        d.workspace.display().to_string(),
        Some(mode),
        None,
        Some(false),
        None,
        None,
        None,
    )
    .await
    .expect("session")
    .session_id
}

/// Polls `mcp.list` until `ready` holds (or panics after `secs`).
pub async fn wait_list(c: &Client, secs: u64, ready: impl Fn(&McpList) -> bool) -> McpList {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let list = c.list_mcp().await.expect("mcp.list");
        if ready(&list) {
            return list;
        }
        assert!(
            Instant::now() < deadline,
            "mcp.list never got ready: {list:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub fn server<'a>(list: &'a McpList, name: &str) -> &'a McpServerInfo {
    list.servers
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no server {name}: {list:#?}"))
}

/// Waits until every named server is connected.
pub async fn connected(c: &Client, names: &[&str]) -> McpList {
    wait_list(c, 60, |l| {
        names.iter().all(|n| {
            l.servers
                .iter()
                .any(|s| s.name == *n && s.status == "connected")
        })
    })
    .await
}

pub async fn run(c: &Client, session: &str, tool: &str, args: Value) -> ToolCallSnapshot {
    c.call_tool(session.into(), tool.into(), Some(args), Some(true))
        .await
        .expect("tool.call")
        .outcome
        .expect("outcome")
}

/// The snapshot's result as JSON (for content checks).
pub fn result_json(s: &ToolCallSnapshot) -> Value {
    serde_json::to_value(
        s.result
            .as_ref()
            .unwrap_or_else(|| panic!("no result: {s:#?}")),
    )
    .expect("json")
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port")
}

/// A background server-everything over HTTP, killed on drop.
pub struct HttpPeer {
    child: Child,
    pub port: u16,
}

impl HttpPeer {
    pub fn start(peers: &std::path::Path, mode: &str) -> HttpPeer {
        Self::start_on(peers, mode, free_port())
    }

    /// Like [`HttpPeer::start`], on a given port (a server restarted
    /// where it was).
    pub fn start_on(peers: &std::path::Path, mode: &str, port: u16) -> HttpPeer {
        let child = Command::new(everything(peers))
            .arg(mode)
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn server-everything");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "server-everything {mode} never listened"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        HttpPeer { child, port }
    }
}

impl Drop for HttpPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether a process exists.
pub fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}
