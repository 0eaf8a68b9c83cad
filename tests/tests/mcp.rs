//! MCP servers through the daemon, with real servers: server-everything
//! (stdio, SSE, streamable HTTP) and the Python `mcp` SDK's stdio server.

mod peers;

use std::time::{Duration, Instant};

use geminid_protocol::event::EventPayload;
use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::CallState;
use geminid_tests::*;
use peers::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn stdio_discovery_and_every_content_type() {
    let p = peers();
    let d =
        daemon_with_settings(&json!({"mcpServers": {"everything": {"command": everything(&p)}}}));
    let c = d.client().await;
    let list = connected(&c, &["everything"]).await;
    let s = server(&list, "everything");
    assert_eq!(s.transport, "stdio");
    assert!(s.tools.iter().any(|t| t == "echo"), "{s:#?}");
    assert!(
        s.prompts.iter().any(|p| p.name == "simple-prompt"),
        "{s:#?}"
    );
    assert_eq!(list.discovery_state, "completed");

    let tools = c.list_tools(None).await.unwrap();
    let echo = tools
        .iter()
        .find(|t| t.name == "echo")
        .expect("echo listed");
    assert_eq!(echo.source, "mcp");
    assert_eq!(echo.server.as_deref(), Some("everything"));
    assert_eq!(echo.kind, "other");

    let sid = session(&c, &d, ApprovalMode::Yolo).await;
    let text = run(&c, &sid, "echo", json!({"message": "hi"})).await;
    assert_eq!(text.state, CallState::Success, "{text:#?}");
    assert!(result_json(&text).to_string().contains("Echo: hi"));
    // Always reachable by the qualified name too.
    let qualified = run(&c, &sid, "everything__echo", json!({"message": "q"})).await;
    assert!(result_json(&qualified).to_string().contains("Echo: q"));

    let image = result_json(&run(&c, &sid, "get-tiny-image", json!({})).await);
    let parts = image["llmContent"].as_array().expect("parts").clone();
    assert!(
        parts
            .iter()
            .any(|p| p["type"] == "inlineData" && p["mimeType"] == "image/png"),
        "{image}"
    );

    let links = result_json(&run(&c, &sid, "get-resource-links", json!({"count": 2})).await);
    assert!(links.to_string().contains("Resource Link:"), "{links}");

    let embedded =
        result_json(&run(&c, &sid, "get-resource-reference", json!({"resourceId": 2})).await);
    assert!(embedded.to_string().contains("Resource 2"), "{embedded}");
    let blob = result_json(
        &run(
            &c,
            &sid,
            "get-resource-reference",
            json!({"resourceType": "Blob", "resourceId": 2}),
        )
        .await,
    );
    assert!(
        blob["llmContent"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["type"] == "inlineData"),
        "{blob}"
    );

    let structured = result_json(
        &run(
            &c,
            &sid,
            "get-structured-content",
            json!({"location": "Chicago"}),
        )
        .await,
    );
    // Kept as the server sent it, apart from the text the model gets (not
    // glued to it: `5{"result":5}` was the bug).
    let kept = &structured["structuredContent"];
    assert!(kept["temperature"].is_number(), "{structured}");
    let model_text: Vec<&str> = structured["llmContent"]
        .as_array()
        .expect("parts")
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect();
    assert_eq!(model_text.len(), 1, "{structured}");
    let inner = model_text[0]
        .strip_prefix("<untrusted_context>\n")
        .and_then(|t| t.strip_suffix("\n</untrusted_context>"))
        .expect("wrapped as untrusted");
    assert_eq!(
        &serde_json::from_str::<serde_json::Value>(inner).expect("the server's JSON text"),
        kept
    );
    let declared = tools
        .iter()
        .find(|t| t.name == "get-structured-content")
        .expect("listed");
    assert_eq!(
        declared.output_schema.as_ref().map(|s| s["type"].clone()),
        Some(json!("object")),
        "{declared:#?}"
    );

    // Schema validation happens before the server is asked.
    let bad = run(&c, &sid, "echo", json!({})).await;
    assert_eq!(bad.state, CallState::Error);
}

