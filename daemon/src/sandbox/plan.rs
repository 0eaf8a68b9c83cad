//! What one sandboxed command may do (pure): the paths it may write, the
//! paths hidden from it, the instruction files held read-only inside what
//! it may write, the network and the limits. Built from the settings, the
//! session's roots and the daemon's own places; the child applies it
//! (`child.rs`).

use std::path::{Path, PathBuf};

use super::settings::{Limits, Mode, SandboxSettings};

/// Secrets hidden by default, relative to home.
pub const DEFAULT_DENY_READ: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker",
    ".config/gh",
    ".netrc",
    ".git-credentials",
];

/// Names inside each writable workspace root that git or the daemon take
/// instructions from, held read-only whole: all of `.git` (as 0.61 does),
/// since its `config` and `hooks` are not its only instructions
/// (`commondir`, `modules/*/config`, `config.worktree`) and a `.git`
/// that is not itself held could be renamed away and replaced.
pub const ROOT_INSTRUCTION_FILES: &[&str] = &[".git", ".gemini"];

/// The daemon's own places, found once at start.
#[derive(Debug, Clone, Default)]
pub struct DaemonPlaces {
    pub home: PathBuf,
    /// Hidden (its data dir, its socket's directory or the socket itself).
    pub hidden: Vec<PathBuf>,
    /// Held read-only where they lie in a writable place (the user's
    /// Gemini directory, admin policies, system settings, trusted folders,
    /// git's user configuration).
    pub instructions: Vec<PathBuf>,
    /// The temp dirs (`/tmp`, `$TMPDIR`).
    pub temp: Vec<PathBuf>,
}

/// One command's sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub writable: Vec<PathBuf>,
    pub hidden: Vec<PathBuf>,
    /// Candidates: the child holds read-only those that exist.
    pub read_only: Vec<PathBuf>,
    pub network: bool,
    pub limits: Limits,
    /// What the plan left out and why, for the call's events.
    pub notes: Vec<String>,
    /// The workspace roots it may write, whose missing instruction places
    /// the child side guards (`instructions.rs`).
    pub roots: Vec<PathBuf>,
}

/// `~/x` under `home`; absolute paths as they are.
pub fn expand(path: &str, home: &Path) -> PathBuf {
    match path.strip_prefix("~") {
        Some("") => home.to_path_buf(),
        Some(rest) if rest.starts_with('/') => home.join(rest.trim_start_matches('/')),
        _ => PathBuf::from(path),
    }
}

impl Plan {
    /// The plan for a command of a session with `roots` (canonical) under
    /// `mode` (not `Off`).
    pub fn new(
        mode: Mode,
        settings: &SandboxSettings,
        network: bool,
        roots: &[PathBuf],
        places: &DaemonPlaces,
    ) -> Plan {
        let mut notes = Vec::new();
        let mut writable: Vec<PathBuf> = places.temp.clone();
        if mode != Mode::ReadOnly {
            writable.extend(roots.iter().cloned());
            writable.extend(settings.allow_write.iter().map(|p| expand(p, &places.home)));
        }
        dedup(&mut writable);

        let mut hidden: Vec<PathBuf> = DEFAULT_DENY_READ
            .iter()
            .map(|p| places.home.join(p))
            .chain(settings.deny_read.iter().map(|p| expand(p, &places.home)))
            .chain(places.hidden.iter().cloned())
            .collect();
        dedup(&mut hidden);
        // Hiding a place would hide a root it holds: the root wins, the
        // place stays readable, and the call says so.
        hidden.retain(|h| {
            let holds_root = roots.iter().any(|r| r.starts_with(h));
            if holds_root {
                notes.push(format!(
                    "{} is not hidden: it holds the workspace",
                    h.display()
                ));
            }
            !holds_root
        });

        let mut read_only: Vec<PathBuf> = Vec::new();
        if mode != Mode::ReadOnly {
            for root in roots {
                read_only.extend(ROOT_INSTRUCTION_FILES.iter().map(|n| root.join(n)));
            }
        }
        read_only.extend(places.instructions.iter().cloned());
        // Only what could be written needs holding, and nothing hidden.
        read_only.retain(|p| {
            writable.iter().any(|w| p.starts_with(w)) && !hidden.iter().any(|h| p.starts_with(h))
        });
        dedup(&mut read_only);
        let roots = if mode == Mode::ReadOnly {
            Vec::new()
        } else {
            roots.to_vec()
        };
        Plan {
            writable,
            hidden,
            read_only,
            network,
            limits: settings.limits,
            notes,
            roots,
        }
    }
}

/// Sorted (parents before children) and without repeats.
fn dedup(paths: &mut Vec<PathBuf>) {
    paths.sort();
    paths.dedup();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places() -> DaemonPlaces {
        DaemonPlaces {
            home: PathBuf::from("/home/u"),
            hidden: vec![
                PathBuf::from("/home/u/.local/share/geminid"),
                PathBuf::from("/tmp/geminid-1000"),
            ],
            instructions: vec![
                PathBuf::from("/home/u/.gemini"),
                PathBuf::from("/home/u/.gitconfig"),
            ],
            temp: vec![PathBuf::from("/tmp")],
        }
    }

    #[test]
    fn workspace_write_plan() {
        let settings = SandboxSettings {
            allow_write: vec!["~/cache".into()],
            deny_read: vec!["/srv/keys".into()],
            ..SandboxSettings::default()
        };
        let roots = [PathBuf::from("/home/u/proj")];
        let plan = Plan::new(Mode::WorkspaceWrite, &settings, false, &roots, &places());
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(
            plan.writable,
            vec![p("/home/u/cache"), p("/home/u/proj"), p("/tmp")]
        );
        for h in [
            "/home/u/.ssh",
            "/home/u/.config/gcloud",
            "/srv/keys",
            "/tmp/geminid-1000",
        ] {
            assert!(plan.hidden.contains(&p(h)), "{h}");
        }
        assert_eq!(
            plan.read_only,
            vec![p("/home/u/proj/.gemini"), p("/home/u/proj/.git"),]
        );
        assert!(!plan.network);
    }

    #[test]
    fn instructions_in_a_writable_place_are_held() {
        let roots = [PathBuf::from("/home/u")];
        let plan = Plan::new(
            Mode::WorkspaceWrite,
            &SandboxSettings::default(),
            true,
            &roots,
            &places(),
        );
        assert!(plan.read_only.contains(&PathBuf::from("/home/u/.gemini")));
        assert!(
            plan.read_only
                .contains(&PathBuf::from("/home/u/.gitconfig"))
        );
        assert!(plan.network);
    }

    #[test]
    fn read_only_writes_only_temp_and_a_root_is_never_hidden() {
        let roots = [PathBuf::from("/home/u/.aws/proj")];
        let plan = Plan::new(
            Mode::ReadOnly,
            &SandboxSettings::default(),
            false,
            &roots,
            &places(),
        );
        assert_eq!(plan.writable, vec![PathBuf::from("/tmp")]);
        assert!(!plan.hidden.contains(&PathBuf::from("/home/u/.aws")));
        assert_eq!(plan.notes.len(), 1);
        assert!(plan.read_only.is_empty());
    }
}
