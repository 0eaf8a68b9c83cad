//! The environment a child process gets (shell commands, the discovery
//! command, stdio MCP servers): the daemon's own, with secrets taken out
//! as Gemini CLI 0.61's `sanitizeEnvironment` does with redaction on (its
//! allow and deny lists, name and value patterns, `GEMINI_CLI_*` and
//! `GIT_CONFIG_*` kept), and the opt-outs of
//! `security.environmentVariableRedaction.{allowed,blocked}`.
//!
//! 0.61 redacts for stdio MCP servers always and for shell commands only
//! when `security.environmentVariableRedaction.enabled` is set; geminid
//! redacts for every child (stricter, listed in ARCHITECTURE.md): the
//! daemon's environment holds the model's key.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::sync::{LazyLock, RwLock};

use serde_json::Value;

/// Always passed (0.61's `ALWAYS_ALLOWED_ENVIRONMENT_VARIABLES`).
const ALWAYS_ALLOWED: &[&str] = &[
    "PATH",
    "SYSTEMROOT",
    "COMSPEC",
    "PATHEXT",
    "WINDIR",
    "TEMP",
    "TMP",
    "USERPROFILE",
    "SYSTEMDRIVE",
    "HOME",
    "LANG",
    "SHELL",
    "TMPDIR",
    "USER",
    "LOGNAME",
    "TERM",
    "COLORTERM",
    "ADDITIONAL_CONTEXT",
    "AVAILABLE_LABELS",
    "BRANCH_NAME",
    "DESCRIPTION",
    "EVENT_NAME",
    "GITHUB_ENV",
    "IS_PULL_REQUEST",
    "ISSUES_TO_TRIAGE",
    "ISSUE_BODY",
    "ISSUE_NUMBER",
    "ISSUE_TITLE",
    "PULL_REQUEST_NUMBER",
    "REPOSITORY",
    "TITLE",
    "TRIGGERING_ACTOR",
];

/// Never passed (0.61's `NEVER_ALLOWED_ENVIRONMENT_VARIABLES`).
const NEVER_ALLOWED: &[&str] = &[
    "CLIENT_ID",
    "DB_URI",
    "CONNECTION_STRING",
    "AWS_DEFAULT_REGION",
    "AZURE_CLIENT_ID",
    "AZURE_TENANT_ID",
    "SLACK_WEBHOOK_URL",
    "TWILIO_ACCOUNT_SID",
    "DATABASE_URL",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_ACCOUNT",
    "FIREBASE_PROJECT_ID",
];

/// Name parts that mark a secret (0.61's `NEVER_ALLOWED_NAME_PATTERNS`).
const SECRET_NAME_PARTS: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "KEY",
    "AUTH",
    "CREDENTIAL",
    "CREDS",
    "PRIVATE",
    "CERT",
];

/// Values that are secrets whatever the name (0.61's
/// `NEVER_ALLOWED_VALUE_PATTERNS`, case-insensitive).
static SECRET_VALUES: LazyLock<Option<regex::RegexSet>> = LazyLock::new(|| {
    regex::RegexSetBuilder::new([
        r"-----BEGIN (RSA|OPENSSH|EC|PGP) PRIVATE KEY-----",
        r"-----BEGIN CERTIFICATE-----",
        r"(https?|ftp|smtp)://[^:\s]{1,1024}:[^@\s]{1,1024}@",
        r"(ghp|gho|ghu|ghs|ghr|github_pat)_[a-zA-Z0-9_]{36,}",
        r"AIzaSy[a-zA-Z0-9_\\-]{33}",
        r"AKIA[A-Z0-9]{16}",
        r"eyJ[a-zA-Z0-9_-]{0,10240}\.[a-zA-Z0-9_-]{0,10240}\.[a-zA-Z0-9_-]{0,10240}",
        r"(s|r)k_(live|test)_[0-9a-zA-Z]{24}",
        r"xox[abpr]-[a-zA-Z0-9-]+",
    ])
    .case_insensitive(true)
    .size_limit(64 << 20)
    .build()
    .map_err(|e| tracing::error!(error = %e, "secret value patterns"))
    .ok()
});

/// The user's opt-outs, upper-cased as 0.61 compares them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redaction {
    /// `security.environmentVariableRedaction.allowed`: passed even when
    /// the name looks secret (a value that is a secret still is not).
    pub allowed: BTreeSet<String>,
    /// `security.environmentVariableRedaction.blocked`: never passed.
    pub blocked: BTreeSet<String>,
    /// `advanced.excludedEnvVars` (none: 0.61's default, `DEBUG`,
    /// `DEBUG_MODE`): what a project's `.env` may not give a child.
    pub excluded_env_vars: Option<Vec<String>>,
}

