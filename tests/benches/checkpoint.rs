//! The checkpoint's cost per edit on a 10,000-file repository: what the
//! daemon does around each edit call (`record_before`, the edit,
//! `record_after`), timed without the edit, against what 0.61 does before
//! each edit (`git add .` + `git commit` in a shadow repository of the
//! whole workspace), on the same tree.
//!
//! Run with `cargo bench -p geminid-tests --bench checkpoint`.
//! `CHECKPOINT_BENCH_N` (default 200) edits are timed for geminid, 5 for
//! the shadow repository; figures are p50 (and p90) in microseconds.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use geminid::checkpoints::{CheckpointStore, Touched};

const FILES: usize = 10_000;

fn make_tree(root: &Path) {
    for i in 0..FILES {
        let dir = root.join(format!("pkg{:02}/mod{:02}", i % 50, (i / 50) % 20));
        std::fs::create_dir_all(&dir).expect("dir");
        let body = format!("// file {i}\n{}", "let x = 1;\n".repeat(90));
        std::fs::write(dir.join(format!("f{i}.rs")), body).expect("file");
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at].as_secs_f64() * 1e6
}

fn git(dir: &Path, work: &Path, args: &[&str]) -> bool {
    Command::new("git")
        .arg("--git-dir")
        .arg(dir)
        .arg("--work-tree")
        .arg(work)
        .args(args)
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@b")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@b")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn main() {
    geminid_tests::print_machine();
    let n: usize = std::env::var("CHECKPOINT_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let tmp = tempfile::tempdir().expect("tempdir");
    let work = tmp.path().join("repo");
    make_tree(&work);
    let store = CheckpointStore::new(tmp.path().join("checkpoints"));
    let roots = vec![geminid::tools::PinnedRoot::open(&work).expect("pin the repository")];
    let session = "0".repeat(32);
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let file: PathBuf = work.join(format!(
            "pkg{:02}/mod{:02}/f{}.rs",
            i % 50,
            (i / 50) % 20,
            i
        ));
        let paths = vec![file.clone()];
        let seq = i as u64 + 1;
        let start = Instant::now();
        store
            .record_before(
                &session,
                seq,
                &format!("call-{seq}"),
                Some("turn-1"),
                "replace",
                Touched {
                    roots: &roots,
                    paths: &paths,
                },
            )
            .expect("record");
        let before = start.elapsed();
        std::fs::write(&file, format!("edited {i}\n")).expect("edit");
        let start = Instant::now();
        store
            .record_after(
                &session,
                seq,
                Touched {
                    roots: &roots,
                    paths: &paths,
                },
            )
            .expect("after");
        times.push(before + start.elapsed());
    }
    times.sort();
    println!(
        "geminid checkpoint per edit, {FILES}-file repository: p50 {:.0} µs, p90 {:.0} µs (n={n})",
        percentile(&times, 0.5),
        percentile(&times, 0.9)
    );

    let shadow = tmp.path().join("shadow.git");
    if !git(&shadow, &work, &["init", "-q"]) {
        println!("git not found: shadow-repository figure skipped");
        return;
    }
    // The first snapshot hashes everything (0.61's first edit in a project).
    let start = Instant::now();
    git(&shadow, &work, &["add", "."]);
    git(
        &shadow,
        &work,
        &["commit", "-q", "--no-verify", "-m", "initial"],
    );
    let first = start.elapsed();
    let mut git_times = Vec::new();
    for i in 0..5 {
        let file = work.join(format!(
            "pkg{:02}/mod{:02}/f{}.rs",
            i % 50,
            (i / 50) % 20,
            i + 1000
        ));
        std::fs::write(&file, format!("edited again {i}\n")).expect("edit");
        let start = Instant::now();
        git(&shadow, &work, &["add", "."]);
        git(
            &shadow,
            &work,
            &["commit", "-q", "--no-verify", "-m", "snapshot"],
        );
        git_times.push(start.elapsed());
    }
    git_times.sort();
    println!(
        "0.61-style shadow git snapshot (add . + commit), same repository: first {:.0} µs, then p50 {:.0} µs (n=5)",
        first.as_secs_f64() * 1e6,
        percentile(&git_times, 0.5)
    );
}
