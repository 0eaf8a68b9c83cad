//! Safety checks that run after the policy and can only make a decision
//! stricter, never looser. No IO: the driver hands in what a call touches.
//!
//! * **Protected files** ([`protected`]): a change to a file geminid or the
//!   tools it runs take instructions from (policies, every settings layer,
//!   trusted folders, extensions, hooks, `.git`, `.env`, the daemon's data
//!   and socket directories) asks a person in every mode, yolo included,
//!   even when the policy or an "always" answer allows it; a
//!   non-interactive session is refused. A session cannot widen its own
//!   rights.
//! * **Build files** ([`build_files`]): an allowed edit of a build file
//!   (`Cargo.toml`, `package.json`, `Makefile`, ...) asks even in autoEdit
//!   and yolo and is refused when non-interactive, with Gemini CLI 0.61's
//!   message. A deny stays a deny.
//! * **Editor configuration**: in autoEdit, `write_file` and `replace` of
//!   a file under `.vscode` ask (refused non-interactive), as 0.61's
//!   path checker does in that mode.
//!
//! * **Unsandboxed commands**: `run_shell_command` with `"sandbox":
//!   false` (asked after the sandbox refused something) asks in every
//!   mode, yolo included, and is refused when non-interactive.
//!
//! It stands above `tools/` and `policy/` (it names both) and below
//! `session/`, whose driver calls [`Guard::check`].

pub mod build_files;
pub mod protected;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::policy::{ApprovalMode, Decision};
use crate::tools::ToolKind;
pub use protected::{DaemonPaths, ProtectedPaths};

/// The message of a build-file decision, as in the reference.
pub const BUILD_FILE_MESSAGE: &str =
    "Modifying build configuration files requires explicit user confirmation";
/// The message of an editor-configuration decision, as in the reference.
pub const VSCODE_MESSAGE: &str =
    "Modifying .vscode configuration files requires explicit user confirmation";

/// What the checks need to know of one call.
#[derive(Debug, Clone)]
pub struct CallFacts<'a> {
    pub tool_name: &'a str,
    pub tool_kind: ToolKind,
    pub args: &'a Value,
    /// The paths the call touches as the tool resolved them (symlinks
    /// followed), for tools that know (the built-ins).
    pub locations: Vec<PathBuf>,
    /// The session's primary root, for relative path arguments.
    pub root: &'a Path,
    pub mode: ApprovalMode,
    pub interactive: bool,
    /// In plan mode, the session's plans directory: a plan (`.md` file
    /// directly in it) written by `write_file` or `replace` is not a
    /// protected file, though the directory lies in `~/.gemini`.
    pub plans: Option<&'a Path>,
}

/// A stricter decision and why, for `decidedBy` and denial messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SafetyVerdict {
    pub decision: Decision,
    /// Which check decided (`Protected Files`, `Build File Protection`).
    pub source: &'static str,
    pub reason: String,
}

impl SafetyVerdict {
    /// The text clients see as `decidedBy` or as the denial.
    pub fn explain(&self) -> String {
        format!("safety ({}): {}", self.source, self.reason)
    }
}

/// The checks, with the daemon's protected places.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    protected: ProtectedPaths,
}

impl Guard {
    pub fn new(protected: ProtectedPaths) -> Self {
        Guard { protected }
    }

