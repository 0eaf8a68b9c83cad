//! Slash commands: `/mode`, `/plan`, `/plan copy`, `/memory show`, `/tools`, `/mcp`,
//! `/sessions`, `/model`, `/compress`, `/stats`, `/undo`, `/rewind`,
//! `/quit`, `/help`.

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::session::ApprovalMode;

use super::style::Style;
use crate::Client;
use crate::command::Failure;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/mode` alone shows the mode.
    Mode(Option<ApprovalMode>),
    MemoryShow,
    Tools,
    Mcp,
    Sessions,
    Compress,
    Stats,
    /// `/model` alone shows the model; `/model default` goes back to the daemon's.
    Model(Option<String>),
    /// `/plan [goal]`: plan mode, then the goal as a prompt (0.61's).
    Plan(Option<String>),
    /// `/plan copy`: the approved plan, printed and put on the clipboard
    /// (`plan_copy.rs`; run by the chat, which knows the plan).
    PlanCopy,
    Quit,
    Help,
    /// `/undo [force]`: take back the last turn with edits.
    Undo {
        force: bool,
    },
    /// `/rewind` lists the checkpoints; `/rewind <checkpoint> [force]`
    /// goes back to one.
    Rewind {
        checkpoint: Option<String>,
        force: bool,
    },
}

pub const HELP: &str = "\
/mode [default|autoEdit|yolo|plan]  show or set the session's approval mode
/plan [goal]                   plan mode (read-only research, a plan to approve), then the goal
/plan copy                     print the approved plan and copy it to the clipboard (OSC 52)
/memory show                   the GEMINI.md memory the model gets
/tools                         the tools the model can call
/mcp                           MCP servers and their status
/sessions                      every session (this one marked *)
/model [name|default]          show or set the session's model
/compress                      replace the older history sent to the model by a summary
/stats                         tokens used and how full the context window is
/undo [force]                  take back the last turn's edits and rewind the conversation before it
/rewind [checkpoint] [force]   list the checkpoints, or go back to one (its edits and all later ones)
/quit                          leave (also Ctrl-D, or Ctrl-C twice when idle)
/help                          this list
/<prompt> [args]               an MCP server's prompt (listed below), sent as your turn;
                               arguments as --name=value or by position; /<prompt> help lists them
Anything else is a prompt; prompts typed while a turn runs are queued.
A question is answered at the prompt (y, a, s, p, e or n, as it lists). Ctrl-C cancels the running turn.";

/// The names of the commands above (aliases too): an MCP prompt with one
/// of these names is offered as `server.name` instead.
pub const BUILTINS: &[&str] = &[
    "mode", "memory", "tools", "mcp", "sessions", "compress", "model", "stats", "quit", "exit",
    "q", "help", "?", "undo", "rewind", "plan",
];

/// `None` when the line is not a command.
pub fn parse(line: &str) -> Option<Result<Command, String>> {
    let line = line.trim();
    let rest = line.strip_prefix('/')?;
    let mut words = rest.split_whitespace();
    let name = words.next().unwrap_or("");
    let arg = words.next();
    let extra = words.next();
    let command = match (name, arg, extra) {
        ("mode", None, _) => Ok(Command::Mode(None)),
        // 0.61's subcommand: `copy` first means copy, whatever follows.
        ("plan", Some("copy"), _) => Ok(Command::PlanCopy),
        ("plan", goal, _) => Ok(Command::Plan(goal.map(|_| {
            rest.trim_start()
                .strip_prefix("plan")
                .unwrap_or_default()
                .trim()
                .to_owned()
        }))),
        ("mode", Some(mode), None) => mode.parse().map(|m| Command::Mode(Some(m))),
        ("memory", None | Some("show"), None) => Ok(Command::MemoryShow),
        ("tools", None, _) => Ok(Command::Tools),
        ("mcp", None, _) => Ok(Command::Mcp),
        ("sessions", None, _) => Ok(Command::Sessions),
        ("compress", None, _) => Ok(Command::Compress),
        ("model", None, _) => Ok(Command::Model(None)),
        ("model", Some(name), None) => Ok(Command::Model(Some(name.to_owned()))),
        ("stats", None, _) => Ok(Command::Stats),
        ("quit" | "exit" | "q", None, _) => Ok(Command::Quit),
        ("help" | "?", _, _) => Ok(Command::Help),
        ("undo", None, _) => Ok(Command::Undo { force: false }),
        ("undo", Some("force"), None) => Ok(Command::Undo { force: true }),
        ("rewind", None, _) => Ok(Command::Rewind {
            checkpoint: None,
            force: false,
        }),
        ("rewind", Some(checkpoint), None | Some("force")) => Ok(Command::Rewind {
            checkpoint: Some(checkpoint.to_owned()),
            force: extra.is_some(),
        }),
        _ => Err(format!("unknown command {line} (try /help)")),
    };
    Some(command)
}

/// Runs a command; returns its output. Errors of the request are output
/// too (in red); only a lost connection is a failure.
pub async fn run(
    command: &Command,
    client: &Client,
    session_id: &str,
    s: Style,
) -> Result<String, Failure> {
    let result: Result<String, jsonrpsee::core::ClientError> = match command {
        Command::Help => Ok(HELP.to_owned()),
        // Both are the chat's own (it leaves; it knows the approved plan).
        Command::Quit | Command::PlanCopy => Ok(String::new()),
        Command::Mode(None) => client
            .get_session(session_id.to_owned())
            .await
            .map(|info| format!("approval mode: {}", info.approval_mode)),
        Command::Model(None) => client.get_session(session_id.to_owned()).await.map(|info| {
            let model = info.model.as_deref().unwrap_or("the daemon's model");
            match info.tokens.and_then(|t| t.model) {
                Some(last) => format!("model: {model} (last request: {last})"),
                None => format!("model: {model}"),
            }
        }),
        Command::Model(Some(name)) => {
            let model = (name != "default").then(|| name.clone());
            client
                .set_model(session_id.to_owned(), model)
                .await
                .map(|_| String::new())
        }
        Command::Compress => {
            client
                .compress(session_id.to_owned())
                .await
                .map(|done| match done.status.as_str() {
                    "noop" => "nothing old enough to summarize yet".to_owned(),
                    _ => String::new(),
                })
        }
        Command::Stats => {
            client
                .get_session(session_id.to_owned())
                .await
                .map(|info| match info.tokens {
                    Some(tokens) => crate::command::context_line(&tokens),
                    None => "no model request yet".to_owned(),
                })
        }
        Command::Mode(Some(mode)) => client
            .set_approval_mode(session_id.to_owned(), *mode)
            .await
            .map(|_| String::new()),
        Command::Plan(_) => client
            .set_approval_mode(session_id.to_owned(), ApprovalMode::Plan)
            .await
            .map(|_| String::new()),
        Command::MemoryShow => client
            .show_memory(Some(session_id.to_owned()), None)
            .await
            .map(|info| {
                if info.files.is_empty() {
                    return format!("no GEMINI.md memory for {}", info.workspace);
                }
                let mut out = format!("memory for {}:\n", info.workspace);
                for file in &info.files {
                    tree(&mut out, file, 1, s);
                }
                out.push('\n');
                out.push_str(&info.text);
                out
            }),
        Command::Tools => client
            .list_tools(Some(session_id.to_owned()))
            .await
            .map(|tools| {
                tools
                    .iter()
                    .map(|t| {
                        let summary = t.description.lines().next().unwrap_or_default();
                        let summary = super::screen::truncate(summary, 70);
                        format!("{} {}", s.cyan(&format!("{:<24}", t.name)), s.dim(&summary))
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            }),
        Command::Mcp => client.list_mcp().await.map(|list| {
            if list.servers.is_empty() {
                return "no MCP servers configured (mcpServers in ~/.gemini/settings.json)"
                    .to_owned();
            }
            list.servers
                .iter()
                .map(|server| {
                    let status = match server.status.as_str() {
                        "connected" => s.green(&server.status),
                        "connecting" => s.yellow(&server.status),
                        other => s.red(other),
                    };
                    let message = server
                        .message
                        .as_deref()
                        .map(|m| format!(" ({m})"))
                        .unwrap_or_default();
                    format!(
                        "{} {status}{message}, {} tools: {}",
                        s.bold(&server.name),
                        server.tools.len(),
                        server.tools.join(", ")
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        }),
        Command::Undo { force } => match client.checkpoints(session_id.to_owned()).await {
            Ok(list) => match list.checkpoints.last() {
                Some(last) => restore(client, session_id, &last.checkpoint, *force).await,
                None => Ok("nothing to undo: no edits since the last restore".to_owned()),
            },
            Err(e) => Err(e),
        },
        Command::Rewind {
            checkpoint: Some(checkpoint),
            force,
        } => restore(client, session_id, checkpoint, *force).await,
        Command::Rewind {
            checkpoint: None, ..
        } => client.checkpoints(session_id.to_owned()).await.map(|list| {
            if list.checkpoints.is_empty() {
                return "no checkpoints: no edits to take back".to_owned();
            }
            let mut out = list
                .checkpoints
                .iter()
                .map(|c| format!("{} {}", s.cyan(&c.checkpoint), c.files.join(", ")))
                .collect::<Vec<_>>()
                .join("\n");
            out.push_str(&s.dim("\n/rewind <checkpoint> goes back to one"));
            out
        }),
        Command::Sessions => client.list_sessions().await.map(|sessions| {
            sessions
                .iter()
                .map(|info| {
                    let mark = if info.session_id == session_id {
                        "*"
                    } else {
                        " "
                    };
                    let title = info.title.as_deref().unwrap_or("");
                    format!(
                        "{mark} {} {} {:<8} {title}",
                        s.cyan(&info.session_id),
                        info.cwd,
                        info.approval_mode.as_str()
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        }),
    };
    match result {
        Ok(out) => Ok(out),
        Err(jsonrpsee::core::ClientError::Call(e)) => Ok(s.red(e.message())),
        Err(e) => Err(e.into()),
    }
}

/// Restores `checkpoint`; the `checkpointRestored` event tells the rest.
async fn restore(
    client: &Client,
    session_id: &str,
    checkpoint: &str,
    force: bool,
) -> Result<String, jsonrpsee::core::ClientError> {
    client
        .restore(session_id.to_owned(), checkpoint.to_owned(), Some(force))
        .await
        .map(|done| {
            let mut lines: Vec<String> = Vec::new();
            lines.extend(done.restored.iter().map(|p| format!("put back {p}")));
            lines.extend(done.removed.iter().map(|p| format!("removed {p}")));
            lines.join("\n")
        })
}

fn tree(out: &mut String, node: &geminid_protocol::turn::ImportNode, depth: usize, s: Style) {
    out.push_str(&format!("{}{}\n", "  ".repeat(depth), s.cyan(&node.path)));
    for child in &node.imports {
        tree(out, child, depth + 1, s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse() {
        assert_eq!(parse("hello"), None);
        assert_eq!(
            parse("/mode yolo"),
            Some(Ok(Command::Mode(Some(ApprovalMode::Yolo))))
        );
        assert_eq!(parse("/mode"), Some(Ok(Command::Mode(None))));
        assert_eq!(parse(" /memory show "), Some(Ok(Command::MemoryShow)));
        assert_eq!(parse("/quit"), Some(Ok(Command::Quit)));
        assert!(matches!(parse("/mode fast"), Some(Err(e)) if e.contains("unknown approval mode")));
        assert!(matches!(parse("/frobnicate"), Some(Err(e)) if e.contains("/help")));
        assert_eq!(parse("/undo"), Some(Ok(Command::Undo { force: false })));
        assert_eq!(
            parse("/undo force"),
            Some(Ok(Command::Undo { force: true }))
        );
        assert_eq!(
            parse("/rewind turn-4 force"),
            Some(Ok(Command::Rewind {
                checkpoint: Some("turn-4".into()),
                force: true
            }))
        );
        assert!(matches!(parse("/rewind turn-4 please"), Some(Err(_))));
        assert_eq!(parse("/plan"), Some(Ok(Command::Plan(None))));
        assert_eq!(parse("/plan copy"), Some(Ok(Command::PlanCopy)));
        assert_eq!(
            parse("/plan  implement   authentication "),
            Some(Ok(Command::Plan(Some("implement   authentication".into()))))
        );
    }
}
