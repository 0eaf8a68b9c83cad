//! The settings that shape what file tools may see, read from the user's
//! `settings.json` when a session is loaded:
//!
//! * `context.fileFiltering.respectGitIgnore` and `.respectGeminiIgnore`
//!   (both default true, as in Gemini CLI 0.61): whether ignored files are
//!   hidden from walks and refused by `read_file`;
//! * `context.fileFiltering.customIgnoreFilePaths`: more ignore files,
//!   relative to the workspace root, applied whatever the two flags say;
//! * `geminid.webFetch.allowPrivateNetwork` (ours, default false): whether
//!   `web_fetch` may reach loopback, private and link-local addresses;
//! * `geminid.shell.maxStoredOutputBytes` (ours, default 64 MiB): the most
//!   output one shell call saves in its spill file.
//!
//! A value of the wrong type is reported and the strict default kept.

use std::path::Path;

use serde_json::Value;

/// Which ignore rules file tools honour by default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileFiltering {
    pub respect_git_ignore: bool,
    pub respect_gemini_ignore: bool,
    /// Extra ignore files, relative to the workspace root; earlier entries
    /// take precedence.
    pub custom_ignore_files: Vec<String>,
    /// `context.fileFiltering.enableRecursiveFileSearch`: a prompt's
    /// `@name` not found where it points is searched for by name.
    pub recursive_file_search: bool,
}

impl Default for FileFiltering {
    fn default() -> Self {
        FileFiltering {
            respect_git_ignore: true,
            respect_gemini_ignore: true,
            custom_ignore_files: Vec::new(),
            recursive_file_search: true,
        }
    }
}

/// Settings of file and web tools for one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSettings {
    pub filtering: FileFiltering,
    /// `geminid.webFetch.allowPrivateNetwork`.
    pub web_fetch_allow_private: bool,
    /// `geminid.shell.maxStoredOutputBytes`.
    pub shell_max_stored_output: usize,
    /// `sandbox` (and 0.61's `tools.sandbox*`).
    pub sandbox: crate::sandbox::SandboxSettings,
}

/// The default of `geminid.shell.maxStoredOutputBytes`.
pub const DEFAULT_SHELL_MAX_STORED_OUTPUT: usize = 64 * 1024 * 1024;

impl Default for ToolSettings {
    fn default() -> Self {
        ToolSettings {
            filtering: FileFiltering::default(),
            web_fetch_allow_private: false,
            shell_max_stored_output: DEFAULT_SHELL_MAX_STORED_OUTPUT,
            sandbox: crate::sandbox::SandboxSettings::default(),
        }
    }
}

