//! The `.env` 0.61 reads reaches every child, not only shell commands,
//! through a real daemon: a workspace's stdio MCP server gets its
//! workspace's file, a user server the user's own (`~/.env`), the
//! discovery command the file of the directory it runs in; each still
//! sanitized, with `advanced.excludedEnvVars` of the user's settings
//! deciding what a project file may not set.

mod peers;

use std::path::Path;
use std::time::{Duration, Instant};

use geminid_tests::*;
use serde_json::json;

/// A stdio server that writes its environment to `out`, then becomes the
/// real MCP server.
fn dumping_server(p: &Path, out: &Path) -> serde_json::Value {
    json!({
        "command": "/bin/sh",
        "args": ["-c", format!("env > '{}'; exec '{}'", out.display(), peers::everything(p))],
        "includeTools": ["echo"],
    })
}

/// The `NAME=value` lines of `path`, once it is written.
fn dumped(path: &Path) -> Vec<String> {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && !text.is_empty()
        {
            return text.lines().map(str::to_owned).collect();
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{} never written",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn has(env: &[String], line: &str) -> bool {
    env.iter().any(|l| l == line)
}

fn names(env: &[String], name: &str) -> bool {
    env.iter().any(|l| l.starts_with(&format!("{name}=")))
}

#[tokio::test(flavor = "multi_thread")]
async fn each_server_gets_its_own_scopes_env_file_sanitized() {
    let p = peers::peers();
    let mut d = TestDaemon::prepared(&[]);
    let home = d.home();
    let out = d.dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(
        home.join(".gemini/settings.json"),
        json!({
            "mcpServers": {"usr": dumping_server(&p, &out.join("usr"))},
            "advanced": {"excludedEnvVars": ["GEMINID_EXCLUDED"]},
        })
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        home.join(".env"),
        "GEMINID_DOTENV_PROBE=from-home\nGEMINID_HOME_ONLY=1\n",
    )
    .unwrap();
    std::fs::create_dir_all(d.workspace.join(".gemini")).unwrap();
    std::fs::write(
        d.workspace.join(".gemini/settings.json"),
        json!({"mcpServers": {"wsv": dumping_server(&p, &out.join("wsv"))}}).to_string(),
    )
    .unwrap();
    std::fs::write(
        d.workspace.join(".env"),
        "GEMINID_DOTENV_PROBE=from-ws\nGEMINID_EXCLUDED=1\nDEBUG=1\nBASH_ENV=/tmp/evil\nMY_API_TOKEN=sekrit\nHOME=/nowhere\n",
    )
    .unwrap();
    d.spawn();
    let c = d.client().await;
    let _session = yolo_session(&c, &d.workspace).await;
    peers::connected(&c, &["usr", "wsv"]).await;

    let usr = dumped(&out.join("usr"));
    assert!(has(&usr, "GEMINID_DOTENV_PROBE=from-home"), "{usr:?}");
    assert!(has(&usr, "GEMINID_HOME_ONLY=1"), "{usr:?}");

    let wsv = dumped(&out.join("wsv"));
    assert!(has(&wsv, "GEMINID_DOTENV_PROBE=from-ws"), "{wsv:?}");
    assert!(
        !names(&wsv, "GEMINID_HOME_ONLY"),
        "one file only, as 0.61: {wsv:?}"
    );
    // The user's excludedEnvVars replace 0.61's default (DEBUG, DEBUG_MODE).
    assert!(!names(&wsv, "GEMINID_EXCLUDED"), "{wsv:?}");
    assert!(has(&wsv, "DEBUG=1"), "{wsv:?}");
    assert!(
        !names(&wsv, "BASH_ENV"),
        "dangerous variable dropped: {wsv:?}"
    );
    assert!(!names(&wsv, "MY_API_TOKEN"), "secrets redacted: {wsv:?}");
    assert!(!has(&wsv, "HOME=/nowhere"), "the daemon's own win: {wsv:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_discovery_command_gets_the_env_file_of_where_it_runs() {
    let mut d = TestDaemon::prepared(&[]);
    let home = d.home();
    let out = d.dir.path().join("discovery.env");
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(
        home.join(".gemini/settings.json"),
        json!({"tools": {"discoveryCommand": format!("env > '{}'; echo '[]'", out.display())}})
            .to_string(),
    )
    .unwrap();
    std::fs::write(
        d.workspace.join(".env"),
        "GEMINID_DOTENV_PROBE=from-ws\nDEBUG=1\nMY_API_TOKEN=sekrit\n",
    )
    .unwrap();
    d.spawn();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    // Wait for the start-up run, then run it for the session's workspace.
    peers::wait_list(&c, 30, |l| l.command.is_some()).await;
    let _ = std::fs::remove_file(&out);
    c.rediscover_tools(Some(session)).await.unwrap();
    let env = dumped(&out);
    assert!(has(&env, "GEMINID_DOTENV_PROBE=from-ws"), "{env:?}");
    assert!(!names(&env, "DEBUG"), "0.61's default exclusion: {env:?}");
    assert!(!names(&env, "MY_API_TOKEN"), "secrets redacted: {env:?}");
}
