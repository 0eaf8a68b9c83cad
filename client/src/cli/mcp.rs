//! `gemctl mcp`: MCP servers and tool discovery.
//!
//! `probe` asks the daemon (`mcp.probe`, starting the daemon when none
//! answers), so it tests exactly the client code configured servers go
//! through. A command runs in this directory with this environment.

use std::collections::BTreeMap;

use clap::Subcommand;
use geminid_protocol::api::GeminidApiClient;
use serde_json::{Value, json};

use crate::command::{Ctx, Failure, Outcome, exit, outln, print_json};
use crate::start::{Started, connect_or_start};

#[derive(Subcommand)]
pub enum McpCommand {
    /// List the MCP servers with their status, tools and prompts
    #[command(after_help = super::examples::MCP_LIST)]
    List,
    /// Reconnect one MCP server now
    #[command(after_help = super::examples::MCP_RESTART)]
    Restart {
        name: String,
        /// The server's scope when more than one has the name (`user`,
        /// `extensions`, `workspace:<root>`, `extensions:<root>`, as `mcp
        /// list` shows it)
        #[arg(long)]
        scope: Option<String>,
    },
    /// Run `tools.discoveryCommand` again and replace the discovered tools
    #[command(after_help = super::examples::MCP_REDISCOVER)]
    Rediscover {
        /// Run it in this session's workspace root
        #[arg(long)]
        session: Option<String>,
    },
    /// One-shot: connect to a server, list its tools, optionally call one
    /// (through the daemon, started if none answers)
    #[command(
        after_help = "TARGET is a URL (ending in /sse: legacy SSE, else streamable HTTP) or a command line, run in this directory with this environment. Elicitation requests are accepted with each field's default. With MCP_CONFORMANCE_SCENARIO set and no --call, the call that conformance scenario expects is made.\n\nExamples:\n  gemctl mcp probe http://127.0.0.1:3001/mcp\n  gemctl mcp probe --call echo --args '{\"message\":\"hi\"}' -- npx mcp-server-everything"
    )]
    Probe {
        /// Call this tool after listing
        #[arg(long)]
        call: Option<String>,
        /// The call's arguments as a JSON object
        #[arg(long)]
        args: Option<String>,
        /// An HTTP header NAME:VALUE (repeatable)
        #[arg(long = "header")]
        headers: Vec<String>,
        /// An OAuth client registered beforehand (else dynamic
        /// registration; with MCP_CONFORMANCE_CONTEXT set, its client_id)
        #[arg(long)]
        client_id: Option<String>,
        /// That client's secret (with MCP_CONFORMANCE_CONTEXT set, its
        /// client_secret)
        #[arg(long)]
        client_secret: Option<String>,
        /// The HTTPS URL of a client ID metadata document to use as the
        /// client id where the authorization server supports them
        #[arg(long)]
        client_metadata_url: Option<String>,
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        target: Vec<String>,
    },
    /// Log in to an HTTP or SSE server that wants OAuth: prints (and tries
    /// to open) the authorization URL; the daemon receives the redirect
    #[command(
        after_help = "The daemon listens for the redirect on 127.0.0.1 (the server's oauth.redirectUri port, else a free one) for 5 minutes, stores the token (0600, in its data directory, shared by every session, kept across restarts) and reconnects the server.\n\nExamples:\n  gemctl mcp auth linear\n  gemctl mcp auth linear --no-browser"
    )]
    Auth {
        name: String,
        /// Only print the URL; do not try to open a browser
        #[arg(long)]
        no_browser: bool,
    },
    /// Forget a server's stored OAuth token; it shows needs_auth until the
    /// next `gemctl mcp auth`
    #[command(after_help = "Examples:\n  gemctl mcp logout linear")]
    Logout { name: String },
    /// Serve the daemon's tools as an MCP server on stdio; calls run
    /// through one session's scheduler and policy
    #[command(
        after_help = "Examples:\n  gemctl mcp serve --session $S\n  gemctl mcp serve --cwd ~/project --mode autoEdit"
    )]
    Serve(crate::mcp_serve::ServeArgs),
    /// List the resources (and resource templates) of the connected
    /// servers a workspace's sessions see (the model's view), or of one
    #[command(
        after_help = "With --subscribe, subscribes a session (--session, else the current directory's latest) to URI and prints each update as `server:uri` (--json: the event) until Ctrl-C, end of stdin or a closed pipe, then unsubscribes.\n\nExamples:\n  gemctl mcp resources\n  gemctl mcp resources everything\n  gemctl mcp resources --session $S\n  gemctl mcp resources --all     # every server of the daemon, with its scope\n  gemctl --json mcp resources\n  gemctl mcp resources --subscribe test://static/resource/1 --server everything"
    )]
    Resources {
        server: Option<String>,
        #[command(flatten)]
        seen: super::mcp_resources::Seen,
        /// Print the updates of this resource until stopped
        #[arg(long, value_name = "URI", conflicts_with_all = ["cwd", "all"])]
        subscribe: Option<String>,
        /// The resource's server (else the one server listing URI)
        #[arg(
            long = "server",
            id = "server_name",
            value_name = "NAME",
            requires = "subscribe"
        )]
        server_name: Option<String>,
    },
    /// Read one resource of a server (text to stdout; blobs named)
    #[command(
        after_help = "Examples:\n  gemctl mcp read everything test://static/resource/1\n  gemctl --json mcp read fs file:///tmp/a.txt"
    )]
    Read {
        server: String,
        uri: String,
        #[command(flatten)]
        whose: super::mcp_resources::Whose,
    },
    /// Get one prompt of a server with arguments (KEY=VALUE), as messages
    #[command(
        after_help = "Examples:\n  gemctl mcp prompt everything simple-prompt\n  gemctl mcp prompt everything args-prompt city=Paris state=TX"
    )]
    Prompt {
        server: String,
        name: String,
        /// The prompt's arguments, each KEY=VALUE
        arguments: Vec<String>,
        #[command(flatten)]
        whose: super::mcp_resources::Whose,
    },
}

