//! Configuration scopes through a real daemon and real MCP servers: two
//! workspaces may each have a server of the same name (each session calls
//! its own, the user's server of that name serves the other workspaces),
//! and `mcp.restart` of a name more than one scope has asks for the scope.

mod peers;

use std::path::{Path, PathBuf};

use geminid_protocol::tool::CallState;
use geminid_tests::*;
use peers::*;
use serde_json::{Value, json};

/// A workspace under the test's directory whose settings are `settings`.
fn workspace(d: &TestDaemon, name: &str, settings: &Value) -> PathBuf {
    let root = d.dir.path().join(name);
    std::fs::create_dir_all(root.join(".gemini")).unwrap();
    std::fs::write(root.join(".gemini/settings.json"), settings.to_string()).unwrap();
    std::fs::canonicalize(root).unwrap()
}

/// An `everything` server whose `get-env` tool tells `WHICH`.
fn env_server(p: &Path, which: &str) -> Value {
    json!({"command": everything(p), "includeTools": ["get-env"], "env": {"WHICH": which}})
}

/// The text a call of `tool` in `session` returned (panics when it failed).
async fn called(c: &Client, session: &str, tool: &str) -> String {
    let snap = run(c, session, tool, json!({})).await;
    assert_eq!(snap.state, CallState::Success, "{tool}: {snap:#?}");
    result_json(&snap).to_string()
}

/// Whether `tool` is unknown in `session` (refused or failed, never run).
async fn unknown(c: &Client, session: &str, tool: &str) -> bool {
    match c
        .call_tool(session.into(), tool.into(), Some(json!({})), Some(true))
        .await
    {
        Err(_) => true,
        Ok(answer) => answer
            .outcome
            .is_some_and(|s| s.state != CallState::Success && s.result.is_none()),
    }
}

