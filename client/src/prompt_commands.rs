//! MCP prompts as slash commands, shared by `gemctl chat` and `gemctl acp`:
//! their names (Gemini CLI 0.61's McpPromptLoader and SlashCommandResolver:
//! whitespace becomes `-`; a built-in command keeps its name and the
//! prompt becomes `server.name`; prompts of two servers with one name are
//! both `server.name`), the parsing of their arguments (`--name=value`,
//! `--name="quoted value"`, then positional values for the required
//! arguments still unset), and `prompts/get` turned into the text of a
//! user turn.

use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::mcp::{McpPromptResult, McpServerInfo};
use regex::Regex;

use crate::Client;

/// One argument a prompt takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptArg {
    pub name: String,
    pub required: bool,
}

/// A prompt of a connected server, under the name it is typed as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptCommand {
    /// Without the `/`.
    pub name: String,
    pub server: String,
    /// The prompt's name on its server.
    pub prompt: String,
    pub description: String,
    pub arguments: Vec<PromptArg>,
}

impl PromptCommand {
    /// `--city --state`, required ones bare and optional ones in brackets:
    /// what the command's help and ACP's input hint show.
    pub fn hint(&self) -> String {
        self.arguments
            .iter()
            .map(|a| {
                if a.required {
                    format!("--{}", a.name)
                } else {
                    format!("[--{}]", a.name)
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `/<prompt> help`: its arguments and how to give them.
pub fn help(command: &PromptCommand) -> String {
    if command.arguments.is_empty() {
        return format!("Prompt \"{}\" has no arguments.", command.prompt);
    }
    let mut out = format!(
        "Arguments for \"{}\" of {}: by name (--name=\"value\") or by position (the required ones, in order)\n",
        command.prompt, command.server
    );
    for arg in &command.arguments {
        out.push_str(&format!(
            "  --{} (required: {})\n",
            arg.name,
            if arg.required { "yes" } else { "no" }
        ));
    }
    out.pop();
    out
}

/// The commands of the prompts of every connected server whose scope
/// covers `cwd` (user servers, and workspace servers of a root holding
/// `cwd`), named so that none takes a name in `builtins` or another's.
pub fn commands(builtins: &[&str], servers: &[McpServerInfo], cwd: &str) -> Vec<PromptCommand> {
    let listed: Vec<PromptCommand> = servers
        .iter()
        .filter(|s| s.status == "connected" && in_scope(&s.scope, cwd))
        .flat_map(|s| {
            s.prompts.iter().map(|p| PromptCommand {
                name: p.name.split_whitespace().collect::<Vec<_>>().join("-"),
                server: s.name.clone(),
                prompt: p.name.clone(),
                description: p
                    .description
                    .clone()
                    .unwrap_or_else(|| format!("Invoke prompt {}", p.name)),
                arguments: p.arguments.iter().map(|a| argument(a)).collect(),
            })
        })
        .collect();
    let mut claims: HashMap<&str, usize> = HashMap::new();
    for c in &listed {
        *claims.entry(c.name.as_str()).or_default() += 1;
    }
    let clashing: Vec<bool> = listed
        .iter()
        .map(|c| builtins.contains(&c.name.as_str()) || claims[c.name.as_str()] > 1)
        .collect();
    let mut taken: Vec<String> = builtins.iter().map(|b| (*b).to_owned()).collect();
    let mut named = Vec::with_capacity(listed.len());
    // Prompts that keep their name claim it first, so a renamed one can
    // never land on it.
    for (c, clash) in listed.iter().zip(&clashing) {
        if !clash {
            taken.push(c.name.clone());
        }
    }
    for (mut c, clash) in listed.into_iter().zip(clashing) {
        if clash {
            let base = format!("{}.{}", c.server, c.name);
            let mut name = base.clone();
            let mut suffix = 1;
            while taken.contains(&name) {
                name = format!("{base}{suffix}");
                suffix += 1;
            }
            taken.push(name.clone());
            c.name = name;
        }
        named.push(c);
    }
    named
}

fn in_scope(scope: &str, cwd: &str) -> bool {
    // A workspace's own server, or an extension's instance for it.
    let own = scope
        .strip_prefix("workspace:")
        .or_else(|| scope.strip_prefix("extensions:"));
    match own {
        Some(root) => std::path::Path::new(cwd).starts_with(root),
        None => true,
    }
}

/// `mcp.list` marks required arguments with a trailing `*`.
fn argument(listed: &str) -> PromptArg {
    match listed.strip_suffix('*') {
        Some(name) => PromptArg {
            name: name.to_owned(),
            required: true,
        },
        None => PromptArg {
            name: listed.to_owned(),
            required: false,
        },
    }
}

/// `/name rest`: the command's name and what follows it; `None` when the
/// line is not a slash command.
pub fn split(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim_start().strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (name, args) = rest.split_at(end);
    (!name.is_empty()).then_some((name, args.trim()))
}

static NAMED: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"--([^=]+)=(?:"((?:\\.|[^"\\])*)"|([^ ]+))"#).ok());
static POSITIONAL: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"(?:"((?:\\.|[^"\\])*)"|([^ ]+))"#).ok());
static ESCAPE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"\\(.)").ok());

fn unescape(s: &str) -> String {
    match ESCAPE.as_ref() {
        Some(escape) => escape.replace_all(s, "$1").into_owned(),
        None => s.to_owned(),
    }
}

/// The prompt's arguments from what was typed after its name, as 0.61
/// parses them: `--name=value` (or `--name="quoted \" value"`) sets an
/// argument the prompt has (others are dropped); the rest of the words
/// (quoted ones kept whole) fill the required arguments still unset, in
/// order, and when only one is unset all the words together are its
/// value. A required argument left without a value is an error naming
/// it. Stricter than 0.61: an empty value for the one unset argument is
/// missing too (0.61 sends "").
pub fn parse_args(
    input: &str,
    arguments: &[PromptArg],
) -> Result<BTreeMap<String, String>, String> {
    let (Some(named_re), Some(positional_re)) = (NAMED.as_ref(), POSITIONAL.as_ref()) else {
        return Err("the argument parser could not be built".to_owned());
    };
    let mut named: HashMap<String, String> = HashMap::new();
    let mut rest = String::new();
    let mut last = 0;
    for m in named_re.captures_iter(input) {
        let Some(whole) = m.get(0) else { continue };
        let value = m.get(2).or(m.get(3)).map(|v| v.as_str()).unwrap_or("");
        named.insert(m[1].to_owned(), unescape(value));
        rest.push_str(&input[last..whole.start()]);
        last = whole.end();
    }
    rest.push_str(&input[last..]);
    let positional: Vec<String> = positional_re
        .captures_iter(rest.trim())
        .map(|m| unescape(m.get(1).or(m.get(2)).map(|v| v.as_str()).unwrap_or("")))
        .collect();

    let mut values = BTreeMap::new();
    for arg in arguments {
        if let Some(value) = named.get(&arg.name).filter(|v| !v.is_empty()) {
            values.insert(arg.name.clone(), value.clone());
        }
    }
    let unfilled: Vec<&PromptArg> = arguments
        .iter()
        .filter(|a| a.required && !values.contains_key(&a.name))
        .collect();
    let mut missing = Vec::new();
    if let [only] = unfilled.as_slice() {
        let joined = positional.join(" ");
        if joined.is_empty() {
            missing.push(only.name.as_str());
        } else {
            values.insert(only.name.clone(), joined);
        }
    } else {
        for (i, arg) in unfilled.iter().enumerate() {
            match positional.get(i) {
                Some(value) => {
                    values.insert(arg.name.clone(), value.clone());
                }
                None => missing.push(arg.name.as_str()),
            }
        }
    }
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(|n| format!("--{n}")).collect();
        return Err(format!(
            "Missing required argument(s): {}",
            names.join(", ")
        ));
    }
    Ok(values)
}

/// The text a prompt's answer submits as the user's turn: the text of its
/// messages (and of embedded text resources), in order, a blank line
/// between. Content a turn of text cannot carry (images, audio, links) is
/// refused, naming the prompt, rather than dropped.
pub fn turn_text(got: &McpPromptResult) -> Result<String, String> {
    let mut texts = Vec::new();
    for message in &got.messages {
        let content = &message["content"];
        let text = match content["type"].as_str() {
            Some("text") => content["text"].as_str(),
            Some("resource") => content["resource"]["text"].as_str(),
            _ => None,
        };
        match text {
            Some(text) => texts.push(text.to_owned()),
            None => {
                let kind = content["type"].as_str().unwrap_or("unknown");
                return Err(format!(
                    "prompt {} answered with {kind} content, which a slash command cannot submit (use `gemctl mcp prompt {} {}`)",
                    got.name, got.server, got.name
                ));
            }
        }
    }
    if texts.is_empty() {
        return Err(format!("prompt {} answered with no messages", got.name));
    }
    Ok(texts.join("\n\n"))
}

/// The prompt commands the daemon offers now for a session in `cwd`.
pub async fn load(
    client: &Client,
    builtins: &[&str],
    cwd: &str,
) -> Result<Vec<PromptCommand>, jsonrpsee::core::ClientError> {
    let list = client.list_mcp().await?;
    Ok(commands(builtins, &list.servers, cwd))
}

/// What running a prompt command gives: the text to submit, or a message
/// saying why not (bad arguments, the server's error).
pub async fn expand(
    client: &Client,
    command: &PromptCommand,
    input: &str,
) -> Result<Result<String, String>, jsonrpsee::core::ClientError> {
    let arguments = match parse_args(input, &command.arguments) {
        Ok(arguments) => arguments,
        Err(message) => return Ok(Err(message)),
    };
    let got = client
        .mcp_prompt(
            command.server.clone(),
            command.prompt.clone(),
            Some(arguments),
            None,
            None,
        )
        .await;
    match got {
        Ok(got) => Ok(turn_text(&got)),
        Err(jsonrpsee::core::ClientError::Call(e)) => Ok(Err(e.message().to_owned())),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use geminid_protocol::mcp::McpPromptInfo;
    use serde_json::Value;

    fn text_message(text: &str) -> Value {
        serde_json::json!({"role": "user", "content": {"type": "text", "text": text}})
    }

    fn server(name: &str, scope: &str, prompts: &[(&str, &[&str])]) -> McpServerInfo {
        McpServerInfo {
            name: name.into(),
            status: "connected".into(),
            transport: "stdio".into(),
            scope: scope.into(),
            trusted: false,
            message: None,
            tools: vec![],
            prompts: prompts
                .iter()
                .map(|(p, args)| McpPromptInfo {
                    name: (*p).into(),
                    description: None,
                    arguments: args.iter().map(|a| (*a).into()).collect(),
                })
                .collect(),
            pid: None,
        }
    }

    fn names(commands: &[PromptCommand]) -> Vec<(&str, &str, &str)> {
        commands
            .iter()
            .map(|c| (c.name.as_str(), c.server.as_str(), c.prompt.as_str()))
            .collect()
    }

    #[test]
    fn names_follow_the_reference() {
        let servers = [
            server(
                "a",
                "user",
                &[("review code", &[]), ("help", &[]), ("shared", &[])],
            ),
            server("b", "user", &[("shared", &[]), ("own", &[])]),
            server("w", "workspace:/ws", &[("ws-only", &[])]),
            server("x", "workspace:/elsewhere", &[("hidden", &[])]),
            server("e", "extensions:/ws", &[("ext-own", &[])]),
            server("f", "extensions:/elsewhere", &[("ext-hidden", &[])]),
        ];
        let got = commands(&["help", "mode"], &servers, "/ws/sub");
        assert_eq!(
            names(&got),
            [
                ("review-code", "a", "review code"),
                ("a.help", "a", "help"),
                ("a.shared", "a", "shared"),
                ("b.shared", "b", "shared"),
                ("own", "b", "own"),
                ("ws-only", "w", "ws-only"),
                ("ext-own", "e", "ext-own"),
            ]
        );
    }

    #[test]
    fn a_renamed_prompt_never_takes_a_name_in_use() {
        // Server `a` offers both `help` and `a.help`: the renamed one
        // gets a suffix, as 0.61's resolver does.
        let servers = [server("a", "user", &[("help", &[]), ("a.help", &[])])];
        let got = commands(&["help"], &servers, "/");
        assert_eq!(
            names(&got),
            [("a.help1", "a", "help"), ("a.help", "a", "a.help")]
        );
    }

    #[test]
    fn servers_not_connected_offer_nothing() {
        let mut s = server("a", "user", &[("p", &[])]);
        s.status = "needs_auth".into();
        assert!(commands(&[], &[s], "/").is_empty());
    }

    fn args(spec: &[&str]) -> Vec<PromptArg> {
        spec.iter().map(|a| argument(a)).collect()
    }

    fn parsed(input: &str, spec: &[&str]) -> Result<Vec<(String, String)>, String> {
        parse_args(input, &args(spec)).map(|m| m.into_iter().collect())
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()
    }

    #[test]
    fn arguments_by_name_and_position() {
        assert_eq!(
            parsed(r#"--city="New York" --state=NY"#, &["city*", "state"]),
            Ok(pairs(&[("city", "New York"), ("state", "NY")]))
        );
        // One required argument unset: every word is its value.
        assert_eq!(
            parsed("New York --state=NY", &["city*", "state"]),
            Ok(pairs(&[("city", "New York"), ("state", "NY")]))
        );
        // Several: one word (or quoted string) each, in order.
        assert_eq!(
            parsed(r#""San José" CA"#, &["city*", "state*"]),
            Ok(pairs(&[("city", "San José"), ("state", "CA")]))
        );
        assert_eq!(
            parsed(r#"--a="say \"hi\"" b"#, &["a*", "b*"]),
            Ok(pairs(&[("a", r#"say "hi""#), ("b", "b")]))
        );
        // Optional arguments are only set by name; unknown names are dropped.
        assert_eq!(
            parsed("--zip=1 Oslo", &["city*", "state"]),
            Ok(pairs(&[("city", "Oslo")]))
        );
        assert_eq!(parsed("", &[]), Ok(vec![]));
    }

    #[test]
    fn missing_required_arguments_are_named() {
        assert_eq!(
            parsed("Paris", &["city*", "state*", "zip*"]),
            Err("Missing required argument(s): --state, --zip".into())
        );
        assert_eq!(
            parsed("--state=TX", &["city*", "state"]),
            Err("Missing required argument(s): --city".into())
        );
    }

    #[test]
    fn split_takes_the_name() {
        assert_eq!(split("/p a b"), Some(("p", "a b")));
        assert_eq!(split(" /p"), Some(("p", "")));
        assert_eq!(split("/"), None);
        assert_eq!(split("p"), None);
    }

    #[test]
    fn turn_text_joins_text_and_refuses_images() {
        let got = |messages: Vec<Value>| McpPromptResult {
            server: "s".into(),
            name: "p".into(),
            description: None,
            messages,
        };
        let resource = serde_json::json!({"role": "user", "content": {"type": "resource",
            "resource": {"uri": "x://1", "text": "body"}}});
        assert_eq!(
            turn_text(&got(vec![text_message("one"), resource])),
            Ok("one\n\nbody".into())
        );
        let image = serde_json::json!({"role": "user", "content": {"type": "image", "data": "", "mimeType": "image/png"}});
        assert!(
            turn_text(&got(vec![image]))
                .unwrap_err()
                .contains("image content")
        );
        assert!(turn_text(&got(vec![])).is_err());
    }
}
