//! OAuth for MCP servers against a real authorization server the test
//! starts (`mcp_oauth_peer.py`: resource and server metadata, dynamic
//! registration, the code flow with PKCE it verifies, refresh tokens, and
//! an MCP endpoint that refuses requests without a live token): the
//! server shows `needs_auth` until `gemctl mcp auth` logs in through a
//! browser (a script that follows the URL), connects without a restart,
//! refreshes its token before expiry, and keeps it across a daemon
//! restart; a call or a resource read refused for want of scope puts the
//! server back in `needs_auth`, and the next login asks for the wider
//! scope.

mod peers;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use geminid_protocol::session::ApprovalMode;
use serde_json::{Value, json};

const PEER: &str = include_str!("mcp_oauth_peer.py");

/// The peer process, killed on drop.
struct Peer(Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_peer(dir: &std::path::Path, port: u16, lifetime_secs: u64) -> Peer {
    let script = dir.join("oauth_peer.py");
    std::fs::write(&script, PEER).expect("peer script");
    let child = Command::new("python3")
        .arg(&script)
        .arg(port.to_string())
        .arg(lifetime_secs.to_string())
        .arg(dir.join("grants.log"))
        .stdin(Stdio::null())
        .spawn()
        .expect("python3");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the OAuth peer did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    Peer(child)
}

/// The grants the authorization server made, in order.
fn grants(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("grants.log"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["grant"].as_str().map(str::to_owned))
        .collect()
}

/// A "browser" for `$BROWSER`: fetches the URL, following redirects, and
/// keeps the page it ends on.
fn browser(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("browser.sh");
    let page = dir.join("browser.out");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nexec python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())' \"$1\" > {}\n",
            page.display()
        ),
    )
    .expect("browser script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn a_login_connects_without_restart_refreshes_and_survives_a_restart() {
    let work = tempfile::tempdir().expect("tempdir");
    let port = peers::free_port();
    // Tokens live 68 s: with the daemon's 60 s margin, each is refreshed
    // about 8 s after it is issued (time enough, on a loaded machine, for
    // the first call to still use the first grant).
    let _peer = start_peer(work.path(), port, 68);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut d = peers::daemon_with_settings(&json!({
        "mcpServers": {"secured": {"httpUrl": url}}
    }));
    let c = d.client().await;

    // Without a token: needs_auth, saying how to log in, and no retry loop.
    let list = peers::wait_list(&c, 60, |l| {
        peers::server(l, "secured").status == "needs_auth"
    })
    .await;
    let message = peers::server(&list, "secured").message.clone();
    assert!(
        message
            .as_deref()
            .is_some_and(|m| m.contains("gemctl mcp auth secured")),
        "{message:?}"
    );
    assert_eq!(grants(work.path()), Vec::<String>::new());

    // The login: gemctl prints the URL and opens it in $BROWSER; the
    // daemon's loopback listener receives the redirect.
    let mut gemctl = d
        .gemctl(&["mcp", "auth", "secured"])
        .env("BROWSER", browser(work.path()))
        .stdout(Stdio::piped())
        .spawn()
        .expect("gemctl mcp auth");
    let stdout = gemctl.stdout.take().expect("stdout");
    let lines: Vec<String> = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .collect();
    let status = gemctl.wait().expect("gemctl exit");
    let text = lines.join("\n");
    assert!(status.success(), "{text}");
    assert!(
        text.contains("Open this URL to log in to secured:") && text.contains("code_challenge="),
        "{text}"
    );
    assert!(text.ends_with("secured: connected"), "{text}");
    let page = std::fs::read_to_string(work.path().join("browser.out")).expect("page");
    assert!(page.contains("the login is complete"), "{page}");
    assert_eq!(grants(work.path()), ["register", "authorization_code"]);

    // Connected without a restart, its tool registered and callable.
    let list = peers::connected(&c, &["secured"]).await;
    assert_eq!(peers::server(&list, "secured").tools, ["whoami", "admin"]);
    let session = peers::session(&c, &d, ApprovalMode::Yolo).await;
    let first = peers::run(&c, &session, "whoami", json!({})).await;
    assert!(
        peers::result_json(&first).to_string().contains("grant #1"),
        "{first:#?}"
    );

    // The token file: private, in the data directory.
    let store = d.data_dir.join("mcp-oauth-tokens.json");
    let mode = std::fs::metadata(&store)
        .expect("token store")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    // Refreshed before expiry, and the server reconnected with it.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !grants(work.path()).contains(&"refresh_token".to_owned()) {
        assert!(Instant::now() < deadline, "{:?}", grants(work.path()));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The grant is logged before the daemon has it: the old connection
    // may still answer for a moment, so ask until the new grant does.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        peers::connected(&c, &["secured"]).await;
        // (A call that meets the reconnect fails: asked again.)
        let later = peers::run(&c, &session, "whoami", json!({})).await;
        let text = serde_json::to_string(&later.result).unwrap_or_default();
        if later.result.is_some() && !text.contains("grant #1\"") {
            break;
        }
        assert!(Instant::now() < deadline, "{later:#?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(c);

    // A restart keeps the token: connected again with no new login.
    d.terminate();
    d.spawn();
    let c = d.client().await;
    peers::connected(&c, &["secured"]).await;
    let logins = grants(work.path())
        .iter()
        .filter(|g| *g == "authorization_code" || *g == "register")
        .count();
    assert_eq!(logins, 2, "{:?}", grants(work.path()));

    // `gemctl mcp logout` forgets the token: needs_auth again, in
    // `mcp list` too, and the token file no longer holds it.
    let out = d
        .gemctl(&["mcp", "logout", "secured"])
        .output()
        .expect("gemctl mcp logout");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.starts_with("secured: logged out; now needs_auth"),
        "{text}"
    );
    let list = peers::wait_list(&c, 1, |_| true).await;
    assert_eq!(peers::server(&list, "secured").status, "needs_auth");
    let stored = std::fs::read_to_string(&store).expect("token store");
    assert!(!stored.contains("access"), "{stored}");
}