impl Redaction {
    /// From a (merged) settings document.
    pub fn from_settings(settings: &Value) -> Redaction {
        let list = |key: &str| -> BTreeSet<String> {
            settings
                .pointer(&format!("/security/environmentVariableRedaction/{key}"))
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_uppercase)
                        .collect()
                })
                .unwrap_or_default()
        };
        Redaction {
            allowed: list("allowed"),
            blocked: list("blocked"),
            excluded_env_vars: settings
                .pointer("/advanced/excludedEnvVars")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                }),
        }
    }

    /// The variables a project's `.env` may not set (0.61 compares them
    /// as written).
    pub fn excluded(&self) -> Vec<String> {
        match &self.excluded_env_vars {
            Some(list) => list.clone(),
            None => crate::model::dotenv::DEFAULT_EXCLUDED
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
        }
    }

    /// Whether `key=value` must not reach a child (0.61's
    /// `shouldRedactEnvironmentVariable`, not strict).
    pub fn redacts(&self, key: &str, value: &str) -> bool {
        let key = key.to_uppercase();
        if key.starts_with("GEMINI_CLI_") {
            return false;
        }
        if SECRET_VALUES.as_ref().is_none_or(|set| set.is_match(value)) {
            return true;
        }
        if key.starts_with("GIT_CONFIG_") || self.allowed.contains(&key) {
            return false;
        }
        if self.blocked.contains(&key) {
            return true;
        }
        if ALWAYS_ALLOWED.contains(&key.as_str()) {
            return false;
        }
        if NEVER_ALLOWED.contains(&key.as_str()) {
            return true;
        }
        SECRET_NAME_PARTS.iter().any(|part| key.contains(part))
    }

    /// `env` without what must not reach a child. Names or values that
    /// are not UTF-8 are checked lossily (a secret stays a secret).
    pub fn sanitize(
        &self,
        env: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Vec<(OsString, OsString)> {
        env.into_iter()
            .filter(|(k, v)| !self.redacts(&k.to_string_lossy(), &v.to_string_lossy()))
            .collect()
    }
}

/// The opt-outs in force, set when the settings are (re)loaded.
static CURRENT: LazyLock<RwLock<Redaction>> = LazyLock::new(|| RwLock::new(Redaction::default()));

/// Sets the opt-outs every later child gets.
pub fn set_redaction(redaction: Redaction) {
    *CURRENT.write().unwrap_or_else(|e| e.into_inner()) = redaction;
}

/// The daemon's environment as a child may see it now.
pub fn for_child() -> Vec<(OsString, OsString)> {
    CURRENT
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .sanitize(std::env::vars_os())
}

/// The environment of a child working for a session in `workspace`: the
/// daemon's, plus the `.env` file 0.61 reads for that workspace (the first
/// of `.gemini/.env`, `.env` upwards, then `~/.gemini/.env`, `~/.env`;
/// `model/dotenv.rs`), each variable only where the daemon's environment
/// has none (0.61 never overrides one), a project file's excluded
/// variables (`advanced.excludedEnvVars`, default `DEBUG`, `DEBUG_MODE`) and the ones that make a child run
/// other code (`BASH_ENV`, `LD_PRELOAD`...) left out, then sanitized like
/// the rest. The workspace's own `advanced.excludedEnvVars` (its
/// `.gemini/settings.json`) are excluded too, with the user's (0.61 merges
/// the list of both layers). Read at each call: nothing of one workspace
/// stays for the next.
pub fn for_child_in(workspace: &std::path::Path) -> Vec<(OsString, OsString)> {
    let own = workspace_excluded(workspace);
    with_dotenv(|home| crate::model::dotenv::find(workspace, home), &own)
}

/// A workspace's own `advanced.excludedEnvVars` (none when its settings
/// file is missing or cannot be read: the user's list still applies).
fn workspace_excluded(workspace: &std::path::Path) -> Vec<String> {
    let path = workspace.join(".gemini/settings.json");
    std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| crate::jsonc::parse(&text).ok())
        .map(|value| {
            Redaction::from_settings(&value)
                .excluded_env_vars
                .unwrap_or_default()
        })
        .unwrap_or_default()
}

/// The environment of a child of no workspace (a user or extension MCP
/// server): the daemon's, plus the user's own `.env` (`~/.gemini/.env`,
/// then `~/.env`) as [`for_child_in`] adds a workspace's, sanitized.
pub fn for_user() -> Vec<(OsString, OsString)> {
    with_dotenv(crate::model::dotenv::find_home, &[])
}

