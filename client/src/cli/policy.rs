//! `gemctl policy check|list`: explain decisions.

use std::path::PathBuf;

use clap::Subcommand;
use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::policy::RuleRef;
use geminid_protocol::session::ApprovalMode;
use serde_json::Value;

use crate::command::{Ctx, Failure, Outcome, exit, outln, print_json, resolve_session};

#[derive(Subcommand)]
pub enum PolicyCommand {
    /// What the policy would decide for a call, and which rule decided
    #[command(
        after_help = "Examples:\n  gemctl policy check run_shell_command '{\"command\": \"git status && rm -rf ~\"}'"
    )]
    Check {
        /// Use this session's mode, interactivity and "always" answers
        #[arg(long, conflicts_with = "cwd")]
        session: Option<String>,
        /// The workspace to check for [default: the current directory]
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// default, autoEdit, yolo or plan
        #[arg(long)]
        mode: Option<ApprovalMode>,
        /// Check as a non-interactive session (ask becomes deny)
        #[arg(long)]
        non_interactive: bool,
        tool: String,
        /// The call's arguments as a JSON object
        #[arg(default_value = "{}")]
        args: String,
    },
    /// Every loaded rule, highest priority first, with its source
    #[command(after_help = super::examples::POLICY_LIST)]
    List,
}

pub async fn run(ctx: &Ctx, cmd: PolicyCommand) -> Outcome {
    let client = ctx.connect().await?;
    match cmd {
        PolicyCommand::Check {
            session,
            cwd,
            mode,
            non_interactive,
            tool,
            args,
        } => {
            let args: Value = serde_json::from_str(&args).map_err(|e| {
                Failure::new(
                    exit::USAGE,
                    format!("the arguments are not valid JSON: {e}"),
                )
            })?;
            let session = match session {
                Some(given) => Some(resolve_session(&client, &given).await?),
                None => None,
            };
            let cwd = match (&session, cwd) {
                (Some(_), _) => None,
                (None, Some(cwd)) => Some(cwd),
                (None, None) => std::env::current_dir().ok(),
            };
            let result = client
                .check_policy(
                    session,
                    cwd.map(|c| c.display().to_string()),
                    tool,
                    Some(args),
                    mode,
                    non_interactive.then_some(false),
                )
                .await?;
            if ctx.json {
                return print_json(&result);
            }
            outln!(
                "{}  ({} mode{})",
                result.decision,
                result.approval_mode,
                if result.interactive {
                    ""
                } else {
                    ", non-interactive"
                }
            );
            outln!("  because {}", result.reason);
            if let Some(rule) = &result.rule {
                outln!("  rule    {}", describe(rule));
                if !rule.matched.is_empty() {
                    outln!("  matched {}", rule.matched.join("; "));
                }
            }
            if let Some(message) = &result.deny_message {
                outln!("  message {message}");
            }
            for sub in &result.subcommands {
                let rule = sub
                    .rule
                    .as_ref()
                    .map(describe)
                    .unwrap_or_else(|| "no rule".to_owned());
                outln!("  {:<9} {}   [{rule}]", sub.decision, sub.command);
            }
            Ok(exit::OK)
        }
        PolicyCommand::List => {
            let list = client.list_policy().await?;
            if ctx.json {
                return print_json(&list);
            }
            for rule in &list.rules {
                let mut what = Vec::new();
                if !rule.tool_names.is_empty() {
                    what.push(format!("tools {}", rule.tool_names.join(",")));
                }
                if let Some(server) = &rule.mcp_name {
                    what.push(format!("server {server}"));
                }
                if !rule.command_prefix.is_empty() {
                    what.push(format!("prefix {:?}", rule.command_prefix));
                }
                if let Some(re) = &rule.command_regex {
                    what.push(format!("regex {re}"));
                }
                if let Some(re) = &rule.args_pattern {
                    what.push(format!("args ~ {re}"));
                }
                if !rule.modes.is_empty() {
                    let modes: Vec<String> = rule.modes.iter().map(|m| m.to_string()).collect();
                    what.push(format!("modes {}", modes.join(",")));
                }
                if what.is_empty() {
                    what.push("any tool".to_owned());
                }
                what.extend(
                    rule.conditions
                        .iter()
                        .filter(|c| {
                            ["interactive", "toolAnnotations", "subagent", "unreadable"]
                                .iter()
                                .any(|k| c.starts_with(k))
                        })
                        .cloned(),
                );
                if let Some(message) = &rule.deny_message {
                    what.push(format!("message {message:?}"));
                }
                outln!(
                    "{:>8.3}  {:<8} {}   [{}]",
                    rule.source.priority,
                    rule.decision,
                    what.join("; "),
                    describe(&rule.source)
                );
            }
            for problem in &list.problems {
                eprintln!("problem: {problem}");
            }
            Ok(exit::OK)
        }
    }
}

fn describe(rule: &RuleRef) -> String {
    format!(
        "{} rule #{}, {} tier, priority {:.3}",
        rule.file, rule.index, rule.tier, rule.priority
    )
}
