//! Policy decisions against 1,000 loaded rules.

// A benchmark, like a test, stops loudly on a broken setup.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use criterion::{Criterion, criterion_group, criterion_main};
use geminid::policy::{
    ApprovalMode, PolicyEngine, PolicyInput, Tier, ToolKind, default_rules, parse_policy,
};
use std::hint::black_box;

#[path = "common/policy_rules.rs"]
mod policy_rules;

fn thousand_rules() -> PolicyEngine {
    let (mut rules, errors) = parse_policy(
        &policy_rules::thousand_rules_toml(),
        "bench.toml",
        Tier::User,
    );
    assert!(errors.is_empty(), "{errors:?}");
    rules.extend(default_rules());
    PolicyEngine::new(rules)
}

fn bench(c: &mut Criterion) {
    let engine = thousand_rules();
    let plain_args = policy_rules::plain_args();
    let plain = PolicyInput {
        tool_name: "write_file",
        args: &plain_args,
        server_name: None,
        remote_name: None,
        annotations: None,
        tool_kind: ToolKind::Edit,
        mode: ApprovalMode::Default,
        interactive: true,
    };
    c.bench_function("non_shell_decision_1000_rules", |b| {
        b.iter(|| engine.check(black_box(&plain)))
    });
    let shell_args = policy_rules::shell_args();
    let shell = PolicyInput {
        tool_name: "run_shell_command",
        args: &shell_args,
        server_name: None,
        remote_name: None,
        annotations: None,
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
