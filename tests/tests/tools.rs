//! Every built-in tool through a real daemon (`tool.call`, `wait: true`):
//! one table per tool, one row per case. A row names its arguments (`$WS`
//! stands for the workspace root) and either the words its output must and
//! must not contain, or the error kind and words of its message. Every
//! failing row also proves the workspace was left exactly as it was.
//!
//! Sessions run in yolo mode, so writes and commands run without asking.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::{CallState, ContentPart, ToolCallSnapshot};
use geminid_tests::*;
use serde_json::{Value, json};

/// What a row expects.
enum Expect {
    /// Success; the model's text contains every `has` and none of `lacks`.
    Ok(&'static [&'static str], &'static [&'static str]),
    /// Failure of this wire kind, the message containing every word.
    Err(&'static str, &'static [&'static str]),
}
use Expect::{Err as E, Ok as O};

type Row = (&'static str, Value, Expect);

/// A daemon, a client and a yolo session on the daemon's workspace.
struct Bench {
    d: TestDaemon,
    client: Client,
    session: String,
}

impl Bench {
    async fn new() -> Bench {
        Self::with(TestDaemon::start()).await
    }

    async fn with(d: TestDaemon) -> Bench {
        let client = d.client().await;
        let session = client
            .create_session(
                d.workspace.display().to_string(),
                Some(ApprovalMode::Yolo),
                None,
                None,
                None,
                None,
                None,
            )
            .await
            .expect("session.create")
            .session_id;
        Bench { d, client, session }
    }

    fn ws(&self) -> &Path {
        &self.d.workspace
    }

    fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.ws().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.ws().join(rel)).unwrap()
    }

    async fn call(&self, tool: &str, args: Value) -> ToolCallSnapshot {
        self.client
            .call_tool(self.session.clone(), tool.into(), Some(args), Some(true))
            .await
            .expect("tool.call")
            .outcome
            .expect("wait: true returns the final snapshot")
    }

    /// Runs every row of `tool`'s table; fails listing every row that did
    /// not behave.
    async fn table(&self, tool: &str, rows: Vec<Row>) {
        let ws = self.ws().display().to_string();
        let mut failures = Vec::new();
        for (what, args, expect) in rows {
            let args = subst(args, &ws);
            let before = snapshot(self.ws());
            let done = self.call(tool, args.clone()).await;
            if let Err(why) = check(&done, &expect, &ws) {
                failures.push(format!("{tool} / {what} / {args}:\n    {why}"));
            } else if matches!(expect, Expect::Err(..)) && before != snapshot(self.ws()) {
                failures.push(format!("{tool} / {what}: failed but changed the workspace"));
            }
        }
        assert!(
            failures.is_empty(),
            "{} row(s) failed:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
}

/// Whether a final snapshot is what the row expects.
fn check(done: &ToolCallSnapshot, expect: &Expect, ws: &str) -> Result<(), String> {
    match expect {
        Expect::Ok(has, lacks) => {
            if done.state != CallState::Success {
                return Err(format!(
                    "expected success, got {:?}: {:?}",
                    done.state, done.error
                ));
            }
            let text = text_of(done);
            for w in has.iter().map(|w| w.replace("$WS", ws)) {
                if !text.contains(&w) {
                    return Err(format!("{w:?} not in output:\n{text}"));
                }
            }
            for w in lacks.iter().map(|w| w.replace("$WS", ws)) {
                if text.contains(&w) {
                    return Err(format!("{w:?} in output:\n{text}"));
                }
            }
            Ok(())
        }
        Expect::Err(kind, words) => {
            let Some(error) = done
                .error
                .as_ref()
                .filter(|_| done.state == CallState::Error)
            else {
                return Err(format!(
                    "expected an error, got {:?}: {}",
                    done.state,
                    text_of(done)
                ));
            };
            if error.kind != *kind {
                return Err(format!(
                    "expected kind {kind}, got {}: {}",
                    error.kind, error.message
                ));
            }
            for w in words.iter().map(|w| w.replace("$WS", ws)) {
                if !error.message.contains(&w) {
                    return Err(format!("{w:?} not in message {:?}", error.message));
                }
            }
            Ok(())
        }
    }
}

/// `$WS` in any string of `v` becomes the workspace root.
fn subst(v: Value, ws: &str) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace("$WS", ws)),
        Value::Array(a) => Value::Array(a.into_iter().map(|x| subst(x, ws)).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, x)| (k, subst(x, ws))).collect()),
        other => other,
    }
}

