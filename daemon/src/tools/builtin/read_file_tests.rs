use serde_json::json;

use super::*;
use crate::tools::builtin::test_util::{Ws, err_kind, run, text_of};

fn tool() -> ReadFileTool {
    ReadFileTool::new()
}

#[tokio::test]
async fn reads_small_text_without_line_numbers() {
    let ws = Ws::new();
    ws.write("a.txt", "alpha\nbeta\n");
    let r = run(&tool(), &ws.ctx, json!({"absolute_path": ws.p("a.txt")}))
        .await
        .unwrap();
    assert_eq!(text_of(&r), "alpha\nbeta");
    assert_eq!(r.summary.as_deref(), Some("Read a.txt"));
}

#[tokio::test]
async fn pages_large_files_and_says_how_to_continue() {
    let ws = Ws::new();
    let body: String = (0..2500).map(|i| format!("l{i}\n")).collect();
    ws.write("big.txt", &body);
    let r = run(&tool(), &ws.ctx, json!({"absolute_path": ws.p("big.txt")}))
        .await
        .unwrap();
    let t = text_of(&r);
    assert!(
        t.starts_with("[File content truncated: showing lines 1-2000 of 2500"),
        "{t}"
    );
    assert!(t.contains("offset=2000"));
    assert!(t.ends_with("l1999"));
    let r = run(
        &tool(),
        &ws.ctx,
        json!({"absolute_path": ws.p("big.txt"), "offset": 2000, "limit": 10}),
    )
    .await
    .unwrap();
    let t = text_of(&r);
    assert!(t.contains("showing lines 2001-2010 of 2500"), "{t}");
    assert!(t.contains("offset=2010"));
    assert!(t.ends_with("l2000\nl2001\nl2002\nl2003\nl2004\nl2005\nl2006\nl2007\nl2008\nl2009"));
    // The last page says it is partial (offset > 0) but needs no next offset.
    let r = run(
        &tool(),
        &ws.ctx,
        json!({"absolute_path": ws.p("big.txt"), "offset": 2490}),
    )
    .await
    .unwrap();
    let t = text_of(&r);
    assert!(t.contains("showing lines 2491-2500 of 2500"), "{t}");
    assert!(!t.contains("offset="));
}

#[tokio::test]
async fn cuts_long_lines_on_char_boundaries() {
    let ws = Ws::new();
    let long = "é".repeat(3000);
    ws.write("long.txt", format!("{long}\nshort\n"));
    let r = run(&tool(), &ws.ctx, json!({"absolute_path": ws.p("long.txt")}))
        .await
        .unwrap();
    let t = text_of(&r);
    assert!(t.contains(&format!("{} ... [line truncated]\nshort", "é".repeat(2000))));
    assert!(t.starts_with("[File content truncated"));
}

