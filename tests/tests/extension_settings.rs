//! Extension settings through a real daemon: a `sensitive` setting's value
//! kept in 0.61's encrypted credentials file (`~/.gemini/
//! gemini-credentials.json`, written here by node's crypto exactly as
//! 0.61's FileKeychain writes it) reaches the extension's server; editing
//! the file (or the extension's `.env`) restarts that extension's server
//! only, with the new value; a
//! file that does not decrypt is reported (`daemon status`, area
//! `extension settings`) and leaves the value unset. A workspace's own values
//! (its `.env`, its keychain service) override the user's for the
//! extension's hooks and servers in that workspace only (its servers run
//! as an instance of that workspace).

mod peers;

use std::path::Path;
use std::time::{Duration, Instant};

use geminid_protocol::tool::CallState;
use geminid_tests::*;
use peers::*;
use serde_json::{Value, json};

/// 0.61's `KeychainTokenStorage.setSecret` on a FileKeychain, as its
/// `fileKeychain.js` does it: the extension's id is sha256 of its name
/// (no install metadata), the service `Gemini CLI Extensions <name>
/// <id>`, the account `__secret__<envVar>`; the key is scrypt of
/// "gemini-cli-oauth" salted with host and user name.
const SET_SECRET: &str = r#"
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
const [file, extension, envVar, value, workspace] = process.argv.slice(2);
const id = crypto.createHash('sha256').update(extension).digest('hex');
const service = `Gemini CLI Extensions ${extension} ${id}` + (workspace ? ` ${workspace}` : '');
const salt = `${os.hostname()}-${os.userInfo().username}-gemini-cli`;
const key = crypto.scryptSync('gemini-cli-oauth', salt, 32);
let data = {};
if (fs.existsSync(file)) {
  const [iv, tag, enc] = fs.readFileSync(file, 'utf-8').split(':');
  const d = crypto.createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'hex'), { authTagLength: 16 });
  d.setAuthTag(Buffer.from(tag, 'hex'));
  data = JSON.parse(d.update(enc, 'hex', 'utf8') + d.final('utf8'));
}
data[service] ??= {};
data[service][`__secret__${envVar}`] = value;
const iv = crypto.randomBytes(12);
const cipher = crypto.createCipheriv('aes-256-gcm', key, iv, { authTagLength: 16 });
let encrypted = cipher.update(JSON.stringify(data, null, 2), 'utf8', 'hex');
encrypted += cipher.final('hex');
const tag = cipher.getAuthTag();
fs.writeFileSync(file + '.tmp', iv.toString('hex') + ':' + tag.toString('hex') + ':' + encrypted, { mode: 0o600 });
fs.renameSync(file + '.tmp', file);
"#;

/// Stores `value` for `env_var` of `extension` (workspace scope when
/// `workspace` is given), keeping what the file holds.
fn set_secret(
    dir: &Path,
    home: &Path,
    extension: &str,
    env_var: &str,
    value: &str,
    workspace: Option<&Path>,
) {
    let script = dir.join("set-secret.mjs");
    std::fs::write(&script, SET_SECRET).unwrap();
    let file = home.join(".gemini/gemini-credentials.json");
    let out = std::process::Command::new("node")
        .arg(&script)
        .arg(&file)
        .args([extension, env_var, value])
        .args(workspace)
        .output()
        .expect("node");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn install(home: &Path, name: &str, manifest: &Value) {
    let dir = home.join(".gemini/extensions").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("gemini-extension.json"), manifest.to_string()).unwrap();
}

/// What the server's `get-env` answers now, once a call succeeds.
async fn env_of(c: &Client, session: &str, tool: &str) -> Option<String> {
    let snap = run(c, session, tool, json!({})).await;
    (snap.state == CallState::Success).then(|| result_json(&snap).to_string())
}

/// Polls `check` for up to 30 s.
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
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never: {what}");
}