pub async fn run(ctx: &Ctx, cmd: McpCommand) -> Outcome {
    match cmd {
        McpCommand::List => list(ctx).await,
        McpCommand::Serve(args) => crate::mcp_serve::run(&ctx.socket, args).await,
        McpCommand::Restart { name, scope } => {
            let client = ctx.connect().await?;
            let info = client.restart_mcp(name, scope).await?;
            if ctx.json {
                return print_json(&info);
            }
            let message = info.message.map(|m| format!(" ({m})")).unwrap_or_default();
            outln!("{}: {}{message}", info.name, info.status);
            Ok(if info.status == "connected" {
                exit::OK
            } else {
                exit::FAILED
            })
        }
        McpCommand::Auth { name, no_browser } => auth(ctx, name, no_browser).await,
        McpCommand::Logout { name } => {
            let client = ctx.connect().await?;
            let info = client.logout_mcp(name).await?;
            if ctx.json {
                return print_json(&info);
            }
            let message = info.message.map(|m| format!(" ({m})")).unwrap_or_default();
            outln!("{}: logged out; now {}{message}", info.name, info.status);
            Ok(exit::OK)
        }
        McpCommand::Rediscover { session } => {
            let client = ctx.connect().await?;
            let info = client.rediscover_tools(session).await?;
            if ctx.json {
                return print_json(&info);
            }
            outln!("discovered: {}", info.tools.join(", "));
            for problem in &info.problems {
                outln!("problem: {problem}");
            }
            Ok(exit::OK)
        }
        McpCommand::Probe {
            call,
            args,
            headers,
            client_id,
            client_secret,
            client_metadata_url,
            target,
        } => {
            let oauth = probe_oauth(client_id, client_secret, client_metadata_url);
            probe(ctx, call, args, headers, oauth, target).await
        }
        McpCommand::Resources {
            server,
            subscribe: Some(uri),
            server_name,
            seen,
        } => super::mcp_watch::watch(ctx, server_name.or(server), uri, seen.session).await,
        McpCommand::Resources { server, seen, .. } => {
            super::mcp_resources::list(ctx, server, seen).await
        }
        McpCommand::Read { server, uri, whose } => {
            super::mcp_resources::read(ctx, server, uri, whose).await
        }
        McpCommand::Prompt {
            server,
            name,
            arguments,
            whose,
        } => super::mcp_resources::prompt(ctx, server, name, arguments, whose).await,
    }
}

/// `mcp auth NAME`: the login's URL, then its end.
async fn auth(ctx: &Ctx, name: String, no_browser: bool) -> Outcome {
    let client = ctx.connect().await?;
    let login = client.auth_mcp(name.clone()).await?;
    // The URL goes to stderr in JSON mode, so stdout stays one document.
    if ctx.json {
        eprintln!("{}", login.url);
    } else {
        outln!("Open this URL to log in to {name}:\n  {}", login.url);
    }
    if !no_browser {
        open_browser(&login.url);
    }
    let info = client.auth_wait_mcp(name).await?;
    if ctx.json {
        return print_json(&info);
    }
    let message = info.message.map(|m| format!(" ({m})")).unwrap_or_default();
    outln!("{}: {}{message}", info.name, info.status);
    Ok(if info.status == "connected" {
        exit::OK
    } else {
        exit::FAILED
    })
}

/// Tries `$BROWSER`, then `xdg-open`; a machine without either still has
/// the printed URL.
fn open_browser(url: &str) {
    let browser = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| "xdg-open".to_owned());
    let _ = std::process::Command::new(browser)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

