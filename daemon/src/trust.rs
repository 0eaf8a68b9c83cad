//! Folder trust as Gemini CLI 0.61 decides it: `security.folderTrust.enabled`
//! (default on) in the user or system settings, and the rules of
//! `~/.gemini/trustedFolders.json` (`GEMINI_CLI_TRUSTED_FOLDERS_PATH`):
//! `TRUST_FOLDER` (the folder and below), `TRUST_PARENT` (the folder's
//! parent and below), `DO_NOT_TRUST`; the longest matching rule path wins;
//! no match is untrusted. `GEMINI_CLI_TRUST_WORKSPACE=true|false` and
//! `GEMINI_RESTRICTED_MODE=true` decide for every folder.
//!
//! An untrusted folder's workspace settings (its MCP servers, discovery
//! command, context file names) and policies are not loaded. A broken
//! trust file (0.61 refuses to start) makes every folder untrusted and is
//! reported.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// One rule of trustedFolders.json.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustLevel {
    TrustFolder,
    TrustParent,
    DoNotTrust,
}

impl TrustLevel {
    fn parse(text: &str) -> Option<TrustLevel> {
        match text {
            "TRUST_FOLDER" => Some(TrustLevel::TrustFolder),
            "TRUST_PARENT" => Some(TrustLevel::TrustParent),
            "DO_NOT_TRUST" => Some(TrustLevel::DoNotTrust),
            _ => None,
        }
    }
}

/// The trust configuration as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FolderTrust {
    /// `security.folderTrust.enabled`.
    pub enabled: bool,
    /// `GEMINI_CLI_TRUST_WORKSPACE` / `GEMINI_RESTRICTED_MODE`.
    pub env: Option<bool>,
    /// Rule path -> level.
    pub rules: BTreeMap<PathBuf, TrustLevel>,
    /// Why the trust file could not be used: every folder is untrusted.
    pub broken: Option<String>,
}

/// Why a folder is or is not trusted, for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub trusted: bool,
    pub why: String,
}

impl FolderTrust {
    /// `trustedFolders.json` text (JSON with comments), with `enabled`
    /// and the environment's word.
    pub fn parse(enabled: bool, env: Option<bool>, file: Option<&str>) -> FolderTrust {
        let mut trust = FolderTrust {
            enabled,
            env,
            ..Default::default()
        };
        let Some(text) = file else {
            return trust;
        };
        match crate::jsonc::parse(text) {
            Ok(Value::Object(map)) => {
                for (path, level) in map {
                    match level.as_str().and_then(TrustLevel::parse) {
                        Some(level) => {
                            trust.rules.insert(PathBuf::from(path), level);
                        }
                        None => {
                            trust.broken = Some(format!(
                                "invalid trust level {level} for path \"{path}\" (expected \
                                 TRUST_FOLDER, TRUST_PARENT or DO_NOT_TRUST)"
                            ));
                        }
                    }
                }
            }
            Ok(_) => trust.broken = Some("not a JSON object".to_owned()),
            Err(e) => trust.broken = Some(format!("not valid JSON: {e}")),
        }
        trust
    }

    /// Whether `folder` (canonical) is trusted. `real` resolves a rule's
    /// path to its real path when it exists (0.61 compares real paths).
    pub fn verdict(&self, folder: &Path, real: &dyn Fn(&Path) -> PathBuf) -> Verdict {
        if let Some(trusted) = self.env {
            return Verdict {
                trusted,
                why: "GEMINI_CLI_TRUST_WORKSPACE / GEMINI_RESTRICTED_MODE".to_owned(),
            };
        }
        if !self.enabled {
            return Verdict {
                trusted: true,
                why: "security.folderTrust.enabled is false".to_owned(),
            };
        }
        if let Some(broken) = &self.broken {
            return Verdict {
                trusted: false,
                why: format!("the trusted folders file cannot be used: {broken}"),
            };
        }
        let mut best: Option<(usize, &Path, TrustLevel)> = None;
        for (rule, level) in &self.rules {
            let effective = match level {
                TrustLevel::TrustParent => rule.parent().unwrap_or(rule),
                TrustLevel::TrustFolder | TrustLevel::DoNotTrust => rule,
            };
            let len = rule.as_os_str().len();
            if folder.starts_with(real(effective)) && best.is_none_or(|(l, _, _)| len > l) {
                best = Some((len, rule, *level));
            }
        }
        match best {
            Some((_, rule, TrustLevel::DoNotTrust)) => Verdict {
                trusted: false,
                why: format!("{} is DO_NOT_TRUST", rule.display()),
            },
            Some((_, rule, level)) => Verdict {
                trusted: true,
                why: format!(
                    "{} is {}",
                    rule.display(),
                    if level == TrustLevel::TrustParent {
                        "TRUST_PARENT"
                    } else {
                        "TRUST_FOLDER"
                    }
                ),
            },
            None => Verdict {
                trusted: false,
                why: "no rule in the trusted folders file matches it".to_owned(),
            },
        }
    }
}

