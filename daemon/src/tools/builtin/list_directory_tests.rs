use super::*;
use crate::tools::builtin::test_util::{Ws, run, text_of};

fn tool() -> ListDirectoryTool {
    ListDirectoryTool::new()
}

fn fixture() -> Ws {
    let ws = Ws::new();
    ws.write("b.txt", "12345");
    ws.write("a.rs", "x".repeat(2048));
    ws.write("zdir/x", "");
    ws.write("adir/y", "");
    ws.write("build.log", "log");
    ws.write("secret.env", "k");
    ws.write(".env", "KEY=1");
    ws.write("gha-creds-1.json", "{}");
    ws.write("node_modules/m/index.js", "");
    ws.write(".gitignore", "*.log\n");
    ws.write(".geminiignore", "*.env\n");
    std::fs::create_dir(ws.root.join(".git")).unwrap();
    ws
}

#[tokio::test]
async fn lists_dirs_first_with_sizes_and_ignored_count() {
    let ws = fixture();
    let r = run(&tool(), &ws.ctx, json!({"path": ws.p("")}))
        .await
        .unwrap();
    let expected = format!(
        "Directory listing for {}:\n[DIR] adir\n[DIR] link_out\n[DIR] zdir\n.geminiignore (6 bytes)\n.gitignore (6 bytes)\na.rs (2.0 KB)\nb.txt (5 bytes)\n\n(2 ignored)",
        ws.root.display()
    );
    assert_eq!(text_of(&r), expected);
}

#[tokio::test]
async fn filtering_options_and_globs() {
    let ws = fixture();
    let r = run(
        &tool(),
        &ws.ctx,
        json!({
            "path": ws.p(""),
            "ignore": ["*.rs", "?dir"],
            "file_filtering_options": {"respect_git_ignore": false, "respect_gemini_ignore": false}
        }),
    )
    .await
    .unwrap();
    let t = text_of(&r);
    // Sensitive entries are never listed, nor counted.
    for hidden in [".git", ".env", "gha-creds-1.json", "node_modules"] {
        let listed = t
            .lines()
            .any(|l| l == format!("[DIR] {hidden}") || l.starts_with(&format!("{hidden} (")));
        assert!(!listed, "{hidden}: {t}");
    }
    assert!(t.contains("build.log"));
    assert!(t.contains("secret.env"));
    assert!(!t.contains("a.rs"));
    assert!(!t.contains("adir"));
    assert!(t.ends_with("(3 ignored)"), "{t}");
}

#[tokio::test]
async fn empty_directory() {
    let ws = Ws::new();
    std::fs::create_dir(ws.root.join("empty")).unwrap();
    let r = run(&tool(), &ws.ctx, json!({"path": ws.p("empty")}))
        .await
        .unwrap();
    assert_eq!(
        text_of(&r),
        format!("Directory {} is empty.", ws.root.join("empty").display())
    );
}

#[tokio::test]
async fn bad_inputs_fail_clearly() {
    let ws = fixture();
    let cases = [
        (
            json!({"path": "adir"}),
            ToolErrorKind::PathNotAllowed,
            "absolute",
        ),
        (
            json!({"path": ws.outside.display().to_string()}),
            ToolErrorKind::PathNotAllowed,
            "outside",
        ),
        (
            json!({"path": ws.p("link_out")}),
            ToolErrorKind::PathNotAllowed,
            "outside",
        ),
        (
            json!({"path": ws.p("nope")}),
            ToolErrorKind::NotFound,
            "not found",
        ),
        (
            json!({"path": ws.p("b.txt")}),
            ToolErrorKind::InvalidParams,
            "not a directory",
        ),
        (
            json!({"path": ws.p(""), "ignore": ["a[b"]}),
            ToolErrorKind::InvalidParams,
            "`ignore`",
        ),
        (
            json!({"path": ws.p(""), "ignore": "*.rs"}),
            ToolErrorKind::InvalidParams,
            "`ignore`",
        ),
        (
            json!({}),
            ToolErrorKind::InvalidParams,
            "`path` is required",
        ),
    ];
    for (args, kind, needle) in cases {
        let err = run(&tool(), &ws.ctx, args.clone()).await.unwrap_err();
        assert_eq!(err.kind, kind, "{args}: {err}");
        assert!(err.message.contains(needle), "{args}: {err}");
    }
}
