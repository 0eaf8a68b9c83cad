//! Where the daemon lives: socket and data paths from flags, environment
//! and XDG defaults.

use std::path::PathBuf;

/// The daemon's settings, resolved.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// The Unix socket to listen on (ignored under socket activation).
    pub socket: PathBuf,
    /// Where the session store lives.
    pub data_dir: PathBuf,
    /// How many calls of one session may execute at once.
    pub max_parallel_calls: usize,
    /// How many connections are served at once (`GEMINID_MAX_CONNECTIONS`);
    /// past it the idle are shed (`server/admission.rs`).
    pub max_connections: usize,
    /// How long a new connection has to complete `daemon.initialize`
    /// (`GEMINID_INITIALIZE_TIMEOUT`, seconds; default 10).
    pub initialize_timeout: std::time::Duration,
    /// The bytes all connections' outbound queues may hold together
    /// (`GEMINID_OUTBOUND_BUDGET_MB`; default 64).
    pub outbound_budget: usize,
    /// The user's Gemini directory (`~/.gemini`): global GEMINI.md,
    /// settings and policies.
    pub user_gemini_dir: PathBuf,
    /// The Gemini API, for tools that need it (`google_web_search`).
    pub gemini: GeminiApiConfig,
    /// Admin-tier policy files (`GEMINID_ADMIN_POLICY_DIR`, else
    /// `/etc/gemini-cli/policies`).
    pub admin_policy_dir: PathBuf,
    /// System settings (`GEMINID_SYSTEM_SETTINGS`, else
    /// `/etc/gemini-cli/settings.json`).
    pub system_settings: PathBuf,
    /// Limits of one turn (`GEMINID_MAX_STEPS`, `GEMINID_LOOP_THRESHOLD`).
    pub turn_limits: crate::agent::TurnLimits,
    /// Wall-clock limit of one shell command (`GEMINID_SHELL_TIMEOUT`, in
    /// seconds; default 600).
    pub shell_timeout: std::time::Duration,
    /// How long a loaded session with nothing to do stays in memory
    /// (`GEMINID_SESSION_IDLE`, seconds; default 600; `0`: for good).
    pub session_idle: Option<std::time::Duration>,
    /// How long a question (elicitation, `ask_user`) waits for an answer
    /// before it ends as `cancel` (`GEMINID_QUESTION_TIMEOUT`, seconds;
    /// default 600, the MCP calls' own default).
    pub question_timeout: std::time::Duration,
}

/// Where and how to reach the Gemini API.
#[derive(Debug, Clone)]
pub struct GeminiApiConfig {
    /// `GEMINI_API_KEY`; tools that need the API are not registered without it.
    pub api_key: Option<String>,
    /// `GOOGLE_GEMINI_BASE_URL`, else the public endpoint.
    pub base_url: String,
    /// `GEMINI_MODEL`, else a default model.
    pub model: String,
}

impl GeminiApiConfig {
    /// From the environment, else the user's own `.env` file
    /// (`~/.gemini/.env`, else `~/.env`), read once at start.
    pub fn from_env(home: &std::path::Path) -> Self {
        let file = [home.join(".gemini").join(".env"), home.join(".env")]
            .into_iter()
            .find(|p| p.is_file())
            .and_then(|p| crate::model::dotenv::read(&p, home).ok());
        let var = |name: &str| {
            std::env::var(name)
                .ok()
                .filter(|v| !v.trim().is_empty())
                .or_else(|| file.as_ref()?.get(name, &[]).map(str::to_owned))
        };
        GeminiApiConfig {
            api_key: var("GEMINI_API_KEY"),
            base_url: var("GOOGLE_GEMINI_BASE_URL")
                .unwrap_or_else(|| "https://generativelanguage.googleapis.com".to_owned()),
            model: var("GEMINI_MODEL").unwrap_or_else(|| "gemini-2.5-flash".to_owned()),
        }
    }
}

impl DaemonConfig {
    /// Where long shell outputs are saved, one directory per session.
    pub fn shell_output_dir(&self) -> PathBuf {
        self.data_dir.join("shell-output")
    }

    /// Where edit calls' checkpoints are kept, one directory per session.
    pub fn checkpoints_dir(&self) -> PathBuf {
        self.data_dir.join("checkpoints")
    }