/// The environment's word on trust, as 0.61 reads it.
pub fn env_trust(var: &dyn Fn(&str) -> Option<String>) -> Option<bool> {
    if var("GEMINI_RESTRICTED_MODE").as_deref() == Some("true") {
        return Some(false);
    }
    match var("GEMINI_CLI_TRUST_WORKSPACE").as_deref() {
        Some("false") => Some(false),
        Some("true") => Some(true),
        _ => None,
    }
}

/// Where the trust file is: `GEMINI_CLI_TRUSTED_FOLDERS_PATH`, else
/// `<user gemini dir>/trustedFolders.json`.
pub fn trust_file(user_gemini_dir: &Path) -> PathBuf {
    std::env::var_os("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| user_gemini_dir.join("trustedFolders.json"))
}

/// `security.folderTrust.enabled` from the user and system settings
/// (a workspace cannot turn it off); default on, as 0.61.
pub fn enabled_in(settings: &[&Value]) -> bool {
    settings
        .iter()
        .rev()
        .find_map(|s| s.pointer("/security/folderTrust/enabled"))
        .and_then(Value::as_bool)
        .unwrap_or(true)
}

/// Reads the trust configuration now (the trust file and the settings the
/// caller read).
pub fn load(user_gemini_dir: &Path, settings: &[&Value]) -> FolderTrust {
    let env = env_trust(&|name| std::env::var(name).ok());
    let path = trust_file(user_gemini_dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            let mut trust = FolderTrust::parse(enabled_in(settings), env, None);
            trust.broken = Some(format!("{}: cannot read: {e}", path.display()));
            return trust;
        }
    };
    FolderTrust::parse(enabled_in(settings), env, text.as_deref())
}

/// A rule path's real path when it exists, else the path itself.
pub fn real_path(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn verdict(trust: &FolderTrust, folder: &str) -> bool {
        trust
            .verdict(Path::new(folder), &|p| p.to_path_buf())
            .trusted
    }

    #[test]
    fn longest_rule_wins_and_parent_means_the_parent() {
        let t = FolderTrust::parse(
            true,
            None,
            Some(
                r#"{
                // mine
                "/w": "TRUST_FOLDER",
                "/w/untrusted": "DO_NOT_TRUST",
                "/p/child": "TRUST_PARENT"
            }"#,
            ),
        );
        assert!(verdict(&t, "/w"));
        assert!(verdict(&t, "/w/a/b"));
        assert!(!verdict(&t, "/w/untrusted"));
        assert!(!verdict(&t, "/w/untrusted/deeper"));
        assert!(verdict(&t, "/p/sibling"));
        assert!(!verdict(&t, "/wx"), "a prefix of a name is not a parent");
        assert!(!verdict(&t, "/elsewhere"), "no rule: untrusted");
    }

    #[test]
    fn disabled_env_and_broken_files() {
        let off = FolderTrust::parse(false, None, Some(r#"{"/w": "DO_NOT_TRUST"}"#));
        assert!(verdict(&off, "/w"));
        let env = FolderTrust::parse(true, Some(true), None);
        assert!(verdict(&env, "/anything"));
        let broken = FolderTrust::parse(true, None, Some(r#"{"/w": "TRUST_ME"}"#));
        assert!(!verdict(&broken, "/w"));
        assert!(broken.broken.unwrap().contains("TRUST_ME"));
        assert!(enabled_in(&[]));
        let user = json!({"security": {"folderTrust": {"enabled": false}}});
        let system = json!({"security": {"folderTrust": {"enabled": true}}});
        assert!(!enabled_in(&[&user]));
        assert!(enabled_in(&[&user, &system]), "the system layer wins");
        assert_eq!(
            env_trust(&|n| (n == "GEMINI_RESTRICTED_MODE").then(|| "true".into())),
            Some(false)
        );
    }
}
