//! MCP resources through the daemon, with server-everything: the model's
//! `list_mcp_resources` and `read_mcp_resource` tools; subscriptions
//! (`mcp.subscribe`) and their updates as session events.

mod peers;

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::CallState;
use peers::*;
use serde_json::{Value, json};

fn model_text(result: &Value) -> String {
    result["llmContent"]
        .as_array()
        .expect("parts")
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_lists_and_reads_resources() {
    let p = peers();
    let d = daemon_with_settings(&json!({"mcpServers": {
        "everything": {"command": everything(&p)}
    }}));
    let c = d.client().await;
    connected(&c, &["everything"]).await;
    let sid = session(&c, &d, ApprovalMode::Yolo).await;

    let listed = run(&c, &sid, "list_mcp_resources", json!({})).await;
    assert_eq!(listed.state, CallState::Success, "{listed:#?}");
    let text = model_text(&result_json(&listed));
    assert!(text.starts_with("Available MCP Resources:\n"), "{text}");
    let first = text
        .lines()
        .nth(1)
        .and_then(|l| l.strip_prefix("- everything:"))
        .expect("a resource of everything");
    let uri = first.split(" | ").next().expect("its uri").to_owned();

    let other = run(
        &c,
        &sid,
        "list_mcp_resources",
        json!({"serverName": "nobody"}),
    )
    .await;
    assert_eq!(
        model_text(&result_json(&other)),
        "No resources found for server: nobody"
    );

    // By the bare URI and by `server:uri`, as the list shows it.
    for asked in [uri.clone(), format!("everything:{uri}")] {
        let read = run(&c, &sid, "read_mcp_resource", json!({"uri": asked})).await;
        assert_eq!(read.state, CallState::Success, "{read:#?}");
        let body = model_text(&result_json(&read));
        assert!(
            !body.is_empty() && body != "No content returned from resource.",
            "{uri}: {body}"
        );
    }

    let missing = run(
        &c,
        &sid,
        "read_mcp_resource",
        json!({"uri": "test://no/such/thing"}),
    )
    .await;
    assert_eq!(missing.state, CallState::Error, "{missing:#?}");
    let error = missing.error.expect("an error");
    assert_eq!(error.kind, "not_found");
    assert_eq!(
        error.message,
        "Resource not found for URI: test://no/such/thing"
    );
}

fn gemctl(d: &geminid_tests::TestDaemon, args: &[&str]) -> (i32, String, String) {
    let out = d
        .gemctl(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run gemctl");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn gemctl_lists_and_reads_resources() {
    let p = peers();
    let d = daemon_with_settings(&json!({"mcpServers": {
        "everything": {"command": everything(&p)}
    }}));
    let c = d.client().await;
    connected(&c, &["everything"]).await;
    let listed = c
        .mcp_resources(None, None, None, None)
        .await
        .expect("mcp.resources");
    let first = listed
        .resources
        .first()
        .expect("everything lists resources");
    assert_eq!(first.server, "everything");
    let uri = first.resource["uri"].as_str().expect("a uri").to_owned();
    assert!(
        listed
            .templates
            .iter()
            .any(|t| t.resource["uriTemplate"].is_string()),
        "{listed:#?}"
    );

    let (code, out, err) = gemctl(&d, &["mcp", "resources", "everything"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with(&format!("everything:{uri}"))),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.starts_with("template everything:")),
        "{out}"
    );

    let read = c
        .mcp_read("everything".into(), uri.clone(), None, None)
        .await
        .expect("mcp.read");
    assert_eq!(read.contents.first().map(|c| &c["uri"]), Some(&json!(uri)));
    let (code, out, err) = gemctl(&d, &["mcp", "read", "everything", &uri]);
    assert_eq!(code, 0, "{err}");
    let expected = read.contents[0]["text"]
        .as_str()
        .map(|t| format!("{t}\n"))
        .unwrap_or_default();
    if !expected.is_empty() {
        assert_eq!(out, expected);
    } else {
        assert!(out.contains("blob"), "{out}");
    }

    let (code, _, err) = gemctl(&d, &["mcp", "read", "nobody", &uri]);
    assert_ne!(code, 0);
    assert!(err.contains("no MCP server named \"nobody\""), "{err}");
}

/// `@server:uri` in a prompt: a resource the server lists is read through
/// the daemon's MCP client and reaches the model under its reference, as
/// 0.61 lays referenced content out; a URI the server does not list is
/// not read as a resource.
#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_references_a_resource_by_server_and_uri() {
    use geminid_protocol::event::EventPayload;
    use geminid_tests::fake_model::{FakeModel, gemini};
    use geminid_tests::*;

    let p = peers();
    let fake = FakeModel::scripted(vec![gemini::answer(&["ok"]), gemini::answer(&["ok"])]).await;
    let mut d = TestDaemon::start_with_env(&[
        ("GEMINI_API_KEY", "test-key"),
        ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
        ("GEMINI_MODEL", "gemini-2.5-flash"),
    ]);
    d.terminate();
    let dir = d.home().join(".gemini");
    std::fs::create_dir_all(&dir).unwrap();
    let settings = json!({"mcpServers": {"everything": {"command": everything(&p)}}});
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
    d.spawn();
    let c = d.client().await;
    connected(&c, &["everything"]).await;
    let listed = c
        .mcp_resources(Some("everything".into()), None, None, None)
        .await
        .unwrap();
    let first = listed.resources.first().expect("a resource");
    let uri = first.resource["uri"].as_str().expect("its uri").to_owned();
    let sid = session(&c, &d, ApprovalMode::Yolo).await;

    let mut sub = c.subscribe_session(sid.clone(), None).await.unwrap();
    let text = format!("summarize @everything:{uri} please");
    let turn = c.prompt(sid.clone(), text.clone()).await.unwrap().turn_id;
    let events = collect_until(
        &mut sub,
        |e| matches!(&e.payload, EventPayload::TurnFinished { turn_id, .. } if *turn_id == turn),
    )
    .await;
    let refs = events
        .iter()
        .find_map(|e| match &e.payload {
            EventPayload::PromptReferences { read, skipped, .. } => Some((read, skipped)),
            _ => None,
        })
        .expect("a promptReferences event");
    assert_eq!(refs.0, &vec![format!("everything:{uri}")], "{refs:?}");
    assert!(refs.1.is_empty(), "{refs:?}");
    let sent = fake
        .seen()
        .last()
        .expect("a model request")
        .body
        .to_string();
    assert!(
        sent.contains(&format!("Content from @everything:{uri}:")),
        "{sent}"
    );
    assert!(sent.contains("--- End of content ---"), "{sent}");

    // Not listed by that server: left to the workspace as a path, which
    // does not exist, so it is skipped and nothing is read from the server.
    let turn = c
        .prompt(sid.clone(), "and @everything:test://nope".into())
        .await
        .unwrap()
        .turn_id;
    let events = collect_until(
        &mut sub,
        |e| matches!(&e.payload, EventPayload::TurnFinished { turn_id, .. } if *turn_id == turn),
    )
    .await;
    let skipped = events
        .iter()
        .find_map(|e| match &e.payload {
            EventPayload::PromptReferences { skipped, .. } => Some(skipped.clone()),
            _ => None,
        })
        .expect("a promptReferences event");
    assert_eq!(skipped.len(), 1, "{skipped:?}");
}

