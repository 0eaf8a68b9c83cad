use serde_json::json;

use super::*;
use crate::tools::builtin::contract::{ContentPart, ToolErrorKind};
use crate::tools::builtin::test_util::{Ws, run, text_of};

fn tool() -> ReadManyFilesTool {
    ReadManyFilesTool::new()
}

fn fixture() -> Ws {
    let ws = Ws::new();
    ws.write("src/a.rs", "fn a() {}\n");
    ws.write("src/b.rs", "fn b() {}\n");
    ws.write("src/nested/c.rs", "fn c() {}\n");
    ws.write("src/notes.md", "# notes\n");
    ws.write("src/blob.dat", b"\0\x01\x02\x03");
    ws.write("src/logo.png", b"\x89PNG\r\n\x1a\n");
    ws.write("node_modules/dep/index.js", "x\n");
    ws.write("README.md", "readme\n");
    ws.write(".env", "SECRET=1\n");
    ws.write("gen/out.rs", "generated\n");
    ws.write("private/key.rs", "hidden\n");
    ws.write(".gitignore", "gen/\n");
    ws.write(".geminiignore", "private/\n");
    ws
}

#[tokio::test]
async fn reads_directory_with_headers_sorted_and_end_marker() {
    let ws = fixture();
    let r = run(&tool(), &ws.ctx, json!({"paths": ["src"]}))
        .await
        .unwrap();
    let t = text_of(&r);
    let p = |rel: &str| ws.root.join(rel).display().to_string();
    let expected = format!(
        "--- {} ---\nfn a() {{}}\n\n--- {} ---\nfn b() {{}}\n\n--- {} ---\nfn c() {{}}\n\n--- {} ---\n# notes\n\n--- End of content ---\n\n",
        p("src/a.rs"),
        p("src/b.rs"),
        p("src/nested/c.rs"),
        p("src/notes.md")
    );
    assert!(t.starts_with(&expected), "{t}");
    assert!(t.contains("Skipped binary files (1): src/blob.dat"), "{t}");
    assert!(
        t.contains("not named explicitly or by extension (1): src/logo.png"),
        "{t}"
    );
    assert_eq!(r.llm_content.len(), 1);
}

#[tokio::test]
async fn globs_excludes_and_ignore_files() {
    let ws = fixture();
    let r = run(
        &tool(),
        &ws.ctx,
        json!({"paths": ["**/*.rs"], "exclude": ["b.rs"]}),
    )
    .await
    .unwrap();
    let t = text_of(&r);
    assert!(
        t.contains("src/a.rs ---") && t.contains("src/nested/c.rs ---"),
        "{t}"
    );
    assert!(!t.contains("b.rs ---"), "exclude by name at any depth");
    assert!(!t.contains("gen/out.rs"), ".gitignore honoured");
    assert!(!t.contains("private/key.rs"), ".geminiignore honoured");
    let r = run(
        &tool(),
        &ws.ctx,
        json!({"paths": ["."], "respect_git_ignore": false, "useDefaultExcludes": false, "recursive": true}),
    )
    .await
    .unwrap();
    let t = text_of(&r);
    assert!(t.contains("gen/out.rs ---"));
    // Sensitive paths stay out whatever the options say.
    assert!(!t.contains("node_modules/dep/index.js ---"), "{t}");
    assert!(!t.contains(".env ---"), "{t}");
    assert!(
        !t.contains("private/key.rs ---"),
        ".geminiignore always honoured"
    );
    // Defaults keep node_modules and .env out.
    let r = run(&tool(), &ws.ctx, json!({"paths": ["."]}))
        .await
        .unwrap();
    let t = text_of(&r);
    assert!(
        !t.contains("node_modules") && !t.contains(".env ---"),
        "{t}"
    );
    assert!(t.contains("README.md ---"));
}

#[tokio::test]
async fn non_recursive_directory_and_include() {
    let ws = fixture();
    let r = run(
        &tool(),
        &ws.ctx,
        json!({"paths": [ws.p("src")], "recursive": false, "include": ["README.md"]}),
    )
    .await
    .unwrap();
    let t = text_of(&r);
    assert!(t.contains("src/a.rs ---") && t.contains("README.md ---"));
    assert!(!t.contains("nested/c.rs"));
}

