//! Shared test helpers.
#![allow(dead_code)]

use crate::policy::{
    ApprovalMode, Decision, PolicyEngine, PolicyInput, PolicyVerdict, Tier, ToolKind,
    default_rules, parse_policy,
};
use serde_json::{Value, json};

/// Builds an engine from the defaults plus `rules_toml` as a User file.
pub fn engine(rules_toml: &str) -> PolicyEngine {
    let (mut rules, errors) = parse_policy(rules_toml, "user.toml", Tier::User);
    assert!(errors.is_empty(), "rule errors: {errors:?}");
    rules.extend(default_rules());
    PolicyEngine::new(rules)
}

/// Checks a shell command.
pub fn shell_verdict(
    rules_toml: &str,
    command: &str,
    mode: ApprovalMode,
    interactive: bool,
) -> PolicyVerdict {
    let args = json!({ "command": command });
    engine(rules_toml).check(&PolicyInput {
        tool_name: "run_shell_command",
        args: &args,
        server_name: None,
        remote_name: None,
        annotations: None,
        tool_kind: ToolKind::Execute,
        mode,
        interactive,
    })
}

/// Checks a non-shell tool call.
pub fn tool_verdict(
    engine: &PolicyEngine,
    tool: &str,
    server: Option<&str>,
    kind: ToolKind,
    args: &Value,
    mode: ApprovalMode,
    interactive: bool,
) -> PolicyVerdict {
    engine.check(&PolicyInput {
        tool_name: tool,
        args,
        server_name: server,
        remote_name: None,
        annotations: None,
        tool_kind: kind,
        mode,
        interactive,
    })
}

/// A one-rule TOML file.
pub fn rule(tool: &str, decision: &str, priority: u16) -> String {
    format!("[[rule]]\ntoolName = \"{tool}\"\ndecision = \"{decision}\"\npriority = {priority}\n")
}

/// An engine of the defaults plus the given files, each in its tier.
pub fn tiered(files: &[(&str, Tier)]) -> PolicyEngine {
    let mut rules = default_rules();
    for (text, tier) in files {
        let (mut found, errors) = parse_policy(text, &format!("{tier:?}.toml"), *tier);
        assert!(errors.is_empty(), "{errors:?}");
        rules.append(&mut found);
    }
    PolicyEngine::new(rules)
}

/// The decision for one call (interactive).
pub fn decide(
    e: &PolicyEngine,
    tool: &str,
    server: Option<&str>,
    kind: ToolKind,
    args: Value,
    mode: ApprovalMode,
) -> Decision {
    tool_verdict(e, tool, server, kind, &args, mode, true).decision
}
