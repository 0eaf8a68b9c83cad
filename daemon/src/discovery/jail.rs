//! The sandbox of what discovery starts outside any session: the
//! `tools.discoveryCommand` and stdio MCP servers. They get the user's
//! `sandbox` settings as a session without an override gets them (no
//! yolo: off unless `sandbox.mode` says otherwise). They may write the
//! temp dirs, `sandbox.allowWrite` and, for a workspace's server, that
//! workspace; never the directory they start in as such (the daemon's
//! own may be `/`). A server's entry may
//! opt out (`"sandbox": false`) or choose its network
//! (`"sandbox": {"network": false}`); servers have the network by
//! default, since most of them exist to reach a service.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::sandbox::{DaemonPlaces, Decision, Prepared, SessionSandbox, WorkDir};

/// A server entry's `sandbox`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerSandbox {
    /// `"sandbox": false`: the server runs outside the sandbox.
    pub off: bool,
    /// The network inside the sandbox.
    pub network: bool,
}

impl Default for ServerSandbox {
    fn default() -> Self {
        ServerSandbox {
            off: false,
            network: true,
        }
    }
}

impl ServerSandbox {
    /// Reads an entry's `sandbox` value. A value we cannot read keeps the
    /// sandbox on without the network (stricter), and says why.
    pub fn parse(value: Option<&Value>) -> (ServerSandbox, Option<String>) {
        let strict = ServerSandbox {
            off: false,
            network: false,
        };
        match value {
            None | Some(Value::Null) | Some(Value::Bool(true)) => (ServerSandbox::default(), None),
            Some(Value::Bool(false)) => (
                ServerSandbox {
                    off: true,
                    network: true,
                },
                None,
            ),
            Some(Value::Object(map)) => {
                let mut choice = ServerSandbox::default();
                for (key, v) in map {
                    match (key.as_str(), v) {
                        ("network", Value::Bool(b)) => choice.network = *b,
                        _ => {
                            return (
                                strict,
                                Some(format!(
                                    "`sandbox.{key}`: expected `network` (true or false); the server runs sandboxed without network"
                                )),
                            );
                        }
                    }
                }
                (choice, None)
            }
            Some(other) => (
                strict,
                Some(format!(
                    "`sandbox`: expected false, true or {{\"network\": ...}}, got {other}; the server runs sandboxed without network"
                )),
            ),
        }
    }
}

/// The sandbox of one stdio server, applied at each spawn.
#[derive(Debug, Clone)]
pub struct ServerJail {
    pub choice: ServerSandbox,
    /// What it may write besides the temp dirs and `sandbox.allowWrite`:
    /// the workspace of a workspace server.
    pub roots: Vec<PathBuf>,
    pub cwd: Option<PathBuf>,
}

impl ServerJail {
    /// The jail of a stdio server working in `cwd`, configured in `scope`
    /// (`user`, or `workspace:<root>`).
    pub fn new(choice: ServerSandbox, cwd: Option<&Path>, scope: &str) -> ServerJail {
        // Its `cwd` is where it starts, not a place it may write: a user
        // server's `cwd` may be anything (`/`, home).
        let roots: Vec<PathBuf> = scope
            .strip_prefix("workspace:")
            .map(PathBuf::from)
            .into_iter()
            .collect();
        ServerJail {
            choice,
            roots,
            cwd: cwd.map(Path::to_path_buf),
        }
    }

    /// The environment the server starts with: its workspace's `.env`
    /// for a workspace server, the user's own for the others
    /// (`child_env.rs`), sanitized; its entry's `env` goes on top.
    pub fn child_env(&self) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        match self.roots.first() {
            Some(workspace) => crate::child_env::for_child_in(workspace),
            None => crate::child_env::for_user(),
        }
    }

    /// Puts the sandbox on `command` (unless the entry opted out); an
    /// error means the server must not start.
    pub fn apply(&self, command: &mut tokio::process::Command) -> Result<Option<String>, String> {
        if self.choice.off {
            return Ok(None);
        }
        let applied = prepare(&self.roots, self.cwd.as_deref(), Some(self.choice.network))?;
        if let Some(prepared) = applied.prepared {
            crate::sandbox::install(command, prepared);
        }
        Ok(applied.note)
    }
}

