//! The policy engine: rules, loading, evaluation and shell command
//! splitting (seed 001, "Policy engine").
//!
//! Code map:
//! * `rule` — [`PolicyRule`], [`Decision`], [`ApprovalMode`], [`Tier`],
//!   [`ToolKind`], [`RuleSource`], [`MatchedRule`].
//! * `load` — TOML text to rules ([`parse_policy`]); `error` — [`PolicyLoadError`].
//! * `dir` — `*.toml` files of a directory, admin directory check (IO).
//! * `defaults` — built-in rules (`defaults.toml`, embedded).
//! * `settings` — rules from `tools.core` / `tools.exclude` / `tools.allowed`.
//! * `engine` — [`PolicyEngine::check`]; `index` and `matcher` — which rules
//!   can match and whether one does.
//! * `shell/` — tree-sitter-bash splitting into the parts bash evaluates
//!   ([`split_command`]); `shell_verdict` — deciding each part and
//!   combining them.
//! * `session` — [`SessionAllowlist`]; `save` — atomic append of an
//!   "always allow" rule to a policy file (IO).
//!
//! Invariants: the evaluator (`engine`, `matcher`, `shell/`,
//! `shell_verdict`) does no IO; only `dir` and `save` touch the file
//! system. A shell command line is allowed only when every part bash would
//! evaluate is provably inert or itself allowed: commands by the rules that
//! match them, everything else bash evaluates (assignments, arithmetic on
//! values, indirection, dynamic names and payloads, function definitions)
//! only by a rule for every shell command (yolo's); bare output
//! redirections and unparsable text by no rule at all (ask_user, deny in
//! yolo).
//!
//! Decisions taken where the spec is silent:
//! * Equal final priority: deny before ask_user before allow, then load order.
//! * `commandRegex` is tested against the command text (the whole line, and
//!   each sub-command's unquoted words joined by spaces), not against JSON.
//! * `commandPrefix` matches whole words of a sub-command; a prefix ending in
//!   a space needs at least one more word.
//! * Outside yolo, an allow becomes ask_user when a command redirects
//!   output to a file (not `/dev/null`, `/dev/stdout`, `/dev/stderr`, not
//!   `2>&1`-style duplication) unless the rule sets `allowRedirection`.
//! * A plain parameter expansion used as an argument (`$x`, `"${x:-d}"`,
//!   `${#x}`, `${x%.rs}`) is inert: bash splits and globs its value but
//!   never evaluates it, and the command the rule allowed receives it (a
//!   rule allowing `find` allows any arguments). Where the splitter looks
//!   inside arguments for code (wrappers, `find -exec`, `xargs`, `bash -c`,
//!   `eval`, `trap`, `test -v`, `printf -v`), an argument only known at run
//!   time makes that command dynamic.
//! * Absolute or relative paths also match by basename; a basename match may
//!   only *allow* for binaries in `/bin`, `/usr/bin`, `/usr/local/bin`,
//!   `/sbin`, `/usr/sbin`, `/opt/homebrew/bin` (`./git status` is not
//!   allowed by a `git status` rule, `./rm` is denied by an `rm` rule).
//! * Wrappers (`command`, `exec`, `env`, `nohup`, `time`, `nice`, `timeout`,
//!   `xargs`, `stdbuf`, `builtin`, `busybox`), `bash -c` / `eval` with a
//!   static payload and shells reading a static here-document count only
//!   through what they run unless a rule names the wrapper itself or an
//!   option is not recognised; `sudo` / `doas` always count themselves;
//!   `env -C dir` counts itself (it moves the command like `cd`).
//! * Session "always allow" answers only turn ask_user into allow; they never
//!   lift a deny or an Admin-tier ask_user.

mod dangerous;
pub mod defaults;
pub mod dir;
pub mod engine;
pub mod error;
mod index;
pub mod live;
pub mod load;
mod matcher;
mod mode;
pub mod names;
pub mod rule;
pub mod save;
pub mod session;
pub mod settings;
pub mod shell;
mod shell_verdict;
pub mod workspace_settings;

pub use defaults::default_rules;
pub use dir::{DirMeta, admin_dir_problem, admin_dir_refusal, load_admin_dir, load_dir};
pub use engine::{PolicyEngine, PolicyInput, PolicyVerdict, SubcommandVerdict};
pub use error::{PolicyLoadError, PolicySaveError};
pub use live::{LivePolicy, PolicySources};
pub use load::parse_policy;
pub use matcher::stable_json;
pub use rule::{
    ApprovalMode, Decision, MatchedRule, PolicyRule, RuleSource, SHELL_TOOL_NAME, Tier, ToolKind,
};
pub use save::{SavedRule, save_always_allow};
pub use session::SessionAllowlist;
pub use settings::settings_rules;
pub use shell::{Hazard, PartKind, ShellPart, ShellSplit, split_command};

/// Checks a call of `tool_name` as the scheduler would: the tool's kind and
/// MCP server come from the registry, as a session rooted at `root` sees
/// it (`None`: the shared view; an unknown tool counts as `other`).
#[allow(clippy::too_many_arguments)]
pub fn check_tool(
    engine: &PolicyEngine,
    registry: &crate::tools::ToolRegistry,
    root: Option<&std::path::Path>,
    tool_name: &str,
    args: &serde_json::Value,
    mode: ApprovalMode,
    interactive: bool,
    allowlist: &SessionAllowlist,
) -> PolicyVerdict {
    let tool = match root {
        Some(root) => registry.get_in(tool_name, root),
        None => registry.get(tool_name),
    };
    let source = tool.as_ref().map(|t| t.tool.source());
    let kind = tool
        .as_ref()
        .map(|t| t.tool.kind())
        .unwrap_or(ToolKind::Other);
    engine.check_with_session(
        &PolicyInput {
            tool_name,
            args,
            server_name: source.as_ref().and_then(|s| s.server()),
            remote_name: tool.as_ref().and_then(|t| t.tool.remote_name()),
            annotations: tool.as_ref().and_then(|t| t.tool.annotations()),
            tool_kind: kind,
            mode,
            interactive,
        },
        allowlist,
    )
}

/// Whether a session in `mode` is shown `tool` at all (declarations sent
/// to the model, `tool.list` for the session): tools a rule denies
/// outright (`tools.core`, `tools.exclude`, a deny policy) are not, as in
/// 0.61, which does not register them.
pub fn shows_tool(
    engine: &PolicyEngine,
    tool: &dyn crate::tools::Tool,
    mode: ApprovalMode,
    interactive: bool,
) -> bool {
    let source = tool.source();
    let args = serde_json::Value::Object(Default::default());
    !engine.excludes(&PolicyInput {
        tool_name: tool.name(),
        args: &args,
        server_name: source.server(),
        remote_name: tool.remote_name(),
        annotations: tool.annotations(),
        tool_kind: tool.kind(),
        mode,
        interactive,
    })
}

#[cfg(test)]
mod tests;