#[tokio::test]
async fn media_only_when_asked_for() {
    let ws = fixture();
    let r = run(
        &tool(),
        &ws.ctx,
        json!({"paths": ["src/logo.png", "src/a.rs"]}),
    )
    .await
    .unwrap();
    assert!(r.llm_content.iter().any(
        |p| matches!(p, ContentPart::InlineData { mime_type, .. } if mime_type == "image/png")
    ));
    let r = run(&tool(), &ws.ctx, json!({"paths": ["src/*.png"]}))
        .await
        .unwrap();
    assert_eq!(r.llm_content.len(), 3);
}

#[tokio::test]
async fn size_cap_names_what_was_left_out() {
    let ws = Ws::new();
    let mb = "x".repeat(1024 * 1024 - 1) + "\n";
    for i in 0..11 {
        ws.write(&format!("big/{i:02}.txt"), &mb);
    }
    let r = run(&tool(), &ws.ctx, json!({"paths": ["big"]}))
        .await
        .unwrap();
    let t = text_of(&r);
    assert!(
        t.contains("10 MB total text limit was reached (2): big/09.txt, big/10.txt"),
        "{}",
        &t[t.len() - 300..]
    );
    assert!(t.len() <= MAX_TOTAL_TEXT_BYTES + 1000);
}

#[tokio::test]
async fn nothing_found_and_bad_inputs() {
    let ws = fixture();
    let r = run(&tool(), &ws.ctx, json!({"paths": ["nope.txt", "*.zzz"]}))
        .await
        .unwrap();
    let t = text_of(&r);
    assert!(t.starts_with("No files were read"), "{t}");
    assert!(t.contains("Not found (1): nope.txt"));
    let r = run(&tool(), &ws.ctx, json!({"paths": ["private/key.rs"]}))
        .await
        .unwrap();
    assert!(text_of(&r).contains("Ignored by ignore files (1): private/key.rs"));
    // Named literally, a sensitive path is skipped and named, not read.
    let r = run(&tool(), &ws.ctx, json!({"paths": [".env", "README.md"]}))
        .await
        .unwrap();
    let t = text_of(&r);
    assert!(
        t.contains(
            "Skipped sensitive paths (.env, .git, node_modules, gha-creds-*.json) (1): .env"
        ),
        "{t}"
    );
    assert!(!t.contains("--- ") || !t.contains(".env ---"), "{t}");
    let cases = [
        (
            json!({"paths": []}),
            ToolErrorKind::InvalidParams,
            "`paths`",
        ),
        (
            json!({"paths": "src"}),
            ToolErrorKind::InvalidParams,
            "`paths`",
        ),
        (
            json!({"paths": [""]}),
            ToolErrorKind::InvalidParams,
            "empty",
        ),
        (
            json!({"paths": ["../outside/secret.txt"]}),
            ToolErrorKind::PathNotAllowed,
            "..",
        ),
        (
            json!({"paths": [ws.outside.join("secret.txt").display().to_string()]}),
            ToolErrorKind::PathNotAllowed,
            "outside",
        ),
        (
            json!({"paths": ["link_out/secret.txt"]}),
            ToolErrorKind::PathNotAllowed,
            "outside",
        ),
        (
            json!({"paths": ["link_out/*.txt"]}),
            ToolErrorKind::PathNotAllowed,
            "outside",
        ),
        (
            json!({"paths": ["src/[a"]}),
            ToolErrorKind::InvalidParams,
            "invalid",
        ),
        (
            json!({"paths": ["src"], "exclude": ["{a"]}),
            ToolErrorKind::InvalidParams,
            "`exclude`",
        ),
        (
            json!({"paths": ["src"], "recursive": "yes"}),
            ToolErrorKind::InvalidParams,
            "`recursive`",
        ),
    ];
    for (args, kind, needle) in cases {
        let err = run(&tool(), &ws.ctx, args.clone()).await.unwrap_err();
        assert_eq!(err.kind, kind, "{args}: {err}");
        assert!(err.message.contains(needle), "{args}: {err}");
    }
}
