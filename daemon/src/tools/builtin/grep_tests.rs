//! Tests for `search_file_content` on real temp dirs.

use serde_json::json;

use super::super::contract::ContentPart;
use super::*;

struct Fx {
    _dir: tempfile::TempDir,
    ctx: ToolContext,
    root: PathBuf,
}

fn fixture() -> Fx {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("ws");
    let w = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w("src/main.rs", "fn main() {\n    let Needle = 1;\n}\n");
    w(
        "src/lib.rs",
        "// needle here\npub fn f() {}\n// and NEEDLE again\n",
    );
    w("docs/readme.md", "a needle in docs\n");
    w("target/out.rs", "needle in ignored build output\n");
    w("secret/key.txt", "needle in geminiignored file\n");
    w("bin/blob.bin", "needle\0binary\n");
    w(".gitignore", "target/\n");
    w(".geminiignore", "secret/\n");
    std::fs::create_dir_all(base.join("outside")).unwrap();
    std::fs::write(base.join("outside/x.txt"), "needle outside\n").unwrap();
    std::os::unix::fs::symlink(base.join("outside"), root.join("link_out")).unwrap();
    Fx {
        ctx: ToolContext::new(&root).unwrap(),
        root,
        _dir: dir,
    }
}

async fn run_with(tool: &GrepTool, fx: &Fx, args: Value) -> Result<String, ToolError> {
    let inv = tool.build(&fx.ctx, &args)?;
    let r = inv
        .execute(CancellationToken::new(), OutputSink::discard())
        .await?;
    match &r.llm_content[0] {
        ContentPart::Text { text } => Ok(text.clone()),
        other => panic!("unexpected {other:?}"),
    }
}

async fn run(fx: &Fx, args: Value) -> Result<String, ToolError> {
    run_with(&GrepTool::default(), fx, args).await
}

#[tokio::test]
async fn finds_matches_grouped_and_sorted() {
    let fx = fixture();
    let out = run(&fx, json!({"pattern": "needle"})).await.unwrap();
    let expected = format!(
        "Found 4 matches for pattern \"needle\" in path \"{}\":\n---\n\
         File: docs/readme.md\nL1: a needle in docs\n---\n\
         File: src/lib.rs\nL1: // needle here\nL3: // and NEEDLE again\n---\n\
         File: src/main.rs\nL2:     let Needle = 1;\n---",
        fx.root.display()
    );
    assert_eq!(out, expected);
}

#[tokio::test]
async fn include_and_path_narrow_the_search() {
    let fx = fixture();
    let out = run(&fx, json!({"pattern": "needle", "include": "*.md"}))
        .await
        .unwrap();
    assert!(out.contains("File: docs/readme.md"), "{out}");
    assert!(!out.contains("src/"), "{out}");
    assert!(out.contains("(filter: \"*.md\")"), "{out}");
    let src = fx.root.join("src").display().to_string();
    let out = run(&fx, json!({"pattern": "^pub fn", "path": src}))
        .await
        .unwrap();
    assert!(out.starts_with("Found 1 match "), "{out}");
    assert!(out.contains("File: lib.rs\nL2: pub fn f() {}"), "{out}");
}

#[tokio::test]
async fn caps_matches_and_says_so() {
    let fx = fixture();
    let many: String = (0..50).map(|i| format!("hit {i}\n")).collect();
    std::fs::write(fx.root.join("many.txt"), many).unwrap();
    let tool = GrepTool::new(10);
    let out = run_with(&tool, &fx, json!({"pattern": "^hit"}))
        .await
        .unwrap();
    assert!(out.starts_with("Found at least 10 matches"), "{out}");
    assert!(out.contains("results limited to 10 matches"), "{out}");
    assert_eq!(out.lines().filter(|l| l.starts_with('L')).count(), 10);
    // Exactly the cap is not "capped".
    let tool = GrepTool::new(50);
    let out = run_with(&tool, &fx, json!({"pattern": "^hit"}))
        .await
        .unwrap();
    assert!(out.starts_with("Found 50 matches"), "{out}");
}

#[tokio::test]
async fn zero_matches_is_a_plain_message() {
    let fx = fixture();
    let out = run(&fx, json!({"pattern": "absent_[0-9]+"})).await.unwrap();
    assert_eq!(
        out,
        format!(
            "No matches found for pattern \"absent_[0-9]+\" in path \"{}\".",
            fx.root.display()
        )
    );
}

#[tokio::test]
async fn cancel_returns_cancelled() {
    let fx = fixture();
    let tool = GrepTool::default();
    let inv = tool.build(&fx.ctx, &json!({"pattern": "x"})).unwrap();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let err = inv
        .execute(cancel, OutputSink::discard())
        .await
        .unwrap_err();
    assert_eq!(err.kind, ToolErrorKind::Cancelled);
}

#[test]
fn bad_inputs_are_refused() {
    let fx = fixture();
    let tool = GrepTool::default();
    let r = fx.root.display().to_string();
    let cases = [
        (
            json!({"pattern": ""}),
            ToolErrorKind::InvalidParams,
            "pattern",
        ),
        (
            json!({"pattern": "a(b"}),
            ToolErrorKind::InvalidParams,
            "pattern",
        ),
        (
            json!({"pattern": "a\\nb"}),
            ToolErrorKind::InvalidParams,
            "pattern",
        ),
        (json!({"path": r}), ToolErrorKind::InvalidParams, "pattern"),
        (
            json!({"pattern": "x", "path": "src"}),
            ToolErrorKind::PathNotAllowed,
            "path",
        ),
        (
            json!({"pattern": "x", "path": format!("{r}/../outside")}),
            ToolErrorKind::PathNotAllowed,
            "path",
        ),
        (
            json!({"pattern": "x", "path": format!("{r}/link_out")}),
            ToolErrorKind::PathNotAllowed,
            "path",
        ),
        (
            json!({"pattern": "x", "path": format!("{r}/missing")}),
            ToolErrorKind::NotFound,
            "path",
        ),
        (
            json!({"pattern": "x", "path": format!("{r}/src/main.rs")}),
            ToolErrorKind::InvalidParams,
            "path",
        ),
        (
            json!({"pattern": "x", "include": "{a"}),
            ToolErrorKind::InvalidParams,
            "include",
        ),
    ];
    for (args, kind, word) in cases {
        let err = tool
            .build(&fx.ctx, &args)
            .err()
            .unwrap_or_else(|| panic!("{args} accepted"));
        assert_eq!(err.kind, kind, "{args}: {}", err.message);
        assert!(err.message.contains(word), "{args}: {}", err.message);
    }
}
