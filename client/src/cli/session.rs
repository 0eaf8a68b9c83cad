//! `gemctl session new|list|show|rm`.

use std::path::PathBuf;

use clap::Subcommand;
use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::session::{ApprovalMode, SessionInfo};

use crate::command::{Ctx, Failure, Outcome, exit, outln, print_json, resolve_session};

#[derive(Subcommand)]
pub enum SessionCommand {
    /// Create a session and print its id
    #[command(after_help = super::examples::SESSION_NEW)]
    New {
        /// The workspace directory [default: the current directory]
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// default, autoEdit or yolo
        #[arg(long, default_value = "default")]
        mode: ApprovalMode,
        #[arg(long)]
        title: Option<String>,
        /// Deny instead of asking when a call needs approval
        #[arg(long)]
        non_interactive: bool,
        /// Accept a workspace no one normally means (/, or under /proc, /sys, /dev)
        #[arg(long)]
        force: bool,
        /// Sandbox for its commands: off, workspace-write, read-only or
        /// required [default: the settings; on for yolo]
        #[arg(long)]
        sandbox: Option<String>,
    },
    /// List sessions, most recently used first
    #[command(after_help = super::examples::SESSION_LIST)]
    List,
    /// Show one session (an id or a unique prefix)
    #[command(after_help = super::examples::SESSION_SHOW)]
    Show { id: String },
    /// Delete sessions and their history (ids or unique prefixes)
    #[command(after_help = super::examples::SESSION_RM)]
    Rm {
        #[arg(required = true)]
        ids: Vec<String>,
    },
    /// Delete sessions whose newest event is older than --older-than
    #[command(after_help = super::examples::SESSION_PRUNE)]
    Prune {
        /// Age of the newest event: 30d, 12h, 90m, 2w
        #[arg(long, value_parser = parse_age)]
        older_than: u64,
        /// Only list what would be deleted
        #[arg(long)]
        dry_run: bool,
    },
}

pub async fn run(ctx: &Ctx, cmd: SessionCommand) -> Outcome {
    let client = ctx.connect().await?;
    match cmd {
        SessionCommand::New {
            cwd,
            mode,
            title,
            non_interactive,
            force,
            sandbox,
        } => {
            let cwd = match cwd {
                Some(cwd) => cwd,
                None => std::env::current_dir().map_err(|e| {
                    Failure::new(exit::FAILED, format!("no current directory: {e}"))
                })?,
            };
            let cwd = std::path::absolute(&cwd)
                .map_err(|e| Failure::new(exit::FAILED, format!("{}: {e}", cwd.display())))?;
            let info = client
                .create_session(
                    cwd.display().to_string(),
                    Some(mode),
                    title,
                    Some(!non_interactive),
                    Some(force),
                    sandbox,
                    None,
                )
                .await?;
            if ctx.json {
                return print_json(&info);
            }
            outln!("{}", info.session_id);
            Ok(exit::OK)
        }
        SessionCommand::List => {
            let mut sessions = client.list_sessions().await?;
            sessions.sort_by_key(|s| std::cmp::Reverse(s.updated_at));
            if ctx.json {
                return print_json(&sessions);
            }
            if sessions.is_empty() {
                outln!("no sessions (create one with `gemctl session new`)");
                return Ok(exit::OK);
            }
            let now = now_ms();
            outln!(
                "{}",
                table_row(&[
                    "ID",
                    "UPDATED",
                    "CREATED",
                    "ORIGIN",
                    "MODE",
                    "EVENTS",
                    "TITLE / DIRECTORY"
                ])
            );
            for s in &sessions {
                let title = match &s.title {
                    Some(t) => format!("{t}  ({})", s.cwd),
                    None => s.cwd.clone(),
                };
                outln!(
                    "{}",
                    table_row(&[
                        &s.session_id,
                        &age(now, s.updated_at),
                        &age(now, s.created_at),
                        s.origin.as_deref().unwrap_or("-"),
                        s.approval_mode.as_str(),
                        &s.last_seq.to_string(),
                        &title,
                    ])
                );
            }
            Ok(exit::OK)
        }
        SessionCommand::Show { id } => {
            let id = resolve_session(&client, &id).await?;
            let info = client.get_session(id).await?;
            if ctx.json {
                return print_json(&info);
            }
            show(&info);
            Ok(exit::OK)
        }
        SessionCommand::Rm { ids } => {
            // Every id is checked before anything is deleted.
            let mut resolved = Vec::new();
            for given in &ids {
                resolved.push(resolve_session(&client, given).await?);
            }
            for id in &resolved {
                client.delete_session(id.clone()).await?;
                if !ctx.json {
                    outln!("deleted {id}");
                }
            }
            if ctx.json {
                return match resolved.as_slice() {
                    [one] => print_json(&serde_json::json!({"deleted": one})),
                    all => print_json(&serde_json::json!({"deleted": all})),
                };
            }
            Ok(exit::OK)
        }
        SessionCommand::Prune {
            older_than,
            dry_run,
        } => {
            let cutoff = now_ms().saturating_sub(older_than);
            let old: Vec<SessionInfo> = client
                .list_sessions()
                .await?
                .into_iter()
                .filter(|s| s.updated_at < cutoff)
                .collect();
            for s in &old {
                if !dry_run {
                    client.delete_session(s.session_id.clone()).await?;
                }
            }
            let ids: Vec<&str> = old.iter().map(|s| s.session_id.as_str()).collect();
            if ctx.json {
                return print_json(&serde_json::json!({
                    "deleted": if dry_run { Vec::new() } else { ids.clone() },
                    "wouldDelete": if dry_run { ids } else { Vec::new() },
                }));
            }
            for s in &old {
                outln!(
                    "{} {}  (updated {})",
                    if dry_run { "would delete" } else { "deleted" },
                    s.session_id,
                    age(now_ms(), s.updated_at)
                );
            }
            if old.is_empty() {
                outln!("nothing to prune");
            }
            Ok(exit::OK)
        }
    }
}

