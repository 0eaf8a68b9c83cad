//! Extension settings through a real daemon: a `sensitive` setting's value
//! kept in 0.61's encrypted credentials file (`~/.gemini/
//! gemini-credentials.json`, written here by node's crypto exactly as
//! 0.61's FileKeychain writes it) reaches the extension's server; editing
//! the file restarts that extension's server only, with the new value; a
//! file that does not decrypt is reported (`daemon status`, area
//! `extensions`) and leaves the value unset.

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
const [file, extension, envVar, value] = process.argv.slice(2);
const id = crypto.createHash('sha256').update(extension).digest('hex');
const service = `Gemini CLI Extensions ${extension} ${id}`;
const data = { [service]: { [`__secret__${envVar}`]: value } };
const salt = `${os.hostname()}-${os.userInfo().username}-gemini-cli`;
const key = crypto.scryptSync('gemini-cli-oauth', salt, 32);
const iv = crypto.randomBytes(12);
const cipher = crypto.createCipheriv('aes-256-gcm', key, iv, { authTagLength: 16 });
let encrypted = cipher.update(JSON.stringify(data, null, 2), 'utf8', 'hex');
encrypted += cipher.final('hex');
const tag = cipher.getAuthTag();
fs.writeFileSync(file + '.tmp', iv.toString('hex') + ':' + tag.toString('hex') + ':' + encrypted, { mode: 0o600 });
fs.renameSync(file + '.tmp', file);
"#;

fn set_secret(dir: &Path, home: &Path, extension: &str, env_var: &str, value: &str) {
    let script = dir.join("set-secret.mjs");
    std::fs::write(&script, SET_SECRET).unwrap();
    let file = home.join(".gemini/gemini-credentials.json");
    let out = std::process::Command::new("node")
        .arg(&script)
        .arg(&file)
        .args([extension, env_var, value])
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
                    "includeTools": ["get-env"]}}}),
    );
    std::fs::write(
        home.join(".gemini/extensions/keyed/.env"),
        "EXT_MODE=plain-mode\n",
    )
    .unwrap();
    install(
        &home,
        "other",
        &json!({"name": "other", "version": "1.0.0",
                "mcpServers": {"other-srv": {"command": everything(&p),
                    "includeTools": ["echo"]}}}),
    );
    set_secret(d.dir.path(), &home, "keyed", "EXT_TOKEN", "token-one");
    d.spawn();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    connected(&c, &["keyed-srv", "other-srv"]).await;
    let text = env_of(&c, &session, "get-env").await.expect("get-env");
    assert!(text.contains("token-one"), "the keychain's value: {text}");
    assert!(text.contains("plain-mode"), "the .env's value: {text}");
    let other_pid = pid_of(&c, "other-srv").await.expect("other's pid");

    // A new value: its server restarts with it; the other is untouched.
    set_secret(d.dir.path(), &home, "keyed", "EXT_TOKEN", "token-two");
    eventually("the new value reaches the server", || async {
        env_of(&c, &session, "get-env")
            .await
            .is_some_and(|t| t.contains("token-two"))
    })
    .await;
    assert_eq!(pid_of(&c, "other-srv").await, Some(other_pid));

    // A file that does not decrypt: reported, and the value is unset.
    std::fs::write(
        home.join(".gemini/gemini-credentials.json"),
        "00112233445566778899aabb:00112233445566778899aabbccddeeff:abcd",
    )
    .unwrap();
    eventually("the problem is reported", || async {
        c.status().await.unwrap().config_problems.iter().any(|p| {
            p.area == "extensions"
                && p.file.ends_with("gemini-credentials.json")
                && p.message.contains("decrypt")
        })
    })
    .await;
    eventually("the value is gone from the server", || async {
        env_of(&c, &session, "get-env")
            .await
            .is_some_and(|t| !t.contains("token-two") && t.contains("plain-mode"))
    })
    .await;
    assert_eq!(pid_of(&c, "other-srv").await, Some(other_pid));
}
