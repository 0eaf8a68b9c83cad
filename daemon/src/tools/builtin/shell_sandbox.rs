//! The sandbox around one `run_shell_command` call: what the session's
//! sandbox decides for it, and the lines its result gets (the sandbox in
//! force, why it is not, what it refused, instruction files the command
//! created where none could be held read-only).

use std::path::{Path, PathBuf};

use crate::sandbox::{Decision, Prepared, SessionSandbox, explain_refusal};

use super::contract::{ToolError, ToolErrorKind};

/// One call's sandbox.
pub struct Jail {
    pub prepared: Option<Prepared>,
    pub report: JailReport,
}

/// What the call's result says about the sandbox.
pub struct JailReport {
    /// `Sandbox: ...`; empty when no sandbox was meant.
    line: String,
    /// Set when refusals are worth explaining: the network state and the
    /// writable places.
    explain: Option<(bool, Vec<String>, Vec<String>)>,
    /// Instruction files that did not exist, so could not be held.
    unheld: Vec<PathBuf>,
}

impl Jail {
    /// `unsandboxed`: the call asked (and was approved) to run outside.
    pub fn decide(
        sandbox: &SessionSandbox,
        pinned: &[crate::tools::PinnedRoot],
        cwd: &Path,
        cwd_identity: (u64, u64),
        unsandboxed: bool,
    ) -> Result<Jail, ToolError> {
        let none = |line: String| Jail {
            prepared: None,
            report: JailReport {
                line,
                explain: None,
                unheld: Vec::new(),
            },
        };
        if unsandboxed {
            return Ok(none(
                "\nSandbox: off for this call (approved to run outside the sandbox)".to_owned(),
            ));
        }
        let roots: Vec<PathBuf> = pinned.iter().map(|r| r.path().to_path_buf()).collect();
        match sandbox.decide(&roots) {
            Decision::Unsandboxed(None) => Ok(none(String::new())),
            Decision::Unsandboxed(Some(note)) => Ok(none(format!("\nSandbox: {note}"))),
            Decision::Refuse(why) => Err(ToolError::new(
                ToolErrorKind::Unavailable,
                format!("The command was not run: {why}"),
            )),
            Decision::Sandboxed(confined) => {
                let ready = confined
                    .prepare(Some(crate::sandbox::WorkDir {
                        path: cwd,
                        identity: Some(cwd_identity),
                        pinned,
                    }))
                    .map_err(|e| {
                        ToolError::execution(format!(
                            "The command was not run: the sandbox could not be prepared: {e}"
                        ))
                    })?;
                let mut line = format!("\nSandbox: {}", confined.describe());
                for note in &confined.plan.notes {
                    line.push_str(&format!("; {note}"));
                }
                let writable = confined
                    .plan
                    .writable
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect();
                let locked = ready
                    .locked
                    .iter()
                    .map(|l| {
                        format!(
                            "nothing may be created, renamed or removed directly in {} (it has no {} and none may be made there: geminid or git take instructions from it)",
                            l.dir.display(),
                            l.keeps.file_name().map_or_else(
                                || l.keeps.display().to_string(),
                                |n| n.to_string_lossy().into_owned()
                            )
                        )
                    })
                    .collect();
                Ok(Jail {
                    prepared: Some(ready.prepared),
                    report: JailReport {
                        line,
                        explain: Some((confined.plan.network, writable, locked)),
                        unheld: ready.missing,
                    },
                })
            }
        }
    }
}

impl JailReport {
    /// The lines for the result, given the command's output.
    pub fn finish(self, output: &str) -> String {
        let mut out = self.line;
        if let Some((network, writable, locked)) = &self.explain
            && let Some(note) = explain_refusal(output, *network, writable, locked)
        {
            out.push('\n');
            out.push_str(&note);
        }
        let created: Vec<String> = self
            .unheld
            .iter()
            .filter(|p| std::fs::symlink_metadata(p).is_ok())
            .map(|p| p.display().to_string())
            .collect();
        if !created.is_empty() {
            out.push_str(&format!(
                "\nWarning: the command created {}, which geminid or git take instructions from; \
                 they did not exist, so the sandbox could not hold them read-only. Review them before trusting this workspace.",
                created.join(", ")
            ));
        }
        out
    }
}
