//! Tool benchmarks: built-in tools through a warm daemon against `rg` run
//! directly as a process, on the synthetic corpus of
//! `../shared/bench/make-corpus.sh` (20,000 files, ~300 MB, a git repo
//! with a .gitignore), generated into `<workspace>/bench-corpus` if missing.
//!
//! Every tool figure is one `tool.call {wait: true}` over an open NDJSON
//! connection, timed from writing the request to reading the whole answer
//! line. Every `rg` figure is a process spawn with its stdout read to the
//! end. Tool and `rg` runs alternate, so both see the same machine load.
//! Figures are medians of `TOOLS_BENCH_N` (default 7) warm runs.
//!
//! Run with `cargo bench -p geminid-tests --bench tools`. Arguments after
//! `--` select figures (`grep`, `glob`, `rmf`, `replace`); none runs all.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use geminid_tests::*;
use serde_json::{Value, json};

/// The needle `make-corpus.sh` plants in ~0.4% of the files.
const NEEDLE: &str = "NEEDLE_LITERAL_7f3a";
/// A regex over the planted needle (no usable literal for a plain memchr).
const NEEDLE_REGEX: &str = r"NEEDLE_[A-Z]+_[0-9a-f]{4}";
/// A rare match among the corpus' generated `handle_*_v2` functions.
const RARE_REGEX: &str = r"fn handle_(alpha|omega)_v2.*\+ 99\d\d\d \}";
/// `read_many_files` selection: 509 files, ~8.3 MB.
const RMF_PATHS: [&str; 2] = ["pkg00/**/*.rs", "pkg02/**/*.rs"];

struct Row {
    figure: String,
    tool: String,
    anchor: String,
    ratio: String,
    target: String,
    pass: Option<bool>,
}

fn main() {
    let selected: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wants = |name: &str| selected.is_empty() || selected.iter().any(|s| s == name);
    let n = std::env::var("TOOLS_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7usize)
        .max(5);

    let daemon_bin = geminid_bin();
    assert!(
        daemon_bin.exists(),
        "{} is missing: run through `cargo bench -p geminid-tests --bench tools`",
        daemon_bin.display()
    );
    println!("# geminid tool benchmarks\n");
    println!("- daemon: {}", daemon_bin.display());
    if !daemon_bin.components().any(|c| c.as_os_str() == "release") {
        println!("- WARNING: not a release build; figures are meaningless");
    }
    let rg = rg_version();
    match &rg {
        Some(v) => println!("- anchor: {v}"),
        None => println!(
            "- NOTE: `rg` is not installed (apt-get install -y ripgrep); the rg anchors are skipped"
        ),
    }
    let corpus = ensure_corpus();
    println!("- corpus: {}", corpus.display());
    println!("- runs: median of {n} warm runs (after 1 warm-up) per figure");
    print_machine_and_load();

    let d = TestDaemon::start();
    let mut conn = Conn::open(&d.socket);
    let corpus_session = conn.session(&corpus);
    let mut rows = Vec::new();

    if wants("grep") {
        for (what, pattern) in [
            ("literal", NEEDLE),
            ("planted regex", NEEDLE_REGEX),
            ("rare regex", RARE_REGEX),
        ] {
            rows.extend(bench_grep(
                &mut conn,
                &corpus_session,
                &corpus,
                rg.is_some(),
                what,
                pattern,
                n,
            ));
        }
    }
    if wants("glob") {
        rows.extend(bench_glob(
            &mut conn,
            &corpus_session,
            &corpus,
            rg.is_some(),
            n,
        ));
    }
    if wants("rmf") {
        rows.push(bench_read_many(&mut conn, &corpus_session, &corpus, n));
    }
    if wants("replace") {
        let ws_session = conn.session(&d.workspace);
        rows.extend(bench_replace(&mut conn, &ws_session, &d.workspace, n));
    }

    println!("\n## Summary\n");
    println!("| Figure | geminid (median) | rg (median) | ratio | Target | Result |");
    println!("|---|---|---|---|---|---|");
    for r in &rows {
        let result = match r.pass {
            Some(true) => "PASS",
            Some(false) => "**FAIL**",
            None => "info",
        };
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            r.figure, r.tool, r.anchor, r.ratio, r.target, result
        );
    }
    println!();
    print_load("load average at the end");
}

// ---------------------------------------------------------------------------
// Figures

