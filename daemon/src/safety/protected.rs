//! The files geminid, and the tools it runs, take instructions from: a
//! change to one of them could widen what a session may do (a policy rule,
//! `tools.allowed`, a trusted folder, a git `core.fsmonitor` command), so
//! it needs a person's approval every time.
//!
//! Two kinds of entries: places of the daemon's own (the user's Gemini
//! directory, admin policies, system settings, the trusted-folders file,
//! the data and socket directories, git's user configuration), found once
//! at start; and names that mean the same wherever they are (`.gemini`,
//! `.git`, `.env`). The check itself is pure.

use std::path::{Component, Path, PathBuf};

/// Where the daemon's own instruction files are.
#[derive(Debug, Clone, Default)]
pub struct DaemonPaths {
    pub home: PathBuf,
    pub user_gemini_dir: PathBuf,
    pub admin_policy_dir: PathBuf,
    pub system_settings: PathBuf,
    /// `GEMINI_CLI_TRUSTED_FOLDERS_PATH`, when it moves the file.
    pub trusted_folders: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME`, else `~/.config`.
    pub config_home: PathBuf,
    pub data_dir: PathBuf,
    pub socket: PathBuf,
}

impl DaemonPaths {
    /// The paths of `config`, with the environment's overrides.
    pub fn of(config: &crate::config::DaemonConfig) -> Self {
        let home = config
            .user_gemini_dir
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let env = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        DaemonPaths {
            config_home: env("XDG_CONFIG_HOME").unwrap_or_else(|| home.join(".config")),
            home,
            user_gemini_dir: config.user_gemini_dir.clone(),
            admin_policy_dir: config.admin_policy_dir.clone(),
            system_settings: config.system_settings.clone(),
            trusted_folders: env("GEMINI_CLI_TRUSTED_FOLDERS_PATH"),
            data_dir: config.data_dir.clone(),
            socket: config.socket.clone(),
        }
    }
}

/// One protected place and what it is, for people.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Place {
    path: PathBuf,
    what: String,
}

/// Every protected place, each under its configured and its canonical
/// spelling (the user's `~/.gemini` may be a symlink into a dotfiles
/// repository, and a resolved target names the canonical one).
#[derive(Debug, Clone, Default)]
pub struct ProtectedPaths {
    places: Vec<Place>,
    /// The global memory file (`~/.gemini/GEMINI.md`), under both
    /// spellings: facts for the model, not rules for the daemon, so it is
    /// left to the policy (`save_memory` writes it).
    memory: Vec<PathBuf>,
}

impl ProtectedPaths {
    /// The daemon's places. Canonicalizing what exists is the only IO.
    pub fn discover(paths: &DaemonPaths) -> Self {
        let mut out = ProtectedPaths::default();
        let gemini = &paths.user_gemini_dir;
        let memory = gemini.join("GEMINI.md");
        out.memory.push(normalize(&memory));
        out.memory.extend(canonical_prefix(&memory));
        out.add(
            gemini,
            "the user's Gemini directory (settings, policies, trusted folders, extensions, memory)",
        );
        out.add(&paths.admin_policy_dir, "the admin policy directory");
        out.add(&paths.system_settings, "the system settings file");
        if let Some(dir) = paths.system_settings.parent() {
            out.add(
                &dir.join("system-defaults.json"),
                "the system defaults settings file",
            );
        }
        if let Some(file) = &paths.trusted_folders {
            out.add(file, "the trusted folders file");
        }
        out.add(&paths.data_dir, "the daemon's data directory");
        // The socket's directory when it is the daemon's own (the default
        // `/tmp/geminid-<uid>`, or one named for it); a shared one such as
        // `/tmp` or `$XDG_RUNTIME_DIR` only for the socket and its lock.
        let socket_dir = paths.socket.parent().filter(|dir| {
            dir.file_name()
                .is_some_and(|n| n.to_string_lossy().contains("geminid"))
        });
        match socket_dir {
            Some(dir) => out.add(dir, "the daemon's socket directory"),
            None => {
                out.add(&paths.socket, "the daemon's socket");
                let mut lock = paths.socket.as_os_str().to_owned();
                lock.push(".lock");
                out.add(Path::new(&lock), "the daemon's socket lock");
            }
        }
        out.add(
            &paths.home.join(".gitconfig"),
            "git's user configuration (it can name commands git runs)",
        );
        out.add(
            &paths.config_home.join("git"),
            "git's user configuration (it can name commands git runs)",
        );
        out
    }

    fn add(&mut self, path: &Path, what: &str) {
        if path.as_os_str().is_empty() || !path.is_absolute() {
            return;
        }
        let mut add = |p: PathBuf| {
            if !self.places.iter().any(|e| e.path == p) {
                self.places.push(Place {
                    path: p,
                    what: what.to_owned(),
                });
            }
        };
        add(normalize(path));
        if let Some(canonical) = canonical_prefix(path) {
            add(canonical);
        }
    }

    /// Why `target` (absolute) is protected, if it is: it lies in (or is)
    /// one of the daemon's places, or a component of it is one of the
    /// names that are protected everywhere.
    pub fn why(&self, target: &Path) -> Option<String> {
        let target = normalize(target);
        if self.memory.contains(&target) {
            return None;
        }
        if let Some(place) = self.places.iter().find(|p| target.starts_with(&p.path)) {
            return Some(format!("in {}, {}", place.path.display(), place.what));
        }
        let protected_name = target.components().find_map(|c| match c {
            Component::Normal(name) => match name.to_string_lossy().to_lowercase().as_str() {
                ".gemini" => {
                    Some("in a .gemini directory (workspace settings, policies, commands, hooks)")
                }
                ".git" => Some("in .git (its config and hooks name commands git runs)"),
                ".env" => Some("an .env file (environment loaded by Gemini CLI and others)"),
                _ => None,
            },
            _ => None,
        });
        protected_name.map(str::to_owned)
    }
}

/// `path` with `.` dropped and `..` applied lexically (the targets checked
/// are absolute; resolved ones have neither).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The canonical form of `path`: its longest existing ancestor resolved,
/// the rest appended; `None` when nothing of it resolves.
fn canonical_prefix(path: &Path) -> Option<PathBuf> {
    let mut existing = normalize(path);
    let mut tail = Vec::new();
    loop {
        if let Ok(mut canonical) = existing.canonicalize() {
            canonical.extend(tail.iter().rev());
            return Some(canonical);
        }
        tail.push(existing.file_name()?.to_os_string());
        if !existing.pop() {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(base: &Path) -> DaemonPaths {
        DaemonPaths {
            home: base.join("home"),
            user_gemini_dir: base.join("home/.gemini"),
            admin_policy_dir: base.join("etc/gemini-cli/policies"),
            system_settings: base.join("etc/gemini-cli/settings.json"),
            trusted_folders: None,
            config_home: base.join("home/.config"),
            data_dir: base.join("home/.local/share/geminid"),
            socket: base.join("run/geminid.sock"),
        }
    }

    #[test]
    fn the_daemon_places_and_the_names_everywhere() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let protected = ProtectedPaths::discover(&paths(&base));
        let yes = [
            "home/.gemini/policies/x.toml",
            "home/.gemini/settings.json",
            "home/.gemini/trustedFolders.json",
            "home/.gemini/extensions/e/gemini-extension.json",
            "home/.gemini",
            "etc/gemini-cli/policies/a.toml",
            "etc/gemini-cli/settings.json",
            "etc/gemini-cli/system-defaults.json",
            "home/.local/share/geminid/db",
            "run/geminid.sock",
            "run/geminid.sock.lock",
            "home/.gitconfig",
            "home/.config/git/config",
            "work/proj/.gemini/settings.json",
            "work/proj/.GEMINI/policies/p.toml",
            "work/proj/.git/config",
            "work/proj/.git/hooks/pre-commit",
            "work/proj/sub/.env",
            "work/proj/x/../.gemini/settings.json",
        ];
        for rel in yes {
            assert!(protected.why(&base.join(rel)).is_some(), "{rel}");
        }
        let no = [
            "home/notes.txt",
            "home/.geminiignore",
            "work/proj/src/main.rs",
            "work/proj/.github/workflows/ci.yml",
            "work/proj/.env.local",
            "etc/gemini-cli/other.txt",
            "home/.config/other/x",
            "work/proj/.gemini/../src/x.rs",
            "home/.gemini/GEMINI.md",
            "run/other.sock",
        ];
        for rel in no {
            assert_eq!(protected.why(&base.join(rel)), None, "{rel}");
        }
        // A socket directory of the daemon's own is protected whole.
        let own = ProtectedPaths::discover(&DaemonPaths {
            socket: base.join("tmp/geminid-1000/geminid.sock"),
            ..paths(&base)
        });
        assert!(own.why(&base.join("tmp/geminid-1000/planted")).is_some());
        assert_eq!(own.why(&base.join("tmp/other")), None);
    }

    /// A place reached through a symlink is protected under both names.
    #[test]
    fn canonical_spellings_count() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(base.join("dotfiles/gemini")).unwrap();
        std::fs::create_dir_all(base.join("home")).unwrap();
        std::os::unix::fs::symlink(base.join("dotfiles/gemini"), base.join("home/.gemini"))
            .unwrap();
        let protected = ProtectedPaths::discover(&paths(&base));
        assert!(
            protected
                .why(&base.join("dotfiles/gemini/policies/x.toml"))
                .is_some()
        );
    }
}