/// `mcp.subscribe`: each session subscribes to its own resource of
/// server-everything; its `toggle-subscriber-updates` tool makes the
/// server send `notifications/resources/updated` for what the daemon
/// subscribed to, and each update reaches only the session that asked.
#[tokio::test(flavor = "multi_thread")]
async fn resource_updates_reach_the_sessions_that_subscribed() {
    use geminid_protocol::event::EventPayload;
    use geminid_tests::collect_until;

    let p = peers();
    let d = daemon_with_settings(&json!({"mcpServers": {
        "everything": {"command": everything(&p)}
    }}));
    let c = d.client().await;
    connected(&c, &["everything"]).await;
    let a = session(&c, &d, ApprovalMode::Yolo).await;
    let b = session(&c, &d, ApprovalMode::Yolo).await;
    let one = "test://static/resource/1";
    let two = "test://static/resource/2";
    c.mcp_subscribe(a.clone(), "everything".into(), one.into())
        .await
        .expect("a subscribes");
    c.mcp_subscribe(b.clone(), "everything".into(), two.into())
        .await
        .expect("b subscribes");
    // Refused: an unknown server, an unknown session.
    let unknown = c
        .mcp_subscribe(a.clone(), "nope".into(), one.into())
        .await
        .expect_err("unknown server");
    assert!(unknown.to_string().contains("nope"), "{unknown}");
    c.mcp_subscribe("no-such-session".into(), "everything".into(), one.into())
        .await
        .expect_err("unknown session");

    let mut a_events = c.subscribe_session(a.clone(), Some(0)).await.unwrap();
    let mut b_events = c.subscribe_session(b.clone(), Some(0)).await.unwrap();
    let toggled = run(&c, &a, "toggle-subscriber-updates", json!({})).await;
    assert_eq!(toggled.state, CallState::Success, "{toggled:#?}");

    let updated = |uri: &'static str| {
        move |e: &geminid_protocol::event::SessionEvent| {
            matches!(&e.payload, EventPayload::McpResourceUpdated { server, uri: u }
                if server == "everything" && u == uri)
        }
    };
    let seen_a = collect_until(&mut a_events, updated(one)).await;
    let seen_b = collect_until(&mut b_events, updated(two)).await;
    assert!(!seen_a.iter().any(updated(two)), "{seen_a:#?}");
    assert!(!seen_b.iter().any(updated(one)), "{seen_b:#?}");
}

