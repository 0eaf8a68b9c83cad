//! Extensions under `~/.gemini/extensions` through a real daemon: a
//! manifest's MCP server starts, its context file reaches memory, its
//! `excludeTools` hides and refuses tools, `gemctl extensions list` shows
//! it, and edits (manifest, enablement) apply live.

mod peers;

use std::path::Path;
use std::time::{Duration, Instant};

use geminid_tests::*;
use serde_json::json;

fn install(home: &Path, name: &str, manifest: &serde_json::Value) -> std::path::PathBuf {
    let dir = home.join(".gemini/extensions").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("gemini-extension.json"),
        serde_json::to_string_pretty(manifest).unwrap(),
    )
    .unwrap();
    dir
}

async fn tool_names(c: &Client, session: &str) -> Vec<String> {
    c.list_tools(Some(session.to_owned()))
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect()
}

/// Polls `check` for up to 10 s.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("never: {what}");
}

#[tokio::test]
async fn an_extension_contributes_servers_context_and_exclusions_live() {
    let p = peers::peers();
    let mut d = TestDaemon::prepared(&[]);
    let home = d.home();
    let ext = install(
        &home,
        "helper",
        &json!({
            "name": "helper",
            "version": "1.4.2",
            "mcpServers": {"helper-srv": {"command": peers::everything(&p), "includeTools": ["echo"]}},
            "contextFileName": "HELPER.md",
            "excludeTools": ["glob"]
        }),
    );
    std::fs::write(ext.join("HELPER.md"), "helper-context-marker\n").unwrap();
    d.spawn();
    let c = d.client().await;
    peers::connected(&c, &["helper-srv"]).await;
    let session = yolo_session(&c, &d.workspace).await;
    let names = tool_names(&c, &session).await;
    assert!(!names.contains(&"glob".to_owned()), "{names:?}");
    assert!(names.contains(&"echo".to_owned()), "{names:?}");
    let refused = c
        .call_tool(
            session.clone(),
            "glob".into(),
            Some(json!({"pattern": "*"})),
            Some(true),
        )
        .await
        .unwrap()
        .outcome
        .unwrap();
    assert_eq!(refused.error.map(|e| e.kind).as_deref(), Some("denied"));
    let memory = c
        .show_memory(None, Some(d.workspace.display().to_string()))
        .await
        .unwrap();
    assert!(
        memory.text.contains("helper-context-marker"),
        "{}",
        memory.text
    );

    let list = c.list_extensions(None).await.unwrap();
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0].name, "helper");
    assert_eq!(list[0].version.as_deref(), Some("1.4.2"));
    assert!(list[0].enabled);
    assert_eq!(list[0].mcp_servers, vec!["helper-srv"]);
    assert_eq!(list[0].exclude_tools, vec!["glob"]);
    assert!(list[0].context_files[0].ends_with("HELPER.md"));
    let out = d.gemctl(&["extensions", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("helper 1.4.2 (enabled)"), "{text}");
    assert!(text.contains("helper-srv"), "{text}");

    // Edited: the exclusion moves, the context changes.
    std::fs::write(
        ext.join("gemini-extension.json"),
        json!({
            "name": "helper", "version": "1.4.3",
            "mcpServers": {"helper-srv": {"command": peers::everything(&p), "includeTools": ["echo"]}},
            "contextFileName": "HELPER.md",
            "excludeTools": ["web_fetch"]
        })
        .to_string(),
    )
    .unwrap();
    eventually("glob shown again", || async {
        let names = tool_names(&c, &session).await;
        names.contains(&"glob".to_owned()) && !names.contains(&"web_fetch".to_owned())
    })
    .await;
    std::fs::write(ext.join("HELPER.md"), "helper-context-second\n").unwrap();
    eventually("context edit seen", || async {
        c.show_memory(None, Some(d.workspace.display().to_string()))
            .await
            .unwrap()
            .text
            .contains("helper-context-second")
    })
    .await;

    // Disabled for the user's home and this workspace (0.61's enablement
    // file): its server stops, its exclusion and context go.
    std::fs::write(
        home.join(".gemini/extensions/extension-enablement.json"),
        json!({"helper": {"overrides": [
            format!("!{}/*", home.display()),
            format!("!{}/*", d.workspace.display()),
        ]}})
        .to_string(),
    )
    .unwrap();
    eventually("server stopped", || async {
        c.list_mcp().await.unwrap().servers.is_empty()
    })
    .await;
    eventually("exclusion lifted, context gone", || async {
        let names = tool_names(&c, &session).await;
        let memory = c
            .show_memory(None, Some(d.workspace.display().to_string()))
            .await
            .unwrap();
        names.contains(&"web_fetch".to_owned()) && !memory.text.contains("helper-context")
    })
    .await;
    let list = c.list_extensions(None).await.unwrap();
    assert!(!list[0].enabled);
}