fn text_of(s: &ToolCallSnapshot) -> String {
    s.result
        .iter()
        .flat_map(|r| &r.llm_content)
        .filter_map(|p| match p {
            ContentPart::Text { text } => Some(text.as_str()),
            ContentPart::InlineData { .. } => None,
        })
        .collect()
}

/// Every file and directory below `dir` with its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                out.push((p.clone(), None));
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).ok()));
            }
        }
    }
    out.sort();
    out
}

/// The shared fixture: text, code, a binary file, a duplicate line, a
/// directory, and a file outside the workspace (next to it).
fn fixture(b: &Bench) {
    b.write("a.txt", "alpha\nbeta\ngamma\n");
    b.write("sub/b.rs", "fn main() {\n    println!(\"hi\");\n}\n");
    b.write("sub/c.md", "# Notes\nSome gamma notes.\n");
    b.write("bin.dat", [0u8, 1, 2, 3, 0, 0xff, 0xfe, 0, 9, 9]);
    b.write("dup.txt", "x = 1\ny = 2\nx = 1\n");
    b.write("edit.txt", "one\ntwo\nthree\n");
    b.write(".gitignore", "ignored.log\n");
    b.write("ignored.log", "gamma in an ignored file\n");
    std::fs::write(b.ws().parent().unwrap().join("outside.txt"), "secret\n").unwrap();
}

#[rustfmt::skip]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_file() {
    let b = Bench::new().await;
    fixture(&b);
    b.table("read_file", vec![
        ("whole text file", json!({"absolute_path": "$WS/a.txt"}), O(&["alpha\nbeta\ngamma"], &[])),
        ("a window", json!({"absolute_path": "$WS/a.txt", "offset": 1, "limit": 1}), O(&["beta", "2-2", "3"], &["alpha", "gamma"])),
        ("relative path", json!({"absolute_path": "a.txt"}), E("path_not_allowed", &["must be an absolute path"])),
        ("missing file", json!({"absolute_path": "$WS/nope.txt"}), E("not_found", &["nope.txt", "not found"])),
        ("a directory", json!({"absolute_path": "$WS/sub"}), E("invalid_params", &["is a directory"])),
        ("outside the workspace", json!({"absolute_path": "$WS/../outside.txt"}), E("path_not_allowed", &["workspace"])),
        ("offset past the end", json!({"absolute_path": "$WS/a.txt", "offset": 10}), E("invalid_params", &["past the end"])),
        ("limit zero", json!({"absolute_path": "$WS/a.txt", "limit": 0}), E("invalid_params", &["`limit`"])),
        ("wrong type", json!({"absolute_path": 7}), E("invalid_params", &["absolute_path"])),
    ]).await;
    // A binary file is not shown as text.
    let done = b.call("read_file", json!({"absolute_path": format!("{}/bin.dat", b.ws().display())})).await;
    assert_eq!(done.state, CallState::Success, "{:?}", done.error);
    assert!(text_of(&done).to_lowercase().contains("binary"), "{}", text_of(&done));
}

#[rustfmt::skip]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_file() {
    let b = Bench::new().await;
    fixture(&b);
    b.table("write_file", vec![
        ("new file in new directories", json!({"file_path": "$WS/new/deep/n.txt", "content": "hello\n"}), O(&["n.txt"], &[])),
        ("overwrite", json!({"file_path": "$WS/edit.txt", "content": "replaced\n"}), O(&["edit.txt"], &[])),
        ("relative path", json!({"file_path": "x.txt", "content": "x"}), E("path_not_allowed", &["must be an absolute path"])),
        ("a directory", json!({"file_path": "$WS/sub", "content": "x"}), E("invalid_params", &["directory"])),
        ("outside the workspace", json!({"file_path": "$WS/../evil.txt", "content": "x"}), E("path_not_allowed", &["workspace"])),
        (".. in a new tail", json!({"file_path": "$WS/nope/../../evil.txt", "content": "x"}), E("path_not_allowed", &[".."])),
        ("missing content", json!({"file_path": "$WS/y.txt"}), E("invalid_params", &["content"])),
    ]).await;
    assert_eq!(b.read("new/deep/n.txt"), "hello\n");
    assert_eq!(b.read("edit.txt"), "replaced\n");
    assert!(!b.ws().parent().unwrap().join("evil.txt").exists());
}