/// The subscription table as `(uri, sessions, asked)`, in URI order.
async fn table(c: &geminid_tests::Client) -> Vec<(String, Vec<String>, bool)> {
    let mut list: Vec<_> = c
        .mcp_subscriptions()
        .await
        .expect("mcp.subscriptions")
        .subscriptions
        .into_iter()
        .map(|s| (s.uri, s.sessions, s.asked))
        .collect();
    list.sort();
    list
}

/// Waits (60 s at most) until the table is `want`.
async fn table_becomes(c: &geminid_tests::Client, want: &[(&str, &[&String], bool)]) {
    let want: Vec<(String, Vec<String>, bool)> = want
        .iter()
        .map(|(uri, sessions, asked)| {
            let mut sessions: Vec<String> = sessions.iter().map(|s| (*s).clone()).collect();
            sessions.sort();
            (uri.to_string(), sessions, *asked)
        })
        .collect();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let now = table(c).await;
        if now == want {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "subscriptions {now:?}, want {want:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A resource stays subscribed while a session wants it: `mcp.unsubscribe`,
/// deleting the session and its unload while idle each end the session's
/// subscriptions, and the server is told (`resources/unsubscribe`: it
/// leaves the table of what servers were asked) when the last one goes; a
/// restart of the server asks again only for what is still wanted.
#[tokio::test(flavor = "multi_thread")]
async fn a_subscription_ends_with_the_last_session_that_wants_it() {
    let p = peers();
    let mut d = geminid_tests::TestDaemon::start_with_env(&[("GEMINID_SESSION_IDLE", "1")]);
    d.terminate();
    let dir = d.home().join(".gemini");
    std::fs::create_dir_all(&dir).expect("gemini dir");
    let settings = json!({"mcpServers": {"everything": {"command": everything(&p)}}});
    std::fs::write(dir.join("settings.json"), settings.to_string()).expect("settings");
    d.spawn();
    let c = d.client().await;
    connected(&c, &["everything"]).await;
    let a = session(&c, &d, ApprovalMode::Yolo).await;
    let b = session(&c, &d, ApprovalMode::Yolo).await;
    // Attached, so neither idles out; `idle` is not.
    let _a_events = c.subscribe_session(a.clone(), None).await.unwrap();
    let mut b_events = c.subscribe_session(b.clone(), None).await.unwrap();
    let idle = session(&c, &d, ApprovalMode::Yolo).await;
    let (one, two, three) = (
        "test://static/resource/1",
        "test://static/resource/2",
        "test://static/resource/3",
    );
    let subscribe =
        |s: &String, uri: &str| c.mcp_subscribe(s.clone(), "everything".into(), uri.into());
    subscribe(&a, one).await.expect("a: one");
    subscribe(&b, one).await.expect("b: one");
    subscribe(&b, two).await.expect("b: two");
    subscribe(&idle, three).await.expect("idle: three");
    let unsubscribe =
        |s: &String, uri: &str| c.mcp_unsubscribe(s.clone(), "everything".into(), uri.into());

    // The unattached session idles out: its resource is nobody's.
    table_becomes(&c, &[(one, &[&a, &b], true), (two, &[&b], true)]).await;

    // One of two subscribers goes: the server stays subscribed.
    assert!(unsubscribe(&a, one).await.expect("a: one").ok);
    assert!(!unsubscribe(&a, one).await.expect("again").ok);
    table_becomes(&c, &[(one, &[&b], true), (two, &[&b], true)]).await;

    // The last one goes: the server is told.
    assert!(unsubscribe(&b, two).await.expect("b: two").ok);
    table_becomes(&c, &[(one, &[&b], true)]).await;
    unsubscribe(&b, "test://static/resource/x")
        .await
        .map(|ack| assert!(!ack.ok))
        .expect("never subscribed");
    c.mcp_unsubscribe(a.clone(), "nope".into(), one.into())
        .await
        .expect_err("unknown server");

    // A restart asks again for what is still wanted, only.
    c.restart_mcp("everything".into(), None)
        .await
        .expect("restart");
    connected(&c, &["everything"]).await;
    table_becomes(&c, &[(one, &[&b], true)]).await;
    // The new server process was asked: its updates reach the session.
    let toggled = run(&c, &b, "toggle-subscriber-updates", json!({})).await;
    assert_eq!(toggled.state, CallState::Success, "{toggled:#?}");
    geminid_tests::collect_until(&mut b_events, |e| {
        matches!(&e.payload, geminid_protocol::event::EventPayload::McpResourceUpdated { uri, .. } if uri == one)
    })
    .await;

    // Deleting the session ends the rest.
    c.delete_session(b.clone()).await.expect("delete b");
    table_becomes(&c, &[]).await;
}

/// `gemctl mcp resources --subscribe URI`: a watcher started for a session
/// prints each update of the resource as `server:uri` and unsubscribes
/// when it stops, whichever way: the end of its input, a reader that went
/// away (the next update finds the pipe closed), Ctrl-C.
#[tokio::test(flavor = "multi_thread")]
async fn gemctl_prints_a_resource_s_updates_until_stopped_then_unsubscribes() {
    use std::process::Stdio;
    use tokio::io::{AsyncBufReadExt, BufReader};

    let p = peers();
    let d = daemon_with_settings(&json!({"mcpServers": {
        "everything": {"command": everything(&p)}
    }}));
    let c = d.client().await;
    connected(&c, &["everything"]).await;
    let a = session(&c, &d, ApprovalMode::Yolo).await;
    let one = "test://static/resource/1";
    let listed = c
        .mcp_resources(None, Some(a.clone()), None, None)
        .await
        .expect("mcp.resources")
        .resources[0]
        .resource["uri"]
        .as_str()
        .expect("a listed uri")
        .to_owned();
    let watcher = |uri: &str, extra: &[&str]| {
        let mut args = vec!["mcp", "resources", "--subscribe", uri, "--session", &a];
        args.extend_from_slice(extra);
        let mut cmd = tokio::process::Command::from(d.gemctl(&args));
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd.spawn().expect("gemctl runs")
    };
    let exits_ok = |mut child: tokio::process::Child| async move {
        let status = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait())
            .await
            .expect("gemctl ends")
            .expect("status");
        let mut err = String::new();
        if let Some(mut stderr) = child.stderr.take() {
            use tokio::io::AsyncReadExt;
            let _ = stderr.read_to_string(&mut err).await;
        }
        assert!(status.success(), "{status:?}: {err}");
    };

    // No --server: the one server listing the URI.
    let mut first = watcher(&listed, &[]);
    table_becomes(&c, &[(&listed, &[&a], true)]).await;
    let toggled = run(&c, &a, "toggle-subscriber-updates", json!({})).await;
    assert_eq!(toggled.state, CallState::Success, "{toggled:#?}");
    let mut lines = BufReader::new(first.stdout.take().expect("stdout")).lines();
    let line = tokio::time::timeout(std::time::Duration::from_secs(60), lines.next_line())
        .await
        .expect("an update within 60 s")
        .expect("readable")
        .expect("a line");
    assert_eq!(line, format!("everything:{listed}"));
    // The end of its input stops it.
    drop(first.stdin.take());
    exits_ok(first).await;
    table_becomes(&c, &[]).await;

    // A reader that goes away: the next update (the server sends them
    // every 5 s while toggled on) finds the pipe closed.
    let mut second = watcher(one, &["--server", "everything"]);
    table_becomes(&c, &[(one, &[&a], true)]).await;
    drop(second.stdout.take());
    exits_ok(second).await;
    table_becomes(&c, &[]).await;

    // Ctrl-C.
    let third = watcher(one, &["--server", "everything"]);
    table_becomes(&c, &[(one, &[&a], true)]).await;
    let pid = third.id().expect("pid").to_string();
    let killed = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    exits_ok(third).await;
    table_becomes(&c, &[]).await;

    // A URI no server lists needs --server.
    let (code, _, err) = gemctl(
        &d,
        &[
            "mcp",
            "resources",
            "--subscribe",
            "test://nowhere",
            "--session",
            &a,
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--server"), "{err}");
}