async fn pid_of(c: &Client, name: &str) -> Option<u32> {
    c.list_mcp()
        .await
        .unwrap()
        .servers
        .into_iter()
        .find(|s| s.name == name && s.status == "connected")
        .and_then(|s| s.pid)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sensitive_setting_comes_from_the_file_keychain_and_follows_its_edits() {
    let p = peers();
    let mut d = TestDaemon::prepared(&[("GEMINI_FORCE_FILE_STORAGE", "true")]);
    let home = d.home();
    install(
        &home,
        "keyed",
        &json!({"name": "keyed", "version": "1.0.0",
                "settings": [
                    {"name": "Token", "description": "t", "envVar": "EXT_TOKEN", "sensitive": true},
                    {"name": "Mode", "description": "m", "envVar": "EXT_MODE"}
                ],
                "mcpServers": {"keyed-srv": {"command": everything(&p),
                    "includeTools": ["get-env"], "env": {"TOKEN_COPY": "copy-${EXT_TOKEN}"}}}}),
    );
    std::fs::write(
        home.join(".gemini/extensions/keyed/.env"),
        "EXT_MODE=plain-mode\nEXT_TOKEN=env-fallback\n",
    )
    .unwrap();
    install(
        &home,
        "other",
        &json!({"name": "other", "version": "1.0.0",
                "mcpServers": {"other-srv": {"command": everything(&p),
                    "includeTools": ["echo"]}}}),
    );
    set_secret(d.dir.path(), &home, "keyed", "EXT_TOKEN", "token-one", None);
    d.spawn();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    connected(&c, &["keyed-srv", "other-srv"]).await;
    let text = env_of(&c, &session, "get-env").await.expect("get-env");
    assert!(text.contains("token-one"), "the keychain's value: {text}");
    assert!(
        !text.contains("env-fallback"),
        "the keychain's wins: {text}"
    );
    assert!(text.contains("plain-mode"), "the .env's value: {text}");
    assert!(
        text.contains("copy-token-one"),
        "`${{EXT_TOKEN}}` filled: {text}"
    );
    let other_pid = pid_of(&c, "other-srv").await.expect("other's pid");

    // A new value: its server restarts with it; the other is untouched.
    set_secret(d.dir.path(), &home, "keyed", "EXT_TOKEN", "token-two", None);
    let saved = Instant::now();
    eventually("the new value reaches the server", || async {
        env_of(&c, &session, "get-env")
            .await
            .is_some_and(|t| t.contains("token-two"))
    })
    .await;
    // A figure (BENCHMARKS.md): saving the file to a call answered by the
    // restarted server with the new value.
    eprintln!(
        "credentials saved -> server answers with the new value: {} ms",
        saved.elapsed().as_millis()
    );
    assert_eq!(pid_of(&c, "other-srv").await, Some(other_pid));

    // A file that does not decrypt: reported, and the value is unset.
    std::fs::write(
        home.join(".gemini/gemini-credentials.json"),
        "00112233445566778899aabb:00112233445566778899aabbccddeeff:abcd",
    )
    .unwrap();
    eventually("the problem is reported", || async {
        c.status().await.unwrap().config_problems.iter().any(|p| {
            p.area == "extension settings"
                && p.file.ends_with("gemini-credentials.json")
                && p.message.contains("decrypt")
        })
    })
    .await;
    eventually("the value is gone from the server", || async {
        env_of(&c, &session, "get-env").await.is_some_and(|t| {
            !t.contains("token-two") && !t.contains("env-fallback") && t.contains("plain-mode")
        })
    })
    .await;
    assert_eq!(pid_of(&c, "other-srv").await, Some(other_pid));

    // Removed, then written anew (as 0.61 does after its last secret is
    // deleted): the new file is read; so is an edit of the `.env`.
    std::fs::remove_file(home.join(".gemini/gemini-credentials.json")).unwrap();
    set_secret(
        d.dir.path(),
        &home,
        "keyed",
        "EXT_TOKEN",
        "token-three",
        None,
    );
    std::fs::write(
        home.join(".gemini/extensions/keyed/.env"),
        "EXT_MODE=plain-mode-2\n",
    )
    .unwrap();
    eventually(
        "the new file and the .env edit reach the server",
        || async {
            env_of(&c, &session, "get-env")
                .await
                .is_some_and(|t| t.contains("token-three") && t.contains("plain-mode-2"))
        },
    )
    .await;
    assert_eq!(pid_of(&c, "other-srv").await, Some(other_pid));
}

const ENV_HOOK: &str = r#"#!/bin/bash
cat > /dev/null
echo "MODE=${EXT_MODE:-none} TOKEN=${EXT_TOKEN:-none}" >&2
exit 2
"#;

/// The message the extension's blocking hook gives a `list_directory`
/// call in `session` (it prints the settings it got).
async fn hook_saw(c: &Client, session: &str, dir: &Path) -> String {
    let answer = call_and_wait(
        c,
        session,
        "list_directory",
        json!({"path": dir.display().to_string()}),
    )
    .await
    .outcome
    .expect("outcome");
    call_text(&answer)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workspace_s_values_override_the_user_s_for_its_sessions_only() {
    use std::os::unix::fs::PermissionsExt;
    let p = peers();
    let mut d = TestDaemon::prepared(&[("GEMINI_FORCE_FILE_STORAGE", "true")]);
    let home = d.home();
    install(
        &home,
        "scoped",
        &json!({"name": "scoped", "version": "1.0.0",
                "settings": [
                    {"name": "Token", "description": "t", "envVar": "EXT_TOKEN", "sensitive": true},
                    {"name": "Mode", "description": "m", "envVar": "EXT_MODE"}
                ],
                "mcpServers": {"scoped-srv": {"command": everything(&p),
                    "includeTools": ["get-env"]}}}),
    );
    let ext = home.join(".gemini/extensions/scoped");
    std::fs::write(ext.join(".env"), "EXT_MODE=user-mode\n").unwrap();
    std::fs::create_dir_all(ext.join("hooks")).unwrap();
    std::fs::write(
        ext.join("hooks/hooks.json"),
        json!({"hooks": {"BeforeTool": [{"matcher": "list_directory", "hooks": [
            {"type": "command", "name": "env", "command": "${extensionPath}${/}env.sh"}]}]}})
        .to_string(),
    )
    .unwrap();
    std::fs::write(ext.join("env.sh"), ENV_HOOK).unwrap();
    std::fs::set_permissions(ext.join("env.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let other = d.dir.path().canonicalize().unwrap().join("other-ws");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join(".env"), "EXT_MODE=ws-mode\nUNRELATED=1\n").unwrap();
    set_secret(
        d.dir.path(),
        &home,
        "scoped",
        "EXT_TOKEN",
        "user-token",
        None,
    );
    set_secret(
        d.dir.path(),
        &home,
        "scoped",
        "EXT_TOKEN",
        "ws-token",
        Some(&other),
    );
    d.spawn();
    let c = d.client().await;
    let in_main = yolo_session(&c, &d.workspace).await;
    let in_other = yolo_session(&c, &other).await;
    let text = hook_saw(&c, &in_main, &d.workspace).await;
    assert!(text.contains("MODE=user-mode TOKEN=user-token"), "{text}");
    let text = hook_saw(&c, &in_other, &other).await;
    assert!(text.contains("MODE=ws-mode TOKEN=ws-token"), "{text}");

    // `extensions list` says where each value comes from, never a
    // sensitive one.
    let list = c
        .list_extensions(Some(other.display().to_string()))
        .await
        .unwrap();
    let settings = &list[0].settings;
    let token = settings.iter().find(|s| s.env_var == "EXT_TOKEN").unwrap();
    assert_eq!(token.scope.as_deref(), Some("workspace"));
    assert_eq!(token.source.as_deref(), Some("keychain"));
    assert_eq!(token.value, None);
    let mode = settings.iter().find(|s| s.env_var == "EXT_MODE").unwrap();
    assert_eq!(mode.scope.as_deref(), Some("workspace"));
    assert_eq!(mode.value.as_deref(), Some("ws-mode"));
    let out = d
        .gemctl(&[
            "extensions",
            "list",
            "--cwd",
            &d.workspace.display().to_string(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("setting Token (EXT_TOKEN): *** (user - keychain)"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "setting Mode (EXT_MODE): user-mode (user - {})",
            ext.join(".env").display()
        )),
        "{text}"
    );
    assert!(!text.contains("user-token"), "{text}");

    // Its servers run as an instance of that workspace with its values;
    // the other workspace's sessions keep the user's.
    eventually(
        "the workspace's instance answers with its values",
        || async {
            env_of(&c, &in_other, "get-env")
                .await
                .is_some_and(|t| t.contains("ws-mode") && t.contains("ws-token"))
        },
    )
    .await;
    // The shared server connects on its own: not necessarily before the
    // workspace's instance.
    eventually("the shared server answers", || async {
        env_of(&c, &in_main, "get-env").await.is_some()
    })
    .await;
    let text = env_of(&c, &in_main, "get-env").await.expect("get-env");
    assert!(
        text.contains("user-mode") && text.contains("user-token") && !text.contains("ws-"),
        "{text}"
    );

    // Live: the workspace's .env edited, its sessions' hooks follow.
    std::fs::write(other.join(".env"), "EXT_MODE=ws-mode-2\n").unwrap();
    eventually("the edit reaches the hook", || async {
        hook_saw(&c, &in_other, &other)
            .await
            .contains("MODE=ws-mode-2 TOKEN=ws-token")
    })
    .await;
    eventually("the edit reaches the workspace's server", || async {
        env_of(&c, &in_other, "get-env")
            .await
            .is_some_and(|t| t.contains("ws-mode-2"))
    })
    .await;
    let text = hook_saw(&c, &in_main, &d.workspace).await;
    assert!(text.contains("MODE=user-mode TOKEN=user-token"), "{text}");
}