#[rustfmt::skip]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_directory() {
    let b = Bench::new().await;
    fixture(&b);
    b.table("list_directory", vec![
        ("the root", json!({"path": "$WS"}), O(&["a.txt", "sub", "bin.dat"], &["ignored.log"])),
        ("a subdirectory", json!({"path": "$WS/sub"}), O(&["b.rs", "c.md"], &["a.txt"])),
        ("ignore globs", json!({"path": "$WS", "ignore": ["*.txt"]}), O(&["sub", "bin.dat"], &["a.txt", "dup.txt"])),
        ("relative path", json!({"path": "sub"}), E("path_not_allowed", &["must be an absolute path"])),
        ("missing directory", json!({"path": "$WS/nope"}), E("not_found", &["nope"])),
        ("a file", json!({"path": "$WS/a.txt"}), E("invalid_params", &["not a directory"])),
        ("outside the workspace", json!({"path": "$WS/.."}), E("path_not_allowed", &["workspace"])),
    ]).await;
}

#[rustfmt::skip]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace() {
    let b = Bench::new().await;
    fixture(&b);
    b.table("replace", vec![
        ("one exact match", json!({"file_path": "$WS/edit.txt", "old_string": "two\n", "new_string": "2\n"}), O(&["edit.txt"], &[])),
        ("ambiguous edit", json!({"file_path": "$WS/dup.txt", "old_string": "x = 1", "new_string": "x = 9"}), E("invalid_params", &["2"])),
        ("zero matches", json!({"file_path": "$WS/edit.txt", "old_string": "zebra", "new_string": "z"}), E("invalid_params", &["was not found"])),
        ("wrong expected count", json!({"file_path": "$WS/dup.txt", "old_string": "x = 1", "new_string": "x = 9", "expected_replacements": 3}), E("invalid_params", &["3", "2"])),
        ("missing file", json!({"file_path": "$WS/nope.txt", "old_string": "a", "new_string": "b"}), E("not_found", &["nope.txt"])),
        ("relative path", json!({"file_path": "edit.txt", "old_string": "one", "new_string": "1"}), E("path_not_allowed", &["must be an absolute path"])),
        ("a directory", json!({"file_path": "$WS/sub", "old_string": "a", "new_string": "b"}), E("invalid_params", &["directory"])),
        ("outside the workspace", json!({"file_path": "$WS/../outside.txt", "old_string": "secret", "new_string": "x"}), E("path_not_allowed", &["workspace"])),
        ("create with empty old_string on existing", json!({"file_path": "$WS/a.txt", "old_string": "", "new_string": "x"}), E("invalid_params", &["exists"])),
        ("all of an expected count", json!({"file_path": "$WS/dup.txt", "old_string": "x = 1", "new_string": "x = 9", "expected_replacements": 2}), O(&["dup.txt"], &[])),
        ("create a new file", json!({"file_path": "$WS/created.txt", "old_string": "", "new_string": "fresh\n"}), O(&["created.txt"], &[])),
    ]).await;
    assert_eq!(b.read("edit.txt"), "one\n2\nthree\n");
    assert_eq!(b.read("dup.txt"), "x = 9\ny = 2\nx = 9\n");
    assert_eq!(b.read("created.txt"), "fresh\n");
}

