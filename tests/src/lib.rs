//! The integration-test harness: a real `geminid` process on a temporary
//! socket, with a workspace directory, driven the way clients drive it.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use geminid_protocol::event::SessionEvent;
use jsonrpsee::core::client::Subscription;
use serde_json::{Value, json};

pub use gemctl::{Client, ConfirmPlain, GeminidApiClient, PromptText};

pub mod abuse;
pub mod fake_model;

/// The names of the write-ahead log's `wal.<n>` segments in a data
/// directory, sorted; none when it cannot be read.
pub fn wal_files(data_dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(data_dir)
        .map(|dir| {
            dir.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("wal."))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The daemon binary under test.
pub fn geminid_bin() -> PathBuf {
    sibling_bin("geminid-it")
}

/// The gemctl binary under test.
pub fn gemctl_bin() -> PathBuf {
    sibling_bin("gemctl-it")
}

/// Integration tests live in `target/<profile>/deps/`; the bins one level up.
fn sibling_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let mut dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    if dir.ends_with("deps") {
        dir.pop();
    }
    dir.join(name)
}

/// A running daemon with its own socket, data dir and workspace.
pub struct TestDaemon {
    pub dir: tempfile::TempDir,
    pub socket: PathBuf,
    pub data_dir: PathBuf,
    /// A directory sessions can use as their workspace (canonical).
    pub workspace: PathBuf,
    /// Extra environment for the daemon process.
    pub env: Vec<(String, String)>,
    /// Where the daemon's stderr goes (appended across restarts); `None`
    /// inherits the test's.
    pub stderr_log: Option<PathBuf>,
    /// The daemon's umask (through `sh -c 'umask ...; exec ...'`); `None`
    /// inherits the test's.
    pub umask: Option<u32>,
    child: Option<Child>,
}

impl TestDaemon {
    /// Starts a daemon in a fresh temporary directory.
    pub fn start() -> TestDaemon {
        Self::start_with_env(&[])
    }

    /// Starts a daemon with extra environment variables.
    pub fn start_with_env(env: &[(&str, &str)]) -> TestDaemon {
        let mut daemon = Self::unstarted(env);
        daemon.spawn();
        daemon
    }

    /// Starts a daemon running with `umask`.
    pub fn start_with_umask(umask: u32) -> TestDaemon {
        let mut daemon = Self::unstarted(&[]);
        daemon.umask = Some(umask);
        daemon.spawn();
        daemon
    }

    /// Starts a daemon whose stderr goes to [`TestDaemon::stderr_text`].
    pub fn start_capturing_stderr() -> TestDaemon {
        let mut daemon = Self::unstarted(&[]);
        daemon.stderr_log = Some(daemon.dir.path().join("daemon.stderr"));
        daemon.spawn();
        daemon
    }

    /// Everything the daemon wrote to stderr so far (with
    /// [`TestDaemon::start_capturing_stderr`]).
    pub fn stderr_text(&self) -> String {
        self.stderr_log
            .as_ref()
            .and_then(|p| std::fs::read(p).ok())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    /// Whether the daemon process is still running (not exited, not a zombie).
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// A daemon's directories (home, workspace) without the daemon: set up
    /// files first, then [`TestDaemon::spawn`].
    pub fn prepared(env: &[(&str, &str)]) -> TestDaemon {
        Self::unstarted(env)
    }

    fn unstarted(env: &[(&str, &str)]) -> TestDaemon {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().canonicalize().expect("canonical tempdir");
        let workspace = base.join("ws");
        std::fs::create_dir_all(&workspace).expect("workspace");
        let daemon = TestDaemon {
            socket: base.join("run/geminid.sock"),
            data_dir: base.join("data"),
            workspace,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            dir,
            stderr_log: None,
            umask: None,
            child: None,
        };
        std::fs::create_dir_all(daemon.home()).expect("home");
        daemon
    }

    /// (Re)starts the daemon process on the same socket and data dir.
    pub fn spawn(&mut self) {
        let stderr = match &self.stderr_log {
            Some(path) => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map(Stdio::from)
                .expect("daemon stderr log"),
            None => Stdio::inherit(),
        };
        let mut command = match self.umask {
            None => Command::new(geminid_bin()),
            Some(mask) => {
                let mut sh = Command::new("/bin/sh");
                sh.arg("-c")
                    .arg(format!("umask {mask:03o} && exec \"$0\" \"$@\""))
                    .arg(geminid_bin());
                sh
            }
        };
        let child = command
            .arg("--socket")
            .arg(&self.socket)
            .arg("--data-dir")
            .arg(&self.data_dir)
            .env("GEMINID_LOG", "warn")
            // Isolate from the machine's own Gemini setup (policies,
            // settings, GEMINI.md) and from any admin policy.
            .env("HOME", self.home())
            .env(
                "GEMINID_ADMIN_POLICY_DIR",
                self.home().join("no-admin-policies"),
            )
            .env(
                "GEMINID_SYSTEM_SETTINGS",
                self.home().join("no-system-settings.json"),
            )
            // Folder trust is on by default, as in Gemini CLI; tests of
            // workspace settings trust their temporary folders (the trust
            // tests set this to "" to see the trust file decide).
            .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
            .env_remove("GEMINI_API_KEY")
            .env_remove("GEMINI_MODEL")
            .env_remove("GOOGLE_GEMINI_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .env_remove("GOOGLE_API_KEY")
            .env_remove("GOOGLE_GENAI_USE_VERTEXAI")
            .env_remove("GOOGLE_CLOUD_PROJECT")
            .env_remove("GOOGLE_CLOUD_PROJECT_ID")
            .env_remove("GOOGLE_CLOUD_LOCATION")
            .env_remove("GOOGLE_APPLICATION_CREDENTIALS")
            .env_remove("GOOGLE_VERTEX_BASE_URL")
            .env_remove("CLOUDSDK_CONFIG")
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("spawn geminid");
        self.child = Some(child);
        self.wait_listening();
    }

    /// Like [`wait_for_socket`], but a daemon that exits instead (a store
    /// that does not open, say) fails at once, with its exit status.
    fn wait_listening(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if StdUnixStream::connect(&self.socket).is_ok() {
                return;
            }
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                panic!("geminid exited before listening: {status} (its stderr is above)");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!(
            "geminid did not listen on {} in time",
            self.socket.display()
        );
    }

    /// The daemon's HOME (so `~/.gemini` is test-local).
    pub fn home(&self) -> PathBuf {
        self.socket
            .parent()
            .and_then(Path::parent)
            .map(|base| base.join("home"))
            .unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or(0)
    }

    /// A connected, initialized client.
    pub async fn client(&self) -> Client {
        Client::connect(&self.socket).await.expect("connect")
    }

    /// kill -9, no chance to clean up.
    ///
    /// Returns once the killed daemon's socket refuses connections: right
    /// after a kill (seen under load, about 1 kill in 20 with shell calls
    /// running) the kernel can still accept connections on it for a moment
    /// and then reset them, which would fool the next `spawn`.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
            let deadline = Instant::now() + Duration::from_secs(10);
            while StdUnixStream::connect(&self.socket).is_ok() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }

    /// SIGTERM and wait; returns the exit code.
    pub fn terminate(&mut self) -> Option<i32> {
        let mut child = self.child.take()?;
        let pid = rustix::process::Pid::from_raw(child.id() as i32)?;
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let status = wait_timeout(&mut child, Duration::from_secs(20));
        status.and_then(|s| s.code())
    }

    /// Waits for the process to exit by itself (after `daemon.shutdown`).
    pub fn wait_exit(&mut self) -> Option<i32> {
        let mut child = self.child.take()?;
        wait_timeout(&mut child, Duration::from_secs(20)).and_then(|s| s.code())
    }

    /// `gemctl --socket <ours> ARGS...`
    pub fn gemctl(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(gemctl_bin());
        cmd.arg("--socket").arg(&self.socket).args(args);
        cmd
    }

    /// A raw NDJSON connection, not initialized.
    pub fn raw(&self) -> RawConn {
        RawConn::connect(&self.socket)
    }
}

impl Drop for TestDaemon {
    fn drop(&mut self) {
        self.kill9();
    }
}

fn wait_timeout(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) | Err(_) => {
                let _ = child.kill();
                return child.wait().ok();
            }
        }
    }
}

