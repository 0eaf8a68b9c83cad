//! The Examples sections of `--help` (clap's `after_help`), one per
//! command and subcommand; a test checks none is missing.

pub const DAEMON: &str = "\
Examples:
  gemctl daemon start        # idempotent: says so when one already runs
  gemctl daemon status
  gemctl daemon stop";

pub const DAEMON_START: &str = "\
Examples:
  gemctl daemon start
  gemctl daemon start --data-dir ~/.local/share/geminid-test --socket /tmp/g.sock";

pub const DAEMON_STOP: &str = "\
Examples:
  gemctl daemon stop         # running calls are cancelled and recorded first";

pub const DAEMON_STATUS: &str = "\
Examples:
  gemctl daemon status       # version, uptime, sessions, the model and its key
  gemctl --json daemon status";

pub const SESSION: &str = "\
Examples:
  S=$(gemctl session new --cwd ~/project)
  gemctl session list
  gemctl session show $S
  gemctl session rm $S
  gemctl session prune --older-than 30d";

pub const SESSION_NEW: &str = "\
Examples:
  S=$(gemctl session new --cwd ~/project --mode autoEdit --title refactor)
  gemctl session new --non-interactive     # what would ask is denied";

pub const SESSION_LIST: &str = "\
Examples:
  gemctl session list
  gemctl --json session list";

pub const SESSION_SHOW: &str = "\
Examples:
  gemctl session show $S";

pub const SESSION_RM: &str = "\
Examples:
  gemctl session rm $S       # its subscribers get session.closed
  gemctl session rm 3f2a 9c1  # several, by unique prefixes";

pub const SESSION_PRUNE: &str = "\
Examples:
  gemctl session prune --older-than 30d
  gemctl session prune --older-than 12h --dry-run";

pub const POLICY: &str = "\
Examples:
  gemctl policy check run_shell_command '{\"command\": \"git status && rm -rf ~\"}'
  gemctl policy list";

pub const POLICY_LIST: &str = "\
Examples:
  gemctl policy list
  gemctl --json policy list";

pub const MCP: &str = "\
Examples:
  gemctl mcp list
  gemctl mcp restart everything
  gemctl mcp probe http://127.0.0.1:3001/mcp";

pub const MCP_LIST: &str = "\
Examples:
  gemctl mcp list            # servers, status, tools, prompts
  gemctl --json mcp list";

pub const MCP_RESTART: &str = "\
Examples:
  gemctl mcp restart everything
  gemctl mcp restart db --scope workspace:/home/me/project   # a name two scopes have";

pub const MCP_REDISCOVER: &str = "\
Examples:
  gemctl mcp rediscover                  # rerun tools.discoveryCommand
  gemctl mcp rediscover --session $S     # in that session's workspace";

pub const SANDBOX: &str = "\
Examples:
  gemctl sandbox check                   # for the current directory
  gemctl sandbox check --cwd ~/project --json";

pub const MEMORY: &str = "\
Examples:
  gemctl memory show
  gemctl memory reload --cwd ~/project";

pub const EXTENSIONS: &str = "\
Examples:
  gemctl extensions list
  gemctl extensions list --cwd ~/project --json";

pub const EXTENSIONS_LIST: &str = "\
Examples:
  gemctl extensions list                 # enabled for the current directory?
  gemctl extensions list --json";

pub const MEMORY_SHOW: &str = "\
Examples:
  gemctl memory show                     # for the current directory
  gemctl memory show --session $S";

pub const MEMORY_RELOAD: &str = "\
Examples:
  gemctl memory reload                   # also finds new GEMINI.md files";

pub const TOOLS: &str = "\
Examples:
  gemctl tools
  gemctl --json tools | jq '.[].name'";

pub const ATTACH: &str = "\
Examples:
  gemctl attach $S                       # replay, follow, answer questions
  gemctl attach $S --since 120 --no-confirm";

pub const COMPLETIONS: &str = "\
Examples:
  gemctl completions bash > ~/.local/share/bash-completion/completions/gemctl
  gemctl completions zsh > ~/.zfunc/_gemctl     # with fpath+=(~/.zfunc) before compinit
  gemctl completions fish > ~/.config/fish/completions/gemctl.fish";

pub const ACP: &str = "\
Examples:
  gemctl acp                # run by the editor, speaking ACP on stdin/stdout
  Zed settings.json: \"agent_servers\": {\"geminid\": {\"command\": \"gemctl\", \"args\": [\"acp\"]}}";

pub const CHECKPOINTS: &str = "\
Examples:
  gemctl checkpoints                   # the most recently active session here
  gemctl checkpoints --session $S";

pub const RESTORE: &str = "\
Examples:
  gemctl restore turn-3 --session $S   # turn 3's edits and every later one taken back
  gemctl restore call-2 --force        # overwrite files changed on disk since";

pub const FORK: &str = "\
Examples:
  F=$(gemctl fork --session $S)        # a new session with the whole conversation
  gemctl fork --session $S --at-turn turn-2";

pub const HOOKS: &str = "\
Examples:
  gemctl hooks list
  gemctl hooks list --session 3f2a";

pub const HOOKS_LIST: &str = "\
Examples:
  gemctl hooks list                 # the current directory's workspace
  gemctl hooks list --cwd ~/src/app
  gemctl --json hooks list --session 3f2a";

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    fn check(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
        let path = format!("{path} {}", command.get_name());
        let examples = command
            .get_after_help()
            .is_some_and(|h| h.to_string().contains("Example"));
        if !examples {
            missing.push(path.clone());
        }
        for sub in command.get_subcommands() {
            check(sub, &path, missing);
        }
    }

    #[test]
    fn every_command_has_examples() {
        let mut missing = Vec::new();
        check(&super::super::Args::command(), "", &mut missing);
        assert!(missing.is_empty(), "no Examples in --help of: {missing:?}");
    }

    #[test]
    fn version_and_completions_exist() {
        let command = super::super::Args::command();
        assert_eq!(command.get_version(), Some(env!("CARGO_PKG_VERSION")));
        let mut out = Vec::new();
        clap_complete::generate(
            clap_complete::Shell::Bash,
            &mut super::super::Args::command(),
            "gemctl",
            &mut out,
        );
        let script = String::from_utf8(out).unwrap();
        assert!(script.contains("chat") && script.contains("--thoughts"));
    }
}
