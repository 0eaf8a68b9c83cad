//! `gemctl mcp resources`, `gemctl mcp read` and `gemctl mcp prompt`: the
//! connected MCP servers' resources and prompts, as the daemon gets them.

use geminid_protocol::api::GeminidApiClient;
use serde_json::Value;

use std::collections::BTreeMap;

use crate::command::{Ctx, Failure, Outcome, exit, outln, print_json, resolve_session};

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

/// Whose resources `mcp resources` lists.
#[derive(clap::Args)]
pub struct Seen {
    /// What this session's workspace sees
    #[arg(long, conflicts_with_all = ["cwd", "all"])]
    pub session: Option<String>,
    /// What a session in this directory sees [default: the current
    /// directory]
    #[arg(long, conflicts_with = "all")]
    cwd: Option<std::path::PathBuf>,
    /// Every server of the daemon, each line with its scope
    #[arg(long)]
    all: bool,
}

/// Which server of a name `mcp read` / `mcp prompt` ask: the one a
/// session there sees, as the model does.
#[derive(clap::Args)]
pub struct Whose {
    /// The server this session's workspace sees
    #[arg(long, conflicts_with = "cwd")]
    session: Option<String>,
    /// The server a session in this directory sees [default: the current
    /// directory]
    #[arg(long)]
    cwd: Option<std::path::PathBuf>,
}

impl Whose {
    /// `(sessionId, cwd)` for the request.
    async fn resolve(
        self,
        client: &crate::Client,
    ) -> Result<(Option<String>, Option<String>), Failure> {
        if let Some(given) = self.session {
            return Ok((Some(resolve_session(client, &given).await?), None));
        }
        let cwd = self.cwd.or_else(|| std::env::current_dir().ok());
        Ok((None, cwd.map(|c| c.display().to_string())))
    }
}

pub async fn list(ctx: &Ctx, server: Option<String>, seen: Seen) -> Outcome {
    let client = ctx.connect().await?;
    let session = match seen.session {
        Some(given) => Some(resolve_session(&client, &given).await?),
        None => None,
    };
    let cwd = match (&session, seen.cwd, seen.all) {
        (Some(_), _, _) | (None, _, true) => None,
        (None, Some(cwd), false) => Some(cwd),
        (None, None, false) => std::env::current_dir().ok(),
    };
    let listed = client
        .mcp_resources(
            server,
            session,
            cwd.map(|c| c.display().to_string()),
            Some(seen.all),
        )
        .await?;
    if ctx.json {
        return print_json(&listed);
    }
    let scoped = |scope: &str, text: String| match seen.all {
        true => format!("[{scope}] {text}"),
        false => text,
    };
    for r in &listed.resources {
        outln!("{}", scoped(&r.scope, line(&r.server, &r.resource, "uri")));
    }
    for t in &listed.templates {
        let text = line(&t.server, &t.resource, "uriTemplate");
        outln!("{}", scoped(&t.scope, format!("template {text}")));
    }
    Ok(exit::OK)
}

pub async fn read(ctx: &Ctx, server: String, uri: String, whose: Whose) -> Outcome {
    let client = ctx.connect().await?;
    let (session, cwd) = whose.resolve(&client).await?;
    let read = client.mcp_read(server, uri, session, cwd).await?;
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

pub async fn prompt(
    ctx: &Ctx,
    server: String,
    name: String,
    arguments: Vec<String>,
    whose: Whose,
) -> Outcome {
    let mut args = BTreeMap::new();
    for pair in arguments {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(Failure::new(
                exit::USAGE,
                format!("a prompt argument is KEY=VALUE, not {pair:?}"),
            ));
        };
        args.insert(key.to_owned(), value.to_owned());
    }
    let client = ctx.connect().await?;
    let (session, cwd) = whose.resolve(&client).await?;
    let got = client
        .mcp_prompt(server, name, Some(args), session, cwd)
        .await?;
    if ctx.json {
        return print_json(&got);
    }
    for message in &got.messages {
        let role = field(message, "role").unwrap_or("user");
        let content = message.get("content").cloned().unwrap_or(Value::Null);
        let shown = match field(&content, "type") {
            Some("text") => field(&content, "text").unwrap_or_default().to_owned(),
            Some("resource") => content
                .get("resource")
                .and_then(|r| field(r, "text").or_else(|| field(r, "uri")))
                .unwrap_or_default()
                .to_owned(),
            Some(kind) => format!("[{kind}]"),
            None => content.to_string(),
        };
        outln!("{role}: {shown}");
    }
    Ok(exit::OK)
}