fn bench_grep(
    conn: &mut Conn,
    session: &str,
    corpus: &Path,
    with_rg: bool,
    what: &str,
    pattern: &str,
    n: usize,
) -> Vec<Row> {
    println!("\n## search_file_content, {what}: `{pattern}`\n");
    let args = json!({ "pattern": pattern });
    let call = |conn: &mut Conn| conn.tool(session, "search_file_content", &args);
    let (_, first) = call(conn);
    let text = first.text();
    let matches = found_count(&text);
    assert!(
        !text.contains("results limited"),
        "the pattern must stay under the match cap: {text:.300}"
    );
    println!("- tool: {matches} matches (case-insensitive, as the reference)");
    let mut tool = Vec::new();
    let mut rg_cs = Vec::new();
    let mut rg_ci = Vec::new();
    for _ in 0..n {
        tool.push(call(conn).0);
        if with_rg {
            let (t, lines) = run_rg(corpus, &["-n", pattern]);
            rg_cs.push(t);
            let (t2, lines_ci) = run_rg(corpus, &["-n", "-i", pattern]);
            rg_ci.push(t2);
            assert_eq!(lines_ci, matches, "rg -i and the tool must agree");
            let _ = lines;
        }
    }
    let t = median(&tool);
    println!("- geminid: {}", samples(&tool));
    let mut rows = Vec::new();
    if with_rg {
        let (_, cs_lines) = run_rg(corpus, &["-n", pattern]);
        println!("- rg -n:    {} ({cs_lines} lines)", samples(&rg_cs));
        println!("- rg -n -i: {} ({matches} lines)", samples(&rg_ci));
        for (flags, anchor) in [("rg -n -i", &rg_ci), ("rg -n", &rg_cs)] {
            let a = median(anchor);
            let ratio = t.as_secs_f64() / a.as_secs_f64();
            rows.push(Row {
                figure: format!("search_file_content {what} vs `{flags}`"),
                tool: ms(t),
                anchor: ms(a),
                ratio: format!("{ratio:.2}x"),
                target: "<= 1.0x".into(),
                pass: Some(ratio <= 1.0),
            });
        }
    } else {
        rows.push(Row {
            figure: format!("search_file_content {what}"),
            tool: ms(t),
            anchor: "skipped (no rg)".into(),
            ratio: "-".into(),
            target: "<= 1.0x rg".into(),
            pass: None,
        });
    }
    rows
}

fn bench_glob(conn: &mut Conn, session: &str, corpus: &Path, with_rg: bool, n: usize) -> Vec<Row> {
    println!("\n## glob `**/*.rs`\n");
    let args = json!({"pattern": "**/*.rs"});
    let (_, first) = conn.tool(session, "glob", &args);
    let text = first.text();
    let files = text.lines().filter(|l| l.ends_with(".rs")).count();
    println!("- tool: {files} files");
    let mut tool = Vec::new();
    let mut rg = Vec::new();
    for _ in 0..n {
        tool.push(conn.tool(session, "glob", &args).0);
        if with_rg {
            let (t, lines) = run_rg(corpus, &["--files", "-g", "*.rs"]);
            assert_eq!(lines, files, "rg and the tool must list the same files");
            rg.push(t);
        }
    }
    let t = median(&tool);
    println!("- geminid: {}", samples(&tool));
    if !with_rg {
        return vec![Row {
            figure: "glob `**/*.rs`".into(),
            tool: ms(t),
            anchor: "skipped (no rg)".into(),
            ratio: "-".into(),
            target: "<= 1.0x rg".into(),
            pass: None,
        }];
    }
    println!("- rg --files -g '*.rs': {}", samples(&rg));
    let a = median(&rg);
    let ratio = t.as_secs_f64() / a.as_secs_f64();
    vec![Row {
        figure: format!("glob `**/*.rs` ({files} files) vs `rg --files -g '*.rs'`"),
        tool: ms(t),
        anchor: ms(a),
        ratio: format!("{ratio:.2}x"),
        target: "<= 1.0x".into(),
        pass: Some(ratio <= 1.0),
    }]
}