async fn list(ctx: &Ctx) -> Outcome {
    let client = ctx.connect().await?;
    let list = client.list_mcp().await?;
    if ctx.json {
        return print_json(&list);
    }
    outln!("discovery: {}", list.discovery_state);
    for s in &list.servers {
        let trust = if s.trusted { " trusted" } else { "" };
        let message = s
            .message
            .as_ref()
            .map(|m| format!(" ({m})"))
            .unwrap_or_default();
        outln!(
            "{} [{} {}{trust}] {}{message}",
            s.name,
            s.transport,
            s.scope,
            s.status
        );
        if !s.tools.is_empty() {
            outln!("  tools: {}", s.tools.join(", "));
        }
        if !s.prompts.is_empty() {
            let prompts: Vec<&str> = s.prompts.iter().map(|p| p.name.as_str()).collect();
            outln!("  prompts: {}", prompts.join(", "));
        }
    }
    if let Some(c) = &list.command {
        outln!(
            "discovery command `{}`: {}",
            c.discovery_command,
            c.tools.join(", ")
        );
        for problem in &c.problems {
            outln!("  problem: {problem}");
        }
    }
    Ok(exit::OK)
}

/// The call a conformance scenario expects when none is given (the MCP
/// conformance suite runs `gemctl mcp probe URL` with the scenario's name
/// in `MCP_CONFORMANCE_SCENARIO`).
fn scenario_call() -> Option<(String, Value)> {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").ok()?;
    match scenario.as_str() {
        "tools_call" => Some(("add_numbers".into(), json!({"a": 5, "b": 3}))),
        "elicitation-sep1034-client-defaults" => {
            Some(("test_client_elicitation_defaults".into(), json!({})))
        }
        "sse-retry" => Some(("test_reconnection".into(), json!({}))),
        // A call that needs more scope than the listing did.
        "auth/scope-step-up" => Some(("test-tool".into(), json!({}))),
        _ => None,
    }
}

/// The probe's `oauth` block: the client given, else the one a conformance
/// scenario registered beforehand (`MCP_CONFORMANCE_CONTEXT`).
fn probe_oauth(
    client_id: Option<String>,
    client_secret: Option<String>,
    client_metadata_url: Option<String>,
) -> Option<Value> {
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    let field = |name: &str| context.get(name).and_then(Value::as_str).map(str::to_owned);
    let client_id = client_id.or_else(|| field("client_id"));
    let client_secret = client_secret.or_else(|| field("client_secret"));
    if client_id.is_none() && client_metadata_url.is_none() {
        return None;
    }
    Some(json!({
        "clientId": client_id,
        "clientSecret": client_secret,
        "clientMetadataUrl": client_metadata_url,
        "privateKeyPem": field("private_key_pem"),
        "signingAlgorithm": field("signing_algorithm"),
        "idpTokenUrl": field("idp_token_endpoint"),
        "idpClientId": field("idp_client_id"),
        "idpIdToken": field("idp_id_token"),
    }))
}

async fn probe(
    ctx: &Ctx,
    call: Option<String>,
    args: Option<String>,
    headers: Vec<String>,
    oauth: Option<Value>,
    target: Vec<String>,
) -> Outcome {
    let mut header_map = BTreeMap::new();
    for h in headers {
        let Some((k, v)) = h.split_once(':') else {
            return Err(Failure::new(
                exit::USAGE,
                format!("bad header {h:?}: want NAME:VALUE"),
            ));
        };
        header_map.insert(k.trim().to_owned(), v.trim().to_owned());
    }
    let call = match (call, args) {
        (Some(name), Some(text)) => match serde_json::from_str::<Value>(&text) {
            Ok(args @ Value::Object(_)) => Some((name, args)),
            Ok(_) | Err(_) => {
                return Err(Failure::new(
                    exit::FAILED,
                    format!("the arguments are not a JSON object: {text}"),
                ));
            }
        },
        (Some(name), None) => Some((name, json!({}))),
        (None, _) => scenario_call(),
    };
    let (name, args) = call.unzip();
    let cwd = std::env::current_dir()
        .ok()
        .map(|dir| dir.display().to_string());
    // What a command would have found had it been run from here.
    let env: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let (client, started) = connect_or_start(ctx, None, None).await?;
    if let Started::Now = started {
        eprintln!(
            "gemctl: started geminid (pid {}) on {}",
            client.daemon.pid,
            ctx.socket.display()
        );
    }
    let report = client
        .probe_mcp(
            target,
            name,
            args,
            Some(header_map),
            cwd,
            Some(env),
            Some(true),
            oauth,
        )
        .await?;
    for batch in &report.progress {
        eprint!("{batch}");
    }
    if ctx.json {
        return print_json(&json!({
            "server": report.server,
            "tools": report.tools,
            "result": report.result,
        }));
    }
    if let Some(name) = report
        .server
        .as_ref()
        .and_then(|s| s.pointer("/serverInfo/name"))
        .and_then(|v| v.as_str())
    {
        outln!("server: {name}");
    }
    let names: Vec<&str> = report
        .tools
        .iter()
        .filter_map(|t| t.get("name").and_then(|n| n.as_str()))
        .collect();
    outln!("tools: {}", names.join(", "));
    if let Some(result) = &report.result {
        let result =
            serde_json::to_value(result).map_err(|e| Failure::new(exit::FAILED, e.to_string()))?;
        outln!("{result}");
    }
    Ok(exit::OK)
}
