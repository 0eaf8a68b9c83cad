//! MCP resources through the daemon, with server-everything: the model's
//! `list_mcp_resources` and `read_mcp_resource` tools.

mod peers;

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
