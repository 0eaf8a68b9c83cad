//! Matching one rule against one tool call (or one shell sub-command).

use crate::policy::names::{CallNames, pattern_matches};
use crate::policy::rule::{ApprovalMode, Decision, PolicyRule, ToolKind};
use serde_json::Value;
use std::cell::OnceCell;

/// The command a rule is matched against.
#[derive(Debug, Clone, Copy)]
pub(crate) enum CommandText<'a> {
    /// The whole command line as written (character prefix match).
    Whole(&'a str),
    /// One sub-command: its words and their space-joined text.
    Sub {
        /// Unquoted words.
        words: &'a [String],
        /// Words joined by spaces.
        text: &'a str,
    },
}

impl CommandText<'_> {
    pub(crate) fn text(&self) -> &str {
        match self {
            Self::Whole(text) => text,
            Self::Sub { text, .. } => text,
        }
    }
}

/// Everything about a call that rules look at.
pub(crate) struct CallView<'a> {
    /// Tool name as called.
    pub tool_name: &'a str,
    /// `server__tool` for MCP tools, otherwise the tool name.
    pub qualified: &'a str,
    /// MCP server, if any.
    pub server: Option<&'a str>,
    /// The tool's own name on its MCP server.
    pub remote: Option<&'a str>,
    /// The tool's annotations (MCP `annotations`), if any.
    pub annotations: Option<&'a serde_json::Map<String, Value>>,
    /// Whether a person can be asked.
    pub interactive: bool,
    /// Tool kind.
    pub kind: ToolKind,
    /// Approval mode.
    pub mode: ApprovalMode,
    /// The arguments.
    pub args: &'a Value,
    /// The command being checked (shell tool only).
    pub command: Option<CommandText<'a>>,
    /// Lazily built stable JSON of the arguments (with `command` replaced by
    /// the sub-command text for sub-commands).
    pub json: OnceCell<String>,
}

impl CallView<'_> {
    fn stable_args(&self) -> &str {
        self.json.get_or_init(|| {
            let mut out = String::new();
            match (self.command, self.args) {
                (Some(CommandText::Sub { text, .. }), Value::Object(map)) => {
                    let mut map = map.clone();
                    map.insert("command".to_owned(), Value::String(text.to_owned()));
                    stable_json(&Value::Object(map), &mut out);
                }
                _ => stable_json(self.args, &mut out),
            }
            out
        })
    }
}

/// Writes compact JSON with object keys sorted, independent of the map
/// implementation serde_json was built with.
pub fn stable_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                stable_json(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                stable_json(item, out);
            }
            out.push(']');
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {
            out.push_str(&value.to_string());
        }
    }
}

/// Whether a tool-name pattern matches the call. Wildcards 0.61 reads
/// literally are globs only for rules that deny or ask.
fn name_matches(pattern: &str, call: &CallView<'_>, as_glob: bool) -> bool {
    let names = CallNames {
        tool_name: call.tool_name,
        qualified: call.qualified,
        server: call.server,
        remote: call.remote,
    };
    pattern_matches(pattern, &names, as_glob)
}

/// Word-wise prefix match: `git status` matches `git status -s` but not
/// `git statusx`; a trailing space requires at least one more word.
pub(crate) fn words_match_prefix(words: &[String], prefix: &str) -> bool {
    let mut matched = 0;
    for want in prefix.split_whitespace() {
        match words.get(matched) {
            Some(have) if have == want => matched += 1,
            _ => return false,
        }
    }
    let trailing = prefix.ends_with(char::is_whitespace);
    matched > 0 && !(trailing && words.len() == matched)
}

/// Character prefix match on the raw command line with a word boundary.
pub(crate) fn text_matches_prefix(text: &str, prefix: &str) -> bool {
    let text = text.trim_start();
    let Some(rest) = text.strip_prefix(prefix) else {
        return false;
    };
    prefix.ends_with(char::is_whitespace)
        || rest.is_empty()
        || rest.starts_with(|c: char| {
            c.is_whitespace() || matches!(c, ';' | '&' | '|' | ')' | '<' | '>')
        })
}

/// Whether `rule` matches `call`.
pub(crate) fn rule_matches(rule: &PolicyRule, call: &CallView<'_>) -> bool {
    rule_targets(rule, call) && arguments_match(rule, call)
}

/// Whether `rule` looks at the arguments (or the command) at all.
pub(crate) fn looks_at_arguments(rule: &PolicyRule) -> bool {
    rule.args_pattern.is_some() || !rule.command_prefix.is_empty() || rule.command_regex.is_some()
}

/// Whether `rule` applies to the call's tool, mode and environment,
/// whatever its arguments.
pub(crate) fn rule_targets(rule: &PolicyRule, call: &CallView<'_>) -> bool {
    if !rule.modes.is_empty() && !rule.modes.contains(&call.mode) {
        return false;
    }
    if let Some(interactive) = rule.interactive
        && interactive != call.interactive
    {
        return false;
    }
    if rule.subagent.is_some() {
        // geminid runs no subagents: every call is the main agent's.
        return false;
    }
    let as_glob = rule.decision != Decision::Allow;
    if !rule.tool_names.is_empty()
        && !rule
            .tool_names
            .iter()
            .any(|p| name_matches(p, call, as_glob))
    {
        return false;
    }
    if rule
        .except_tools
        .iter()
        .any(|p| name_matches(p, call, false))
    {
        return false;
    }
    let server_ok = match rule.mcp_name.as_deref() {
        None => true,
        Some("*") => call.server.is_some(),
        Some(server) => call.server == Some(server),
    };
    if !server_ok {
        return false;
    }
    if let Some(wanted) = &rule.tool_annotations {
        let Some(have) = call.annotations else {
            return false;
        };
        if wanted
            .iter()
            .any(|(key, value)| have.get(key) != Some(value))
        {
            return false;
        }
    }
    if !rule.kinds.is_empty() && (call.server.is_some() || !rule.kinds.contains(&call.kind)) {
        return false;
    }
    true
}

/// Whether the call's arguments (or command) meet the rule's conditions.
fn arguments_match(rule: &PolicyRule, call: &CallView<'_>) -> bool {
    if !rule.command_prefix.is_empty() {
        let Some(command) = call.command else {
            return false;
        };
        let hit = rule.command_prefix.iter().any(|p| match command {
            CommandText::Whole(text) => text_matches_prefix(text, p),
            CommandText::Sub { words, .. } => words_match_prefix(words, p),
        });
        if !hit {
            return false;
        }
    }
    if let Some(re) = &rule.command_regex {
        let Some(command) = call.command else {
            return false;
        };
        if !re.is_match(command.text()) {
            return false;
        }
    }
    if let Some(re) = &rule.args_pattern
        && !re.is_match(call.stable_args())
    {
        return false;
    }
    true
}