#[tokio::test(flavor = "multi_thread")]
async fn timeout_cancels_and_progress_streams() {
    let p = peers();
    let d = daemon_with_settings(&json!({"mcpServers": {
        "slow": {"command": everything(&p), "timeout": 1500},
        "ok": {"command": everything(&p), "includeTools": ["trigger-long-running-operation"]}
    }}));
    let c = d.client().await;
    connected(&c, &["slow", "ok"]).await;
    let sid = session(&c, &d, ApprovalMode::Yolo).await;
    let started = Instant::now();
    let timed_out = run(
        &c,
        &sid,
        "slow__trigger-long-running-operation",
        json!({"duration": 30, "steps": 3}),
    )
    .await;
    assert_eq!(timed_out.state, CallState::Error, "{timed_out:#?}");
    assert_eq!(timed_out.error.as_ref().unwrap().kind, "timeout");
    assert!(started.elapsed() < Duration::from_secs(10));

    let mut sub = c.subscribe_session(sid.clone(), None).await.unwrap();
    let call = c
        .call_tool(
            sid.clone(),
            "ok__trigger-long-running-operation".into(),
            Some(json!({"duration": 2, "steps": 4})),
            None,
        )
        .await
        .unwrap()
        .call_id;
    let events = collect_until(&mut sub, |e| is_final(e, &call)).await;
    let deltas: String = events
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::ToolCall(s) if s.call_id == call => s.output_delta.clone(),
            _ => None,
        })
        .collect();
    assert!(deltas.contains("/4"), "progress deltas: {deltas:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn same_tool_on_two_servers_and_tool_filters() {
    let p = peers();
    let d = daemon_with_settings(&json!({"mcpServers": {
        "alpha": {"command": everything(&p), "includeTools": ["echo", "get-sum"]},
        "beta": {"command": everything(&p), "excludeTools": ["get-sum"]}
    }}));
    let c = d.client().await;
    let list = connected(&c, &["alpha", "beta"]).await;
    let list = if server(&list, "beta")
        .tools
        .iter()
        .any(|t| t == "beta__echo")
    {
        list
    } else {
        wait_list(&c, 10, |l| {
            server(l, "beta").tools.iter().any(|t| t == "beta__echo")
        })
        .await
    };
    assert_eq!(server(&list, "alpha").tools, vec!["echo", "get-sum"]);
    let beta = &server(&list, "beta").tools;
    assert!(beta.contains(&"beta__echo".to_owned()), "{beta:?}");
    assert!(!beta.iter().any(|t| t.contains("get-sum")), "{beta:?}");
    assert!(beta.contains(&"get-tiny-image".to_owned()), "{beta:?}");

    let sid = session(&c, &d, ApprovalMode::Yolo).await;
    for name in ["echo", "alpha__echo", "beta__echo"] {
        let r = run(&c, &sid, name, json!({"message": name})).await;
        assert_eq!(r.state, CallState::Success, "{name}: {r:#?}");
    }
    let filtered = run(&c, &sid, "alpha__get-tiny-image", json!({})).await;
    assert_eq!(filtered.state, CallState::Error);
}