/// Waits until something accepts connections on `socket`.
pub fn wait_for_socket(socket: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if StdUnixStream::connect(socket).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("geminid did not listen on {} in time", socket.display());
}

/// A line-by-line JSON-RPC connection with no client library, for
/// protocol-level tests.
pub struct RawConn {
    reader: BufReader<StdUnixStream>,
    writer: StdUnixStream,
    next_id: u64,
}

impl RawConn {
    pub fn connect(socket: &Path) -> RawConn {
        let stream = StdUnixStream::connect(socket).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        RawConn {
            reader: BufReader::new(stream.try_clone().expect("clone")),
            writer: stream,
            next_id: 1,
        }
    }

    /// Sends `line` and its newline in one write, as a client would.
    pub fn send_line(&mut self, line: &str) {
        let mut framed = Vec::with_capacity(line.len() + 1);
        framed.extend_from_slice(line.as_bytes());
        framed.push(b'\n');
        self.writer.write_all(&framed).expect("write");
    }

    pub fn read_message(&mut self) -> Value {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("read");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad line {line:?}: {e}"))
    }

    /// Sends a request and returns its response, skipping notifications.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_line(&line.to_string());
        loop {
            let msg = self.read_message();
            if msg.get("id") == Some(&json!(id)) {
                return msg;
            }
        }
    }

    pub fn initialize(&mut self) {
        let r = self.request("daemon.initialize", json!({}));
        assert!(r.get("result").is_some(), "initialize failed: {r}");
    }
}