#[tokio::test]
async fn media_is_inline_data_and_binary_is_not_shown() {
    let ws = Ws::new();
    ws.write("pic.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    ws.write("doc.pdf", b"%PDF-1.4\n");
    ws.write("blob.dat", b"\x7fELF\x02\x01\x01\0\0\0\0");
    ws.write("icon.svg", "<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n");
    let r = run(&tool(), &ws.ctx, json!({"absolute_path": ws.p("pic.png")}))
        .await
        .unwrap();
    match &r.llm_content[0] {
        ContentPart::InlineData { mime_type, data } => {
            assert_eq!(mime_type, "image/png");
            assert_eq!(data, "iVBORw0KGgoAAAANSUhEUg==");
        }
        other => panic!("{other:?}"),
    }
    let r = run(&tool(), &ws.ctx, json!({"absolute_path": ws.p("doc.pdf")}))
        .await
        .unwrap();
    assert!(
        matches!(&r.llm_content[0], ContentPart::InlineData { mime_type, .. } if mime_type == "application/pdf")
    );
    let r = run(&tool(), &ws.ctx, json!({"absolute_path": ws.p("blob.dat")}))
        .await
        .unwrap();
    assert!(text_of(&r).starts_with("Cannot display content of binary file"));
    let r = run(&tool(), &ws.ctx, json!({"absolute_path": ws.p("icon.svg")}))
        .await
        .unwrap();
    assert!(text_of(&r).starts_with("<svg"));
}

#[tokio::test]
async fn invalid_utf8_is_read_lossily() {
    let ws = Ws::new();
    ws.write("latin1.txt", b"caf\xe9\nna\xefve\n");
    let r = run(
        &tool(),
        &ws.ctx,
        json!({"absolute_path": ws.p("latin1.txt")}),
    )
    .await
    .unwrap();
    assert_eq!(text_of(&r), "caf\u{fffd}\nna\u{fffd}ve");
}

#[tokio::test]
async fn empty_file_and_crlf() {
    let ws = Ws::new();
    ws.write("empty.txt", "");
    ws.write("crlf.txt", "a\r\nb\r\n");
    let r = run(
        &tool(),
        &ws.ctx,
        json!({"absolute_path": ws.p("empty.txt")}),
    )
    .await
    .unwrap();
    assert_eq!(text_of(&r), "");
    let r = run(&tool(), &ws.ctx, json!({"absolute_path": ws.p("crlf.txt")}))
        .await
        .unwrap();
    assert_eq!(text_of(&r), "a\nb");
}

#[tokio::test]
async fn bad_inputs_fail_clearly() {
    let ws = Ws::new();
    ws.write("ok.txt", "x\n");
    ws.write("dir/inner.txt", "x\n");
    ws.write(".geminiignore", "private/\n*.key\n");
    ws.write("private/notes.txt", "hidden\n");
    ws.write("id.key", "k\n");
    let huge = ws.root.join("huge.txt");
    let f = std::fs::File::create(&huge).unwrap();
    f.set_len(MAX_FILE_BYTES + 1).unwrap();
    let fifo_status = std::process::Command::new("mkfifo")
        .arg(ws.p("pipe"))
        .status()
        .unwrap();
    assert!(fifo_status.success());
    let cases = [
        (
            json!({"absolute_path": ws.p("pipe")}),
            ToolErrorKind::InvalidParams,
            "not a regular file",
        ),
        (
            json!({"absolute_path": "ok.txt"}),
            ToolErrorKind::PathNotAllowed,
            "absolute",
        ),
        (
            json!({"absolute_path": ws.outside.join("secret.txt").display().to_string()}),
            ToolErrorKind::PathNotAllowed,
            "outside",
        ),
        (
            json!({"absolute_path": ws.p("link_out/secret.txt")}),
            ToolErrorKind::PathNotAllowed,
            "outside",
        ),
        (
            json!({"absolute_path": ws.p("missing.txt")}),
            ToolErrorKind::NotFound,
            "not found",
        ),
        (
            json!({"absolute_path": ws.p("dir")}),
            ToolErrorKind::InvalidParams,
            "directory",
        ),
        (
            json!({"absolute_path": ws.p("private/notes.txt")}),
            ToolErrorKind::PathNotAllowed,
            ".geminiignore",
        ),
        (
            json!({"absolute_path": ws.p("id.key")}),
            ToolErrorKind::PathNotAllowed,
            ".geminiignore",
        ),
        (
            json!({"absolute_path": ws.p("huge.txt")}),
            ToolErrorKind::InvalidParams,
            "20 MB",
        ),
        (
            json!({"absolute_path": ws.p("ok.txt"), "offset": 5}),
            ToolErrorKind::InvalidParams,
            "`offset`",
        ),
        (
            json!({"absolute_path": ws.p("ok.txt"), "offset": -1}),
            ToolErrorKind::InvalidParams,
            "`offset`",
        ),
        (
            json!({"absolute_path": ws.p("ok.txt"), "limit": 0}),
            ToolErrorKind::InvalidParams,
            "`limit`",
        ),
        (
            json!({"absolute_path": 7}),
            ToolErrorKind::InvalidParams,
            "`absolute_path`",
        ),
        (
            json!({}),
            ToolErrorKind::InvalidParams,
            "`absolute_path` is required",
        ),
    ];
    for (args, kind, needle) in cases {
        let err = run(&tool(), &ws.ctx, args.clone()).await.unwrap_err();
        assert_eq!(err.kind, kind, "{args}: {err}");
        assert!(err.message.contains(needle), "{args}: {err}");
    }
    assert_eq!(
        err_kind(run(&tool(), &ws.ctx, json!("not an object")).await),
        ToolErrorKind::InvalidParams
    );
}

#[tokio::test]
async fn cancelled_before_start() {
    let ws = Ws::new();
    ws.write("a.txt", "x");
    let call = tool()
        .build(&ws.ctx, &json!({"absolute_path": ws.p("a.txt")}))
        .unwrap();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let err = call
        .execute(cancel, OutputSink::discard())
        .await
        .unwrap_err();
    assert_eq!(err.kind, ToolErrorKind::Cancelled);
}
