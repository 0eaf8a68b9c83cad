//! Parsing of TOML policy files (`[[rule]]` tables) into [`PolicyRule`]s.

use crate::policy::error::PolicyLoadError;
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
                Value::Table(t) => match parse_rule(t, &ctx) {
                    Ok(rule) => rules.push(rule),
                    Err(err) => errors.push(err),
                },
                other => errors.push(wrong_type(file, i + 1, "rule", "a table", other)),
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

fn parse_rule(table: &toml::Table, ctx: &Ctx<'_>) -> Result<PolicyRule, PolicyLoadError> {
    for key in table.keys() {
        let known = USER_FIELDS.contains(&key.as_str()) || (ctx.internal && key == "kinds");
        if !known {
            return Err(PolicyLoadError::UnknownField {
                file: ctx.file.to_owned(),
                rule: ctx.rule,
                field: key.clone(),
            });
        }
    }
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
    }
    if let Some(value) = table.get("mcpName") {
        rule.mcp_name = Some(string(value, "mcpName", ctx)?);
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
            let parsed = ApprovalMode::parse(&mode)
                .ok_or_else(|| invalid_value(ctx, "modes", &mode, "default, autoEdit or yolo"))?;
            rule.modes.push(parsed);
        }
    }
    if let Some(value) = table.get("allowRedirection") {
        rule.allow_redirection = match value {
            Value::Boolean(b) => *b,
            other => {
                return Err(wrong_type(
                    ctx.file,
                    ctx.rule,
                    "allowRedirection",
                    "a boolean",
                    other,
                ));
            }
        };
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
    if let Some(server) = &rule.mcp_name {
        // `mcpName` + `toolName = "search"` means the composite `server__search`.
        for name in &mut rule.tool_names {
            if !name.starts_with(&format!("{server}__")) {
                *name = format!("{server}__{name}");
            }
        }
    }
    Ok(rule)
}