#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_stdio_server() {
    let p = peers();
    let python = p.join(".venv/bin/python");
    let d = daemon_with_settings(&json!({"mcpServers": {"py": {
        "command": python, "args": [p.join("py_server.py")]
    }}}));
    let c = d.client().await;
    connected(&c, &["py"]).await;
    let sid = session(&c, &d, ApprovalMode::Yolo).await;
    let r = run(&c, &sid, "add", json!({"a": 2, "b": 3})).await;
    assert_eq!(r.state, CallState::Success, "{r:#?}");
    // The SDK answers `5` as text and `{"result": 5}` as structured
    // content: the model gets the text once, clients get both apart.
    let result = result_json(&r);
    assert_eq!(
        result["llmContent"],
        json!([{"type": "text", "text": "<untrusted_context>\n5\n</untrusted_context>"}]),
        "{result}"
    );
    assert_eq!(
        result["structuredContent"],
        json!({"result": 5}),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn filesystem_server_reads_inside_its_root_and_refuses_outside() {
    let p = peers();
    // Its root is the session's workspace, by its argument and by MCP
    // roots alike: the server takes the roots a client offers in place of
    // its arguments once it hears they changed (a session opened), and a
    // root of its own elsewhere would be replaced at a moment no test
    // controls (the read raced it, and lost under load).
    let mut d = TestDaemon::prepared(&[]);
    let root_path = d.workspace.clone();
    std::fs::write(root_path.join("note.txt"), "filesystem peer works\n").unwrap();
    std::fs::create_dir_all(d.home().join(".gemini")).unwrap();
    std::fs::write(
        d.home().join(".gemini/settings.json"),
        json!({"mcpServers": {"fs": {
            "command": p.join("node_modules/.bin/mcp-server-filesystem"),
            "args": [root_path]
        }}})
        .to_string(),
    )
    .unwrap();
    d.spawn();
    let c = d.client().await;
    connected(&c, &["fs"]).await;
    let tools = c.list_tools(None).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"fs__read_file"),
        "its read_file clashes with the built-in, so it is qualified: {names:?}"
    );
    let sid = session(&c, &d, ApprovalMode::Yolo).await;
    let inside = run(
        &c,
        &sid,
        "fs__read_text_file",
        json!({"path": root_path.join("note.txt")}),
    )
    .await;
    assert_eq!(inside.state, CallState::Success, "{inside:#?}");
    assert!(
        result_json(&inside)
            .to_string()
            .contains("filesystem peer works")
    );
    let outside = run(
        &c,
        &sid,
        "fs__read_text_file",
        json!({"path": "/etc/passwd"}),
    )
    .await;
    assert_eq!(outside.state, CallState::Error, "{outside:#?}");
    let message = outside.error.map(|e| e.message).unwrap_or_default();
    assert!(
        message.to_lowercase().contains("denied"),
        "the server's isError result becomes a tool error: {message}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sse_and_streamable_http_transports() {
    let p = peers();
    let sse = HttpPeer::start(&p, "sse");
    let http = HttpPeer::start(&p, "streamableHttp");
    let d = daemon_with_settings(&json!({"mcpServers": {
        "old": {"url": format!("http://127.0.0.1:{}/sse", sse.port)},
        "new": {"httpUrl": format!("http://127.0.0.1:{}/mcp", http.port), "headers": {"X-Test": "1"}}
    }}));
    let c = d.client().await;
    let list = connected(&c, &["old", "new"]).await;
    assert_eq!(server(&list, "old").transport, "sse");
    assert_eq!(server(&list, "new").transport, "http");
    let sid = session(&c, &d, ApprovalMode::Yolo).await;
    for name in ["new__echo", "old__echo"] {
        let r = run(&c, &sid, name, json!({"message": name})).await;
        assert_eq!(r.state, CallState::Success, "{name}: {r:#?}");
        assert!(result_json(&r).to_string().contains(name));
    }
    let sum = run(&c, &sid, "old__get-sum", json!({"a": 2, "b": 40})).await;
    assert!(result_json(&sum).to_string().contains("42"), "{sum:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn trusted_server_needs_no_confirmation_and_shutdown_kills_servers() {
    let p = peers();
    let mut d = daemon_with_settings(&json!({"mcpServers": {
        "trusted": {"command": everything(&p), "trust": true, "includeTools": ["echo"]},
        "other": {"command": everything(&p), "includeTools": ["get-sum"]}
    }}));
    let c = d.client().await;
    let list = connected(&c, &["trusted", "other"]).await;
    assert!(server(&list, "trusted").trusted);
    let pids: Vec<u32> = list.servers.iter().filter_map(|s| s.pid).collect();
    let sid = c
        .create_session(
            d.workspace.display().to_string(),
            Some(ApprovalMode::Default),
            None,
            Some(true),
            None,
            None,
            None,
        )
        .await
        .unwrap()
        .session_id;
    let trusted = run(&c, &sid, "echo", json!({"message": "t"})).await;
    assert_eq!(trusted.state, CallState::Success, "{trusted:#?}");
    let mut sub = c.subscribe_session(sid.clone(), None).await.unwrap();
    let asked = c
        .call_tool(
            sid.clone(),
            "get-sum".into(),
            Some(json!({"a": 1, "b": 2})),
            None,
        )
        .await
        .unwrap()
        .call_id;
    wait_state(&mut sub, &asked, CallState::AwaitingApproval).await;

    assert_eq!(d.terminate(), Some(0));
    for pid in pids {
        assert!(!alive(pid), "MCP server {pid} outlived the daemon");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn workspace_layer_servers_start_with_a_session_untrusted() {
    let p = peers();
    let d = daemon_with_settings(
        &json!({"mcpServers": {"user": {"command": everything(&p), "includeTools": ["echo"]}}}),
    );
    let gemini = d.workspace.join(".gemini");
    std::fs::create_dir_all(&gemini).unwrap();
    std::fs::write(
        gemini.join("settings.json"),
        json!({"mcpServers": {
            "ws": {"command": everything(&p), "trust": true, "includeTools": ["get-sum"]},
            "user": {"command": "/nonexistent"}
        }})
        .to_string(),
    )
    .unwrap();
    let c = d.client().await;
    connected(&c, &["user"]).await;
    assert!(
        c.list_mcp()
            .await
            .unwrap()
            .servers
            .iter()
            .all(|s| s.name != "ws")
    );
    let sid = session(&c, &d, ApprovalMode::Yolo).await;
    let list = connected(&c, &["ws", "user"]).await;
    let ws = server(&list, "ws");
    assert_eq!(ws.scope, format!("workspace:{}", d.workspace.display()));
    assert!(!ws.trusted, "a workspace cannot trust itself");
    assert_eq!(server(&list, "user").scope, "user");
    let sum = run(&c, &sid, "get-sum", json!({"a": 1, "b": 2})).await;
    assert_eq!(sum.state, CallState::Success, "{sum:#?}");
}
