//! Parsing of TOML policy files (`[[rule]]` tables) into [`PolicyRule`]s.

//!
//! The schema is 0.61's in full (`toolName`, `mcpName`, `argsPattern`,
//! `commandPrefix`, `commandRegex`, `decision`, `priority`, `modes` with
//! `plan`, `interactive`, `toolAnnotations`, `subagent`, `denyMessage`,
//! `allowRedirection`, the snake_case spellings 0.61 still reads, and
//! `name`), plus geminid's own `sandboxNetwork`. Never fail open:
//! * an unknown field is a warning naming file, rule and field; the rule
//!   loads without it, an `allow` rule as `ask_user` (the field may have
//!   been meant to narrow it);
//! * a rule that cannot be understood is an error naming file, rule and
//!   field, and becomes a *floor*: the tools it names are at least
//!   ask_user (deny when non-interactive, or when the rule said deny)
//!   whatever the other rules say.

use crate::policy::error::PolicyLoadError;
use crate::policy::names::{MCP_PREFIX, NamePattern, canonical};
use crate::policy::rule::{
    ApprovalMode, Decision, PolicyRule, RuleSource, SHELL_TOOL_NAME, Tier, ToolKind,
};
use regex::Regex;
use toml::Value;

const USER_FIELDS: &[&str] = &[
    "toolName",
    "mcpName",
    "argsPattern",
    "commandPrefix",
    "commandRegex",
    "decision",
    "priority",
    "modes",
    "allowRedirection",
    "allow_redirection",
    "interactive",
    "toolAnnotations",
    "subagent",
    "denyMessage",
    "deny_message",
    "name",
    "sandboxNetwork",
];

/// Parses a policy file's text. `file` names the source in errors and in
/// [`RuleSource`]. Rules with errors are skipped; the others are returned.
/// A TOML syntax error yields no rules.
pub fn parse_policy(text: &str, file: &str, tier: Tier) -> (Vec<PolicyRule>, Vec<PolicyLoadError>) {
    parse_inner(text, file, tier, false)
}

/// Like [`parse_policy`] but also accepts the internal `kinds` field; used
/// for the built-in default rules only.
pub(crate) fn parse_builtin(text: &str, file: &str) -> (Vec<PolicyRule>, Vec<PolicyLoadError>) {
    parse_inner(text, file, Tier::Default, true)
}

fn parse_inner(
    text: &str,
    file: &str,
    tier: Tier,
    internal: bool,
) -> (Vec<PolicyRule>, Vec<PolicyLoadError>) {
    let mut errors = Vec::new();
    let table: toml::Table = match toml::from_str(text) {
        Ok(table) => table,
        Err(err) => {
            let line = err
                .span()
                .map(|span| text.get(..span.start).unwrap_or(text).matches('\n').count() + 1);
            let message = one_line(err.message());
            let message = match line {
                Some(line) => format!("line {line}: {message}"),
                None => message,
            };
            errors.push(PolicyLoadError::Syntax {
                file: file.to_owned(),
                message,
            });
            return (Vec::new(), errors);
        }
    };
    let mut rules = Vec::new();
    for (key, value) in &table {
        if key != "rule" {
            errors.push(PolicyLoadError::UnknownTopLevelKey {
                file: file.to_owned(),
                key: key.clone(),
            });
            continue;
        }
        let Value::Array(items) = value else {
            errors.push(wrong_type(file, 0, "rule", "an array of tables", value));
            continue;
        };
        for (i, item) in items.iter().enumerate() {
            let ctx = Ctx {
                file,
                rule: i + 1,
                tier,
                internal,
            };
            match item {
                Value::Table(t) => match parse_rule(t, &ctx, &mut errors) {
                    Ok(rule) => {
                        if let Some(reason) = refused_in_tier(&rule) {
                            errors.push(PolicyLoadError::NotAllowedInTier {
                                file: file.to_owned(),
                                rule: i + 1,
                                reason: reason.to_owned(),
                            });
                        } else {
                            rules.push(rule);
                        }
                    }
                    Err(err) => {
                        errors.push(err);
                        rules.push(floor_rule(t, &ctx));
                    }
                },
                other => {
                    errors.push(wrong_type(file, i + 1, "rule", "a table", other));
                    let mut floor = PolicyRule::new(Decision::AskUser, 0, ctx.source());
                    floor.floor = true;
                    rules.push(floor);
                }
            }
        }
    }
    (rules, errors)
}

