//! The sandbox settings in the user's `settings.json` (pure): geminid's
//! `sandbox` object, and Gemini CLI 0.61's `tools.sandbox`,
//! `tools.sandboxAllowedPaths` and `tools.sandboxNetworkAccess` where they
//! map. geminid's own keys win.
//!
//! A value that cannot be read never loosens anything: a wrong-typed
//! `network` is off, a bad `allowWrite` entry is dropped, and an unknown
//! mode or an unreadable `denyRead` entry makes the sandbox refuse every
//! command until the file is fixed (`broken`), each reported with the file
//! and the field.

use serde_json::Value;

/// What the sandbox does with a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// No sandbox.
    Off,
    /// Writes under the workspace roots, the temp dir and `allowWrite`.
    WorkspaceWrite,
    /// No writes but the temp dir (and device files such as `/dev/null`).
    ReadOnly,
    /// `workspace-write`, and commands are refused where the kernel cannot
    /// sandbox them (instead of running unsandboxed).
    Required,
}

impl Mode {
    pub fn parse(text: &str) -> Option<Mode> {
        match text {
            "off" => Some(Mode::Off),
            "workspace-write" => Some(Mode::WorkspaceWrite),
            "read-only" => Some(Mode::ReadOnly),
            "required" => Some(Mode::Required),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::WorkspaceWrite => "workspace-write",
            Mode::ReadOnly => "read-only",
            Mode::Required => "required",
        }
    }
}

/// Default limits: none unless configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Limits {
    /// `RLIMIT_NPROC` (`sandbox.maxProcesses`).
    pub processes: Option<u64>,
    /// `RLIMIT_FSIZE` in bytes (`sandbox.maxFileSize`).
    pub file_size: Option<u64>,
}

/// The user's sandbox settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SandboxSettings {
    /// `None`: not configured (on for yolo sessions, off otherwise).
    pub mode: Option<Mode>,
    pub network: bool,
    /// Extra writable paths (absolute or `~/...`, as written).
    pub allow_write: Vec<String>,
    /// Extra paths hidden from commands, on top of the defaults.
    pub deny_read: Vec<String>,
    pub limits: Limits,
    /// Why commands are refused until the settings are fixed.
    pub broken: Option<String>,
}

impl SandboxSettings {
    /// The settings in one settings document (`file` names it in problems,
    /// which are also returned for the log).
    pub fn parse(value: &Value, file: &str) -> (SandboxSettings, Vec<String>) {
        let mut out = SandboxSettings::default();
        let mut problems = Vec::new();
        // 0.61's keys first; ours override.
        let legacy = value
            .pointer("/tools/sandbox")
            .or_else(|| value.get("sandbox").filter(|v| !v.is_object()));
        match legacy {
            None | Some(Value::Null) => {}
            Some(Value::Bool(false)) => out.mode = Some(Mode::Off),
            Some(Value::String(s)) if s == "false" || s == "0" => out.mode = Some(Mode::Off),
            // `true`, a container command, a profile or an object: 0.61's
            // sandbox is on, and geminid's own is what runs.
            Some(_) => out.mode = Some(Mode::WorkspaceWrite),
        }
        if let Some(v) = value.pointer("/tools/sandboxNetworkAccess") {
            out.network = flag(v, file, "tools.sandboxNetworkAccess", &mut problems);
        }
        if let Some(v) = value.pointer("/tools/sandboxAllowedPaths") {
            out.allow_write = paths(v, file, "tools.sandboxAllowedPaths", &mut problems);
        }
        let Some(ours) = value.get("sandbox").filter(|v| v.is_object()) else {
            return (out, problems);
        };
        match ours.get("mode") {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => match Mode::parse(s) {
                Some(m) => out.mode = Some(m),
                None => {
                    let text = format!(
                        "{file}: `sandbox.mode` must be \"off\", \"workspace-write\", \"read-only\" or \"required\", got {s:?}; commands are refused until it is fixed"
                    );
                    problems.push(text.clone());
                    out.broken = Some(text);
                }
            },
            Some(other) => {
                let text = format!(
                    "{file}: `sandbox.mode` must be a string, got {other}; commands are refused until it is fixed"
                );
                problems.push(text.clone());
                out.broken = Some(text);
            }
        }
        if let Some(v) = ours.get("network") {
            out.network = flag(v, file, "sandbox.network", &mut problems);
        }
        if let Some(v) = ours.get("allowWrite") {
            out.allow_write = paths(v, file, "sandbox.allowWrite", &mut problems);
        }
        if let Some(v) = ours.get("denyRead") {
            let before = problems.len();
            out.deny_read = paths(v, file, "sandbox.denyRead", &mut problems);
            if problems.len() > before && out.broken.is_none() {
                out.broken = Some(format!(
                    "{}; commands are refused until it is fixed (a path to hide was not understood)",
                    problems[before]
                ));
            }
        }
        out.limits.processes = limit(ours, "maxProcesses", file, &mut problems, &mut out.broken);
        out.limits.file_size = limit(ours, "maxFileSize", file, &mut problems, &mut out.broken);
        (out, problems)
    }
}

