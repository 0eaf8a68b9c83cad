//! The policy differential suite: the cases recorded from Gemini CLI 0.61
//! (`tests/reference/policy/cases.json`, made by `record.mjs` there)
//! replayed through our policy engine with the same rule file in the user
//! tier and our built-in defaults: rule sets in 0.61's schema crossed with
//! shell strings, built-in tools, MCP tools in both namings, the four modes
//! and interactive or not.
//!
//! The figure that matters: no case where geminid allows what the
//! reference does not (a non-interactive ask counts as a refusal on both
//! sides), except the classes in [`LOOSER_ON_PURPOSE`] (and in
//! ARCHITECTURE.md). Run with `--nocapture` for the figures.

use std::collections::BTreeMap;

use geminid::policy::{
    ApprovalMode, Decision, PolicyEngine, PolicyInput, Tier, ToolKind, default_rules, parse_policy,
};
use serde_json::Value;

const RECORDED: &str = include_str!("../reference/policy/cases.json");

/// Classes of cases where geminid allows what 0.61 refuses or asks about,
/// and why; ARCHITECTURE.md lists the same.
const LOOSER_ON_PURPOSE: &[(&str, &str)] = &[(
    "read_many_files",
    "a read-only tool; our defaults allow read-only tools, 0.61 leaves it out of its list",
)];

fn mode(name: &str) -> ApprovalMode {
    ApprovalMode::parse(name).unwrap_or_else(|| panic!("unknown mode {name}"))
}

fn kind(tool: &str, server: Option<&str>) -> ToolKind {
    if server.is_some() {
        return ToolKind::Other;
    }
    match tool {
        "read_file" | "list_directory" | "read_many_files" => ToolKind::Read,
        "glob" | "search_file_content" | "google_web_search" => ToolKind::Search,
        "write_file" | "replace" => ToolKind::Edit,
        "run_shell_command" => ToolKind::Execute,
        "web_fetch" => ToolKind::Fetch,
        other => panic!("no kind for {other}"),
    }
}

fn decision(name: &str) -> Decision {
    Decision::parse(name).unwrap_or_else(|| panic!("unknown decision {name}"))
}

#[test]
fn geminid_never_allows_what_0_61_refuses() {
    let recorded: Value = serde_json::from_str(RECORDED).unwrap();
    let sets = recorded["sets"].as_object().unwrap();
    let engines: BTreeMap<&str, PolicyEngine> = sets
        .iter()
        .map(|(name, text)| {
            let (mut rules, _problems) =
                parse_policy(text.as_str().unwrap(), &format!("{name}.toml"), Tier::User);
            rules.extend(default_rules());
            (name.as_str(), PolicyEngine::new(rules))
        })
        .collect();
    let cases = recorded["cases"].as_array().unwrap();
    assert!(cases.len() >= 1000, "{} cases", cases.len());
    let (mut agree, mut stricter, mut looser) = (0, 0, 0);
    let mut unexplained = Vec::new();
    let mut by_class: BTreeMap<String, usize> = BTreeMap::new();
    let mut messages = (0, 0);
    for case in cases {
        let set = case["set"].as_str().unwrap();
        let tool = case["tool"].as_str().unwrap();
        let server = case["server"].as_str();
        let interactive = !case["ni"].as_bool().unwrap_or(false);
        let input = PolicyInput {
            tool_name: tool,
            args: &case["args"],
            server_name: server,
            remote_name: server.map(|_| tool),
            annotations: case["ann"].as_object(),
            tool_kind: kind(tool, server),
            mode: mode(case["mode"].as_str().unwrap()),
            interactive,
        };
        let verdict = engines[set].check(&input);
        let ours = verdict.decision;
        let reference = decision(case["reference"].as_str().unwrap());
        let what = format!(
            "set {set}, {tool}{} {}, {}{}: ours {} ({}), 0.61 {}",
            server.map(|s| format!(" on {s}")).unwrap_or_default(),
            case["args"],
            case["mode"].as_str().unwrap(),
            if interactive { "" } else { ", non-interactive" },
            ours.as_str(),
            verdict.reason,
            reference.as_str()
        );
        if let Some(message) = case["deny_message"].as_str()
            && sets[set].as_str().unwrap().contains(message)
            && ours == Decision::Deny
        {
            messages.0 += 1;
            if verdict.deny_message.as_deref() == Some(message) {
                messages.1 += 1;
            } else {
                unexplained.push(format!("deny message differs: {what}"));
            }
        }
        match ours.severity().cmp(&reference.severity()) {
            std::cmp::Ordering::Equal => agree += 1,
            std::cmp::Ordering::Greater => {
                stricter += 1;
                let class = if tool == "run_shell_command" {
                    format!("shell `{}`", case["args"]["command"].as_str().unwrap())
                } else {
                    format!("{tool} in {}", case["mode"].as_str().unwrap())
                };
                *by_class.entry(class).or_default() += 1;
            }
            std::cmp::Ordering::Less => {
                looser += 1;
                if !LOOSER_ON_PURPOSE.iter().any(|(t, _)| *t == tool) {
                    unexplained.push(what);
                }
            }
        }
    }
    println!(
        "policy vs 0.61: {} cases, {agree} agree, {stricter} stricter, {looser} looser ({} unexplained); deny messages {}/{}",
        cases.len(),
        unexplained.len(),
        messages.1,
        messages.0
    );
    for (class, n) in &by_class {
        println!("  stricter: {class}: {n}");
    }
    assert!(
        unexplained.is_empty(),
        "{} cases where geminid is looser than 0.61 without a listed reason:\n{}",
        unexplained.len(),
        unexplained.join("\n")
    );
}
