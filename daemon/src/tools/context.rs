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
        }
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