impl ToolSettings {
    /// Reads `path` (a settings file). A missing file gives the defaults;
    /// an unreadable or broken one gives the defaults and a problem.
    pub fn load(path: &Path) -> (ToolSettings, Vec<String>) {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return (ToolSettings::default(), Vec::new());
            }
            Err(e) => {
                return (
                    ToolSettings::default(),
                    vec![format!("{}: cannot read: {e}", path.display())],
                );
            }
        };
        match crate::jsonc::parse(&text) {
            Ok(value) => Self::parse(&value, &path.display().to_string()),
            Err(e) => (
                ToolSettings::default(),
                vec![format!("{}: not valid JSON: {e}", path.display())],
            ),
        }
    }

    /// The settings in one settings document (`file` names it in problems).
    pub fn parse(value: &Value, file: &str) -> (ToolSettings, Vec<String>) {
        let mut problems = Vec::new();
        let mut flag = |pointer: &str, default: bool| match value.pointer(pointer) {
            None | Some(Value::Null) => default,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                problems.push(format!(
                    "{file}: `{}` must be true or false, got {other}; using {default}",
                    pointer.trim_start_matches('/').replace('/', ".")
                ));
                default
            }
        };
        let respect_git_ignore = flag("/context/fileFiltering/respectGitIgnore", true);
        let respect_gemini_ignore = flag("/context/fileFiltering/respectGeminiIgnore", true);
        let recursive_file_search = flag("/context/fileFiltering/enableRecursiveFileSearch", true);
        let web_fetch_allow_private = flag("/geminid/webFetch/allowPrivateNetwork", false);
        let shell_max_stored_output = match value.pointer("/geminid/shell/maxStoredOutputBytes") {
            None | Some(Value::Null) => DEFAULT_SHELL_MAX_STORED_OUTPUT,
            Some(Value::Number(n)) if n.as_u64().is_some() => {
                n.as_u64().map_or(DEFAULT_SHELL_MAX_STORED_OUTPUT, |n| {
                    usize::try_from(n).unwrap_or(usize::MAX)
                })
            }
            Some(other) => {
                problems.push(format!(
                    "{file}: `geminid.shell.maxStoredOutputBytes` must be a number of bytes, got {other}; using {DEFAULT_SHELL_MAX_STORED_OUTPUT}"
                ));
                DEFAULT_SHELL_MAX_STORED_OUTPUT
            }
        };
        let mut custom_ignore_files = Vec::new();
        match value.pointer("/context/fileFiltering/customIgnoreFilePaths") {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => {
                for item in items {
                    match item.as_str().map(str::trim).filter(|s| !s.is_empty()) {
                        Some(p) => custom_ignore_files.push(p.to_owned()),
                        None => problems.push(format!(
                            "{file}: `context.fileFiltering.customIgnoreFilePaths` entries must be paths, got {item}"
                        )),
                    }
                }
            }
            Some(other) => problems.push(format!(
                "{file}: `context.fileFiltering.customIgnoreFilePaths` must be a list of paths, got {other}"
            )),
        }
        let (sandbox, sandbox_problems) = crate::sandbox::SandboxSettings::parse(value, file);
        problems.extend(sandbox_problems);
        (
            ToolSettings {
                sandbox,
                filtering: FileFiltering {
                    respect_git_ignore,
                    respect_gemini_ignore,
                    custom_ignore_files,
                    recursive_file_search,
                },
                web_fetch_allow_private,
                shell_max_stored_output,
            },
            problems,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_and_opt_outs() {
        let (s, p) = ToolSettings::parse(&json!({}), "f");
        assert_eq!(s, ToolSettings::default());
        assert!(s.filtering.respect_git_ignore && s.filtering.respect_gemini_ignore);
        assert!(!s.web_fetch_allow_private);
        assert!(p.is_empty());
        let (s, p) = ToolSettings::parse(
            &json!({
                "context": {"fileFiltering": {
                    "respectGitIgnore": false,
                    "respectGeminiIgnore": false,
                    "customIgnoreFilePaths": [".myignore", "conf/extra"]
                }},
                "geminid": {"webFetch": {"allowPrivateNetwork": true}}
            }),
            "f",
        );
        assert!(p.is_empty(), "{p:?}");
        assert!(!s.filtering.respect_git_ignore && !s.filtering.respect_gemini_ignore);
        assert_eq!(s.filtering.custom_ignore_files, [".myignore", "conf/extra"]);
        assert!(s.web_fetch_allow_private);
    }

    /// What cannot be understood keeps the strict default and is reported
    /// with the file and the field.
    #[test]
    fn misreadings_stay_strict() {
        let (s, p) = ToolSettings::parse(
            &json!({
                "context": {"fileFiltering": {"respectGitIgnore": "no", "customIgnoreFilePaths": ".x"}},
                "geminid": {"webFetch": {"allowPrivateNetwork": "yes"}}
            }),
            "/home/me/.gemini/settings.json",
        );
        assert!(s.filtering.respect_git_ignore);
        assert!(!s.web_fetch_allow_private);
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(
            p[0].contains("context.fileFiltering.respectGitIgnore"),
            "{p:?}"
        );
        assert!(
            p.iter()
                .all(|m| m.starts_with("/home/me/.gemini/settings.json: "))
        );
    }
}