fn scopes_of(list: &geminid_protocol::mcp::McpList, name: &str) -> Vec<String> {
    list.servers
        .iter()
        .filter(|s| s.name == name)
        .map(|s| s.scope.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_workspaces_each_call_their_own_server_of_the_same_name() {
    let p = peers();
    let d = daemon_with_settings(&json!({"mcpServers": {"db": env_server(&p, "from-user")}}));
    let a = workspace(
        &d,
        "a",
        &json!({"mcpServers": {"db": env_server(&p, "from-a")}}),
    );
    let b = workspace(
        &d,
        "b",
        &json!({"mcpServers": {"db": env_server(&p, "from-b")}}),
    );
    let plain = workspace(&d, "plain", &json!({}));
    let c = d.client().await;
    let in_a = yolo_session(&c, &a).await;
    let in_b = yolo_session(&c, &b).await;
    let in_plain = yolo_session(&c, &plain).await;
    let list = wait_list(&c, 60, |l| {
        l.servers
            .iter()
            .filter(|s| s.name == "db" && s.status == "connected")
            .count()
            == 3
    })
    .await;
    let mut scopes = scopes_of(&list, "db");
    scopes.sort();
    assert_eq!(
        scopes,
        [
            "user".to_owned(),
            format!("workspace:{}", a.display()),
            format!("workspace:{}", b.display()),
        ],
        "mcp list shows each db with its scope"
    );

    // Bare and qualified, each session reaches its own `db`.
    for (session, which) in [
        (&in_a, "from-a"),
        (&in_b, "from-b"),
        (&in_plain, "from-user"),
    ] {
        for tool in ["get-env", "db__get-env"] {
            let text = called(&c, session, tool).await;
            assert!(text.contains(which), "{tool} in {session}: {text}");
            for other in ["from-a", "from-b", "from-user"] {
                if other != which {
                    assert!(!text.contains(other), "{tool} in {session} reached {other}");
                }
            }
        }
    }
    // Each session is told one `get-env`, its own.
    for session in [&in_a, &in_b, &in_plain] {
        let tools = c.list_tools(Some(session.clone())).await.unwrap();
        let env_tools = tools.iter().filter(|t| t.name == "get-env").count();
        assert_eq!(env_tools, 1, "{session}");
    }

    // A restart by a name three scopes have asks which.
    let err = c
        .restart_mcp("db".into(), None)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("user") && err.contains(&a.display().to_string()),
        "the error lists the scopes: {err}"
    );
    let scope_a = format!("workspace:{}", a.display());
    let restarted = c
        .restart_mcp("db".into(), Some(scope_a.clone()))
        .await
        .unwrap();
    assert_eq!(restarted.scope, scope_a);
    assert_eq!(restarted.status, "connected");
    let text = called(&c, &in_a, "get-env").await;
    assert!(text.contains("from-a"), "{text}");

    // Workspace b's server goes from its settings: b's sessions fall back
    // to the user's `db`, a's keep their own.
    std::fs::write(b.join(".gemini/settings.json"), "{}").unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        // While b's server stops, a call may find it gone: not yet.
        let snap = run(&c, &in_b, "get-env", json!({})).await;
        let text = snap.result.as_ref().map(|_| result_json(&snap).to_string());
        if snap.state == CallState::Success
            && text.as_deref().is_some_and(|t| t.contains("from-user"))
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "b still sees its old db: {snap:#?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let text = called(&c, &in_a, "get-env").await;
    assert!(text.contains("from-a"), "{text}");
    assert!(!unknown(&c, &in_b, "db__get-env").await);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workspace_server_is_not_reachable_from_another_workspace() {
    let p = peers();
    let d = daemon_with_settings(&json!({}));
    let a = workspace(
        &d,
        "a",
        &json!({"mcpServers": {"db": env_server(&p, "from-a")}}),
    );
    let plain = workspace(&d, "plain", &json!({}));
    let c = d.client().await;
    let in_a = yolo_session(&c, &a).await;
    let in_plain = yolo_session(&c, &plain).await;
    connected(&c, &["db"]).await;
    let text = called(&c, &in_a, "get-env").await;
    assert!(text.contains("from-a"), "{text}");
    assert!(unknown(&c, &in_plain, "get-env").await);
    assert!(unknown(&c, &in_plain, "db__get-env").await);
}

fn install_extension(home: &Path, name: &str, manifest: &Value) {
    let dir = home.join(".gemini/extensions").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("gemini-extension.json"), manifest.to_string()).unwrap();
}

async fn listed(c: &Client, session: &str) -> Vec<String> {
    c.list_tools(Some(session.to_owned()))
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn extensions_follow_their_enablement_in_each_workspace() {
    let p = peers();
    let mut d = TestDaemon::prepared(&[]);
    let home = d.home();
    let a = workspace(&d, "a", &json!({}));
    let b = workspace(&d, "b", &json!({}));
    let plain = workspace(&d, "plain", &json!({}));
    // `only-b` is enabled in b alone; `not-a` everywhere but a.
    install_extension(
        &home,
        "only-b",
        &json!({"name": "only-b", "excludeTools": ["web_fetch"],
                "mcpServers": {"bsrv": env_server(&p, "ext-b")}}),
    );
    install_extension(
        &home,
        "not-a",
        &json!({"name": "not-a", "excludeTools": ["glob"],
                "mcpServers": {"asrv": {"command": everything(&p), "includeTools": ["echo"]}}}),
    );
    std::fs::write(
        home.join(".gemini/extensions/extension-enablement.json"),
        json!({
            "only-b": {"overrides": ["!/*", format!("{}/*", b.display())]},
            "not-a": {"overrides": [format!("!{}/*", a.display())]}
        })
        .to_string(),
    )
    .unwrap();
    d.spawn();
    let c = d.client().await;
    let in_a = yolo_session(&c, &a).await;
    let in_b = yolo_session(&c, &b).await;
    let in_plain = yolo_session(&c, &plain).await;
    connected(&c, &["bsrv", "asrv"]).await;

    let text = called(&c, &in_b, "get-env").await;
    assert!(text.contains("ext-b"), "{text}");
    assert!(unknown(&c, &in_a, "get-env").await);
    assert!(unknown(&c, &in_plain, "bsrv__get-env").await);
    assert!(unknown(&c, &in_a, "echo").await);
    let echoed = run(&c, &in_plain, "echo", json!({"message": "hi"})).await;
    assert_eq!(echoed.state, CallState::Success, "{echoed:#?}");

    let (in_a_tools, in_b_tools, plain_tools) = (
        listed(&c, &in_a).await,
        listed(&c, &in_b).await,
        listed(&c, &in_plain).await,
    );
    let has = |l: &[String], n: &str| l.iter().any(|t| t == n);
    // excludeTools of an extension apply where it is enabled.
    assert!(
        has(&in_a_tools, "glob") && has(&in_a_tools, "web_fetch"),
        "{in_a_tools:?}"
    );
    assert!(
        !has(&in_b_tools, "glob") && !has(&in_b_tools, "web_fetch"),
        "{in_b_tools:?}"
    );
    assert!(
        !has(&plain_tools, "glob") && has(&plain_tools, "web_fetch"),
        "{plain_tools:?}"
    );
    let refused = run(
        &c,
        &in_b,
        "web_fetch",
        json!({"prompt": "https://example.com"}),
    )
    .await;
    assert_eq!(refused.error.map(|e| e.kind).as_deref(), Some("denied"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_right_after_a_restart_waits_for_its_workspace_servers() {
    use geminid_protocol::EventPayload;
    use geminid_tests::fake_model::{FakeModel, gemini};
    let p = peers();
    let fake = FakeModel::scripted(vec![
        gemini::call_reply(&[("echo", json!({"message": "after the restart"}))]),
        gemini::answer(&["done"]),
    ])
    .await;
    let mut d = TestDaemon::prepared(&[
        ("GEMINI_API_KEY", "test-key"),
        ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
        ("GEMINI_MODEL", "gemini-2.5-flash"),
    ]);
    let ws = workspace(
        &d,
        "ws",
        &json!({"mcpServers": {"ws": {"command": everything(&p), "includeTools": ["echo"]}}}),
    );
    d.spawn();
    let c = d.client().await;
    let sid = yolo_session(&c, &ws).await;
    connected(&c, &["ws"]).await;
    drop(c);
    assert_eq!(d.terminate(), Some(0));
    d.spawn();
    let c = d.client().await;
    // The first request after the restart is the prompt itself.
    let turn = c
        .prompt(sid.clone(), "echo something".into())
        .await
        .unwrap()
        .turn_id;
    let mut sub = c.subscribe_session(sid.clone(), None).await.unwrap();
    let events = collect_until(
        &mut sub,
        |e| matches!(&e.payload, EventPayload::TurnFinished { turn_id, .. } if *turn_id == turn),
    )
    .await;
    let call = events
        .iter()
        .rev()
        .find_map(|e| match &e.payload {
            EventPayload::ToolCall(s) if s.state.is_terminal() && s.name == "echo" => {
                Some((**s).clone())
            }
            _ => None,
        })
        .expect("the echo call");
    assert_eq!(call.state, CallState::Success, "{call:#?}");
    let first = &fake.seen()[0].body;
    let told: Vec<&str> = first["tools"][0]["functionDeclarations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["name"].as_str())
        .collect();
    assert!(told.contains(&"echo"), "the model was not told: {told:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_extension_s_settings_reach_its_servers_from_its_env_file() {
    let p = peers();
    let mut d = TestDaemon::prepared(&[]);
    let home = d.home();
    install_extension(
        &home,
        "keyed",
        &json!({"name": "keyed",
                "settings": [
                    {"name": "API key", "envVar": "EXT_API_KEY", "sensitive": false},
                    {"name": "Mode", "envVar": "EXT_MODE"}
                ],
                "mcpServers": {"keyed-srv": {"command": everything(&p),
                    "includeTools": ["get-env"], "env": {"EXT_MODE": "from-entry"}}}}),
    );
    std::fs::write(
        home.join(".gemini/extensions/keyed/.env"),
        "EXT_API_KEY=ext-secret-value\nEXT_MODE=from-dotenv\nUNDECLARED_VAR=not-declared\n",
    )
    .unwrap();
    d.spawn();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    connected(&c, &["keyed-srv"]).await;
    let text = called(&c, &session, "get-env").await;
    assert!(
        text.contains("ext-secret-value"),
        "a declared setting: {text}"
    );
    assert!(text.contains("from-entry"), "the entry's env wins: {text}");
    assert!(!text.contains("from-dotenv"), "{text}");
    assert!(
        !text.contains("not-declared"),
        "only declared settings: {text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workspace_s_own_excluded_env_vars_apply_to_its_children() {
    let d = TestDaemon::start();
    let strict = workspace(
        &d,
        "strict",
        &json!({"advanced": {"excludedEnvVars": ["GEMINID_WS_EXCLUDED"]}}),
    );
    let lax = workspace(&d, "lax", &json!({}));
    for root in [&strict, &lax] {
        std::fs::write(
            root.join(".env"),
            "GEMINID_WS_EXCLUDED=leaked\nGEMINID_WS_KEPT=kept\nDEBUG=1\n",
        )
        .unwrap();
    }
    let c = d.client().await;
    let probe = json!({"command":
        "echo \"X=${GEMINID_WS_EXCLUDED:-none} K=${GEMINID_WS_KEPT:-none} D=${DEBUG:-none}\""});
    let in_strict = yolo_session(&c, &strict).await;
    let in_lax = yolo_session(&c, &lax).await;
    let text = called_with(&c, &in_strict, "run_shell_command", probe.clone()).await;
    assert!(text.contains("X=none"), "its own exclusion: {text}");
    assert!(text.contains("K=kept"), "{text}");
    assert!(
        text.contains("D=none"),
        "the user's (default) ones still: {text}"
    );
    let text = called_with(&c, &in_lax, "run_shell_command", probe).await;
    assert!(
        text.contains("X=leaked"),
        "another workspace is untouched: {text}"
    );
}

async fn called_with(c: &Client, session: &str, tool: &str, args: Value) -> String {
    let snap = run(c, session, tool, args).await;
    assert_eq!(snap.state, CallState::Success, "{tool}: {snap:#?}");
    result_json(&snap).to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn hooks_get_their_workspace_s_env_file_sanitized() {
    let mut d = TestDaemon::prepared(&[]);
    let out = d.dir.path().join("hook-env.txt");
    let command = format!(
        "echo \"P=${{GEMINID_HOOK_PROBE:-none}} K=${{MY_API_TOKEN:-none}} D=${{DEBUG:-none}}\" >> '{}'",
        out.display()
    );
    let gemini = d.home().join(".gemini");
    std::fs::create_dir_all(&gemini).unwrap();
    std::fs::write(
        gemini.join("settings.json"),
        json!({"hooks": {"BeforeTool": [{"matcher": ".*",
            "hooks": [{"type": "command", "command": command}]}]}})
        .to_string(),
    )
    .unwrap();
    let ws = workspace(&d, "ws", &json!({}));
    std::fs::write(
        ws.join(".env"),
        "GEMINID_HOOK_PROBE=from-ws\nMY_API_TOKEN=sekrit\nDEBUG=1\n",
    )
    .unwrap();
    std::fs::write(ws.join("a.txt"), "x").unwrap();
    d.spawn();
    let c = d.client().await;
    let session = yolo_session(&c, &ws).await;
    let read = run(
        &c,
        &session,
        "read_file",
        json!({"absolute_path": ws.join("a.txt")}),
    )
    .await;
    assert_eq!(read.state, CallState::Success, "{read:#?}");
    let text = std::fs::read_to_string(&out).expect("the hook ran before the call");
    assert!(text.contains("P=from-ws"), "the workspace's .env: {text}");
    assert!(text.contains("K=none"), "secrets stay out: {text}");
    assert!(
        text.contains("D=none"),
        "excluded from a project file: {text}"
    );
}

/// A session's resource subscription goes to the server its workspace
/// sees: the workspace's own `db`, though the user has a `db` too (the
/// name alone is ambiguous daemon-wide).
#[tokio::test(flavor = "multi_thread")]
async fn a_subscription_goes_to_the_server_the_session_sees() {
    let p = peers();
    let d = daemon_with_settings(&json!({"mcpServers": {"db": env_server(&p, "from-user")}}));
    let a = workspace(
        &d,
        "a",
        &json!({"mcpServers": {"db": env_server(&p, "from-a")}}),
    );
    let c = d.client().await;
    let in_a = yolo_session(&c, &a).await;
    wait_list(&c, 60, |l| {
        l.servers
            .iter()
            .filter(|s| s.name == "db" && s.status == "connected")
            .count()
            == 2
    })
    .await;
    c.mcp_subscribe(in_a, "db".into(), "test://static/resource/1".into())
        .await
        .expect("the workspace's own db takes the subscription");
}

/// Waits until the servers named `name` are in exactly `scopes` (sorted),
/// each connected.
async fn in_scopes(c: &Client, name: &str, scopes: &[String]) -> geminid_protocol::mcp::McpList {
    let mut want = scopes.to_vec();
    want.sort();
    wait_list(c, 60, |l| {
        let mut have = scopes_of(l, name);
        have.sort();
        have == want
            && l.servers
                .iter()
                .filter(|s| s.name == name)
                .all(|s| s.status == "connected")
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn an_extension_server_naming_the_workspace_runs_once_per_workspace() {
    let p = peers();
    // The trust file decides.
    let mut d = TestDaemon::prepared(&[("GEMINI_CLI_TRUST_WORKSPACE", "")]);
    let home = d.home();
    let a = workspace(&d, "a", &json!({}));
    let b = workspace(&d, "b", &json!({}));
    let off = workspace(&d, "off", &json!({}));
    let untrusted = workspace(&d, "untrusted", &json!({}));
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(
        home.join(".gemini/trustedFolders.json"),
        json!({
            a.display().to_string(): "TRUST_FOLDER",
            b.display().to_string(): "TRUST_FOLDER",
            off.display().to_string(): "TRUST_FOLDER",
        })
        .to_string(),
    )
    .unwrap();
    install_extension(
        &home,
        "perws",
        &json!({"name": "perws", "mcpServers": {
            "wsp": {"command": everything(&p), "includeTools": ["get-env"],
                    "env": {"WS_FILE": "${workspacePath}${/}notes.md"}},
            "common": {"command": everything(&p), "includeTools": ["echo"]}
        }}),
    );
    std::fs::write(
        home.join(".gemini/extensions/extension-enablement.json"),
        json!({"perws": {"overrides": [format!("!{}/*", off.display())]}}).to_string(),
    )
    .unwrap();
    d.spawn();
    let c = d.client().await;
    let in_a = yolo_session(&c, &a).await;
    let in_b = yolo_session(&c, &b).await;
    let in_off = yolo_session(&c, &off).await;
    // 0.61 connects no MCP server in an untrusted folder: no instance.
    let in_untrusted = yolo_session(&c, &untrusted).await;
    let scope = |root: &Path| format!("extensions:{}", root.display());
    in_scopes(&c, "wsp", &[scope(&a), scope(&b)]).await;
    assert!(unknown(&c, &in_untrusted, "get-env").await);
    // The entry without the variable: one shared instance.
    in_scopes(&c, "common", &["extensions".to_owned()]).await;

    // Each workspace's session calls its own instance, which was given
    // its own path.
    let note = |root: &Path| format!("{}/notes.md", root.display());
    let from_a = called(&c, &in_a, "get-env").await;
    assert!(from_a.contains(&note(&a)), "{from_a}");
    assert!(!from_a.contains(&note(&b)), "{from_a}");
    let from_b = called(&c, &in_b, "get-env").await;
    assert!(from_b.contains(&note(&b)), "{from_b}");
    assert!(!from_b.contains(&note(&a)), "{from_b}");
    // Where the extension is disabled: no instance, nothing to call.
    assert!(unknown(&c, &in_off, "get-env").await);
    assert!(unknown(&c, &in_off, "echo").await);
    let echoed = run(&c, &in_a, "echo", json!({"message": "hi"})).await;
    assert_eq!(echoed.state, CallState::Success, "{echoed:#?}");

    // Disabled for b: b's instance stops, a's goes on.
    std::fs::write(
        home.join(".gemini/extensions/extension-enablement.json"),
        json!({"perws": {"overrides": [
            format!("!{}/*", off.display()),
            format!("!{}/*", b.display()),
        ]}})
        .to_string(),
    )
    .unwrap();
    in_scopes(&c, "wsp", &[scope(&a)]).await;
    assert!(unknown(&c, &in_b, "get-env").await);
    let again = called(&c, &in_a, "get-env").await;
    assert!(again.contains(&note(&a)), "{again}");

    // The last session in a is deleted: the daemon drops the workspace,
    // and its instance stops.
    c.delete_session(in_a.clone()).await.unwrap();
    in_scopes(&c, "wsp", &[]).await;
    in_scopes(&c, "common", &["extensions".to_owned()]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_right_after_a_restart_waits_for_the_extension_servers_of_its_workspace() {
    use geminid_protocol::EventPayload;
    use geminid_tests::fake_model::{FakeModel, gemini};
    let p = peers();
    let fake = FakeModel::scripted(vec![
        gemini::call_reply(&[
            ("echo", json!({"message": "after the restart"})),
            ("get-env", json!({})),
        ]),
        gemini::answer(&["done"]),
    ])
    .await;
    let mut d = TestDaemon::prepared(&[
        ("GEMINI_API_KEY", "test-key"),
        ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
        ("GEMINI_MODEL", "gemini-2.5-flash"),
    ]);
    let home = d.home();
    let ws = workspace(&d, "ws", &json!({}));
    // Enabled in ws alone: a shared server (`here`) and one instance per
    // workspace (`wsp`).
    install_extension(
        &home,
        "only-ws",
        &json!({"name": "only-ws", "mcpServers": {
            "here": {"command": everything(&p), "includeTools": ["echo"]},
            "wsp": {"command": everything(&p), "includeTools": ["get-env"],
                    "env": {"WS_FILE": "${workspacePath}/marker"}}
        }}),
    );
    std::fs::write(
        home.join(".gemini/extensions/extension-enablement.json"),
        json!({"only-ws": {"overrides": ["!/*", format!("{}/*", ws.display())]}}).to_string(),
    )
    .unwrap();
    d.spawn();
    let c = d.client().await;
    let sid = yolo_session(&c, &ws).await;
    connected(&c, &["here", "wsp"]).await;
    drop(c);
    assert_eq!(d.terminate(), Some(0));
    d.spawn();
    let c = d.client().await;
    // Nothing of the extension runs before a session of ws is back.
    let before = c.list_mcp().await.unwrap();
    assert!(before.servers.is_empty(), "{before:#?}");
    // The first request after the restart is the prompt itself.
    let turn = c
        .prompt(sid.clone(), "use both".into())
        .await
        .unwrap()
        .turn_id;
    let mut sub = c.subscribe_session(sid.clone(), None).await.unwrap();
    let events = collect_until(
        &mut sub,
        |e| matches!(&e.payload, EventPayload::TurnFinished { turn_id, .. } if *turn_id == turn),
    )
    .await;
    let call = |name: &str| {
        events
            .iter()
            .rev()
            .find_map(|e| match &e.payload {
                EventPayload::ToolCall(s) if s.state.is_terminal() && s.name == name => {
                    Some((**s).clone())
                }
                _ => None,
            })
            .unwrap_or_else(|| panic!("no {name} call: {events:#?}"))
    };
    let echo = call("echo");
    assert_eq!(echo.state, CallState::Success, "{echo:#?}");
    let env = call("get-env");
    assert_eq!(env.state, CallState::Success, "{env:#?}");
    let text = result_json(&env).to_string();
    assert!(text.contains(&format!("{}/marker", ws.display())), "{text}");
    let first = &fake.seen()[0].body;
    let told: Vec<&str> = first["tools"][0]["functionDeclarations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["name"].as_str())
        .collect();
    assert!(
        told.contains(&"echo") && told.contains(&"get-env"),
        "the model was not told: {told:?}"
    );
}

/// `gemctl [--json] mcp resources ARGS` run in `dir`: its stdout.
fn gemctl_in(d: &TestDaemon, dir: &Path, args: &[&str]) -> String {
    let out = d.gemctl(args).current_dir(dir).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{args:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[tokio::test(flavor = "multi_thread")]
async fn gemctl_mcp_resources_lists_what_the_workspace_sees() {
    use geminid_protocol::mcp::McpResources;
    let p = peers();
    let mut d = TestDaemon::prepared(&[]);
    let home = d.home();
    let a = workspace(&d, "a", &json!({}));
    let b = workspace(&d, "b", &json!({}));
    let plain = workspace(&d, "plain", &json!({}));
    // One instance per workspace, both named `docs`.
    install_extension(
        &home,
        "docs",
        &json!({"name": "docs", "mcpServers": {
            "docs": {"command": everything(&p), "env": {"DOCS_ROOT": "${workspacePath}"}}
        }}),
    );
    d.spawn();
    let c = d.client().await;
    let in_a = yolo_session(&c, &a).await;
    let _in_b = yolo_session(&c, &b).await;
    let scope = |root: &Path| format!("extensions:{}", root.display());
    in_scopes(&c, "docs", &[scope(&a), scope(&b)]).await;
    // Both instances' lists are in (each lists after connecting).
    let start = std::time::Instant::now();
    loop {
        let all = c.mcp_resources(None, None, None, Some(true)).await.unwrap();
        let scopes: std::collections::BTreeSet<&str> =
            all.resources.iter().map(|r| r.scope.as_str()).collect();
        if scopes.len() == 2 {
            break;
        }
        assert!(start.elapsed().as_secs() < 30, "{all:#?}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let only = |listed: &McpResources, root: &Path| {
        !listed.resources.is_empty()
            && listed
                .resources
                .iter()
                .chain(&listed.templates)
                .all(|r| r.scope == scope(root) && r.server == "docs")
    };

    // A session's workspace: its own instance only, as the model sees it.
    let by_session = c
        .mcp_resources(None, Some(in_a.clone()), None, None)
        .await
        .unwrap();
    assert!(only(&by_session, &a), "{by_session:#?}");
    // gemctl in a workspace's directory: that workspace's view.
    let text = gemctl_in(&d, &b, &["--json", "mcp", "resources"]);
    let in_b: McpResources = serde_json::from_str(&text).unwrap();
    assert!(only(&in_b, &b), "{in_b:#?}");
    let text = gemctl_in(&d, &b, &["--json", "mcp", "resources", "--session", &in_a]);
    let of_a: McpResources = serde_json::from_str(&text).unwrap();
    assert!(only(&of_a, &a), "{of_a:#?}");
    // A directory where the extension has no instance: nothing.
    let text = gemctl_in(
        &d,
        &a,
        &[
            "--json",
            "mcp",
            "resources",
            "--cwd",
            &plain.display().to_string(),
        ],
    );
    let none: McpResources = serde_json::from_str(&text).unwrap();
    assert!(none.resources.is_empty(), "{none:#?}");
    // --all: every server, each line with its scope.
    let text = gemctl_in(&d, &plain, &["mcp", "resources", "--all"]);
    for root in [&a, &b] {
        assert!(text.contains(&format!("[{}] docs:", scope(root))), "{text}");
    }
    let text = gemctl_in(&d, &a, &["mcp", "resources"]);
    assert!(
        text.contains("docs:") && !text.lines().any(|l| l.starts_with("[extensions:")),
        "{text}"
    );
}

/// `mcp read` / `mcp prompt` of a name two workspaces' instances share:
/// the one the session's (or directory's) workspace sees, as the model
/// does, not "more than one server".
#[tokio::test(flavor = "multi_thread")]
async fn mcp_read_and_prompt_ask_the_server_the_workspace_sees() {
    let p = peers();
    let mut d = TestDaemon::prepared(&[]);
    let home = d.home();
    let a = workspace(&d, "a", &json!({}));
    let b = workspace(&d, "b", &json!({}));
    let plain = workspace(&d, "plain", &json!({}));
    install_extension(
        &home,
        "docs",
        &json!({"name": "docs", "mcpServers": {
            "docs": {"command": everything(&p), "env": {"DOCS_ROOT": "${workspacePath}"}}
        }}),
    );
    d.spawn();
    let c = d.client().await;
    let in_a = yolo_session(&c, &a).await;
    let _in_b = yolo_session(&c, &b).await;
    let scope = |root: &Path| format!("extensions:{}", root.display());
    in_scopes(&c, "docs", &[scope(&a), scope(&b)]).await;
    let start = std::time::Instant::now();
    let uri = loop {
        let seen = c
            .mcp_resources(None, Some(in_a.clone()), None, None)
            .await
            .unwrap();
        if let Some(r) = seen.resources.first() {
            break r.resource["uri"].as_str().unwrap().to_owned();
        }
        assert!(start.elapsed().as_secs() < 30, "{seen:#?}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    // Without a workspace the name is ambiguous: said so.
    let ambiguous = c
        .mcp_read("docs".into(), uri.clone(), None, None)
        .await
        .expect_err("two instances");
    assert!(
        ambiguous.to_string().contains("more than one"),
        "{ambiguous}"
    );
    // By session, by directory: the instance of that workspace answers.
    let read = c
        .mcp_read("docs".into(), uri.clone(), Some(in_a.clone()), None)
        .await
        .unwrap();
    assert_eq!(read.contents[0]["uri"], json!(uri));
    let got = c
        .mcp_prompt(
            "docs".into(),
            "simple-prompt".into(),
            None,
            None,
            Some(b.display().to_string()),
        )
        .await
        .unwrap();
    assert!(!got.messages.is_empty(), "{got:?}");
    // gemctl: the current directory's view by default, or --session.
    let text = gemctl_in(&d, &b, &["--json", "mcp", "read", "docs", &uri]);
    assert!(text.contains(&uri), "{text}");
    let text = gemctl_in(
        &d,
        &plain,
        &["mcp", "prompt", "docs", "simple-prompt", "--session", &in_a],
    );
    assert!(text.starts_with("user: "), "{text}");
    // A directory where no instance runs: no such server there.
    let out = d
        .gemctl(&["mcp", "read", "docs", &uri])
        .current_dir(&plain)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no MCP server named \"docs\""), "{err}");
}

/// `experimental.extensionConfig: false` (0.61's default is true): an
/// extension's settings get no values; set back to true, they reach its
/// server again (its entry changed: it restarts).
#[tokio::test(flavor = "multi_thread")]
async fn extension_config_off_gives_the_settings_no_values() {
    let p = peers();
    let mut d = TestDaemon::prepared(&[]);
    let home = d.home();
    install_extension(
        &home,
        "keyed",
        &json!({"name": "keyed",
                "settings": [{"name": "API key", "envVar": "EXT_API_KEY"}],
                "mcpServers": {"keyed-srv": {"command": everything(&p),
                    "includeTools": ["get-env"]}}}),
    );
    std::fs::write(
        home.join(".gemini/extensions/keyed/.env"),
        "EXT_API_KEY=ext-secret-value\n",
    )
    .unwrap();
    let settings = home.join(".gemini/settings.json");
    std::fs::write(
        &settings,
        "{\n  // no extension settings\n  \"experimental\": {\"extensionConfig\": false}\n}",
    )
    .unwrap();
    d.spawn();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    connected(&c, &["keyed-srv"]).await;
    let text = called(&c, &session, "get-env").await;
    assert!(!text.contains("ext-secret-value"), "{text}");
    let status = c.status().await.unwrap();
    assert!(
        !status
            .unused_settings
            .iter()
            .any(|k| k.contains("experimental.extensionConfig")),
        "the key is read: {:?}",
        status.unused_settings
    );
    std::fs::write(&settings, r#"{"experimental": {"extensionConfig": true}}"#).unwrap();
    let start = std::time::Instant::now();
    loop {
        let snap = run(&c, &session, "get-env", json!({})).await;
        if snap.state == CallState::Success
            && result_json(&snap).to_string().contains("ext-secret-value")
        {
            break;
        }
        assert!(start.elapsed().as_secs() < 30, "never got the value");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
