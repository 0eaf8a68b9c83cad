//! Atomic writes: `write_file` and `replace` write a temp file in the same
//! directory and rename it over the target. Killing the daemon (kill -9)
//! at different moments of a large write leaves the target with either
//! the old or the new content in full, never a mix; a temp file an
//! interrupted write left behind is never shown by list_directory, glob,
//! read_many_files or search_file_content; and a rewrite keeps the mode.

use std::os::unix::fs::PermissionsExt;

use geminid_protocol::tool::CallState;
use geminid_tests::*;
use serde_json::json;

/// `lines` lines of 8 KiB of `c`: several MB, but few lines, so the diff
/// stays cheap and the time goes into moving bytes.
fn content(c: char, lines: usize) -> String {
    let line: String = std::iter::repeat_n(c, 8 * 1024).collect();
    format!("{line}\n").repeat(lines)
}

/// Names of temp files of ours anywhere under the workspace.
fn temps_on_disk(d: &TestDaemon) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![d.workspace.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else if name.starts_with(".geminid-tmp-") {
                out.push(name);
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_write_killed_midway_leaves_old_or_new_content_whole() {
    let mut d = TestDaemon::start();
    let target = d.workspace.join("sub/big.txt");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    // One temp file that a crash left for sure, so hiding is always tested.
    std::fs::write(d.workspace.join("sub/.geminid-tmp-crashed"), "half").unwrap();
    let old = content('o', 700);
    let new = content('n', 700);
    // How long one such write takes here, start to answer: the kills are
    // spread around it, so some land before, some during, some after.
    let took = {
        let c = d.client().await;
        let sid = yolo_session(&c, &d.workspace).await;
        let measure = d.workspace.join("sub/measure.txt");
        let args = json!({"file_path": measure.display().to_string(), "content": new});
        let t0 = std::time::Instant::now();
        let done = call_and_wait(&c, &sid, "write_file", args).await;
        assert_eq!(done.outcome.unwrap().state, CallState::Success);
        std::fs::remove_file(measure).unwrap();
        t0.elapsed()
    };
    let (mut kept_old, mut got_new) = (0, 0);
    let fractions = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.85, 1.0];
    for (round, delay) in fractions.map(|f| took.mul_f64(f)).into_iter().enumerate() {
        std::fs::write(&target, &old).unwrap();
        let c = d.client().await;
        let sid = yolo_session(&c, &d.workspace).await;
        let mut raw = d.raw();
        raw.initialize();
        let call = json!({"jsonrpc": "2.0", "id": 99, "method": "tool.call", "params": {
            "sessionId": sid, "name": "write_file", "wait": false,
            "args": {"file_path": target.display().to_string(), "content": new}}});
        raw.send_line(&call.to_string());
        tokio::time::sleep(delay).await;
        d.kill9();
        let now = std::fs::read_to_string(&target).unwrap();
        assert!(
            now == old || now == new,
            "round {round} ({delay:?}): a torn file of {} bytes",
            now.len()
        );
        if now == old {
            kept_old += 1;
        } else {
            got_new += 1;
        }
        d.spawn();
    }
    println!(
        "a write took {took:?}; kills: {kept_old} kept the old content, {got_new} had the new; \
         temp files on disk: {:?}",
        temps_on_disk(&d)
    );

    // Whatever an interrupted write left behind is invisible to the tools.
    let c = d.client().await;
    let sid = yolo_session(&c, &d.workspace).await;
    let ws = d.workspace.display().to_string();
    let looks = [
        ("list_directory", json!({"path": format!("{ws}/sub")})),
        ("glob", json!({"pattern": "**/*"})),
        ("glob", json!({"pattern": "**/.*"})),
        ("read_many_files", json!({"paths": ["**"]})),
        ("search_file_content", json!({"pattern": "half"})),
    ];
    for (tool, args) in looks {
        let done = call_and_wait(&c, &sid, tool, args.clone())
            .await
            .outcome
            .unwrap();
        let text = serde_json::to_string(&done).unwrap();
        assert!(
            !text.contains(".geminid-tmp-"),
            "{tool} {args} shows a temp file: {text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn rewrites_keep_the_mode_and_leave_no_temp_file() {
    let d = TestDaemon::start();
    let c = d.client().await;
    let sid = yolo_session(&c, &d.workspace).await;
    let path = d.workspace.join("script.sh");
    std::fs::write(&path, "echo one\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o750)).unwrap();
    let p = path.display().to_string();
    let steps = [
        (
            "write_file",
            json!({"file_path": p, "content": "echo two\n"}),
            "echo two\n",
        ),
        (
            "replace",
            json!({"file_path": p, "old_string": "two", "new_string": "three"}),
            "echo three\n",
        ),
    ];
    let ino = || std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&path).unwrap());
    for (tool, args, want) in steps {
        let before = ino();
        let done = call_and_wait(&c, &sid, tool, args).await.outcome.unwrap();
        assert_eq!(done.state, CallState::Success, "{tool}: {done:#?}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), want);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o750, "{tool} changed the mode");
        // A new inode: the content was renamed into place (the old file
        // still existed then), not written into the old file.
        assert_ne!(before, ino(), "{tool} rewrote the file in place");
    }
    assert!(temps_on_disk(&d).is_empty(), "{:?}", temps_on_disk(&d));
}
