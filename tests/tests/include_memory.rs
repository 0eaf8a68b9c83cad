//! `context.loadMemoryFromIncludeDirectories` through a real daemon: with
//! it, the GEMINI.md files of `context.includeDirectories` (the directory
//! and below, as a workspace is searched) join the workspace's memory
//! after its own; without it (0.61's default) they do not.

use geminid_tests::*;
use serde_json::json;

async fn memory_with(load: Option<bool>) -> String {
    let mut d = TestDaemon::prepared(&[]);
    let extra = d.dir.path().join("shared-lib");
    std::fs::create_dir_all(extra.join("sub")).unwrap();
    std::fs::write(extra.join("GEMINI.md"), "include-root-marker").unwrap();
    std::fs::write(extra.join("sub/GEMINI.md"), "include-nested-marker").unwrap();
    std::fs::write(d.workspace.join("GEMINI.md"), "workspace-marker").unwrap();
    let mut context = json!({"includeDirectories": [extra]});
    if let Some(load) = load {
        context["loadMemoryFromIncludeDirectories"] = json!(load);
    }
    let gemini = d.home().join(".gemini");
    std::fs::create_dir_all(&gemini).unwrap();
    std::fs::write(
        gemini.join("settings.json"),
        json!({ "context": context }).to_string(),
    )
    .unwrap();
    d.spawn();
    let c = d.client().await;
    let memory = c
        .show_memory(None, Some(d.workspace.display().to_string()))
        .await
        .unwrap();
    memory.text
}

#[tokio::test]
async fn include_directories_memory_loads_when_asked() {
    let text = memory_with(Some(true)).await;
    let ws = text.find("workspace-marker").expect(&text);
    let root = text.find("include-root-marker").expect(&text);
    let nested = text.find("include-nested-marker").expect(&text);
    assert!(ws < root && root < nested, "0.61's order: {text}");
    assert!(
        text.contains("--- Context from: ../shared-lib/GEMINI.md ---"),
        "{text}"
    );
}

#[tokio::test]
async fn include_directories_memory_stays_out_by_default() {
    for load in [None, Some(false)] {
        let text = memory_with(load).await;
        assert!(text.contains("workspace-marker"), "{text}");
        assert!(!text.contains("include-root-marker"), "{text}");
        assert!(!text.contains("include-nested-marker"), "{text}");
    }
}