    /// Where policy comes from, for this configuration.
    pub fn policy_sources(&self) -> crate::policy::PolicySources {
        crate::policy::PolicySources {
            user_dir: self.user_gemini_dir.join("policies"),
            admin_dir: self.admin_policy_dir.clone(),
            extensions_dir: Some(self.user_gemini_dir.join("extensions")),
            settings_files: vec![
                self.user_gemini_dir.join("settings.json"),
                self.system_settings.clone(),
            ],
        }
    }

    /// Defaults from the environment: `$XDG_RUNTIME_DIR/geminid.sock` and
    /// `$XDG_DATA_HOME/geminid` (with the usual fallbacks).
    pub fn from_env() -> Self {
        DaemonConfig {
            socket: geminid_protocol::paths::default_socket(),
            data_dir: default_data_dir(),
            max_parallel_calls: 16,
            max_connections: env_number("GEMINID_MAX_CONNECTIONS")
                .map(|n| n as usize)
                .unwrap_or(1024),
            initialize_timeout: env_seconds("GEMINID_INITIALIZE_TIMEOUT")
                .unwrap_or(std::time::Duration::from_secs(10)),
            outbound_budget: env_number("GEMINID_OUTBOUND_BUDGET_MB")
                .map(|mb| {
                    usize::try_from(mb)
                        .unwrap_or(usize::MAX)
                        .saturating_mul(1024 * 1024)
                })
                .unwrap_or(crate::rpc::DEFAULT_OUTBOUND_BUDGET),
            user_gemini_dir: home().join(".gemini"),
            gemini: GeminiApiConfig::from_env(&home()),
            admin_policy_dir: env_path("GEMINID_ADMIN_POLICY_DIR")
                .unwrap_or_else(|| PathBuf::from("/etc/gemini-cli/policies")),
            system_settings: env_path("GEMINID_SYSTEM_SETTINGS")
                .unwrap_or_else(|| PathBuf::from("/etc/gemini-cli/settings.json")),
            turn_limits: turn_limits_from_env(),
            shell_timeout: env_seconds("GEMINID_SHELL_TIMEOUT")
                .unwrap_or(std::time::Duration::from_secs(600)),
            session_idle: session_idle_from_env(),
            question_timeout: env_seconds("GEMINID_QUESTION_TIMEOUT")
                .unwrap_or(std::time::Duration::from_secs(600)),
        }
    }
}

/// `$XDG_DATA_HOME/geminid`, else `~/.local/share/geminid`.
pub fn default_data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir).join("geminid");
    }
    home().join(".local/share/geminid")
}

fn turn_limits_from_env() -> crate::agent::TurnLimits {
    let defaults = crate::agent::TurnLimits::default();
    let number = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
            .filter(|n| *n > 0)
    };
    crate::agent::TurnLimits {
        max_steps: number("GEMINID_MAX_STEPS").unwrap_or(defaults.max_steps),
        loop_threshold: number("GEMINID_LOOP_THRESHOLD").unwrap_or(defaults.loop_threshold),
    }
}

/// `GEMINID_SESSION_IDLE`: seconds (fractions allowed), `0` for never;
/// unset or unreadable: 10 minutes.
fn session_idle_from_env() -> Option<std::time::Duration> {
    const DEFAULT: std::time::Duration = std::time::Duration::from_secs(600);
    let Ok(text) = std::env::var("GEMINID_SESSION_IDLE") else {
        return Some(DEFAULT);
    };
    match text.trim().parse::<f64>() {
        Ok(0.0) => None,
        Ok(s) if s.is_finite() && s > 0.0 => Some(std::time::Duration::from_secs_f64(s)),
        _ => {
            tracing::warn!(value = %text, "GEMINID_SESSION_IDLE is not a number of seconds; using 600");
            Some(DEFAULT)
        }
    }
}

/// A positive whole number from the environment.
fn env_number(name: &str) -> Option<u64> {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|n| *n > 0)
}

/// A positive number of seconds from the environment.
fn env_seconds(name: &str) -> Option<std::time::Duration> {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(std::time::Duration::from_secs_f64)
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// Creates `dir` (and missing parents) with mode 0700, and takes group and
/// other permissions away from it if it already existed: the session store
/// holds file contents and commands, readable by the owner only.
pub fn ensure_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let mode = std::fs::metadata(dir)?.permissions().mode();
    if mode & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode & 0o700))?;
    }
    Ok(())
}
