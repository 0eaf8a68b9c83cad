use serde_json::json;

use super::*;
use crate::tools::builtin::test_util::{Ws, run, snapshot, text_of};

fn tool() -> ReplaceTool {
    ReplaceTool::new()
}

#[tokio::test]
async fn confirms_with_diff_then_edits() {
    let ws = Ws::new();
    ws.write("src/lib.rs", "fn a() {\n    1\n}\n");
    let args =
        json!({"file_path": ws.p("src/lib.rs"), "old_string": "    1\n", "new_string": "    2\n"});
    let call = tool().build(&ws.ctx, &args).unwrap();
    match call.confirmation().await.unwrap() {
        ConfirmationDetails::Edit { title, diff } => {
            assert_eq!(title, "Confirm edit: src/lib.rs");
            assert!(
                diff.diff.contains("--- a/src/lib.rs\n+++ b/src/lib.rs\n"),
                "{}",
                diff.diff
            );
            assert!(diff.diff.contains("-    1\n+    2\n"));
        }
        other => panic!("{other:?}"),
    }
    let r = call
        .execute(CancellationToken::new(), OutputSink::discard())
        .await
        .unwrap();
    assert!(text_of(&r).contains("1 replacement"));
    assert!(matches!(r.display, ToolDisplay::FileDiff(_)));
    assert_eq!(ws.read("src/lib.rs"), "fn a() {\n    2\n}\n");
}

#[tokio::test]
async fn flexible_match_is_reported() {
    let ws = Ws::new();
    ws.write("a.py", "def f():\n    return 1\n");
    let r = run(
        &tool(),
        &ws.ctx,
        json!({"file_path": ws.p("a.py"), "old_string": "return 1", "new_string": "return 2"}),
    )
    .await
    .unwrap();
    assert!(!text_of(&r).contains("whitespace"));
    let r = run(
        &tool(),
        &ws.ctx,
        json!({"file_path": ws.p("a.py"), "old_string": "def f():\nreturn 2", "new_string": "def g():\n    return 3"}),
    )
    .await
    .unwrap();
    assert!(text_of(&r).contains("ignoring each line's surrounding whitespace"));
    assert_eq!(ws.read("a.py"), "def g():\n    return 3\n");
}

#[tokio::test]
async fn empty_old_string_creates_missing_file_with_parents() {
    let ws = Ws::new();
    let r = run(
        &tool(),
        &ws.ctx,
        json!({"file_path": ws.p("new/deep/f.txt"), "old_string": "", "new_string": "hello\n"}),
    )
    .await
    .unwrap();
    assert!(text_of(&r).contains("Created new file"));
    assert_eq!(ws.read("new/deep/f.txt"), "hello\n");
}

#[tokio::test]
async fn bad_inputs_fail_and_write_nothing() {
    let ws = Ws::new();
    ws.write("a.txt", "one two two three\n");
    ws.write("dir/x", "");
    ws.write("bin.dat", b"\0\x01\x02binary");
    ws.write("latin1.txt", b"caf\xe9\n");
    let huge = std::fs::File::create(ws.root.join("huge.txt")).unwrap();
    huge.set_len(MAX_EDIT_BYTES + 1).unwrap();
    let fifo_status = std::process::Command::new("mkfifo")
        .arg(ws.p("pipe"))
        .status()
        .unwrap();
    assert!(fifo_status.success());
    let before = snapshot(ws.root.parent().unwrap());
    let a = ws.p("a.txt");
    let cases = [
        (
            json!({"file_path": "a.txt", "old_string": "one", "new_string": "1"}),
            ToolErrorKind::PathNotAllowed,
            "absolute",
        ),
        (
            json!({"file_path": ws.outside.join("secret.txt").display().to_string(), "old_string": "top", "new_string": "x"}),
            ToolErrorKind::PathNotAllowed,
            "outside",
        ),
        (
            json!({"file_path": ws.p("link_out/secret.txt"), "old_string": "top", "new_string": "x"}),
            ToolErrorKind::PathNotAllowed,
            "outside",
        ),
        (
            json!({"file_path": ws.p("missing.txt"), "old_string": "x", "new_string": "y"}),
            ToolErrorKind::NotFound,
            "file not found",
        ),
        (
            json!({"file_path": ws.p("dir"), "old_string": "x", "new_string": "y"}),
            ToolErrorKind::InvalidParams,
            "directory",
        ),
        (
            json!({"file_path": ws.p("huge.txt"), "old_string": "x", "new_string": "y"}),
            ToolErrorKind::InvalidParams,
            "MB limit",
        ),
        (
            json!({"file_path": ws.p("pipe"), "old_string": "x", "new_string": "y"}),
            ToolErrorKind::InvalidParams,
            "not a regular file",
        ),
        (
            json!({"file_path": ws.p("bin.dat"), "old_string": "binary", "new_string": "y"}),
            ToolErrorKind::InvalidParams,
            "binary",
        ),
        (
            json!({"file_path": ws.p("latin1.txt"), "old_string": "caf", "new_string": "y"}),
            ToolErrorKind::InvalidParams,
            "UTF-8",
        ),
        (
            json!({"file_path": a, "old_string": "zero", "new_string": "0"}),
            ToolErrorKind::InvalidParams,
            "not found",
        ),
        (
            json!({"file_path": a, "old_string": "two", "new_string": "2"}),
            ToolErrorKind::InvalidParams,
            "expected 1 occurrence of `old_string` but found 2",
        ),
        (
            json!({"file_path": a, "old_string": "one", "new_string": "1", "expected_replacements": 3}),
            ToolErrorKind::InvalidParams,
            "expected 3 occurrences of `old_string` but found 1",
        ),
        (
            json!({"file_path": a, "old_string": "one", "new_string": "one"}),
            ToolErrorKind::InvalidParams,
            "identical",
        ),
        (
            json!({"file_path": a, "old_string": "", "new_string": "x"}),
            ToolErrorKind::InvalidParams,
            "already exists",
        ),
        (
            json!({"file_path": a, "old_string": "one", "new_string": "1", "expected_replacements": 0}),
            ToolErrorKind::InvalidParams,
            "`expected_replacements`",
        ),
        (
            json!({"file_path": a, "old_string": "one"}),
            ToolErrorKind::InvalidParams,
            "`new_string` is required",
        ),
    ];
    for (args, kind, needle) in cases {
        let err = run(&tool(), &ws.ctx, args.clone()).await.unwrap_err();
        assert_eq!(err.kind, kind, "{args}: {err}");
        assert!(err.message.contains(needle), "{args}: {err}");
    }
    assert_eq!(before, snapshot(ws.root.parent().unwrap()));
}