fn bench_read_many(conn: &mut Conn, session: &str, corpus: &Path, n: usize) -> Row {
    let (count, bytes) = selection_size(corpus);
    println!(
        "\n## read_many_files {:?}: {count} files, {bytes} bytes ({:.1} MB)\n",
        RMF_PATHS,
        bytes as f64 / 1e6
    );
    let args = json!({ "paths": RMF_PATHS });
    let (_, first) = conn.tool(session, "read_many_files", &args);
    let text = first.text();
    let read = text.matches("\n--- ").count() + usize::from(text.starts_with("--- "));
    // Every file has a header; the end marker is one more.
    println!(
        "- tool: {} file headers, {} bytes of text, answer line {} bytes",
        read - 1,
        text.len(),
        first.line_len
    );
    assert_eq!(read - 1, count, "every selected file must be read");
    let mut tool = Vec::new();
    for _ in 0..n {
        tool.push(conn.tool(session, "read_many_files", &args).0);
    }
    println!("- geminid: {}", samples(&tool));
    let inproc = inprocess(
        corpus,
        &geminid::tools::builtin::ReadManyFilesTool::new(),
        &args,
        n,
    );
    println!(
        "- in-process ReadManyFilesTool::execute (no daemon): {}",
        samples(&inproc)
    );
    // Clients accept messages up to MAX_MESSAGE_BYTES (requests are capped
    // lower, at MAX_LINE_BYTES).
    if first.line_len > geminid_protocol::framing::MAX_MESSAGE_BYTES {
        println!(
            "- NOTE: the answer line ({} bytes) is longer than the protocol's message cap ({} bytes): \
             gemctl::Client cannot receive it; this bench reads with no cap",
            first.line_len,
            geminid_protocol::framing::MAX_MESSAGE_BYTES
        );
    }
    let t = median(&tool);
    Row {
        figure: format!(
            "read_many_files {count} files / {:.1} MB (reference: 509 files in 906 ms)",
            bytes as f64 / 1e6
        ),
        tool: ms(t),
        anchor: format!("in-process {}", ms(median(&inproc))),
        ratio: "-".into(),
        target: "<= 50 ms".into(),
        pass: Some(t <= Duration::from_millis(50)),
    }
}

fn bench_replace(conn: &mut Conn, session: &str, ws: &Path, n: usize) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut medians = Vec::new();
    for mb in [25usize, 50] {
        let path = ws.join(format!("big_{mb}mb.txt"));
        write_big(&path, mb << 20);
        println!("\n## replace in a {mb} MB file (one occurrence, mid-file)\n");
        let args = |from: &str, to: &str| {
            json!({
                "file_path": path.display().to_string(),
                "old_string": format!("UNIQUE_MARKER_{from}\n"),
                "new_string": format!("UNIQUE_MARKER_{to}\n"),
            })
        };
        // The tool alone first, while the daemon is idle.
        let inproc = inprocess_replace(&path, n);
        // Alternate A -> B and B -> A, so every run edits the same file.
        // The edit is applied even when the daemon cannot send the answer
        // (see the note printed below), so the alternation holds either way.
        let mut state = marker_state(&path);
        let next = if state == "A" { "B" } else { "A" };
        let (_, first) = conn.tool(session, "replace", &args(state, next));
        state = next;
        println!("- answer line {} bytes", first.line_len);
        let mut failure = first.error();
        let mut times = Vec::new();
        for _ in 0..n {
            let next = if state == "A" { "B" } else { "A" };
            let (t, r) = conn.tool(session, "replace", &args(state, next));
            match r.error() {
                None => assert!(r.text().contains("1 replacement"), "{:.300}", r.text()),
                Some(e) => failure = Some(e),
            }
            times.push(t);
            state = next;
        }
        if let Some(e) = &failure {
            println!(
                "- NOTE: tool.call answered with an error: {e:.300}\n  The edit was made; the answer \
                 (the final snapshot, whose FileDiff holds the whole old and new file) is too big to send."
            );
        }
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        assert_eq!(size, (mb << 20) as u64, "the file keeps its size");
        println!("- geminid (tool.call): {}", samples(&times));
        println!(
            "- in-process ReplaceTool::execute (no daemon): {}",
            samples(&inproc)
        );
        let (t, t_in) = (median(&times), median(&inproc));
        medians.push((t, t_in, failure.is_none()));
        let target = if mb == 50 { "< 300 ms" } else { "-" };
        rows.push(Row {
            figure: format!("replace, {mb} MB file, tool.call through the daemon"),
            tool: match failure {
                None => ms(t),
                Some(_) => format!("{} (answer: error, too big to send)", ms(t)),
            },
            anchor: "-".into(),
            ratio: "-".into(),
            target: target.into(),
            pass: (mb == 50).then(|| failure.is_none() && t < Duration::from_millis(300)),
        });
        rows.push(Row {
            figure: format!("replace, {mb} MB file, the tool alone (in-process)"),
            tool: ms(t_in),
            anchor: "-".into(),
            ratio: "-".into(),
            target: target.into(),
            pass: (mb == 50).then(|| t_in < Duration::from_millis(300)),
        });
        let _ = std::fs::remove_file(&path);
    }
    if let [(a, a_in, a_ok), (b, b_in, b_ok)] = medians[..] {
        for (what, x, y, ok) in [
            ("tool.call", a, b, a_ok && b_ok),
            ("in-process", a_in, b_in, true),
        ] {
            let r = y.as_secs_f64() / x.as_secs_f64();
            rows.push(Row {
                figure: format!("replace linearity, {what}: t(50 MB) / t(25 MB)"),
                tool: format!("{r:.2}"),
                anchor: "-".into(),
                ratio: "-".into(),
                target: "~2 (linear)".into(),
                pass: Some(ok && (1.4..=2.6).contains(&r)),
            });
        }
    }
    rows
}