#[tokio::test]
async fn a_broken_manifest_fails_closed_and_is_reported() {
    let mut d = TestDaemon::prepared(&[]);
    let ext = install(
        &d.home(),
        "tidy",
        &json!({"name": "tidy", "excludeTools": ["glob"]}),
    );
    d.spawn();
    let c = d.client().await;
    let session = session_in(&c, &d.workspace, None, Some(false)).await;
    assert!(!tool_names(&c, &session).await.contains(&"glob".to_owned()));
    std::fs::write(
        ext.join("gemini-extension.json"),
        "{\n \"name\": \"tidy\",\n",
    )
    .unwrap();
    eventually("the problem is reported with its line", || async {
        c.status()
            .await
            .unwrap()
            .config_problems
            .iter()
            .any(|p| p.file.ends_with("tidy/gemini-extension.json") && p.line.is_some())
    })
    .await;
    // What it excluded stays excluded, and every tool asks (denied here).
    assert!(!tool_names(&c, &session).await.contains(&"glob".to_owned()));
    std::fs::write(d.workspace.join("a.txt"), "x").unwrap();
    let read = c
        .call_tool(
            session.clone(),
            "read_file".into(),
            Some(json!({"absolute_path": d.workspace.join("a.txt")})),
            Some(true),
        )
        .await
        .unwrap()
        .outcome
        .unwrap();
    assert_eq!(read.error.map(|e| e.kind).as_deref(), Some("denied"));
    let list = c.list_extensions(None).await.unwrap();
    assert!(!list[0].problems.is_empty(), "{list:?}");
}

/// Two extensions declaring a server of the same name: the one read first
/// (by directory name) keeps it, as 0.61 skips the later one; the later
/// manifest is reported, as is an extension server named like one of the
/// user's settings (whose entry is kept).
#[tokio::test]
async fn a_server_name_taken_is_kept_by_the_first_and_reported() {
    let p = peers::peers();
    let mut d = TestDaemon::prepared(&[]);
    let home = d.home();
    let everything = peers::everything(&p);
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(
        home.join(".gemini/settings.json"),
        json!({"mcpServers": {"mine": {"command": everything, "includeTools": ["echo"]}}})
            .to_string(),
    )
    .unwrap();
    install(
        &home,
        "alpha",
        &json!({"name": "alpha", "mcpServers": {"dup": {"command": everything, "includeTools": ["get-sum"]}}}),
    );
    install(
        &home,
        "beta",
        &json!({"name": "beta", "mcpServers": {
            "dup": {"command": everything, "includeTools": ["get-env"]},
            "mine": {"command": everything, "includeTools": ["get-env"]}
        }}),
    );
    d.spawn();
    let c = d.client().await;
    peers::connected(&c, &["dup", "mine"]).await;
    let session = yolo_session(&c, &d.workspace).await;
    let names = tool_names(&c, &session).await;
    assert!(names.contains(&"get-sum".to_owned()), "{names:?}");
    assert!(names.contains(&"echo".to_owned()), "{names:?}");
    assert!(
        !names.iter().any(|n| n.contains("get-env")),
        "beta's entries must not start: {names:?}"
    );
    let problems = c.status().await.unwrap().config_problems;
    let beta: Vec<_> = problems
        .iter()
        .filter(|p| p.file.ends_with("beta/gemini-extension.json"))
        .collect();
    assert!(
        beta.iter().any(|p| p.message.contains("\"dup\"")
            && p.message.contains("alpha")
            && p.kept.as_deref().is_some_and(|k| k.contains("alpha"))),
        "{problems:?}"
    );
    assert!(
        beta.iter()
            .any(|p| p.message.contains("\"mine\"") && p.message.contains("user settings")),
        "{problems:?}"
    );
    assert!(
        !problems
            .iter()
            .any(|p| p.file.ends_with("alpha/gemini-extension.json")),
        "{problems:?}"
    );
}
