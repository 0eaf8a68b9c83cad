//! `gemctl sandbox check`: what the sandbox lets a command do on this
//! machine (asked of the daemon, which runs the commands), and its
//! self-test.

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::session::SandboxCheck;

use crate::command::{Ctx, Outcome, exit, print_json};

#[derive(clap::Subcommand)]
pub enum SandboxCommand {
    /// Print what a sandboxed command may write, what is hidden and held
    /// read-only, the network, and run the self-test (exit 1 if a probe fails)
    #[command(after_help = super::examples::SANDBOX)]
    Check {
        /// The workspace to plan for [default: .]
        #[arg(long)]
        cwd: Option<String>,
    },
}

pub async fn run(ctx: &Ctx, cmd: SandboxCommand) -> Outcome {
    let SandboxCommand::Check { cwd } = cmd;
    let client = ctx.connect().await?;
    let cwd = std::path::absolute(cwd.as_deref().unwrap_or("."))
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| ".".to_owned());
    let check = client.sandbox_check(Some(cwd)).await?;
    let failed = check.probes.iter().any(|p| !p.passed) || !check.status.available;
    if ctx.json {
        print_json(&check)?;
    } else {
        print_check(&check);
    }
    Ok(if failed { exit::FAILED } else { exit::OK })
}

fn print_check(c: &SandboxCheck) {
    match &c.status.missing {
        None => println!(
            "sandbox: available (Landlock ABI {}, user, mount and network namespaces)",
            c.status.landlock_abi
        ),
        Some(why) => println!("sandbox: UNAVAILABLE: {why}"),
    }
    println!(
        "mode in settings: {}",
        c.mode
            .as_deref()
            .unwrap_or("not set (off; on for yolo sessions)")
    );
    println!("for a sandboxed session in {}:", c.workspace);
    println!(
        "  network: {}",
        if c.network {
            "on"
        } else {
            "off (loopback of its own only)"
        }
    );
    let list = |title: &str, items: &[String]| {
        println!("  {title}:");
        for i in items {
            println!("    {i}");
        }
    };
    list("may write under", &c.writable);
    list("hidden (unreadable)", &c.hidden);
    list("held read-only where they exist", &c.read_only);
    for p in &c.problems {
        println!("  settings problem: {p}");
    }
    if !c.probes.is_empty() {
        println!("self-test:");
        for p in &c.probes {
            println!(
                "  {} {}: {}",
                if p.passed { "ok  " } else { "FAIL" },
                p.name,
                p.detail
            );
        }
    }
}
