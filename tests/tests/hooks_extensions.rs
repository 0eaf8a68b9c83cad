//! Hooks an installed extension brings (`<extension>/hooks/hooks.json`,
//! as 0.61 reads it) through a real daemon: listed by `gemctl hooks list`
//! with their file, `${extensionPath}` / `${workspacePath}` / `${/}`
//! substituted, fired like the user's (a real bash hook blocks a call);
//! an extension disabled for the workspace brings none; editing the file
//! takes effect without a restart.

use std::path::Path;
use std::time::Duration;

use geminid_tests::*;
use serde_json::{Value, json};

const GUARD_SH: &str = r#"#!/bin/bash
# $1: the workspace, as the extension's hooks.json named it.
cat > /dev/null
echo "guard saw $1" >&2
exit 2
"#;

fn install(home: &Path, name: &str, hooks: &Value) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = home.join(".gemini/extensions").join(name);
    std::fs::create_dir_all(dir.join("hooks")).unwrap();
    std::fs::write(
        dir.join("gemini-extension.json"),
        json!({"name": name, "version": "1.0.0"}).to_string(),
    )
    .unwrap();
    std::fs::write(dir.join("hooks/hooks.json"), hooks.to_string()).unwrap();
    let script = dir.join("guard.sh");
    std::fs::write(&script, GUARD_SH).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn guard_hooks(matcher: &str) -> Value {
    json!({"hooks": {"BeforeTool": [{"matcher": matcher, "hooks": [
        {"type": "command", "name": "guard",
         "command": "${extensionPath}${/}guard.sh ${workspacePath}"}]}]}})
}

fn listed(d: &TestDaemon) -> Value {
    let out = d
        .gemctl(&[
            "--json",
            "hooks",
            "list",
            "--cwd",
            &d.workspace.display().to_string(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extensions_hooks_are_listed_and_fire() {
    let mut d = TestDaemon::prepared(&[]);
    let home = d.home();
    let guard = install(&home, "guard", &guard_hooks("write_file"));
    install(&home, "elsewhere", &guard_hooks(".*"));
    std::fs::write(
        home.join(".gemini/extensions/extension-enablement.json"),
        json!({"elsewhere": {"overrides": [format!("!{}/*", d.workspace.display())]}}).to_string(),
    )
    .unwrap();
    d.spawn();

    let list = listed(&d);
    let hooks = list["hooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 1, "only the enabled extension's: {list}");
    assert_eq!(hooks[0]["layer"], "extension");
    assert_eq!(
        hooks[0]["source"],
        guard.join("hooks/hooks.json").display().to_string()
    );
    assert_eq!(
        hooks[0]["command"],
        format!("{}/guard.sh {}", guard.display(), d.workspace.display()),
        "variables substituted"
    );

    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    let target = d.workspace.join("x.txt");
    let refused = call_and_wait(
        &c,
        &session,
        "write_file",
        json!({"file_path": target.display().to_string(), "content": "x"}),
    )
    .await
    .outcome
    .unwrap();
    let text = call_text(&refused);
    assert!(
        text.contains(&format!("guard saw {}", d.workspace.display())),
        "the extension's hook blocked it: {text}"
    );
    assert!(!target.exists());
    let read = call_and_wait(
        &c,
        &session,
        "list_directory",
        json!({"path": d.workspace.display().to_string()}),
    )
    .await
    .outcome
    .unwrap();
    assert!(
        read.error.is_none(),
        "its matcher spares other tools: {read:?}"
    );

    // Editing the extension's hooks takes effect without a restart.
    std::fs::write(
        guard.join("hooks/hooks.json"),
        guard_hooks("list_directory").to_string(),
    )
    .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let list = listed(&d);
        if list["hooks"][0]["matcher"] == "list_directory" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the edit was not picked up: {list}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let written = call_and_wait(
        &c,
        &session,
        "write_file",
        json!({"file_path": target.display().to_string(), "content": "x"}),
    )
    .await
    .outcome
    .unwrap();
    assert!(written.error.is_none(), "{written:?}");
}
