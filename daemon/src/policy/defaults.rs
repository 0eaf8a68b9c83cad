//! The built-in Default-tier rules, embedded from `defaults.toml`.
//!
//! * read-only built-in tools are allowed by name (priority 50) or by kind
//!   Read/Search/Think/Fetch (priority 20);
//! * `write_file`, `replace`, `run_shell_command`, `save_memory` ask the
//!   user by name (priority 40), kinds Edit/Delete/Move/Execute/Other by kind
//!   (priority 10);
//! * in autoEdit, edits are allowed by name (`write_file`, `replace`,
//!   priority 45) or by kind Edit/Delete/Move (priority 15);
//! * in yolo, everything is allowed (priority 999, redirection allowed).
//!
//! MCP tools never match the kind rules, so they fall through to the
//! engine's fallback, ask_user.

use crate::policy::load::parse_builtin;
use crate::policy::rule::PolicyRule;

/// Source name used for the built-in rules.
pub const DEFAULTS_SOURCE: &str = "<defaults>";

/// The text of the built-in rules.
pub const DEFAULTS_TOML: &str = include_str!("defaults.toml");

/// Parses the built-in rules. They are checked by tests, so errors cannot
/// occur; any rule that failed to parse would simply be absent.
pub fn default_rules() -> Vec<PolicyRule> {
    parse_builtin(DEFAULTS_TOML, DEFAULTS_SOURCE).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_rules_parse_cleanly() {
        let (rules, errors) = parse_builtin(DEFAULTS_TOML, DEFAULTS_SOURCE);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(rules.len(), 24);
    }
}