/// The daemon's environment plus the `.env` file `find` picks (from the
/// home directory), sanitized. Read now: nothing stays for the next child.
fn with_dotenv(
    find: impl FnOnce(&std::path::Path) -> Option<std::path::PathBuf>,
    also_excluded: &[String],
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let redaction = CURRENT.read().unwrap_or_else(|e| e.into_inner()).clone();
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let file = home
        .as_deref()
        .and_then(|home| find(home).map(|f| (f, home)))
        .and_then(|(f, home)| crate::model::dotenv::read(&f, home).ok());
    if let Some(file) = file {
        let mut excluded = redaction.excluded();
        excluded.extend(also_excluded.iter().cloned());
        for (key, _) in &file.vars {
            if is_dangerous_override(key) || env.iter().any(|(k, _)| k == key.as_str()) {
                continue;
            }
            if let Some(value) = file.get(key, &excluded) {
                env.push((key.into(), value.into()));
            }
        }
    }
    redaction.sanitize(env)
}

/// Whether `key=value` is kept from children under the opt-outs in force.
pub fn redacts_now(key: &str, value: &str) -> bool {
    CURRENT
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .redacts(key, value)
}

/// Variables an MCP server's explicit `env` may not set (0.61's
/// `BLOCKED_EXECUTION_ENVS`: they make the child run other code).
pub fn is_dangerous_override(key: &str) -> bool {
    const BLOCKED: &[&str] = &[
        "NODE_OPTIONS",
        "NODE_CLI_FLAGS",
        "_FORCE_NODE_OPTIONS",
        "NODE_PATH",
        "ELECTRON_RUN_AS_NODE",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "RUBYOPT",
        "RUBYLIB",
        "PERL5OPT",
        "PERL5LIB",
        "LD_PRELOAD",
        "LD_AUDIT",
        "LD_DEBUG",
        "LD_PROFILE",
        "LD_LIBRARY_PATH",
        "DYLD_INSERT_LIBRARIES",
        "DYLD_FORCE_FLAT_NAMESPACE",
        "DYLD_LIBRARY_PATH",
        "DYLD_FRAMEWORK_PATH",
        "DYLD_FALLBACK_LIBRARY_PATH",
        "DYLD_FALLBACK_FRAMEWORK_PATH",
        "BASH_ENV",
        "ENV",
        "PERL5DB",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "CLASSPATH",
        "DOTNET_STARTUP_HOOKS",
        "CORECLR_PROFILER_PATH",
        "CORECLR_ENABLE_PROFILING",
    ];
    BLOCKED.contains(&key.to_uppercase().as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn excluded_env_vars_replace_the_default_as_0_61_reads_them() {
        let r = Redaction::from_settings(&json!({}));
        assert_eq!(r.excluded(), vec!["DEBUG", "DEBUG_MODE"]);
        let r = Redaction::from_settings(&json!({"advanced": {"excludedEnvVars": ["NODE_ENV"]}}));
        assert_eq!(r.excluded(), vec!["NODE_ENV"]);
        let r = Redaction::from_settings(&json!({"advanced": {"excludedEnvVars": []}}));
        assert!(r.excluded().is_empty());
    }

    #[test]
    fn secrets_go_ordinary_variables_stay() {
        let r = Redaction::default();
        for (k, v) in [
            ("GEMINI_API_KEY", "x"),
            ("GITHUB_TOKEN", "x"),
            ("db_password", "x"),
            ("DATABASE_URL", "x"),
            ("MY_VAR", "https://u:p@host/"),
            ("OTHER", "AKIAABCDEFGHIJKLMNOP"),
            ("HTTP_AUTHORIZATION", "x"),
        ] {
            assert!(r.redacts(k, v), "{k}={v}");
        }
        for (k, v) in [
            ("PATH", "/bin"),
            ("HOME", "/h"),
            ("EDITOR", "vi"),
            ("GEMINI_CLI_KEY", "x"),
            ("GIT_CONFIG_KEY_0", "core.pager"),
        ] {
            assert!(!r.redacts(k, v), "{k}={v}");
        }
        // A secret value is redacted even under an always-allowed name.
        assert!(r.redacts("HOME", "ghp_0123456789abcdefghijklmnopqrstuvwxyz01"));
    }

    #[test]
    fn opt_outs_from_settings() {
        let r = Redaction::from_settings(&json!({"security": {"environmentVariableRedaction": {
            "allowed": ["my_public_key"], "blocked": ["EDITOR"]}}}));
        assert!(!r.redacts("MY_PUBLIC_KEY", "x"));
        assert!(r.redacts("EDITOR", "vi"));
        assert!(r.redacts("MY_PUBLIC_KEY", "AIzaSy0123456789012345678901234567890ab"));
    }
}
