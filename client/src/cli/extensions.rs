//! `gemctl extensions list`: the installed extensions and what each
//! contributes.

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::extension::ExtensionInfo;

use crate::command::{Ctx, Outcome, exit, outln, print_json};

#[derive(clap::Subcommand)]
pub enum ExtensionsCommand {
    /// Name, version, path, enabled, MCP servers, context files, excluded
    /// tools, policies, settings (where each value comes from) and
    /// problems of each extension
    #[command(after_help = super::examples::EXTENSIONS_LIST)]
    List {
        /// Whether each is enabled for this directory [default: .]
        #[arg(long)]
        cwd: Option<String>,
    },
}

pub async fn run(ctx: &Ctx, cmd: ExtensionsCommand) -> Outcome {
    let client = ctx.connect().await?;
    let ExtensionsCommand::List { cwd } = cmd;
    let cwd = std::path::absolute(cwd.as_deref().unwrap_or("."))
        .map(|p| p.display().to_string())
        .ok();
    let list = client.list_extensions(cwd).await?;
    if ctx.json {
        return print_json(&list);
    }
    if list.is_empty() {
        outln!("no extensions installed (~/.gemini/extensions)");
    }
    for ext in &list {
        print_extension(ext);
    }
    Ok(exit::OK)
}

fn print_extension(ext: &ExtensionInfo) {
    let state = if ext.enabled { "enabled" } else { "disabled" };
    let version = ext.version.as_deref().unwrap_or("?");
    outln!("{} {version} ({state})", ext.name);
    outln!("  path: {}", ext.path);
    let list = |items: &[String]| {
        if items.is_empty() {
            "-".to_owned()
        } else {
            items.join(", ")
        }
    };
    outln!("  mcp servers: {}", list(&ext.mcp_servers));
    outln!("  context files: {}", list(&ext.context_files));
    outln!("  excluded tools: {}", list(&ext.exclude_tools));
    outln!("  policies: {}", ext.policies.as_deref().unwrap_or("-"));
    for setting in &ext.settings {
        let value = match (&setting.scope, &setting.value) {
            (None, _) => "[not set]".to_owned(),
            (Some(_), _) if setting.sensitive => "***".to_owned(),
            (Some(_), Some(value)) => value.clone(),
            (Some(_), None) => "?".to_owned(),
        };
        let from = match (&setting.scope, &setting.source) {
            (Some(scope), Some(source)) => format!(" ({scope} - {source})"),
            _ => String::new(),
        };
        outln!(
            "  setting {} ({}): {value}{from}",
            setting.name,
            setting.env_var
        );
    }
    for problem in &ext.problems {
        outln!("  problem: {problem}");
    }
}
