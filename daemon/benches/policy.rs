//! Policy decisions against 1,000 loaded rules.

use criterion::{Criterion, criterion_group, criterion_main};
use geminid::policy::{
    ApprovalMode, PolicyEngine, PolicyInput, Tier, ToolKind, default_rules, parse_policy,
};
use serde_json::json;
use std::fmt::Write;
use std::hint::black_box;

fn thousand_rules() -> PolicyEngine {
    let mut toml = String::new();
    for i in 0..1000 {
        let decision = ["allow", "deny", "ask_user"][i % 3];
        let priority = i % 1000;
        let body = match i % 5 {
            0 => format!("toolName = \"tool_{i}\""),
            1 => format!("toolName = \"srv{i}__*\""),
            2 => format!("commandPrefix = \"cmd{i} sub\""),
            3 => format!("toolName = \"write_file\"\nargsPattern = '\"file_path\":\"/data/{i}/'"),
            _ => format!("mcpName = \"server{i}\"\ntoolName = \"search\""),
        };
        let _ = write!(
            toml,
            "[[rule]]\n{body}\ndecision = \"{decision}\"\npriority = {priority}\n\n"
        );
    }
    toml.push_str(
        "[[rule]]\ncommandPrefix = [\"git status\", \"ls\", \"grep\", \"echo\", \"cat\"]\ndecision = \"allow\"\npriority = 500\n",
    );
    let (mut rules, errors) = parse_policy(&toml, "bench.toml", Tier::User);
    assert!(errors.is_empty(), "{errors:?}");
    rules.extend(default_rules());
    PolicyEngine::new(rules)
}

fn bench(c: &mut Criterion) {
    let engine = thousand_rules();
    let plain_args =
        json!({ "file_path": "/home/u/project/src/main.rs", "content": "fn main() {}" });
    let plain = PolicyInput {
        tool_name: "write_file",
        args: &plain_args,
        server_name: None,
        tool_kind: ToolKind::Edit,
        mode: ApprovalMode::Default,
        interactive: true,
    };
    c.bench_function("non_shell_decision_1000_rules", |b| {
        b.iter(|| engine.check(black_box(&plain)))
    });
    let shell_args = json!({ "command": "git status && ls -la src | grep rs; echo \"$(cat Cargo.toml)\" || echo done" });
    let shell = PolicyInput {
        tool_name: "run_shell_command",
        args: &shell_args,
        server_name: None,
        tool_kind: ToolKind::Execute,
        mode: ApprovalMode::Default,
        interactive: true,
    };
    assert_eq!(
        engine.check(&shell).decision,
        geminid::policy::Decision::Allow
    );
    c.bench_function("shell_decision_5_part_compound_1000_rules", |b| {
        b.iter(|| engine.check(black_box(&shell)))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
