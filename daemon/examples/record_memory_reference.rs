//! Re-record `src/memory/reference_tests/reference.json` from the reference
//! implementation. Needs node and the peer harness:
//!
//! ```text
//! cargo run -p geminid --example record_memory_reference [-- /path/to/peer]   # default /tmp/peer
//! ```
//!
//! Every case from `src/memory/reference_tests/support/cases.rs` is laid out in a temp dir, sent
//! to `harness.mjs` as an `imports` request, and the answer is stored with
//! the temp dir replaced by `{ROOT}`. It also prints how our output compares.

use geminid::memory as memory_api;

#[path = "../src/memory/reference_tests/support/mod.rs"]
mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use support::{Recorded, cases, materialize};

type BoxError = Box<dyn std::error::Error>;

fn main() -> Result<(), BoxError> {
    let peer = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "/tmp/peer".to_string());
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut child = Command::new("node")
        .arg("harness.mjs")
        .current_dir(&peer)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);

    let mut recorded = Recorded::new();
    let (mut same, mut total) = (0, 0);
    for case in cases() {
        let dir = materialize(&case)?;
        writeln!(stdin, "{}", dir.request(&case))?;
        stdin.flush()?;
        let mut line = String::new();
        stdout.read_line(&mut line)?;
        let answer: serde_json::Value = serde_json::from_str(&line)?;
        if let Some(err) = answer.get("error") {
            return Err(format!("{}: harness error {err}", case.name).into());
        }
        let content = answer["content"].as_str().ok_or("no content")?;
        let reference = dir.outcome(content, &answer["importTree"])?;
        let ours = dir.ours(&case)?;
        total += 1;
        let verdict = if ours == reference {
            same += 1;
            "same"
        } else if case.differs.is_some() {
            "differs (deliberate)"
        } else {
            "DIFFERS"
        };
        println!("{:<40} {verdict}", case.name);
        recorded.insert(case.name.to_string(), reference);
    }
    drop(stdin);
    child.wait()?;
    write_fixture(&manifest, &recorded)?;
    println!("{same}/{total} byte-for-byte identical to the reference");
    Ok(())
}

fn write_fixture(manifest: &Path, recorded: &Recorded) -> Result<(), BoxError> {
    let path = manifest.join(support::FIXTURE);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut text = serde_json::to_string_pretty(recorded)?;
    text.push('\n');
    std::fs::write(&path, text)?;
    println!("wrote {}", path.display());
    Ok(())
}