struct Ctx<'a> {
    file: &'a str,
    rule: usize,
    tier: Tier,
    internal: bool,
}

impl Ctx<'_> {
    fn source(&self) -> RuleSource {
        RuleSource {
            file: self.file.to_owned(),
            index: self.rule,
            tier: self.tier,
        }
    }
}

/// 0.61 lets extensions contribute neither `allow` rules nor yolo rules.
/// A workspace's own rules may deny or ask but not allow: a cloned
/// repository must not approve its own commands (stricter than 0.61,
/// which loads them when the folder is trusted).
fn refused_in_tier(rule: &PolicyRule) -> Option<&'static str> {
    if rule.source.tier == Tier::Workspace && rule.decision == Decision::Allow {
        return Some(
            "a workspace policy may not contribute an allow rule (the repository would approve itself)",
        );
    }
    if rule.source.tier != Tier::Extension {
        return None;
    }
    if rule.decision == Decision::Allow {
        return Some("an extension may not contribute an allow rule");
    }
    if rule.modes.contains(&ApprovalMode::Yolo) {
        return Some("an extension may not contribute a rule for yolo mode");
    }
    None
}

/// The stand-in for a rule that could not be understood: the tools it
/// names (as far as they can be read; every tool when they cannot) are at
/// least ask_user, deny when the rule said deny.
fn floor_rule(table: &toml::Table, ctx: &Ctx<'_>) -> PolicyRule {
    let said_deny = table.get("decision").and_then(Value::as_str) == Some("deny");
    let decision = if said_deny {
        Decision::Deny
    } else {
        Decision::AskUser
    };
    let mut rule = PolicyRule::new(decision, 0, ctx.source());
    rule.floor = true;
    let names: Option<Vec<String>> = match table.get("toolName") {
        Some(Value::String(s)) => Some(vec![s.clone()]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect(),
        Some(_) => None,
        None => Some(Vec::new()),
    };
    let server = match table.get("mcpName") {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(_) => return rule,
        None => None,
    };
    let Some(mut names) = names else {
        return rule;
    };
    if names.iter().any(String::is_empty) {
        return rule;
    }
    let about_commands = table.contains_key("commandPrefix") || table.contains_key("commandRegex");
    if names.is_empty() && about_commands {
        names.push(SHELL_TOOL_NAME.to_owned());
    }
    for name in &mut names {
        *name = canonical(name).to_owned();
    }
    if let Some(server) = server {
        rule.mcp_name = Some(server.clone());
        compose_mcp_names(&mut names, &server);
        if names.is_empty() {
            names.push(if server == "*" {
                "mcp_*".to_owned()
            } else {
                format!("{server}__*")
            });
        }
    }
    rule.tool_names = names;
    rule
}

/// `mcpName` + `toolName = "search"` means that server's `search`:
/// `server__search` (`mcp_*_search` for every server).
fn compose_mcp_names(names: &mut [String], server: &str) {
    for name in names {
        if name == "*" {
            continue;
        }
        if server == "*" {
            if !name.starts_with(MCP_PREFIX) {
                *name = format!("{MCP_PREFIX}*_{name}");
            }
            continue;
        }
        let ours = format!("{server}__");
        let theirs = format!("{MCP_PREFIX}{server}_");
        if !name.starts_with(&ours) && !name.starts_with(&theirs) {
            *name = format!("{ours}{name}");
        }
    }
}

fn one_line(message: &str) -> String {
    let joined = message.split_whitespace().collect::<Vec<_>>().join(" ");
    joined.trim_end_matches('.').to_owned()
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a datetime",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}

fn wrong_type(
    file: &str,
    rule: usize,
    field: &str,
    expected: &str,
    found: &Value,
) -> PolicyLoadError {
    PolicyLoadError::WrongType {
        file: file.to_owned(),
        rule,
        field: field.to_owned(),
        expected: expected.to_owned(),
        found: type_name(found).to_owned(),
    }
}

fn string_or_array(
    value: &Value,
    field: &str,
    ctx: &Ctx<'_>,
) -> Result<Vec<String>, PolicyLoadError> {
    let expected = "a string or an array of strings";
    match value {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(s.clone()),
                other => Err(wrong_type(ctx.file, ctx.rule, field, expected, other)),
            })
            .collect(),
        other => Err(wrong_type(ctx.file, ctx.rule, field, expected, other)),
    }
}