#[rustfmt::skip]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_many_files() {
    let b = Bench::new().await;
    fixture(&b);
    b.table("read_many_files", vec![
        ("a directory", json!({"paths": ["sub"]}), O(&["--- $WS/sub/b.rs ---", "println!", "--- $WS/sub/c.md ---", "--- End of content ---"], &["alpha"])),
        ("a glob", json!({"paths": ["**/*.rs"]}), O(&["--- $WS/sub/b.rs ---"], &["c.md ---"])),
        ("absolute file and include", json!({"paths": ["$WS/a.txt"], "include": ["**/*.md"]}), O(&["alpha", "Some gamma notes"], &["println!"])),
        ("exclude", json!({"paths": ["sub"], "exclude": ["*.md"]}), O(&["b.rs"], &["c.md ---"])),
        ("binary files are skipped", json!({"paths": ["*.dat", "a.txt"]}), O(&["alpha"], &["bin.dat ---"])),
        ("gitignored files are skipped", json!({"paths": ["*.log", "a.txt"]}), O(&["alpha"], &["ignored.log ---"])),
        ("zero matches", json!({"paths": ["nothing/**/*.zig"]}), O(&["No files"], &["---  ---"])),
        ("empty paths", json!({"paths": []}), E("invalid_params", &["paths"])),
        ("dot-dot escape", json!({"paths": ["$WS/../outside.txt"]}), E("path_not_allowed", &["must not contain `..`"])),
        ("outside the workspace", json!({"paths": ["/etc/passwd"]}), E("path_not_allowed", &["workspace"])),
        ("empty pattern", json!({"paths": [""]}), E("invalid_params", &["paths"])),
    ]).await;
}

/// The daemon keeps directory listings between calls (once a directory
/// has been unchanged for a second): a second read must still see every
/// change made since the first, and a directory swapped for a symlink out
/// of the workspace must not lead anywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_many_files_sees_changes_after_a_warm_read() {
    let b = Bench::new().await;
    fixture(&b);
    b.write("deep/er/one.rs", "// one\n");
    b.write("deep/er/two.rs", "// two\n");
    b.write("swap/inside.rs", "// inside\n");
    let outside = b.ws().parent().unwrap().join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.rs"), "// secret outside\n").unwrap();
    // Old enough for the daemon to keep the listings.
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    let args = json!({"paths": ["**/*.rs"]});
    let first = text_of(&b.call("read_many_files", args.clone()).await);
    for name in ["one.rs", "two.rs", "inside.rs", "sub/b.rs"] {
        assert!(first.contains(name), "{name} in {first}");
    }
    b.write("deep/er/three.rs", "// three\n");
    std::fs::remove_file(b.ws().join("deep/er/one.rs")).unwrap();
    b.write(".gitignore", "ignored.log\ntwo.rs\n");
    std::fs::remove_dir_all(b.ws().join("swap")).unwrap();
    std::os::unix::fs::symlink(&outside, b.ws().join("swap")).unwrap();
    let second = text_of(&b.call("read_many_files", args).await);
    assert!(second.contains("// three"), "{second}");
    assert!(!second.contains("// one"), "{second}");
    assert!(!second.contains("// two"), "{second}");
    assert!(!second.contains("inside.rs"), "{second}");
    assert!(!second.contains("secret"), "{second}");
    assert!(second.contains("sub/b.rs"), "{second}");
}

#[rustfmt::skip]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_file_content() {
    let b = Bench::new().await;
    fixture(&b);
    b.table("search_file_content", vec![
        ("a regex", json!({"pattern": "gam+a"}), O(&["Found 2 matches", "File: a.txt\nL3: gamma", "File: sub/c.md\nL2: Some gamma notes."], &["ignored.log"])),
        ("case-insensitive", json!({"pattern": "ALPHA"}), O(&["L1: alpha"], &[])),
        ("include filter", json!({"pattern": "gamma|main", "include": "*.rs"}), O(&["sub/b.rs", "L1: fn main() {"], &["a.txt"])),
        ("a subdirectory", json!({"pattern": "gamma", "path": "$WS/sub"}), O(&["File: c.md"], &["a.txt"])),
        ("zero matches", json!({"pattern": "zzz_no_such_text"}), O(&["No matches found"], &["File:"])),
        ("binary files are skipped", json!({"pattern": "\\x09\\x09"}), O(&["No matches found"], &["bin.dat"])),
        ("invalid regex", json!({"pattern": "(unclosed"}), E("invalid_params", &["not a valid regular expression"])),
        ("empty pattern", json!({"pattern": ""}), E("invalid_params", &["must not be empty"])),
        ("relative path", json!({"pattern": "a", "path": "sub"}), E("path_not_allowed", &["must be an absolute path"])),
        ("missing directory", json!({"pattern": "a", "path": "$WS/nope"}), E("not_found", &["nope"])),
        ("a file as the directory", json!({"pattern": "a", "path": "$WS/a.txt"}), E("invalid_params", &["not a directory"])),
        ("outside the workspace", json!({"pattern": "secret", "path": "$WS/.."}), E("path_not_allowed", &["workspace"])),
        ("invalid include", json!({"pattern": "a", "include": "a[" }), E("invalid_params", &["include"])),
    ]).await;
}

