//! `gemctl mcp resources` and `gemctl mcp read`: the connected MCP
//! servers' resources, as the daemon reads them.

use geminid_protocol::api::GeminidApiClient;
use serde_json::Value;

use crate::command::{Ctx, Outcome, exit, outln, print_json};

fn field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// `server:uri | name | description`, as the model's list shows them.
fn line(server: &str, resource: &Value, uri_key: &str) -> String {
    let mut text = format!("{server}:{}", field(resource, uri_key).unwrap_or_default());
    for key in ["name", "description"] {
        if let Some(value) = field(resource, key) {
            text.push_str(&format!(" | {value}"));
        }
    }
    text
}

pub async fn list(ctx: &Ctx, server: Option<String>) -> Outcome {
    let client = ctx.connect().await?;
    let listed = client.mcp_resources(server).await?;
    if ctx.json {
        return print_json(&listed);
    }
    for r in &listed.resources {
        outln!("{}", line(&r.server, &r.resource, "uri"));
    }
    for t in &listed.templates {
        outln!("template {}", line(&t.server, &t.resource, "uriTemplate"));
    }
    Ok(exit::OK)
}

pub async fn read(ctx: &Ctx, server: String, uri: String) -> Outcome {
    let client = ctx.connect().await?;
    let read = client.mcp_read(server, uri).await?;
    if ctx.json {
        return print_json(&read);
    }
    for content in &read.contents {
        if let Some(text) = content.get("text").and_then(Value::as_str) {
            outln!("{text}");
        } else if let Some(blob) = field(content, "blob") {
            outln!(
                "[{} blob, {} bytes]",
                field(content, "mimeType").unwrap_or("application/octet-stream"),
                blob.len() * 3 / 4
            );
        }
    }
    Ok(exit::OK)
}
