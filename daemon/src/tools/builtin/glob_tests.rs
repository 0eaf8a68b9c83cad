//! Tests for `glob` on real temp dirs.

use std::fs::File;

use serde_json::json;

use super::super::contract::ContentPart;
use super::*;

struct Fx {
    _dir: tempfile::TempDir,
    ctx: ToolContext,
    root: PathBuf,
}

fn set_age(path: &Path, age: Duration) {
    let f = File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - age).unwrap();
}

fn fixture() -> Fx {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("ws");
    let old = Duration::from_secs(3 * 24 * 3600);
    for (rel, age) in [
        ("b.rs", old),
        ("a.rs", old),
        ("src/Main.RS", old),
        ("src/new.rs", Duration::from_secs(60)),
        ("src/newer.rs", Duration::from_secs(5)),
        ("src/notes.md", old),
        ("target/gen.rs", old),
        ("private/key.rs", old),
    ] {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "x").unwrap();
        set_age(&p, age);
    }
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    std::fs::write(root.join(".geminiignore"), "private/\n").unwrap();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    std::os::unix::fs::symlink(base.join("outside"), root.join("link_out")).unwrap();
    Fx {
        ctx: ToolContext::new(&root).unwrap(),
        root,
        _dir: dir,
    }
}

async fn run(fx: &Fx, args: Value) -> Result<String, ToolError> {
    let inv = GlobTool::new().build(&fx.ctx, &args)?;
    let r = inv
        .execute(CancellationToken::new(), OutputSink::discard())
        .await?;
    match &r.llm_content[0] {
        ContentPart::Text { text } => Ok(text.clone()),
        other => panic!("unexpected {other:?}"),
    }
}

fn listed(out: &str, root: &Path) -> Vec<String> {
    let prefix = format!("{}/", root.display());
    out.lines()
        .skip(1)
        .map(|l| l.strip_prefix(&prefix).unwrap_or(l).to_owned())
        .collect()
}

#[tokio::test]
async fn recent_first_then_alphabetical_case_insensitive() {
    let fx = fixture();
    let out = run(&fx, json!({"pattern": "**/*.rs"})).await.unwrap();
    assert!(
        out.starts_with("Found 5 file(s) matching \"**/*.rs\" within "),
        "{out}"
    );
    assert_eq!(
        listed(&out, &fx.root),
        ["src/newer.rs", "src/new.rs", "a.rs", "b.rs", "src/Main.RS"]
    );
    let out = run(&fx, json!({"pattern": "**/*.rs", "case_sensitive": true}))
        .await
        .unwrap();
    assert!(!out.contains("Main.RS"), "{out}");
}

#[tokio::test]
async fn patterns_are_relative_to_the_search_dir() {
    let fx = fixture();
    let out = run(&fx, json!({"pattern": "*.rs"})).await.unwrap();
    assert_eq!(listed(&out, &fx.root), ["a.rs", "b.rs"]);
    let src = fx.root.join("src").display().to_string();
    let out = run(&fx, json!({"pattern": "*.md", "path": src}))
        .await
        .unwrap();
    assert_eq!(listed(&out, &fx.root), ["src/notes.md"]);
    let abs = format!("{}/src/*.md", fx.root.display());
    let out = run(&fx, json!({"pattern": abs})).await.unwrap();
    assert_eq!(listed(&out, &fx.root), ["src/notes.md"]);
}

#[tokio::test]
async fn git_ignore_is_optional_gemini_ignore_is_not() {
    let fx = fixture();
    let out = run(
        &fx,
        json!({"pattern": "**/*.rs", "respect_git_ignore": false}),
    )
    .await
    .unwrap();
    assert!(out.contains("target/gen.rs"), "{out}");
    assert!(!out.contains("private/key.rs"), "{out}");
}

#[tokio::test]
async fn zero_matches_is_a_plain_message() {
    let fx = fixture();
    let out = run(&fx, json!({"pattern": "**/*.zig"})).await.unwrap();
    assert_eq!(
        out,
        format!(
            "No files found matching pattern \"**/*.zig\" within {}",
            fx.root.display()
        )
    );
}

#[test]
fn bad_inputs_are_refused() {
    let fx = fixture();
    let tool = GlobTool::new();
    let r = fx.root.display().to_string();
    let cases = [
        (
            json!({"pattern": ""}),
            ToolErrorKind::InvalidParams,
            "pattern",
        ),
        (
            json!({"pattern": "  "}),
            ToolErrorKind::InvalidParams,
            "pattern",
        ),
        (
            json!({"pattern": "a[b"}),
            ToolErrorKind::InvalidParams,
            "pattern",
        ),
        (
            json!({"pattern": "../*"}),
            ToolErrorKind::PathNotAllowed,
            "pattern",
        ),
        (
            json!({"pattern": "src/../../x"}),
            ToolErrorKind::PathNotAllowed,
            "pattern",
        ),
        (
            json!({"pattern": "/etc/*"}),
            ToolErrorKind::PathNotAllowed,
            "pattern",
        ),
        (
            json!({"pattern": format!("{r}x/*")}),
            ToolErrorKind::PathNotAllowed,
            "pattern",
        ),
        (
            json!({"pattern": "*", "path": "src"}),
            ToolErrorKind::PathNotAllowed,
            "path",
        ),
        (
            json!({"pattern": "*", "path": format!("{r}/../outside")}),
            ToolErrorKind::PathNotAllowed,
            "path",
        ),
        (
            json!({"pattern": "*", "path": format!("{r}/link_out")}),
            ToolErrorKind::PathNotAllowed,
            "path",
        ),
        (
            json!({"pattern": "*", "path": format!("{r}/missing")}),
            ToolErrorKind::NotFound,
            "path",
        ),
        (
            json!({"pattern": "*", "path": format!("{r}/a.rs")}),
            ToolErrorKind::InvalidParams,
            "path",
        ),
        (
            json!({"pattern": "*", "case_sensitive": "yes"}),
            ToolErrorKind::InvalidParams,
            "case_sensitive",
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