#[rustfmt::skip]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn glob() {
    let b = Bench::new().await;
    fixture(&b);
    b.table("glob", vec![
        ("recursive", json!({"pattern": "**/*.rs"}), O(&["$WS/sub/b.rs"], &["a.txt"])),
        ("brace set", json!({"pattern": "**/*.{md,txt}"}), O(&["$WS/a.txt", "$WS/sub/c.md", "$WS/dup.txt"], &["b.rs", "ignored.log"])),
        ("case-insensitive by default", json!({"pattern": "**/*.RS"}), O(&["$WS/sub/b.rs"], &[])),
        ("case-sensitive on request", json!({"pattern": "**/*.RS", "case_sensitive": true}), O(&["No files found"], &["b.rs"])),
        ("gitignored on request", json!({"pattern": "*.log", "respect_git_ignore": false}), O(&["$WS/ignored.log"], &[])),
        ("in a subdirectory", json!({"pattern": "*", "path": "$WS/sub"}), O(&["b.rs", "c.md"], &["a.txt"])),
        ("zero matches", json!({"pattern": "**/*.zig"}), O(&["No files found"], &["$WS/"])),
        ("empty pattern", json!({"pattern": ""}), E("invalid_params", &["must not be empty"])),
        ("relative path", json!({"pattern": "*", "path": "sub"}), E("path_not_allowed", &["must be an absolute path"])),
        ("missing directory", json!({"pattern": "*", "path": "$WS/nope"}), E("not_found", &["nope"])),
        ("outside the workspace", json!({"pattern": "*", "path": "$WS/.."}), E("path_not_allowed", &["workspace"])),
        ("invalid glob", json!({"pattern": "a[" }), E("invalid_params", &["pattern"])),
    ]).await;
}

#[rustfmt::skip]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_shell_command() {
    let b = Bench::new().await;
    fixture(&b);
    b.table("run_shell_command", vec![
        ("stdout", json!({"command": "echo hello-$((40+2))"}), O(&["hello-42"], &[])),
        ("stderr and exit code", json!({"command": "echo oops >&2; exit 3"}), O(&["oops", "Exit Code: 3"], &[])),
        ("in a directory", json!({"command": "pwd", "directory": "sub"}), O(&["$WS/sub"], &[])),
        ("empty command", json!({"command": "  "}), E("invalid_params", &["`command`"])),
        ("absolute directory", json!({"command": "pwd", "directory": "/tmp"}), E("path_not_allowed", &["must be relative"])),
        ("missing directory", json!({"command": "pwd", "directory": "nope"}), E("not_found", &["nope"])),
        ("directory outside", json!({"command": "pwd", "directory": "../.."}), E("path_not_allowed", &["workspace"])),
        ("a file as directory", json!({"command": "pwd", "directory": "a.txt"}), E("invalid_params", &["directory"])),
    ]).await;
}