fn show(info: &SessionInfo) {
    outln!("session      {}", info.session_id);
    outln!("cwd          {}", info.cwd);
    if let Some(title) = &info.title {
        outln!("title        {title}");
    }
    outln!("mode         {}", info.approval_mode);
    outln!("interactive  {}", info.interactive);
    outln!("events       {}", info.last_seq);
    let now = now_ms();
    outln!("created      {}", age(now, info.created_at));
    outln!("updated      {}", age(now, info.updated_at));
    if let Some(origin) = &info.origin {
        outln!("origin       {origin}");
    }
}

/// Columns padded to fixed widths (the last one is free).
fn table_row(cells: &[&str]) -> String {
    const WIDTHS: [usize; 6] = [32, 9, 9, 10, 8, 6];
    let mut row = String::new();
    for (i, cell) in cells.iter().enumerate() {
        match WIDTHS.get(i) {
            Some(&w) if i == 5 => row.push_str(&format!("{cell:>w$}  ")),
            Some(&w) => row.push_str(&format!("{cell:<w$}  ")),
            None => row.push_str(cell),
        }
    }
    row.trim_end().to_owned()
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// How long ago `then` was, in the largest whole unit (`5m ago`).
fn age(now: u64, then: u64) -> String {
    let s = now.saturating_sub(then) / 1000;
    match s {
        0..60 => format!("{s}s ago"),
        60..3600 => format!("{}m ago", s / 60),
        3600..86_400 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86_400),
    }
}

/// `30d`, `12h`, `90m`, `45s`, `2w` as milliseconds.
fn parse_age(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("`{text}` needs a unit: s, m, h, d or w (30d)"))?;
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` does not start with a number (30d)"))?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return Err(format!("unknown unit `{unit}` (s, m, h, d or w)")),
    };
    Ok(n * seconds * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_parse_and_print() {
        assert_eq!(parse_age("30d"), Ok(30 * 86_400_000));
        assert_eq!(parse_age("90m"), Ok(90 * 60_000));
        assert!(parse_age("30").is_err());
        assert!(parse_age("3y").is_err());
        assert_eq!(age(10_000_000, 10_000_000 - 5 * 60_000), "5m ago");
        assert_eq!(age(10, 20), "0s ago");
    }

    #[test]
    fn rows_are_aligned() {
        let a = table_row(&["a", "1m ago", "2d ago", "chat", "default", "7", "t"]);
        let b = table_row(&["b", "10s ago", "2d ago", "mcp serve", "yolo", "1234", "u"]);
        assert_eq!(a.find("chat"), b.find("mcp serve"));
        assert_eq!(a.len(), b.len());
    }
}