fn string_array(value: &Value, field: &str, ctx: &Ctx<'_>) -> Result<Vec<String>, PolicyLoadError> {
    let expected = "an array of strings";
    match value {
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(s.clone()),
                other => Err(wrong_type(ctx.file, ctx.rule, field, expected, other)),
            })
            .collect(),
        other => Err(wrong_type(ctx.file, ctx.rule, field, expected, other)),
    }
}

fn string(value: &Value, field: &str, ctx: &Ctx<'_>) -> Result<String, PolicyLoadError> {
    match value {
        Value::String(s) => Ok(s.clone()),
        other => Err(wrong_type(ctx.file, ctx.rule, field, "a string", other)),
    }
}

fn regex(value: &Value, field: &str, ctx: &Ctx<'_>) -> Result<Regex, PolicyLoadError> {
    let pattern = string(value, field, ctx)?;
    Regex::new(&pattern).map_err(|err| PolicyLoadError::InvalidRegex {
        file: ctx.file.to_owned(),
        rule: ctx.rule,
        field: field.to_owned(),
        message: one_line(&err.to_string()),
    })
}

fn invalid_value(ctx: &Ctx<'_>, field: &str, value: &str, expected: &str) -> PolicyLoadError {
    PolicyLoadError::InvalidValue {
        file: ctx.file.to_owned(),
        rule: ctx.rule,
        field: field.to_owned(),
        value: value.to_owned(),
        expected: expected.to_owned(),
    }
}