/// `n` warm runs of `tool` called directly in this process, rooted at `root`.
fn inprocess(
    root: &Path,
    tool: &dyn geminid::tools::Tool,
    args: &Value,
    n: usize,
) -> Vec<Duration> {
    use geminid::tools::{OutputSink, ToolContext};
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let ctx = ToolContext::new(root).expect("context");
    let mut out = Vec::new();
    for i in 0..=n {
        let started = Instant::now();
        let call = tool.build(&ctx, args).expect("build");
        let r = rt.block_on(call.execute(Default::default(), OutputSink::discard()));
        let t = started.elapsed();
        r.expect("the call succeeds");
        if i > 0 {
            out.push(t);
        }
    }
    out
}

/// The same edit with the tool called directly, to separate the tool's own
/// cost from the daemon's (persisting, serializing and sending the result).
fn inprocess_replace(path: &Path, n: usize) -> Vec<Duration> {
    use geminid::tools::{OutputSink, Tool, ToolContext};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let root = path.parent().expect("parent");
    let ctx = ToolContext::new(root).expect("context");
    let tool = geminid::tools::builtin::ReplaceTool::new();
    let mut state = marker_state(path);
    let mut out = Vec::new();
    for i in 0..=n {
        let next = if state == "A" { "B" } else { "A" };
        let args = json!({
            "file_path": path.display().to_string(),
            "old_string": format!("UNIQUE_MARKER_{state}\n"),
            "new_string": format!("UNIQUE_MARKER_{next}\n"),
        });
        let started = Instant::now();
        let call = tool.build(&ctx, &args).expect("build");
        let r = rt.block_on(call.execute(Default::default(), OutputSink::discard()));
        let t = started.elapsed();
        r.expect("replace");
        if i > 0 {
            out.push(t);
        }
        state = next;
    }
    out
}

// ---------------------------------------------------------------------------
// The daemon side: a raw NDJSON connection with no line cap.

struct Conn {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    next_id: u64,
    /// The answer line's buffer, kept between calls as a long-running client keeps
    /// its buffers: a fresh 16 MB buffer per call would time this
    /// process's page faults, not the daemon.
    answer: Vec<u8>,
}

struct Answer {
    line_len: usize,
    value: Value,
}

impl Answer {
    /// The JSON-RPC error, if the request failed.
    fn error(&self) -> Option<String> {
        self.value.get("error").map(Value::to_string)
    }

    /// The outcome's model text; panics unless the call succeeded.
    fn text(&self) -> String {
        assert!(
            self.error().is_none(),
            "the request failed: {:?}",
            self.error()
        );
        let outcome = &self.value["result"]["outcome"];
        assert_eq!(
            outcome["state"],
            "success",
            "{:.500}",
            self.value.to_string()
        );
        outcome["result"]["llmContent"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["text"].as_str())
            .collect()
    }
}

impl Conn {
    fn open(socket: &Path) -> Conn {
        let stream = UnixStream::connect(socket).expect("connect");
        let mut conn = Conn {
            reader: BufReader::with_capacity(1 << 20, stream.try_clone().expect("clone")),
            writer: stream,
            next_id: 1,
            answer: Vec::new(),
        };
        let (_, a) = conn.request("daemon.initialize", json!({}));
        assert!(a.error().is_none(), "initialize: {:?}", a.error());
        conn
    }

    /// Sends a request; returns the time until its answer line was read,
    /// and the answer.
    fn request(&mut self, method: &str, params: Value) -> (Duration, Answer) {
        let id = self.next_id;
        self.next_id += 1;
        let mut line =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        line.push('\n');
        let started = Instant::now();
        self.writer.write_all(line.as_bytes()).expect("write");
        let buf = &mut self.answer;
        // No subscriptions on this connection, so the first line that is
        // not a notification (`{"jsonrpc":"2.0","method":...`) is ours; its
        // id is checked after the clock. Looking at the head only keeps the
        // client from scanning megabytes of answer on the clock.
        let notification = b"{\"jsonrpc\":\"2.0\",\"method\":";
        loop {
            buf.clear();
            let got = self.reader.read_until(b'\n', buf).expect("read");
            assert!(got > 0, "the daemon closed the connection");
            if !buf.starts_with(notification) {
                break;
            }
        }
        let elapsed = started.elapsed();
        let value: Value = serde_json::from_slice(buf).expect("an answer");
        assert_eq!(value["id"], id, "an answer to another request");
        (
            elapsed,
            Answer {
                line_len: buf.len(),
                value,
            },
        )
    }

