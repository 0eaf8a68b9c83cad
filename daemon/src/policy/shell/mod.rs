//! Splitting a shell command line into the parts bash would evaluate, with
//! tree-sitter-bash.
//!
//! The rule the engine applies to the result: a command line is allowed
//! only when every part is either provably inert or itself allowed. Parts
//! ([`PartKind`]):
//! * commands, anywhere: parts of `&&`, `||`, `;`, `|`, newlines, `$(...)`,
//!   backticks (also inside double quotes, `${...}` operands and
//!   here-document bodies), `<(...)`, `>(...)`, subshells, groups, loops,
//!   function bodies; the commands wrapped by `env`, `sudo`, `xargs`,
//!   `find -exec`, ...; the payloads of `bash -c`, `eval` and `trap` when
//!   they are static (`wrappers.rs`);
//! * evaluated text that is not a command ([`Hazard`]): assignments of every
//!   form, arithmetic on anything but literal numbers (`$((x))`, `((x))`,
//!   `let`, `[[ x -eq y ]]`, subscripts, substring offsets), indirection
//!   (`${!x}`), prompt expansion (`${x@P}`), function definitions, names or
//!   payloads only known at run time, input from unknown files or sockets;
//! * bare output redirections (`> file` without a command).
//!
//! Inert, and so not reported: words and quoted strings, globs, brace and
//! tilde expansion, `$'...'`, plain parameter expansions used as arguments
//! (`$x`, `"${x:-default}"`, `${#x}`, `${x%.txt}`; bash only splits and
//! globs their value, it never evaluates it), literal arithmetic, quoted
//! here-documents, descriptor duplication (`2>&1`) and output to
//! `/dev/null`. Output redirection to a file is a property of the command
//! it belongs to (`ShellPart::output_redirect`); bash attaches a
//! redirection written after a pipeline or list to its last command.

mod builtins;
mod command;
mod conditions;
mod expansion;
mod payloads;
mod redirects;
mod scan;
mod types;
mod unquote;
mod walk;
mod words;
mod wrapper_names;
mod wrappers;

pub use types::{Hazard, PartKind, ShellPart, ShellSplit};
pub use walk::MAX_COMMAND_BYTES;

/// Splits `source` into the parts bash would evaluate.
pub fn split_command(source: &str) -> ShellSplit {
    let mut out = ShellSplit::default();
    let deadline = std::time::Instant::now() + walk::PARSE_BUDGET;
    walk::split_into(source, 0, deadline, types::Inherit::default(), &mut out);
    out
}
