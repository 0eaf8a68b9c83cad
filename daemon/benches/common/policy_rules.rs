//! The 1,000-rule policy the policy benchmarks load (ours and the
//! reference's), and the two calls they decide.

use serde_json::{Value, json};
use std::fmt::Write;

/// 1,000 user-tier rules of five shapes, plus a shell allow rule the
/// compound command below needs.
pub fn thousand_rules_toml() -> String {
    let mut toml = String::new();
    for i in 0..1000 {
        let decision = ["allow", "deny", "ask_user"][i % 3];
        let priority = i % 1000;
        let body = match i % 5 {
            0 => format!("toolName = \"tool_{i}\""),
            1 => format!("toolName = \"srv{i}__*\""),
            2 => format!("toolName = \"run_shell_command\"\ncommandPrefix = \"cmd{i} sub\""),
            3 => format!("toolName = \"write_file\"\nargsPattern = '\"file_path\":\"/data/{i}/'"),
            _ => format!("mcpName = \"server{i}\"\ntoolName = \"server{i}__search\""),
        };
        let _ = write!(
            toml,
            "[[rule]]\n{body}\ndecision = \"{decision}\"\npriority = {priority}\n\n"
        );
    }
    toml.push_str(
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = [\"git status\", \"ls\", \"grep\", \"echo\", \"cat\"]\ndecision = \"allow\"\npriority = 500\n",
    );
    toml
}

/// A non-shell call that must be checked against every `write_file` rule.
pub fn plain_args() -> Value {
    json!({ "file_path": "/home/u/project/src/main.rs", "content": "fn main() {}" })
}

/// A five-part compound shell command.
pub fn shell_args() -> Value {
    json!({ "command": "git status && ls -la src | grep rs; echo \"$(cat Cargo.toml)\" || echo done" })
}