fn parse_rule(
    table: &toml::Table,
    ctx: &Ctx<'_>,
    warnings: &mut Vec<PolicyLoadError>,
) -> Result<PolicyRule, PolicyLoadError> {
    let unknown: Vec<&String> = table
        .keys()
        .filter(|key| !(USER_FIELDS.contains(&key.as_str()) || (ctx.internal && *key == "kinds")))
        .collect();
    let decision_text = match table.get("decision") {
        Some(value) => string(value, "decision", ctx)?,
        None => {
            return Err(PolicyLoadError::MissingField {
                file: ctx.file.to_owned(),
                rule: ctx.rule,
                field: "decision".to_owned(),
            });
        }
    };
    let decision = Decision::parse(&decision_text)
        .ok_or_else(|| invalid_value(ctx, "decision", &decision_text, "allow, deny or ask_user"))?;
    let priority = match table.get("priority") {
        None => 0,
        Some(Value::Integer(n)) => match u16::try_from(*n) {
            Ok(p) if p <= 999 => p,
            _ => {
                return Err(PolicyLoadError::PriorityOutOfRange {
                    file: ctx.file.to_owned(),
                    rule: ctx.rule,
                    value: *n,
                });
            }
        },
        Some(other) => {
            return Err(wrong_type(
                ctx.file,
                ctx.rule,
                "priority",
                "an integer",
                other,
            ));
        }
    };
    let source = RuleSource {
        file: ctx.file.to_owned(),
        index: ctx.rule,
        tier: ctx.tier,
    };
    let mut rule = PolicyRule::new(decision, priority, source);
    if let Some(value) = table.get("toolName") {
        rule.tool_names = string_or_array(value, "toolName", ctx)?;
        if rule.tool_names.iter().any(String::is_empty) {
            return Err(invalid_value(ctx, "toolName", "", "a tool name or \"*\""));
        }
        for name in &mut rule.tool_names {
            *name = canonical(name).to_owned();
        }
    }
    if let Some(value) = table.get("mcpName") {
        let server = string(value, "mcpName", ctx)?;
        if server.is_empty() {
            return Err(invalid_value(ctx, "mcpName", "", "a server name or \"*\""));
        }
        rule.mcp_name = Some(server);
    }
    if let Some(value) = table.get("interactive") {
        rule.interactive = Some(boolean(value, "interactive", ctx)?);
    }
    if let Some(value) = table.get("toolAnnotations") {
        let toml::Value::Table(map) = value else {
            return Err(wrong_type(
                ctx.file,
                ctx.rule,
                "toolAnnotations",
                "a table",
                value,
            ));
        };
        let json = serde_json::to_value(map).map_err(|e| {
            invalid_value(ctx, "toolAnnotations", &e.to_string(), "a table of values")
        })?;
        rule.tool_annotations = json.as_object().cloned();
    }
    if let Some(value) = table.get("subagent") {
        let name = string(value, "subagent", ctx)?;
        if name.is_empty() {
            return Err(invalid_value(ctx, "subagent", "", "a subagent name"));
        }
        rule.subagent = Some(name);
    }
    for field in ["denyMessage", "deny_message"] {
        if let Some(value) = table.get(field) {
            rule.deny_message = Some(string(value, field, ctx)?);
            break;
        }
    }
    if let Some(value) = table.get("name") {
        rule.label = Some(string(value, "name", ctx)?);
    }
    if let Some(value) = table.get("argsPattern") {
        rule.args_pattern = Some(regex(value, "argsPattern", ctx)?);
    }
    if let Some(value) = table.get("commandPrefix") {
        rule.command_prefix = string_or_array(value, "commandPrefix", ctx)?;
    }
    if let Some(value) = table.get("commandRegex") {
        if table.contains_key("commandPrefix") {
            return Err(PolicyLoadError::PrefixWithRegex {
                file: ctx.file.to_owned(),
                rule: ctx.rule,
            });
        }
        rule.command_regex = Some(regex(value, "commandRegex", ctx)?);
    }
    if let Some(value) = table.get("modes") {
        for mode in string_array(value, "modes", ctx)? {
            let parsed = ApprovalMode::parse(&mode).ok_or_else(|| {
                invalid_value(ctx, "modes", &mode, "default, autoEdit, yolo or plan")
            })?;
            rule.modes.push(parsed);
        }
    }
    if let Some(value) = table.get("sandboxNetwork") {
        rule.sandbox_network = boolean(value, "sandboxNetwork", ctx)?;
    }
    for field in ["allowRedirection", "allow_redirection"] {
        if let Some(value) = table.get(field) {
            rule.allow_redirection = boolean(value, field, ctx)?;
            break;
        }
    }
    if let Some(value) = table.get("kinds") {
        for kind in string_array(value, "kinds", ctx)? {
            let parsed = ToolKind::parse(&kind)
                .ok_or_else(|| invalid_value(ctx, "kinds", &kind, "a tool kind"))?;
            rule.kinds.push(parsed);
        }
    }
    let has_command = !rule.command_prefix.is_empty() || rule.command_regex.is_some();
    if has_command && rule.tool_names.is_empty() {
        rule.tool_names.push(SHELL_TOOL_NAME.to_owned());
    }
    if has_command
        && rule
            .tool_names
            .iter()
            .any(|name| name != SHELL_TOOL_NAME && name != "*")
    {
        return Err(invalid_value(
            ctx,
            "toolName",
            &rule.tool_names.join(", "),
            "run_shell_command with commandPrefix or commandRegex",
        ));
    }
    if let Some(server) = rule.mcp_name.clone() {
        compose_mcp_names(&mut rule.tool_names, &server);
    }
    if rule.decision == Decision::Allow {
        for name in &rule.tool_names {
            if matches!(NamePattern::parse(name), NamePattern::Glob(_)) {
                warnings.push(PolicyLoadError::LiteralWildcard {
                    file: ctx.file.to_owned(),
                    rule: ctx.rule,
                    pattern: name.clone(),
                    note: "an allow rule matches this name literally, as 0.61 does (only `*`, `mcp_*` and `mcp_<server>_*` are wildcards there); deny and ask_user rules read it as a wildcard".to_owned(),
                });
            }
        }
    }
    for field in unknown {
        let effect = if rule.decision == Decision::Allow {
            rule.decision = Decision::AskUser;
            "; this allow rule counts as ask_user until the field is fixed".to_owned()
        } else {
            String::new()
        };
        warnings.push(PolicyLoadError::UnknownField {
            file: ctx.file.to_owned(),
            rule: ctx.rule,
            field: field.clone(),
            effect,
        });
    }
    Ok(rule)
}

fn boolean(value: &Value, field: &str, ctx: &Ctx<'_>) -> Result<bool, PolicyLoadError> {
    match value {
        Value::Boolean(b) => Ok(*b),
        other => Err(wrong_type(ctx.file, ctx.rule, field, "a boolean", other)),
    }
}
