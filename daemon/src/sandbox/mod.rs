//! The sandbox for what the model runs: shell commands (and discovered
//! tools) that cannot write outside the workspace, read the user's
//! secrets, change the files the daemon takes instructions from, or reach
//! the network unless allowed.
//!
//! Pure: `settings.rs` (the `sandbox` settings and 0.61's `tools.sandbox`),
//! `plan.rs` (what one command may do), `refusal.rs` (what a refused
//! command's output means). IO edge: `child.rs` (applied in the child
//! before exec), `instructions.rs` (a root's instruction places that do
//! not exist yet), `support.rs` (what the kernel allows, a self-test).

mod check;
mod child;
mod instructions;
mod plan;
mod refusal;
mod settings;
mod support;

use std::path::PathBuf;
use std::sync::Arc;

pub use check::{SandboxCheck, SandboxProbe, check};
pub use child::{Preparation, Prepared, WorkDir, install};
pub use instructions::Locked;
pub use plan::{DEFAULT_DENY_READ, DaemonPlaces, Plan, expand};
pub use refusal::explain_refusal;
pub use settings::{Limits, Mode, SandboxSettings};
pub use support::{Support, self_test, support};

/// A session's sandbox: the user's settings, the session's override and
/// whether it is a yolo session.
#[derive(Debug, Clone, Default)]
pub struct SessionSandbox {
    pub settings: SandboxSettings,
    /// `sandbox` of `session.create`.
    pub override_mode: Option<Mode>,
    pub yolo: bool,
    pub places: Arc<DaemonPlaces>,
}

impl PartialEq for SessionSandbox {
    fn eq(&self, other: &Self) -> bool {
        self.settings == other.settings
            && self.override_mode == other.override_mode
            && self.yolo == other.yolo
    }
}
impl Eq for SessionSandbox {}

impl SessionSandbox {
    /// The mode in force: the session's override, else the settings, else
    /// on for yolo sessions and off for the others.
    pub fn mode(&self) -> Mode {
        self.override_mode
            .or(self.settings.mode)
            .unwrap_or(if self.yolo {
                Mode::WorkspaceWrite
            } else {
                Mode::Off
            })
    }

    /// What to do with one command run with `roots`.
    pub fn decide(&self, roots: &[PathBuf]) -> Decision {
        if let Some(why) = &self.settings.broken {
            return Decision::Refuse(format!("the sandbox settings are broken: {why}"));
        }
        let mode = self.mode();
        if mode == Mode::Off {
            return Decision::Unsandboxed(None);
        }
        let support = support();
        if let Some(missing) = &support.missing {
            return if mode == Mode::Required {
                Decision::Refuse(format!(
                    "sandbox.mode is \"required\" and this machine cannot sandbox commands: {missing}"
                ))
            } else {
                Decision::Unsandboxed(Some(format!(
                    "the sandbox is unavailable here ({missing}); this command ran unsandboxed"
                )))
            };
        }
        let plan = Plan::new(
            mode,
            &self.settings,
            self.settings.network,
            roots,
            &self.places,
        );
        Decision::Sandboxed(Box::new(Confined {
            mode,
            plan,
            abi: support.landlock_abi,
        }))
    }
}

/// What happens to one command.
#[derive(Debug)]
pub enum Decision {
    /// Runs as it is; the note says why when a sandbox was wanted.
    Unsandboxed(Option<String>),
    Sandboxed(Box<Confined>),
    /// Not run, for this reason.
    Refuse(String),
}

/// A command's sandbox, decided.
#[derive(Debug)]
pub struct Confined {
    pub mode: Mode,
    pub plan: Plan,
    abi: i32,
}

impl Confined {
    /// Prepares the child's side for a command working in `cwd`, with the
    /// instruction places that could not be held or guarded (they do not
    /// exist yet) and the directories locked instead.
    pub fn prepare(&self, cwd: Option<child::WorkDir<'_>>) -> std::io::Result<Preparation> {
        child::prepare(&self.plan, self.abi, cwd)
    }

    /// One line for the call's result.
    pub fn describe(&self) -> String {
        format!(
            "{}, network {}",
            self.mode.as_str(),
            if self.plan.network { "on" } else { "off" }
        )
    }
}