/// Where the settings are and the daemon's places, set once at start.
static DAEMON: OnceLock<(PathBuf, Arc<DaemonPlaces>)> = OnceLock::new();

/// The user's settings as last read: a server that keeps failing is
/// started again and again, and an idle daemon reads no configuration
/// file, so they are read once per change (the daemon's watcher calls
/// [`invalidate`]).
static SETTINGS: std::sync::Mutex<Option<crate::tools::ToolSettings>> = std::sync::Mutex::new(None);

/// Remembers the user's settings file and the daemon's places (once).
pub fn init(user_settings: PathBuf, places: Arc<DaemonPlaces>) {
    let _ = DAEMON.set((user_settings, places));
}

/// The settings changed: the next command reads them again.
pub fn invalidate() {
    *SETTINGS.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

fn settings(user_settings: &Path) -> crate::tools::ToolSettings {
    let mut cached = SETTINGS.lock().unwrap_or_else(|e| e.into_inner());
    cached
        .get_or_insert_with(|| crate::tools::ToolSettings::load(user_settings).0)
        .clone()
}

/// What one command gets: the child's side, or a note when a sandbox was
/// wanted and could not be had.
#[derive(Default)]
pub struct Applied {
    pub prepared: Option<Prepared>,
    pub note: Option<String>,
}

/// Decides and prepares the sandbox of one command that runs in `cwd`
/// and may write `roots`; `network` over the settings' when given. An
/// error means the command must not run (`sandbox.mode = "required"`
/// without support, broken settings, a sandbox that cannot be prepared).
pub fn prepare(
    roots: &[PathBuf],
    cwd: Option<&Path>,
    network: Option<bool>,
) -> Result<Applied, String> {
    prepare_pinned(roots, &[], cwd, network)
}

/// As [`prepare`], with the roots as a session pinned them (a root's
/// instruction places are guarded from its pinned descriptor).
pub fn prepare_pinned(
    roots: &[PathBuf],
    pinned: &[crate::tools::PinnedRoot],
    cwd: Option<&Path>,
    network: Option<bool>,
) -> Result<Applied, String> {
    let Some((user_settings, places)) = DAEMON.get() else {
        // Only in tests that build discovery without a daemon.
        return Ok(Applied::default());
    };
    let settings = settings(user_settings);
    let mut sandbox = SessionSandbox {
        settings: settings.sandbox,
        override_mode: None,
        yolo: false,
        places: places.clone(),
    };
    if let Some(network) = network {
        sandbox.settings.network = network;
    }
    match sandbox.decide(roots) {
        Decision::Unsandboxed(note) => Ok(Applied {
            prepared: None,
            note,
        }),
        Decision::Refuse(why) => Err(why),
        Decision::Sandboxed(confined) => {
            let prepared = confined
                .prepare(cwd.map(|path| WorkDir {
                    path,
                    identity: None,
                    pinned,
                }))
                .map_err(|e| format!("the sandbox could not be prepared: {e}"))?
                .prepared;
            Ok(Applied {
                prepared: Some(prepared),
                note: None,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ServerSandbox;
    use serde_json::json;

    #[test]
    fn a_server_entry_chooses_its_sandbox_and_a_bad_one_is_stricter() {
        assert_eq!(ServerSandbox::parse(None).0, ServerSandbox::default());
        assert!(ServerSandbox::default().network);
        assert!(ServerSandbox::parse(Some(&json!(false))).0.off);
        let no_net = ServerSandbox::parse(Some(&json!({"network": false}))).0;
        assert!(!no_net.off && !no_net.network);
        for bad in [json!("off"), json!({"network": "no"}), json!({"net": true})] {
            let (choice, problem) = ServerSandbox::parse(Some(&bad));
            assert!(!choice.off && !choice.network, "{bad}");
            assert!(problem.is_some(), "{bad}");
        }
    }
}