/// Logs in with `gemctl mcp auth secured` through the script browser and
/// returns what gemctl printed.
fn login(d: &geminid_tests::TestDaemon, dir: &std::path::Path) -> String {
    let out = d
        .gemctl(&["mcp", "auth", "secured"])
        .env("BROWSER", browser(dir))
        .output()
        .expect("gemctl mcp auth");
    let text = String::from_utf8_lossy(&out.stdout).trim_end().to_owned();
    assert!(out.status.success(), "{text}");
    text
}

/// The scopes the authorization-code grants were asked for, in order.
fn granted_scopes(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("grants.log"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["grant"] == "authorization_code")
        .map(|v| v["scope"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// A 403 `insufficient_scope` in the middle of a session: a configured
/// server needs a person for the wider scope, so the call fails saying
/// how, the server shows `needs_auth`, and the next login asks for the
/// granted scope widened by the one asked for; the call then succeeds.
#[tokio::test(flavor = "multi_thread")]
async fn a_call_refused_for_scope_asks_for_a_login_with_the_wider_scope() {
    let work = tempfile::tempdir().expect("tempdir");
    let port = peers::free_port();
    let _peer = start_peer(work.path(), port, 3600);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let d = peers::daemon_with_settings(&json!({
        "mcpServers": {"secured": {"httpUrl": url}}
    }));
    let c = d.client().await;
    peers::wait_list(&c, 60, |l| {
        peers::server(l, "secured").status == "needs_auth"
    })
    .await;
    let text = login(&d, work.path());
    assert!(text.ends_with("secured: connected"), "{text}");
    assert_eq!(granted_scopes(work.path()), ["tools"]);
    peers::connected(&c, &["secured"]).await;
    let session = peers::session(&c, &d, ApprovalMode::Yolo).await;

    let refused = peers::run(&c, &session, "admin", json!({})).await;
    let shown = format!("{refused:?}");
    assert!(refused.result.is_none(), "{shown}");
    assert!(
        shown.contains("wider scope `tools admin`") && shown.contains("gemctl mcp auth secured"),
        "{shown}"
    );
    let list = peers::wait_list(&c, 30, |l| {
        peers::server(l, "secured").status == "needs_auth"
    })
    .await;
    let message = peers::server(&list, "secured").message.clone();
    assert!(
        message
            .as_deref()
            .is_some_and(|m| m.contains("tools admin")),
        "{message:?}"
    );

    let text = login(&d, work.path());
    assert!(text.ends_with("secured: connected"), "{text}");
    assert_eq!(granted_scopes(work.path()), ["tools", "tools admin"]);
    peers::connected(&c, &["secured"]).await;
    let allowed = peers::run(&c, &session, "admin", json!({})).await;
    assert!(
        peers::result_json(&allowed)
            .to_string()
            .contains("grant #2"),
        "{allowed:#?}"
    );

    // A resource read refused the same way: the next login asks for the
    // scope granted so far and the new one.
    let read = |d: &geminid_tests::TestDaemon| {
        let out = d
            .gemctl(&["mcp", "read", "secured", "secret://s"])
            .output()
            .expect("gemctl mcp read");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    let (ok, refused) = read(&d);
    assert!(
        !ok && refused.contains("wider scope `tools admin secrets`"),
        "{refused}"
    );
    peers::wait_list(&c, 30, |l| {
        peers::server(l, "secured").status == "needs_auth"
    })
    .await;
    login(&d, work.path());
    assert_eq!(
        granted_scopes(work.path()),
        ["tools", "tools admin", "tools admin secrets"]
    );
    peers::connected(&c, &["secured"]).await;
    let (ok, text) = read(&d);
    assert!(ok && text.contains("the secret"), "{text}");
}

/// A server that needs a login is not an error in the daemon's log: rmcp
/// reports each 401 as an ERROR of its own, which the daemon keeps out;
/// the state is in `mcp list` (needs_auth).
#[tokio::test(flavor = "multi_thread")]
async fn a_server_needing_a_login_does_not_fill_the_log_with_errors() {
    let work = tempfile::tempdir().expect("tempdir");
    let port = peers::free_port();
    let _peer = start_peer(work.path(), port, 63);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut d = geminid_tests::TestDaemon::start_capturing_stderr();
    d.terminate();
    let dir = d.home().join(".gemini");
    std::fs::create_dir_all(&dir).expect("gemini dir");
    let settings = json!({"mcpServers": {"secured": {"httpUrl": url}}});
    std::fs::write(dir.join("settings.json"), settings.to_string()).expect("settings");
    d.spawn();
    let c = d.client().await;
    peers::wait_list(&c, 60, |l| {
        peers::server(l, "secured").status == "needs_auth"
    })
    .await;
    // A restart asks again (and is refused again).
    let out = d
        .gemctl(&["mcp", "restart", "secured"])
        .output()
        .expect("gemctl mcp restart");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("needs_auth"),
        "{out:?}"
    );
    let log = d.stderr_text();
    let errors: Vec<&str> = log.lines().filter(|l| l.contains("ERROR")).collect();
    assert!(errors.is_empty(), "{errors:#?}");
}