/// After `session.cancel`, nothing the command started is left running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_shell_command_leaves_no_process() {
    let b = Bench::new().await;
    // A unique sleep length is the marker `pgrep -f` looks for.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let marker = format!("sleep 1000.{}{:09}", std::process::id(), nanos);
    let count = || {
        let out = std::process::Command::new("pgrep")
            .args(["-f", &marker])
            .output()
            .expect("pgrep");
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    let mut sub = b
        .client
        .subscribe_session(b.session.clone(), None)
        .await
        .unwrap();
    let call = b
        .client
        .call_tool(
            b.session.clone(),
            "run_shell_command".into(),
            Some(json!({"command": format!("{marker} & {marker}")})),
            None,
        )
        .await
        .unwrap()
        .call_id;
    let deadline = Instant::now() + Duration::from_secs(20);
    while count() < 2 {
        assert!(Instant::now() < deadline, "the sleeps never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    b.client.cancel_session(b.session.clone()).await.unwrap();
    let events = collect_until(&mut sub, |e| is_final(e, &call)).await;
    let geminid_protocol::EventPayload::ToolCall(last) = &events.last().unwrap().payload else {
        unreachable!()
    };
    assert_eq!(last.state, CallState::Cancelled, "{last:?}");
    // The group is killed before the call is reported cancelled; allow the
    // kernel a moment to reap.
    let deadline = Instant::now() + Duration::from_secs(20);
    while count() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(count(), 0, "a process of the cancelled command survived");
}

/// Serves `/page` (text) and 404 for anything else on 127.0.0.1.
async fn fake_site() -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut req = Vec::new();
                let mut buf = [0u8; 1024];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                let req = String::from_utf8_lossy(&req);
                let (status, body) = if req.starts_with("GET /page ") {
                    (
                        "200 OK",
                        "<html><body><h1>Fake page</h1><p>served locally</p></body></html>",
                    )
                } else {
                    ("404 Not Found", "nope")
                };
                let reply = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(reply.as_bytes()).await;
            });
        }
    });
    format!("http://{addr}")
}

#[rustfmt::skip]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_fetch() {
    let site = fake_site().await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let d = TestDaemon::start_with_env(&[("NO_PROXY", "127.0.0.1"), ("no_proxy", "127.0.0.1")]);
    // The fake site is on loopback, which web_fetch refuses unless the
    // user's settings allow private addresses (read when a session loads).
    std::fs::create_dir_all(d.home().join(".gemini")).unwrap();
    std::fs::write(
        d.home().join(".gemini/settings.json"),
        r#"{"geminid": {"webFetch": {"allowPrivateNetwork": true}}}"#,
    )
    .unwrap();
    let b = Bench::with(d).await;
    let page = format!("summarize {site}/page");
    let missing = format!("read {site}/missing");
    let refused = format!("read http://{closed}/x");
    b.table("web_fetch", vec![
        ("a local page", json!({"prompt": page}), O(&["The user asked: summarize", "Fake page", "served locally"], &["<h1>"])),
        ("no URL", json!({"prompt": "summarize nothing"}), E("invalid_params", &["URL"])),
        ("empty prompt", json!({"prompt": ""}), E("invalid_params", &["`prompt`"])),
        ("HTTP 404", json!({"prompt": missing}), E("execution", &["404"])),
        ("connection refused", json!({"prompt": refused}), E("execution", &["Error fetching"])),
    ]).await;
}

#[rustfmt::skip]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn save_memory() {
    // The harness gives every daemon its own HOME.
    let b = Bench::new().await;
    let memory_file = b.d.home().join(".gemini/GEMINI.md");
    b.table("save_memory", vec![
        ("a fact", json!({"fact": "My favourite test runner is nextest"}), O(&["nextest"], &[])),
        ("another fact", json!({"fact": "I prefer tabs"}), O(&["I prefer tabs"], &[])),
        ("empty fact", json!({"fact": ""}), E("invalid_params", &["`fact`"])),
        ("blank fact", json!({"fact": " \n "}), E("invalid_params", &["`fact`"])),
        ("wrong type", json!({"fact": 3}), E("invalid_params", &["fact"])),
    ]).await;
    let memory = std::fs::read_to_string(&memory_file).unwrap();
    assert!(memory.contains("## Gemini Added Memories\n"), "{memory}");
    assert!(memory.contains("- My favourite test runner is nextest\n- I prefer tabs\n"), "{memory}");
}