/// A yes/no value; anything else is reported and read as no.
fn flag(value: &Value, file: &str, field: &str, problems: &mut Vec<String>) -> bool {
    match value {
        Value::Bool(b) => *b,
        Value::Null => false,
        other => {
            problems.push(format!(
                "{file}: `{field}` must be true or false, got {other}; the network stays off"
            ));
            false
        }
    }
}

/// A list of paths, absolute or `~/...`; other entries are reported and
/// dropped.
fn paths(value: &Value, file: &str, field: &str, problems: &mut Vec<String>) -> Vec<String> {
    let Value::Array(items) = value else {
        if !value.is_null() {
            problems.push(format!(
                "{file}: `{field}` must be a list of paths, got {value}; ignored"
            ));
        }
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in items {
        match item.as_str().map(str::trim) {
            Some(p) if p.starts_with('/') || p.starts_with("~/") || p == "~" => {
                out.push(p.to_owned())
            }
            _ => problems.push(format!(
                "{file}: `{field}` entries must be absolute paths or start with ~/, got {item}; ignored"
            )),
        }
    }
    out
}

/// A positive whole number; anything else refuses commands (a limit that
/// was meant but not understood must not become no limit).
fn limit(
    ours: &Value,
    key: &str,
    file: &str,
    problems: &mut Vec<String>,
    broken: &mut Option<String>,
) -> Option<u64> {
    match ours.get(key) {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64().filter(|n| *n > 0) {
            Some(n) => Some(n),
            None => {
                let text = format!(
                    "{file}: `sandbox.{key}` must be a positive whole number, got {v}; commands are refused until it is fixed"
                );
                problems.push(text.clone());
                broken.get_or_insert(text);
                None
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ours_win_over_the_reference_keys() {
        let (s, problems) = SandboxSettings::parse(
            &json!({
                "tools": {"sandbox": "docker", "sandboxNetworkAccess": true,
                          "sandboxAllowedPaths": ["/opt/cache"]},
                "sandbox": {"mode": "read-only", "network": false,
                            "allowWrite": ["~/build"], "denyRead": ["~/secrets"],
                            "maxProcesses": 64, "maxFileSize": 1048576}
            }),
            "s.json",
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(s.mode, Some(Mode::ReadOnly));
        assert!(!s.network);
        assert_eq!(s.allow_write, vec!["~/build"]);
        assert_eq!(s.deny_read, vec!["~/secrets"]);
        assert_eq!(s.limits.processes, Some(64));
        assert_eq!(s.limits.file_size, Some(1048576));
        assert!(s.broken.is_none());
    }

    #[test]
    fn the_reference_keys_map() {
        let cases = [
            (
                json!({"tools": {"sandbox": true}}),
                Some(Mode::WorkspaceWrite),
            ),
            (
                json!({"tools": {"sandbox": "podman"}}),
                Some(Mode::WorkspaceWrite),
            ),
            (
                json!({"tools": {"sandbox": {"command": "docker"}}}),
                Some(Mode::WorkspaceWrite),
            ),
            (json!({"tools": {"sandbox": false}}), Some(Mode::Off)),
            (json!({"sandbox": true}), Some(Mode::WorkspaceWrite)),
            (json!({}), None),
        ];
        for (value, mode) in cases {
            assert_eq!(SandboxSettings::parse(&value, "s").0.mode, mode, "{value}");
        }
        let (s, _) = SandboxSettings::parse(
            &json!({"tools": {"sandboxNetworkAccess": true, "sandboxAllowedPaths": ["/x"]}}),
            "s",
        );
        assert!(s.network);
        assert_eq!(s.allow_write, vec!["/x"]);
    }

    #[test]
    fn misreadings_are_stricter_and_named() {
        let (s, problems) = SandboxSettings::parse(
            &json!({"sandbox": {"mode": "readonly", "network": "yes",
                                "allowWrite": ["rel/path", 3, "/ok"]}}),
            "s.json",
        );
        assert!(!s.network);
        assert_eq!(s.allow_write, vec!["/ok"]);
        assert!(s.broken.as_deref().unwrap().contains("sandbox.mode"));
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(problems.iter().all(|p| p.starts_with("s.json: `sandbox.")));

        let (s, _) = SandboxSettings::parse(&json!({"sandbox": {"denyRead": ["secrets"]}}), "s");
        assert!(s.broken.as_deref().unwrap().contains("sandbox.denyRead"));
        let (s, _) = SandboxSettings::parse(&json!({"sandbox": {"maxProcesses": -1}}), "s");
        assert!(
            s.broken
                .as_deref()
                .unwrap()
                .contains("sandbox.maxProcesses")
        );
    }
}