/// Prompts `session` and returns its events, replayed from the start,
/// up to the end of that turn.
pub async fn run_turn(c: &Client, session: &str, text: &str) -> Vec<SessionEvent> {
    use geminid_protocol::event::EventPayload;
    let mut sub = c
        .subscribe_session(session.to_owned(), None)
        .await
        .expect("subscribe");
    let turn = c
        .prompt(session.to_owned(), text.into())
        .await
        .expect("prompt")
        .turn_id;
    collect_until(
        &mut sub,
        |e| matches!(&e.payload, EventPayload::TurnFinished { turn_id, .. } if *turn_id == turn),
    )
    .await
}

/// Collects events from a subscription until `done` says stop (or a
/// timeout: generous, as only a failing test waits for it, and a loaded
/// machine can take long over a turn with several calls).
pub async fn collect_until(
    sub: &mut Subscription<SessionEvent>,
    mut done: impl FnMut(&SessionEvent) -> bool,
) -> Vec<SessionEvent> {
    let mut out = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let next = tokio::time::timeout_at(deadline, sub.next()).await;
        let Ok(Some(Ok(event))) = next else {
            panic!(
                "subscription ended or timed out after {} events: {out:#?}",
                out.len()
            );
        };
        let stop = done(&event);
        out.push(event);
        if stop {
            return out;
        }
    }
}

/// Whether `event` is a tool-call snapshot of `call_id` in a final state.
pub fn is_final(event: &SessionEvent, call_id: &str) -> bool {
    matches!(&event.payload, geminid_protocol::EventPayload::ToolCall(c)
        if c.call_id == call_id && c.state.is_terminal())
}

/// Waits until the call reaches `state` (as its wire name) in `sub`.
pub async fn wait_state(
    sub: &mut Subscription<SessionEvent>,
    call_id: &str,
    state: geminid_protocol::tool::CallState,
) -> Vec<SessionEvent> {
    collect_until(sub, |e| {
        matches!(&e.payload, geminid_protocol::EventPayload::ToolCall(c)
            if c.call_id == call_id && c.state == state)
    })
    .await
}

/// Creates a yolo session (nothing asks) rooted at `workspace`.
pub async fn yolo_session(client: &Client, workspace: &Path) -> String {
    session_in(
        client,
        workspace,
        Some(geminid_protocol::session::ApprovalMode::Yolo),
        None,
    )
    .await
}
pub async fn new_session(client: &Client, workspace: &Path) -> String {
    session_in(client, workspace, None, None).await
}

