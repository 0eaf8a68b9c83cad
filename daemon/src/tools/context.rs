//! A session's facts as its tools see them: the pinned roots and the
//! settings that shape file access, and the one resolution every path
//! argument goes through.

use std::path::{Path, PathBuf};

use super::error::ToolError;
use super::path::resolve_in_workspace;
use super::root::PinnedRoot;
use super::sensitive::refuse_sensitive;
use super::settings::ToolSettings;

/// The session's facts a tool needs to build and run a call: its pinned
/// roots and the settings that shape file access.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The primary root's path, canonical (symlinks resolved) when pinned.
    pub workspace_root: PathBuf,
    /// Every root, the primary first (then include directories).
    roots: Vec<PinnedRoot>,
    pub settings: ToolSettings,
    /// The session the tools run for, when there is one: what they save
    /// for it (long shell output) goes under its id and is deleted with it.
    pub session_id: Option<String>,
    /// The session's sandbox for commands (settings, override, yolo).
    pub sandbox: crate::sandbox::SessionSandbox,
    /// The session's plans directory (`tools/plans.rs`), pinned once it
    /// exists; it is then also one of `roots` (plans are read back).
    plans: Option<PinnedRoot>,
    /// Plan mode: write tools resolve beneath `plans` only.
    pub plan_mode: bool,
    /// Whether a person can be asked (an unattended session's plan is
    /// approved by the policy alone).
    pub interactive: bool,
}

impl ToolContext {
    /// Pins `workspace_root` (canonicalized first) with default settings.
    pub fn new(workspace_root: impl AsRef<Path>) -> std::io::Result<Self> {
        let canonical = workspace_root.as_ref().canonicalize()?;
        let root = PinnedRoot::open(&canonical).map_err(std::io::Error::other)?;
        Ok(Self::pinned(root, Vec::new(), ToolSettings::default()))
    }

    /// A context over roots pinned by the caller: `primary`, then `extra`
    /// (include directories).
    pub fn pinned(primary: PinnedRoot, extra: Vec<PinnedRoot>, settings: ToolSettings) -> Self {
        let mut roots = vec![primary];
        roots.extend(extra);
        let sandbox = crate::sandbox::SessionSandbox {
            settings: settings.sandbox.clone(),
            ..Default::default()
        };
        ToolContext {
            workspace_root: roots[0].path().to_path_buf(),
            roots,
            settings,
            session_id: None,
            sandbox,
            plans: None,
            plan_mode: false,
            interactive: true,
        }
    }

    /// The session's plans directory, pinned: a root from now on.
    pub fn set_plans(&mut self, plans: PinnedRoot) {
        if !self.roots.iter().any(|r| r.id() == plans.id()) {
            self.roots.push(plans.clone());
        }
        self.plans = Some(plans);
    }

    /// The pinned plans directory, once it exists.
    pub fn plans(&self) -> Option<&PinnedRoot> {
        self.plans.as_ref()
    }

    /// Resolves the path a write tool (`write_file`, `replace`) writes:
    /// in plan mode beneath the plans directory only (a relative path is
    /// relative to it, as in 0.61), otherwise as [`Self::resolve`].
    pub fn resolve_for_write(
        &self,
        raw: &str,
        param: &str,
    ) -> Result<(PinnedRoot, PathBuf), ToolError> {
        if !self.plan_mode {
            return self.resolve(raw, param);
        }
        let Some(plans) = &self.plans else {
            return Err(ToolError::new(
                super::error::ToolErrorKind::PathNotAllowed,
                "You are in Plan Mode and the plans directory could not be created, \
                 so nothing can be written.",
            ));
        };
        let spelled = super::plans::spell(raw, &self.workspace_root, plans.path());
        let path = resolve_in_workspace(plans, &spelled, param)
            .map_err(|_| super::plans::outside_error(raw, plans.path()))?;
        refuse_sensitive(plans.path(), &path, param)?;
        Ok((plans.clone(), path))
    }

    /// The primary root.
    pub fn root(&self) -> &PinnedRoot {
        &self.roots[0]
    }

    pub fn roots(&self) -> &[PinnedRoot] {
        &self.roots
    }

    /// The root `raw` is spelled under (the deepest, when roots nest), else
    /// the primary one, whose resolution then explains the refusal.
    pub fn root_for(&self, raw: &str) -> &PinnedRoot {
        let path = Path::new(raw);
        self.roots
            .iter()
            .filter(|r| r.contains(path))
            .max_by_key(|r| r.path().as_os_str().len())
            .unwrap_or(&self.roots[0])
    }

    /// Resolves the path argument `raw` (named `param`) in the root it is
    /// spelled under ([`super::path::resolve_in_workspace`]) and refuses
    /// the paths no file tool touches ([`super::sensitive`]).
    pub fn resolve(&self, raw: &str, param: &str) -> Result<(PinnedRoot, PathBuf), ToolError> {
        let root = self.root_for(raw);
        let path = resolve_in_workspace(root, raw, param)?;
        refuse_sensitive(root.path(), &path, param)?;
        Ok((root.clone(), path))
    }
}