    /// What the checks make of `decision` (the policy's, "always" answers
    /// included) for this call; `None` when they leave it as it is.
    pub fn check(&self, call: &CallFacts<'_>, decision: Decision) -> Option<SafetyVerdict> {
        match decision {
            Decision::Deny => return None,
            Decision::Allow | Decision::AskUser => {}
        }
        let stricter = if call.interactive {
            Decision::AskUser
        } else {
            Decision::Deny
        };
        let nobody = if call.interactive {
            ""
        } else {
            "; this session is non-interactive, so no one can approve it"
        };
        if call.tool_name == "run_shell_command"
            && call.args.get("sandbox") == Some(&Value::Bool(false))
        {
            return Some(SafetyVerdict {
                decision: stricter,
                source: "Unsandboxed Command",
                reason: format!(
                    "this command asks to run outside the sandbox, which needs a person's \
                     approval every time, in every mode{nobody}"
                ),
            });
        }
        let edits = call.tool_kind.is_edit() || build_files::is_edit_tool_name(call.tool_name);
        if !edits {
            return None;
        }
        let targets: Vec<PathBuf> = call
            .locations
            .iter()
            .cloned()
            .chain(argument_paths(call.args, call.root))
            .collect();
        let plan_file = |t: &PathBuf| {
            matches!(call.tool_name, "write_file" | "replace")
                && call.plans.is_some_and(|dir| t.parent() == Some(dir))
                && t.extension().is_some_and(|e| e == "md")
        };
        if let Some((target, why)) = targets
            .iter()
            .filter(|t| !plan_file(t))
            .find_map(|t| self.protected.why(t).map(|why| (t, why)))
        {
            return Some(SafetyVerdict {
                decision: stricter,
                source: "Protected Files",
                reason: format!(
                    "{} is {why}: geminid or the tools it runs take instructions from it, \
                     so every change needs a person's approval, in every mode{nobody}",
                    target.display()
                ),
            });
        }
        let build_target = build_files::target_of(call.args)
            .map(Path::new)
            .into_iter()
            .chain(call.locations.iter().map(PathBuf::as_path))
            .any(build_files::is_build_file);
        if decision == Decision::Allow && build_target {
            return Some(SafetyVerdict {
                decision: stricter,
                source: "Build File Protection",
                reason: format!("{BUILD_FILE_MESSAGE}{nobody}"),
            });
        }
        let editor_config = call.mode == ApprovalMode::AutoEdit
            && matches!(call.tool_name, "write_file" | "replace")
            && targets.iter().any(|t| {
                t.strip_prefix(call.root)
                    .is_ok_and(|rel| rel.iter().any(is_vscode_segment))
            });
        if decision == Decision::Allow && editor_config {
            return Some(SafetyVerdict {
                decision: stricter,
                source: "Editor Configuration",
                reason: format!("{VSCODE_MESSAGE}{nobody}"),
            });
        }
        None
    }
}

/// `.vscode`, as the reference compares it (case, trailing dots and spaces,
/// stream suffixes and 8.3 short names `VSCODE~1`, `VS1A2B~1` included).
fn is_vscode_segment(segment: &std::ffi::OsStr) -> bool {
    let text = segment.to_string_lossy();
    let head = text.split(':').next().unwrap_or_default();
    let clean = head.trim_end_matches([' ', '.']).to_lowercase();
    if clean == ".vscode" {
        return true;
    }
    let Some((stem, number)) = clean.split_once('~') else {
        return false;
    };
    !number.is_empty()
        && number.bytes().all(|b| b.is_ascii_digit())
        && (stem == "vscode"
            || stem.strip_prefix("vs").is_some_and(|hex| {
                hex.len() == 4 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            }))
}

/// The path arguments of a call, as the reference's path checker finds
/// them: every string (or list of strings) under a key that contains
/// `path`, `directory` or `file`, or is `source` or `destination`, at any
/// depth. Relative ones are taken relative to `root`.
pub fn argument_paths(args: &Value, root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    collect(args, root, false, &mut out);
    out
}

fn collect(value: &Value, root: &Path, named: bool, out: &mut Vec<PathBuf>) {
    match value {
        Value::String(s) if named && !s.trim().is_empty() => {
            let p = Path::new(s.trim());
            out.push(if p.is_absolute() {
                p.to_path_buf()
            } else {
                root.join(p)
            });
        }
        Value::Array(items) => {
            for item in items {
                collect(item, root, named, out);
            }
        }
        Value::Object(map) => {
            for (key, v) in map {
                let k = key.to_lowercase();
                let is_path_key = k.contains("path")
                    || k.contains("directory")
                    || k.contains("file")
                    || k == "source"
                    || k == "destination";
                collect(v, root, is_path_key, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