/// A new session in `workspace` with `mode` and `interactive` (`None`:
/// the daemon's defaults); its id.
pub async fn session_in(
    client: &Client,
    workspace: &Path,
    mode: Option<geminid_protocol::session::ApprovalMode>,
    interactive: Option<bool>,
) -> String {
    client
        .create_session(
            workspace.display().to_string(),
            mode,
            None,
            interactive,
            None,
            None,
            None,
        )
        .await
        .expect("session.create")
        .session_id
}

impl RawConn {
    /// Sends `bytes` followed by a newline, whatever they contain (invalid
    /// UTF-8 included).
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).expect("write");
        self.writer.write_all(b"\n").expect("write");
    }

    /// The next message, or `None` when the daemon closed the connection.
    pub fn try_read_message(&mut self) -> Option<Value> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => serde_json::from_str(&line).ok(),
        }
    }
}

/// Prints the machine a benchmark ran on: core count and CPU model.
pub fn print_machine() {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned());
    println!("- cpus: {cpus} ({model})");
}

/// Prints the 1, 5 and 15 minute load averages: on 2 cores they say how
/// much a figure can be trusted.
pub fn print_load(label: &str) {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let parts: Vec<&str> = load.split_whitespace().take(3).collect();
    println!("- {label}: {}", parts.join(" "));
}

/// Writes an executable script `name` under the daemon's home (a hook's
/// command, say).
pub fn home_script(d: &TestDaemon, name: &str, text: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = d.home().join("hooks");
    std::fs::create_dir_all(&dir).expect("hooks dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("mode");
    path
}

/// Writes the user's settings with `hooks` and nothing else.
pub fn write_user_hooks(d: &TestDaemon, hooks: Value) {
    let dir = d.home().join(".gemini");
    std::fs::create_dir_all(&dir).expect(".gemini");
    std::fs::write(
        dir.join("settings.json"),
        serde_json::to_vec_pretty(&json!({ "hooks": hooks })).expect("json"),
    )
    .expect("settings.json");
}

/// The final snapshot of a `run_shell_command` call of `command`.
pub async fn shell_call(
    c: &Client,
    session: &str,
    command: &str,
) -> geminid_protocol::tool::ToolCallSnapshot {
    call_and_wait(
        c,
        session,
        "run_shell_command",
        json!({ "command": command }),
    )
    .await
    .outcome
    .expect("final snapshot")
}

/// Whether a shell call's command exited 0 (or said no exit code).
pub fn exited_zero(s: &geminid_protocol::tool::ToolCallSnapshot) -> bool {
    let text = call_text(s);
    text.contains("Exit Code: 0") || !text.contains("Exit Code")
}

/// A daemon with a TMPDIR of its own, so its workspace is not inside a
/// writable temp dir; the dir lives as long as the second value.
pub fn daemon_with_own_tmpdir() -> (TestDaemon, tempfile::TempDir) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let tmpdir = tmp.path().canonicalize().expect("temp dir path");
    let d = TestDaemon::start_with_env(&[("TMPDIR", tmpdir.to_str().expect("utf-8 temp dir"))]);
    (d, tmp)
}

/// What a call gave back as text: its result's text parts, then its
/// error's message (for checking what a refusal said).
pub fn call_text(s: &geminid_protocol::tool::ToolCallSnapshot) -> String {
    use geminid_protocol::tool::ContentPart;
    let result: String = s
        .result
        .iter()
        .flat_map(|r| &r.llm_content)
        .filter_map(|p| match p {
            ContentPart::Text { text } => Some(text.as_str()),
            ContentPart::InlineData { .. } => None,
        })
        .collect();
    let error = s
        .error
        .as_ref()
        .map(|e| e.message.clone())
        .unwrap_or_default();
    format!("{result}{error}")
}

/// Calls `tool` with `args` in `session` and waits for its final snapshot.
pub async fn call_and_wait(
    client: &Client,
    session: &str,
    tool: &str,
    args: Value,
) -> geminid_protocol::tool::ToolCallStarted {
    client
        .call_tool(session.to_owned(), tool.to_owned(), Some(args), Some(true))
        .await
        .expect("tool.call")
}

pub mod load;
pub mod shell_corpus;
pub mod tmux;
