//! MCP prompts as ACP slash commands: the `available_commands_update`
//! that offers them to the editor, and a prompt whose first text block is
//! `/<name> args` turned into the prompt's text (the rest of the blocks
//! kept) before it goes to the daemon.

use serde_json::{Value, json};

use crate::Client;
use crate::prompt_commands::{self, PromptCommand};

/// ACP has no built-in slash commands of ours: only a clash between two
/// servers qualifies a name.
const BUILTINS: &[&str] = &[];

/// The `session/update` payload listing `commands`.
pub fn update(commands: &[PromptCommand]) -> Value {
    let available: Vec<Value> = commands
        .iter()
        .map(|c| {
            let mut command = json!({"name": c.name, "description": c.description});
            if !c.arguments.is_empty() {
                command["input"] = json!({"hint": c.hint()});
            }
            command
        })
        .collect();
    json!({"sessionUpdate": "available_commands_update", "availableCommands": available})
}

/// The commands offered now to a session in `cwd` (none when the daemon
/// cannot say).
pub async fn offered(client: &Client, cwd: &str) -> Vec<PromptCommand> {
    match prompt_commands::load(client, BUILTINS, cwd).await {
        Ok(commands) => commands,
        Err(e) => {
            eprintln!("gemctl acp: cannot list MCP prompts: {e}");
            Vec::new()
        }
    }
}

/// `blocks` with a leading `/<prompt> args` replaced by the prompt's text.
/// Blocks that do not start with the name of an offered prompt are left
/// as they are (the model reads them); a prompt that cannot be got is an
/// error saying why.
pub async fn expand(client: &Client, cwd: &str, blocks: &[Value]) -> Result<Vec<Value>, String> {
    let Some(first) = blocks.first() else {
        return Ok(Vec::new());
    };
    let Some((name, rest)) = (first["type"] == "text")
        .then(|| first["text"].as_str())
        .flatten()
        .and_then(prompt_commands::split)
    else {
        return Ok(blocks.to_vec());
    };
    let commands = offered(client, cwd).await;
    let Some(command) = commands.iter().find(|c| c.name == name) else {
        return Ok(blocks.to_vec());
    };
    let text = match prompt_commands::expand(client, command, rest).await {
        Ok(Ok(text)) => text,
        Ok(Err(message)) => return Err(format!("/{name}: {message}")),
        Err(e) => return Err(format!("/{name}: {e}")),
    };
    let mut expanded = blocks.to_vec();
    expanded[0] = json!({"type": "text", "text": text});
    Ok(expanded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt_commands::PromptArg;

    #[test]
    fn the_update_gives_names_descriptions_and_hints() {
        let commands = [
            PromptCommand {
                name: "args-prompt".into(),
                server: "s".into(),
                prompt: "args-prompt".into(),
                description: "weather".into(),
                arguments: vec![
                    PromptArg {
                        name: "city".into(),
                        required: true,
                    },
                    PromptArg {
                        name: "state".into(),
                        required: false,
                    },
                ],
            },
            PromptCommand {
                name: "simple".into(),
                server: "s".into(),
                prompt: "simple".into(),
                description: "plain".into(),
                arguments: vec![],
            },
        ];
        assert_eq!(
            update(&commands),
            json!({"sessionUpdate": "available_commands_update", "availableCommands": [
                {"name": "args-prompt", "description": "weather", "input": {"hint": "--city [--state]"}},
                {"name": "simple", "description": "plain"},
            ]})
        );
    }
}
