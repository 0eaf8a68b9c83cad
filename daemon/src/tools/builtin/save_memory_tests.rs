use serde_json::json;

use super::*;
use crate::tools::builtin::contract::ToolErrorKind;
use crate::tools::builtin::test_util::{Ws, run, text_of};

#[test]
fn adds_under_the_heading() {
    assert_eq!(add_memory("", "a"), "## Gemini Added Memories\n- a\n");
    assert_eq!(
        add_memory("# Mine\nstuff", "a"),
        "# Mine\nstuff\n\n## Gemini Added Memories\n- a\n"
    );
    assert_eq!(
        add_memory("## Gemini Added Memories\n- a\n", "b"),
        "## Gemini Added Memories\n- a\n- b\n"
    );
    assert_eq!(
        add_memory("## Gemini Added Memories\n- a\n\n## Other\n- x\n", "b"),
        "## Gemini Added Memories\n- a\n- b\n\n## Other\n- x\n"
    );
    assert_eq!(
        add_memory("## Gemini Added Memories\n- a", "b"),
        "## Gemini Added Memories\n- a\n- b\n"
    );
}

#[test]
fn facts_are_normalized() {
    assert_eq!(normalize_fact("  - - likes\n tea  "), "likes tea");
    assert_eq!(normalize_fact("* uses vim"), "uses vim");
}

#[tokio::test]
async fn saves_creating_file_and_directories() {
    let ws = Ws::new();
    let path = ws.outside.join("home/.gemini/GEMINI.md");
    let tool = SaveMemoryTool::new(path.clone());
    let call = tool
        .build(&ws.ctx, &json!({"fact": "prefers tabs"}))
        .unwrap();
    match call.confirmation().await.unwrap() {
        ConfirmationDetails::Edit { diff, .. } => {
            assert_eq!(diff.original_content, None);
            assert!(diff.diff.contains("+- prefers tabs"));
        }
        other => panic!("{other:?}"),
    }
    let r = call
        .execute(CancellationToken::new(), OutputSink::discard())
        .await
        .unwrap();
    assert!(text_of(&r).contains("prefers tabs"));
    let r = run(&tool, &ws.ctx, json!({"fact": "- uses zsh"}))
        .await
        .unwrap();
    assert!(text_of(&r).contains("\"uses zsh\""));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "## Gemini Added Memories\n- prefers tabs\n- uses zsh\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_saves_lose_nothing() {
    let ws = Ws::new();
    let path = ws.outside.join("GEMINI.md");
    std::fs::write(&path, "# Personal\nkeep me\n").unwrap();
    let tool = std::sync::Arc::new(SaveMemoryTool::new(path.clone()));
    let mut tasks = Vec::new();
    for i in 0..24 {
        let tool = tool.clone();
        let ctx = ws.ctx.clone();
        tasks.push(tokio::spawn(async move {
            run(
                tool.as_ref(),
                &ctx,
                json!({"fact": format!("fact number {i}")}),
            )
            .await
        }));
    }
    // A second tool instance (as a second session would have) on the same file.
    let other = SaveMemoryTool::new(path.clone());
    run(&other, &ws.ctx, json!({"fact": "from the other instance"}))
        .await
        .unwrap();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let content = std::fs::read_to_string(&path).unwrap();
    assert!(content.starts_with("# Personal\nkeep me\n\n## Gemini Added Memories\n"));
    for i in 0..24 {
        assert!(
            content.contains(&format!("- fact number {i}\n")),
            "{i} lost:\n{content}"
        );
    }
    assert!(content.contains("- from the other instance\n"));
    assert_eq!(content.matches(MEMORY_HEADING).count(), 1);
    assert_eq!(content.lines().filter(|l| l.starts_with("- ")).count(), 25);
}

#[tokio::test]
async fn bad_inputs_fail_and_write_nothing() {
    let ws = Ws::new();
    let path = ws.outside.join("GEMINI.md");
    let tool = SaveMemoryTool::new(path.clone());
    let cases = [
        (json!({}), "`fact` is required"),
        (json!({"fact": ""}), "`fact` must be"),
        (json!({"fact": "  -  \n "}), "`fact` must be"),
        (json!({"fact": 3}), "`fact` is invalid"),
    ];
    for (args, needle) in cases {
        let err = run(&tool, &ws.ctx, args.clone()).await.unwrap_err();
        assert_eq!(err.kind, ToolErrorKind::InvalidParams, "{args}");
        assert!(err.message.contains(needle), "{args}: {err}");
    }
    assert!(!path.exists());
    // A directory where the file should be: a clear error, nothing written.
    std::fs::create_dir(&path).unwrap();
    let err = run(&tool, &ws.ctx, json!({"fact": "x"})).await.unwrap_err();
    assert!(err.message.contains(&path.display().to_string()), "{err}");
}

/// Bypasses the in-process mutex: separate `open`s of the directory get
/// separate `flock` locks, the same as separate processes would.
#[test]
fn file_lock_alone_serializes_writers() {
    let ws = Ws::new();
    let path = ws.outside.join("locked/GEMINI.md");
    std::thread::scope(|s| {
        for t in 0..6 {
            let path = &path;
            s.spawn(move || {
                for i in 0..5 {
                    save_locked(path, &format!("t{t} i{i}"), &common::CommitGate::default())
                        .unwrap();
                }
            });
        }
    });
    let content = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        content.lines().filter(|l| l.starts_with("- t")).count(),
        30,
        "{content}"
    );
}

/// A memory file kept elsewhere behind a symlink is updated in place; the
/// link stays a link. A FIFO in its place is refused, not waited on.
#[tokio::test]
async fn a_linked_memory_file_is_written_through_and_a_fifo_refused() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(base.join("dotfiles")).unwrap();
    std::fs::create_dir_all(base.join(".gemini")).unwrap();
    std::fs::write(base.join("dotfiles/GEMINI.md"), "# Mine\n").unwrap();
    let link = base.join(".gemini/GEMINI.md");
    std::os::unix::fs::symlink(base.join("dotfiles/GEMINI.md"), &link).unwrap();
    let ws = Ws::new();
    let tool = SaveMemoryTool::new(link.clone());
    run(&tool, &ws.ctx, json!({"fact": "linked"}))
        .await
        .unwrap();
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    let text = std::fs::read_to_string(base.join("dotfiles/GEMINI.md")).unwrap();
    assert!(
        text.starts_with("# Mine\n") && text.contains("- linked\n"),
        "{text}"
    );
    let fifo = base.join("fifo/GEMINI.md");
    std::fs::create_dir_all(fifo.parent().unwrap()).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let err = run(&SaveMemoryTool::new(fifo), &ws.ctx, json!({"fact": "x"}))
        .await
        .unwrap_err();
    assert!(err.message.contains("not a regular file"), "{err}");
}