    fn session(&mut self, cwd: &Path) -> String {
        let (_, a) = self.request(
            "session.create",
            json!({"cwd": cwd.display().to_string(), "approvalMode": "yolo"}),
        );
        a.value["result"]["sessionId"]
            .as_str()
            .expect("sessionId")
            .to_owned()
    }

    fn tool(&mut self, session: &str, name: &str, args: &Value) -> (Duration, Answer) {
        self.request(
            "tool.call",
            json!({"sessionId": session, "name": name, "args": args, "wait": true}),
        )
    }
}

// ---------------------------------------------------------------------------
// The rg side

fn rg_version() -> Option<String> {
    let out = Command::new("rg").arg("--version").output().ok()?;
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or("rg")
            .to_owned()
    })
}

/// Runs `rg ARGS` in `dir`, reading its output; the time and line count.
fn run_rg(dir: &Path, args: &[&str]) -> (Duration, usize) {
    let started = Instant::now();
    let mut child = Command::new("rg")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn rg");
    let mut out = Vec::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_end(&mut out)
        .expect("rg output");
    let status = child.wait().expect("rg");
    let elapsed = started.elapsed();
    assert!(status.code().is_some_and(|c| c <= 1), "rg failed: {status}");
    (elapsed, out.iter().filter(|b| **b == b'\n').count())
}

// ---------------------------------------------------------------------------
// Fixtures

/// `<workspace>/bench-corpus`, generated by the shared script when missing.
fn ensure_corpus() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf();
    let corpus = root.join("bench-corpus");
    if !corpus.join(".gitignore").exists() {
        // shared/ sits beside the project root.
        let script = std::env::var("TOOLS_BENCH_CORPUS_SCRIPT").unwrap_or_else(|_| {
            root.join("../shared/bench/make-corpus.sh")
                .display()
                .to_string()
        });
        println!("- generating the corpus with {script} (once)");
        let status = Command::new("bash")
            .arg(&script)
            .arg(&corpus)
            .status()
            .expect("run make-corpus.sh");
        assert!(status.success(), "make-corpus.sh failed: {status}");
    }
    corpus.canonicalize().expect("corpus")
}

/// The files `RMF_PATHS` selects (the `.rs` files of pkg00 and pkg02) and
/// their total size.
fn selection_size(corpus: &Path) -> (usize, u64) {
    let mut count = 0;
    let mut bytes = 0;
    let mut stack = vec![corpus.join("pkg00"), corpus.join("pkg02")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                count += 1;
                bytes += e.metadata().map(|m| m.len()).unwrap_or(0);
            }
        }
    }
    (count, bytes)
}

/// Which marker the big file holds now: "A" or "B".
fn marker_state(path: &Path) -> &'static str {
    let content = std::fs::read_to_string(path).expect("read the big file");
    if content.contains("UNIQUE_MARKER_A\n") {
        "A"
    } else {
        "B"
    }
}

/// A text file of exactly `size` bytes with `UNIQUE_MARKER_A` on one line in
/// the middle.
fn write_big(path: &Path, size: usize) {
    let mut content = String::with_capacity(size + 100);
    let mut i = 0u64;
    while content.len() < size / 2 {
        content.push_str(&format!(
            "line {i:010} the quick brown fox jumps over the lazy dog\n"
        ));
        i += 1;
    }
    content.push_str("UNIQUE_MARKER_A\n");
    while content.len() < size {
        content.push_str(&format!(
            "line {i:010} the quick brown fox jumps over the lazy dog\n"
        ));
        i += 1;
    }
    content.truncate(size - 1);
    content.push('\n');
    std::fs::write(path, content).expect("write big file");
}

// ---------------------------------------------------------------------------
// Numbers

fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn samples(v: &[Duration]) -> String {
    let mut s = v.to_vec();
    s.sort();
    format!(
        "median {} (min {}, max {}; {} runs)",
        ms(median(v)),
        ms(s[0]),
        ms(s[s.len() - 1]),
        v.len()
    )
}

/// "Found 67 matches ..." -> 67.
fn found_count(text: &str) -> usize {
    if text.starts_with("No matches found") {
        return 0;
    }
    text.split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected output: {text:.200}"))
}

fn print_machine_and_load() {
    print_machine();
    print_load("load average at the start");
}
