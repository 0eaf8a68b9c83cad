//! MCP prompts through the daemon, with server-everything: `mcp.prompt`
//! (`prompts/get` with arguments) and `gemctl mcp prompt`.

mod peers;

use geminid_protocol::api::GeminidApiClient;
use peers::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_is_got_with_its_arguments() {
    let p = peers();
    let d = daemon_with_settings(&json!({"mcpServers": {
        "everything": {"command": everything(&p)}
    }}));
    let c = d.client().await;
    connected(&c, &["everything"]).await;

    let args = [
        ("city".to_owned(), "Paris".to_owned()),
        ("state".to_owned(), "TX".to_owned()),
    ];
    let got = c
        .mcp_prompt(
            "everything".into(),
            "args-prompt".into(),
            Some(args.into_iter().collect()),
            None,
            None,
        )
        .await
        .expect("mcp.prompt");
    assert_eq!(
        got.messages,
        [
            json!({"role": "user", "content": {"type": "text", "text": "What's weather in Paris, TX?"}})
        ]
    );

    let out = d
        .gemctl(&["mcp", "prompt", "everything", "args-prompt", "city=Oslo"])
        .output()
        .expect("gemctl");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "user: What's weather in Oslo?\n"
    );

    // A missing required argument is the server's error, said as such.
    let missing = c
        .mcp_prompt("everything".into(), "args-prompt".into(), None, None, None)
        .await
        .expect_err("city is required");
    assert!(
        missing
            .to_string()
            .contains("could not get prompt args-prompt"),
        "{missing}"
    );
    let out = d
        .gemctl(&["mcp", "prompt", "everything", "args-prompt", "city"])
        .output()
        .expect("gemctl");
    assert_eq!(out.status.code(), Some(2));
}
