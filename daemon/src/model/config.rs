//! Which model to talk to, and how to prove who we are, from the
//! environment, the `.env` file Gemini CLI 0.61 would read for the
//! workspace (`dotenv.rs`), and the user's `settings.json`; and the client
//! built for it.
//!
//! Each variable is looked up in the daemon's environment first, then in
//! that `.env` file (0.61 never lets a file override the environment).
//!
//! * OpenAI-compatible, when settings have `geminid.openaiCompatible
//!   {baseUrl, model, apiKey?, apiKeyEnv?}` (the key is optional).
//! * Vertex AI, when `security.auth.selectedType` is `vertex-ai`, or it is
//!   unset and `GOOGLE_GENAI_USE_VERTEXAI=true`: `GOOGLE_API_KEY` (express
//!   mode), else `GOOGLE_CLOUD_PROJECT` (or `GOOGLE_CLOUD_PROJECT_ID`) and
//!   `GOOGLE_CLOUD_LOCATION` with Application Default Credentials
//!   (`google_auth.rs`); `GOOGLE_VERTEX_BASE_URL` moves the endpoint.
//! * The Gemini API otherwise: `GEMINI_API_KEY`, else `GOOGLE_API_KEY`,
//!   else `geminid.gemini.apiKey`; `GOOGLE_GEMINI_BASE_URL` (else
//!   `geminid.gemini.baseUrl`).
//! * The model: `GEMINI_MODEL`, else `model.name`, else
//!   [`DEFAULT_GEMINI_MODEL`].
//!
//! Every file involved is looked at again (a `stat`) when a prompt needs
//! the model, so a new key, file or setting needs no restart; nothing is
//! read while the daemon is idle.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde_json::Value;

use super::dotenv::{self, DotEnv};
use super::gemini::{Credential, GeminiModel};
use super::google_auth::{self, Credentials, TokenSource};
use super::openai::OpenAiModel;
use super::vertex::{self, VertexTarget};
use super::{Model, ModelError, ModelErrorKind};

pub const DEFAULT_GEMINI_MODEL: &str = "gemini-2.5-flash";
pub const DEFAULT_GEMINI_BASE_URL: &str = "https://generativelanguage.googleapis.com";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    Gemini,
    VertexAi,
    OpenAiCompatible,
}

impl Provider {
    /// A provider by its label.
    pub fn from_label(label: &str) -> Option<Provider> {
        [
            Provider::Gemini,
            Provider::VertexAi,
            Provider::OpenAiCompatible,
        ]
        .into_iter()
        .find(|p| p.label() == label)
    }

    pub fn label(self) -> &'static str {
        match self {
            Provider::Gemini => "gemini",
            Provider::VertexAi => "vertex-ai",
            Provider::OpenAiCompatible => "openai-compatible",
        }
    }
}

/// A session's choice of model: `provider:model` picks another provider
/// the settings configure (`vertex-ai:gemini-2.5-pro`,
/// `openai-compatible:qwen`, `gemini:gemini-2.5-flash`); a bare name keeps
/// the daemon's provider. An empty model after the prefix keeps that
/// provider's own model.
pub fn parse_choice(choice: &str) -> (Option<Provider>, &str) {
    match choice.split_once(':') {
        Some((label, model)) => match Provider::from_label(label) {
            Some(provider) => (Some(provider), model.trim()),
            None => (None, choice),
        },
        None => (None, choice),
    }
}

/// How Vertex AI requests are authorized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VertexAuth {
    /// Express mode: `GOOGLE_API_KEY` (in `ModelConfig::api_key`).
    ApiKey,
    /// Application Default Credentials, read from `path`.
    Adc {
        path: PathBuf,
        credentials: Credentials,
    },
    /// Why neither is usable.
    Missing(String),
}

/// A resolved model configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelConfig {
    pub provider: Provider,
    pub model: String,
    pub base_url: String,
    pub api_key: Option<String>,
    /// Where the key (or the credentials) come from, or would, for people.
    pub key_source: String,
    /// Vertex AI only: where requests go and how they are authorized.
    pub vertex: Option<(VertexTarget, VertexAuth)>,
    /// Things in the user's files that were not used, and why.
    pub notes: Vec<String>,
}

/// Where variables are looked up: the daemon's environment, then one
/// `.env` file.
pub struct Lookup<'a> {
    pub process: &'a dyn Fn(&str) -> Option<String>,
    pub file: Option<&'a DotEnv>,
    /// `advanced.excludedEnvVars`.
    pub excluded: Vec<String>,
}

impl Lookup<'_> {
    /// The value and where it came from (`NAME`, or `NAME in <file>`).
    pub fn get(&self, name: &str) -> Option<(String, String)> {
        if let Some(value) = (self.process)(name) {
            return Some((value, name.to_owned()));
        }
        let file = self.file?;
        file.get(name, &self.excluded)
            .map(|v| (v.to_owned(), format!("{name} in {}", file.path.display())))
    }

    fn value(&self, name: &str) -> Option<String> {
        self.get(name).map(|(v, _)| v)
    }
}

impl ModelConfig {
    /// Resolves the configuration from `env`, a settings document and the
    /// home directory (where gcloud keeps its credentials).
    pub fn resolve(env: &Lookup<'_>, settings: &Value, home: &Path) -> ModelConfig {
        Self::resolve_as(env, settings, home, None)
    }

    /// Like [`ModelConfig::resolve`], with `provider` chosen instead of the
    /// one the settings and environment select.
    pub fn resolve_as(
        env: &Lookup<'_>,
        settings: &Value,
        home: &Path,
        provider: Option<Provider>,
    ) -> ModelConfig {
        let ours = &settings["geminid"];
        let compat = &ours["openaiCompatible"];
        let mut notes = Vec::new();
        if let Some(file) = env.file {
            let refused = file.refused(&env.excluded);
            if !refused.is_empty() {
                notes.push(format!(
                    "{} sets {} but a workspace's .env file may not (set it in the daemon's \
                     environment or ~/.gemini/.env)",
                    file.path.display(),
                    refused.join(", ")
                ));
            }
        }
        let compatible = match provider {
            Some(p) => p == Provider::OpenAiCompatible,
            None => compat.is_object(),
        };
        if compatible {
            let key_env = compat["apiKeyEnv"].as_str().unwrap_or("OPENAI_API_KEY");
            let (api_key, key_source) = match compat["apiKey"].as_str() {
                Some(key) => (
                    Some(key.to_owned()),
                    "settings geminid.openaiCompatible.apiKey".to_owned(),
                ),
                None => match env.get(key_env) {
                    Some((key, source)) => (Some(key), source),
                    None => (None, key_env.to_owned()),
                },
            };
            return ModelConfig {
                provider: Provider::OpenAiCompatible,
                model: compat["model"].as_str().unwrap_or_default().to_owned(),
                base_url: compat["baseUrl"].as_str().unwrap_or_default().to_owned(),
                api_key,
                key_source,
                vertex: None,
                notes,
            };
        }
        let model = env
            .value("GEMINI_MODEL")
            .or_else(|| settings["model"]["name"].as_str().map(str::to_owned))
            .unwrap_or_else(|| DEFAULT_GEMINI_MODEL.to_owned());
        let selected = settings["security"]["auth"]["selectedType"].as_str();
        let vertex = match (provider, selected) {
            (Some(p), _) => p == Provider::VertexAi,
            (None, selected) => match selected {
                Some("vertex-ai") => true,
                Some("gemini-api-key") => false,
                Some(other) => {
                    notes.push(format!(
                    "settings security.auth.selectedType `{other}` (sign-in with Google) is not \
                     available in geminid; using an API key or Vertex AI from the environment"
                ));
                    env.value("GOOGLE_GENAI_USE_VERTEXAI").as_deref() == Some("true")
                }
                None => env.value("GOOGLE_GENAI_USE_VERTEXAI").as_deref() == Some("true"),
            },
        };
        if vertex {
            return Self::vertex(env, model, home, notes);
        }
        let (api_key, key_source) = match env
            .get("GEMINI_API_KEY")
            .or_else(|| env.get("GOOGLE_API_KEY"))
        {
            Some((key, source)) => (Some(key), source),
            None => match ours["gemini"]["apiKey"].as_str() {
                Some(key) => (
                    Some(key.to_owned()),
                    "settings geminid.gemini.apiKey".to_owned(),
                ),
                None => (None, "GEMINI_API_KEY".to_owned()),
            },
        };
        ModelConfig {
            provider: Provider::Gemini,
            model,
            base_url: env
                .value("GOOGLE_GEMINI_BASE_URL")
                .or_else(|| ours["gemini"]["baseUrl"].as_str().map(str::to_owned))
                .unwrap_or_else(|| DEFAULT_GEMINI_BASE_URL.to_owned()),
            api_key,
            key_source,
            vertex: None,
            notes,
        }
    }

    fn vertex(env: &Lookup<'_>, model: String, home: &Path, notes: Vec<String>) -> ModelConfig {
        let project = env
            .value("GOOGLE_CLOUD_PROJECT")
            .or_else(|| env.value("GOOGLE_CLOUD_PROJECT_ID"));
        let location = env.value("GOOGLE_CLOUD_LOCATION").unwrap_or_default();
        let base = env.value("GOOGLE_VERTEX_BASE_URL");
        let (api_key, key_source, target, auth) = match env.get("GOOGLE_API_KEY") {
            Some((key, source)) => (
                Some(key),
                source,
                VertexTarget::new(base, None, &location),
                VertexAuth::ApiKey,
            ),
            None => {
                let target = VertexTarget::new(base, project.clone(), &location);
                let lookup = |name: &str| env.value(name);
                let auth = match (&project, location.is_empty()) {
                    (None, _) | (_, true) => VertexAuth::Missing(
                        "Vertex AI needs GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION \
                         (or GOOGLE_API_KEY for express mode), in the daemon's environment or \
                         ~/.gemini/.env"
                            .to_owned(),
                    ),
                    _ => match google_auth::adc_path(&lookup, home) {
                        None => VertexAuth::Missing(
                            "Vertex AI needs Google credentials: set GOOGLE_APPLICATION_CREDENTIALS \
                             to a service-account key file, or run `gcloud auth \
                             application-default login`"
                                .to_owned(),
                        ),
                        Some(path) => match google_auth::read_credentials(&path) {
                            Ok(credentials) => VertexAuth::Adc { path, credentials },
                            Err(problem) => VertexAuth::Missing(problem),
                        },
                    },
                };
                let source = match &auth {
                    VertexAuth::Adc { path, credentials } => match credentials {
                        Credentials::ServiceAccount { client_email, .. } => {
                            format!("service account {client_email} in {}", path.display())
                        }
                        Credentials::AuthorizedUser { .. } => {
                            format!("gcloud login in {}", path.display())
                        }
                    },
                    _ => "Application Default Credentials".to_owned(),
                };
                (None, source, target, auth)
            }
        };
        ModelConfig {
            provider: Provider::VertexAi,
            base_url: target.base_url.clone(),
            model,
            api_key,
            key_source,
            vertex: Some((target, auth)),
            notes,
        }
    }

    /// Why a prompt cannot be sent with this configuration, if it cannot.
    pub fn problem(&self) -> Option<String> {
        match self.provider {
            Provider::Gemini if self.api_key.is_none() => Some(
                "no model is configured: put `GEMINI_API_KEY=<your key>` in ~/.gemini/.env \
                 (read at the next prompt, no restart needed) or in the daemon's environment, \
                 or set GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT and \
                 GOOGLE_CLOUD_LOCATION for Vertex AI, or point `geminid.openaiCompatible` \
                 {baseUrl, model} in ~/.gemini/settings.json at a local server; tools and \
                 direct calls work without one"
                    .to_owned(),
            ),
            Provider::VertexAi => match &self.vertex {
                Some((_, VertexAuth::Missing(why))) => Some(why.clone()),
                _ => None,
            },
            Provider::OpenAiCompatible if self.base_url.is_empty() || self.model.is_empty() => {
                Some(
                    "settings `geminid.openaiCompatible` needs both `baseUrl` and `model`"
                        .to_owned(),
                )
            }
            Provider::Gemini | Provider::OpenAiCompatible => None,
        }
    }

    fn build(&self, http: reqwest::Client, tokens: &TokenSources) -> Arc<dyn Model> {
        match (&self.provider, &self.vertex) {
            (Provider::VertexAi, Some((target, auth))) => {
                let credential = match auth {
                    VertexAuth::Adc { path, credentials } => {
                        Credential::Bearer(tokens.get(path, credentials, &http))
                    }
                    VertexAuth::ApiKey | VertexAuth::Missing(_) => {
                        Credential::ApiKey(self.api_key.clone().unwrap_or_default())
                    }
                };
                Arc::new(GeminiModel::at(
                    http,
                    &target.base_url,
                    target.stream_url(&self.model),
                    &self.model,
                    credential,
                    vertex::refusal,
                ))
            }
            (Provider::OpenAiCompatible, _) => Arc::new(OpenAiModel::new(
                http,
                &self.base_url,
                &self.model,
                self.api_key.as_deref(),
            )),
            (Provider::Gemini | Provider::VertexAi, _) => Arc::new(GeminiModel::new(
                http,
                &self.base_url,
                &self.model,
                self.api_key.as_deref().unwrap_or_default(),
            )),
        }
    }
}

/// One token source per credentials file, shared by every model built
/// from it, so sessions share tokens.
#[derive(Default)]
struct TokenSources(Mutex<HashMap<PathBuf, Arc<TokenSource>>>);

impl TokenSources {
    fn get(
        &self,
        path: &Path,
        credentials: &Credentials,
        http: &reqwest::Client,
    ) -> Arc<TokenSource> {
        let mut sources = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match sources.get(path) {
            Some(source) if source.credentials() == credentials => source.clone(),
            _ => {
                let source = Arc::new(TokenSource::new(
                    path.to_path_buf(),
                    credentials.clone(),
                    http.clone(),
                ));
                sources.insert(path.to_path_buf(), source.clone());
                source
            }
        }
    }
}

/// The daemon's models: the configuration is resolved again when a file
/// it came from changed; a client is rebuilt only when its configuration
/// did.
pub struct ModelSlot {
    settings_file: PathBuf,
    home: PathBuf,
    http: reqwest::Client,
    /// By the `.env` file a workspace sees (none: `None`).
    current: Mutex<HashMap<Option<PathBuf>, Cached>>,
    tokens: TokenSources,
}

/// What the files looked like when a configuration was resolved.
type Stamp = Vec<(PathBuf, Option<FileStamp>)>;

/// A file's modification time, size and inode: file times are coarse
/// (a few milliseconds), so two writes in a row may share one.
type FileStamp = (SystemTime, u64, u64);

/// The model built for the files as they were at `stamp` (settings and
/// `.env`) and `credentials` (the Vertex AI credentials file, if read).
struct Cached {
    stamp: Stamp,
    credentials: Stamp,
    config: ModelConfig,
    model: Arc<dyn Model>,
}

impl ModelSlot {
    /// A slot reading `settings_file`, the `.env` files of Gemini CLI and
    /// the process environment; `home` is the user's home directory.
    pub fn new(settings_file: &Path, home: &Path) -> Self {
        let http = reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(15))
            .tcp_nodelay(true)
            // Streams may pause (thinking); a stalled body still ends.
            .read_timeout(std::time::Duration::from_secs(300))
            .user_agent(concat!("geminid/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_default();
        ModelSlot {
            settings_file: settings_file.to_path_buf(),
            home: home.to_path_buf(),
            http,
            current: Mutex::new(HashMap::new()),
            tokens: TokenSources::default(),
        }
    }

    /// The configuration a session in `workspace` gets now (`None`: the
    /// daemon's own, from the home directory's files).
    pub fn config(&self, workspace: Option<&Path>) -> ModelConfig {
        self.refresh(workspace).0
    }

    /// The settings file as it is now (`Null` when absent or broken).
    pub fn settings(&self) -> Value {
        read_settings(&self.settings_file)
    }

    /// The model a session in `workspace` uses now, or why there is none.
    pub fn model(
        &self,
        workspace: Option<&Path>,
    ) -> Result<(ModelConfig, Arc<dyn Model>), ModelError> {
        let (config, model) = self.refresh(workspace);
        if let Some(problem) = config.problem() {
            return Err(ModelError::new(ModelErrorKind::NotConfigured, problem));
        }
        Ok((config, model))
    }

    /// Like [`ModelSlot::model`], for a session's choice instead of the
    /// configured model when given: a bare name keeps the provider,
    /// credentials and endpoint; `provider:model` ([`parse_choice`]) uses
    /// another provider the user's files configure.
    pub fn model_named(
        &self,
        workspace: Option<&Path>,
        name: Option<&str>,
    ) -> Result<(ModelConfig, Arc<dyn Model>), ModelError> {
        let (config, model) = self.choose(workspace, name)?;
        let model = model.unwrap_or_else(|| config.build(self.http.clone(), &self.tokens));
        Ok((config, model))
    }

    /// Whether a session's choice can run now (what [`ModelSlot::model_named`]
    /// would refuse), without building a client.
    pub fn check_named(
        &self,
        workspace: Option<&Path>,
        name: Option<&str>,
    ) -> Result<(), ModelError> {
        self.choose(workspace, name).map(|_| ())
    }

    /// The configuration a session's choice gets now, with the cached
    /// client when it is the daemon's own; or why it cannot run.
    fn choose(
        &self,
        workspace: Option<&Path>,
        name: Option<&str>,
    ) -> Result<(ModelConfig, Option<Arc<dyn Model>>), ModelError> {
        let (provider, name) = match name.map(parse_choice) {
            Some((provider, name)) => (provider, Some(name).filter(|n| !n.is_empty())),
            None => (None, None),
        };
        let (default, cached) = self.refresh(workspace);
        let (mut config, mut model) = match provider {
            Some(provider) if provider != default.provider => {
                let env_file = dotenv::find(workspace.unwrap_or(&self.home), &self.home);
                let config = self.resolve_fresh(env_file.as_deref(), Some(provider));
                if let Some(problem) = config.problem() {
                    return Err(ModelError::new(
                        ModelErrorKind::NotConfigured,
                        format!("the session chose {}: {problem}", provider.label()),
                    ));
                }
                (config, None)
            }
            _ => {
                if let Some(problem) = default.problem() {
                    return Err(ModelError::new(ModelErrorKind::NotConfigured, problem));
                }
                (default, Some(cached))
            }
        };
        if let Some(name) = name.filter(|n| *n != config.model) {
            config.model = name.to_owned();
            model = None;
        }
        Ok((config, model))
    }

    /// Resolves from the files as they are now, without the cache.
    fn resolve_fresh(&self, env_file: Option<&Path>, provider: Option<Provider>) -> ModelConfig {
        let settings = read_settings(&self.settings_file);
        let file = env_file.and_then(|path| {
            dotenv::read(path, &self.home)
                .map_err(
                    |e| tracing::warn!(path = %path.display(), error = %e, "cannot read .env file"),
                )
                .ok()
        });
        let lookup = Lookup {
            process: &process_env,
            file: file.as_ref(),
            excluded: excluded_vars(&settings),
        };
        ModelConfig::resolve_as(&lookup, &settings, &self.home, provider)
    }

    fn refresh(&self, workspace: Option<&Path>) -> (ModelConfig, Arc<dyn Model>) {
        let env_file = dotenv::find(workspace.unwrap_or(&self.home), &self.home);
        let mut stamp: Stamp = vec![(self.settings_file.clone(), modified(&self.settings_file))];
        if let Some(file) = &env_file {
            stamp.push((file.clone(), modified(file)));
        }
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let old = current.remove(&env_file);
        let cached = match old {
            // A configuration that cannot work is looked at again each
            // time: the fix may be a file none of the stamps covers.
            Some(cached)
                if cached.stamp == stamp
                    && cached.config.problem().is_none()
                    && unchanged(&cached.credentials) =>
            {
                cached
            }
            old => {
                let config = self.resolve_fresh(env_file.as_deref(), None);
                for note in &config.notes {
                    if old.as_ref().is_none_or(|o| !o.config.notes.contains(note)) {
                        tracing::warn!("{note}");
                    }
                }
                let model = match old {
                    Some(old) if old.config == config => old.model,
                    _ => config.build(self.http.clone(), &self.tokens),
                };
                let credentials = match &config.vertex {
                    Some((_, VertexAuth::Adc { path, .. })) => vec![(path.clone(), modified(path))],
                    _ => Vec::new(),
                };
                Cached {
                    stamp,
                    credentials,
                    config,
                    model,
                }
            }
        };
        let now = (cached.config.clone(), cached.model.clone());
        current.insert(env_file, cached);
        now
    }
}

/// Whether every file in `stamp` is as it was.
fn unchanged(stamp: &Stamp) -> bool {
    stamp.iter().all(|(path, when)| modified(path) == *when)
}

fn modified(path: &Path) -> Option<FileStamp> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len(), meta.ino()))
}

fn excluded_vars(settings: &Value) -> Vec<String> {
    match settings["advanced"]["excludedEnvVars"].as_array() {
        Some(list) => list
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        None => dotenv::DEFAULT_EXCLUDED
            .iter()
            .map(|s| (*s).to_owned())
            .collect(),
    }
}

fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn read_settings(path: &Path) -> Value {
    match std::fs::read_to_string(path) {
        // JSON with comments, as 0.61; a broken file is reported once, with
        // its line, by the configuration's problems (`daemon.status`).
        Ok(text) => crate::jsonc::parse(&text).unwrap_or_else(|e| {
            tracing::debug!(path = %path.display(), error = %e, "settings are not valid JSON; model settings ignored");
            Value::Null
        }),
        Err(_) => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    fn resolve(
        process: &dyn Fn(&str) -> Option<String>,
        file: Option<&DotEnv>,
        settings: &Value,
    ) -> ModelConfig {
        let lookup = Lookup {
            process,
            file,
            excluded: excluded_vars(settings),
        };
        ModelConfig::resolve(&lookup, settings, Path::new("/nonexistent-home"))
    }

    fn file(path: &str, text: &str) -> DotEnv {
        let home = Path::new("/home/u");
        let mut env = DotEnv {
            path: path.into(),
            vars: dotenv::parse(text),
            ..DotEnv::default()
        };
        env.project = !path.contains("/.gemini/");
        env.users_own = Path::new(path).parent() == Some(home)
            || Path::new(path).parent() == Some(&home.join(".gemini"));
        env
    }

    #[test]
    fn gemini_from_env_beats_settings() {
        let settings = json!({"model": {"name": "gemini-2.5-pro"}, "geminid": {"gemini": {"apiKey": "s", "baseUrl": "http://b"}}});
        let c = resolve(
            &env(&[("GEMINI_API_KEY", "k"), ("GEMINI_MODEL", "m")]),
            None,
            &settings,
        );
        assert_eq!(
            (
                c.provider,
                c.model.as_str(),
                c.api_key.as_deref(),
                c.base_url.as_str()
            ),
            (Provider::Gemini, "m", Some("k"), "http://b")
        );
        let c = resolve(&env(&[]), None, &settings);
        assert_eq!(
            (c.model.as_str(), c.api_key.as_deref()),
            ("gemini-2.5-pro", Some("s"))
        );
        assert!(c.problem().is_none());
    }

    #[test]
    fn the_environment_wins_over_the_file_and_the_file_over_settings() {
        let settings = json!({"geminid": {"gemini": {"apiKey": "from-settings"}}});
        let dot = file("/home/u/.gemini/.env", "GEMINI_API_KEY=from-file\n");
        let c = resolve(&env(&[]), Some(&dot), &settings);
        assert_eq!(c.api_key.as_deref(), Some("from-file"));
        assert_eq!(c.key_source, "GEMINI_API_KEY in /home/u/.gemini/.env");
        let c = resolve(
            &env(&[("GEMINI_API_KEY", "exported")]),
            Some(&dot),
            &settings,
        );
        assert_eq!(c.api_key.as_deref(), Some("exported"));
        assert_eq!(c.key_source, "GEMINI_API_KEY");
        let google = file("/home/u/.env", "GOOGLE_API_KEY=g\n");
        let c = resolve(&env(&[]), Some(&google), &Value::Null);
        assert_eq!(
            (c.provider, c.api_key.as_deref()),
            (Provider::Gemini, Some("g"))
        );
    }

    #[test]
    fn a_workspace_file_cannot_move_the_endpoint_and_it_is_said() {
        let dot = file(
            "/home/u/repo/.env",
            "GEMINI_API_KEY=k\nGOOGLE_GEMINI_BASE_URL=https://attacker.example\n",
        );
        let c = resolve(&env(&[]), Some(&dot), &Value::Null);
        assert_eq!(c.base_url, DEFAULT_GEMINI_BASE_URL);
        assert_eq!(c.api_key.as_deref(), Some("k"));
        assert!(
            c.notes.iter().any(|n| n.contains("GOOGLE_GEMINI_BASE_URL")),
            "{:?}",
            c.notes
        );
    }

    #[test]
    fn vertex_express_adc_and_what_is_missing() {
        let c = resolve(
            &env(&[("GOOGLE_GENAI_USE_VERTEXAI", "true")]),
            None,
            &Value::Null,
        );
        assert_eq!(c.provider, Provider::VertexAi);
        let problem = c.problem().unwrap();
        assert!(problem.contains("GOOGLE_CLOUD_PROJECT"), "{problem}");
        let express = resolve(
            &env(&[
                ("GOOGLE_GENAI_USE_VERTEXAI", "true"),
                ("GOOGLE_API_KEY", "x"),
            ]),
            None,
            &Value::Null,
        );
        assert!(express.problem().is_none());
        assert!(matches!(express.vertex, Some((_, VertexAuth::ApiKey))));
        let no_creds = resolve(
            &env(&[
                ("GOOGLE_GENAI_USE_VERTEXAI", "true"),
                ("GOOGLE_CLOUD_PROJECT", "p"),
                ("GOOGLE_CLOUD_LOCATION", "us-central1"),
                ("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/key.json"),
            ]),
            None,
            &Value::Null,
        );
        let problem = no_creds.problem().unwrap();
        assert!(problem.contains("/nonexistent/key.json"), "{problem}");
        // settings choose the provider over the environment, as in 0.61
        let chosen = json!({"security": {"auth": {"selectedType": "gemini-api-key"}}});
        let c = resolve(
            &env(&[
                ("GOOGLE_GENAI_USE_VERTEXAI", "true"),
                ("GEMINI_API_KEY", "k"),
            ]),
            None,
            &chosen,
        );
        assert_eq!(c.provider, Provider::Gemini);
    }

    #[test]
    fn a_session_may_name_another_provider() {
        assert_eq!(
            parse_choice("vertex-ai:gemini-2.5-pro"),
            (Some(Provider::VertexAi), "gemini-2.5-pro")
        );
        assert_eq!(parse_choice("gemini:"), (Some(Provider::Gemini), ""));
        assert_eq!(parse_choice("gemini-2.5-pro"), (None, "gemini-2.5-pro"));
        // A colon that names no provider is part of the model's name.
        assert_eq!(parse_choice("ollama:qwen"), (None, "ollama:qwen"));
        let settings =
            json!({"geminid": {"openaiCompatible": {"baseUrl": "http://l/v1", "model": "qwen"}}});
        let env_ = env(&[("GEMINI_API_KEY", "k")]);
        let lookup = Lookup {
            process: &env_,
            file: None,
            excluded: Vec::new(),
        };
        let home = Path::new("/nonexistent-home");
        let default = ModelConfig::resolve(&lookup, &settings, home);
        assert_eq!(default.provider, Provider::OpenAiCompatible);
        let gemini = ModelConfig::resolve_as(&lookup, &settings, home, Some(Provider::Gemini));
        assert_eq!(
            (gemini.provider, gemini.api_key.as_deref()),
            (Provider::Gemini, Some("k"))
        );
        let vertex = ModelConfig::resolve_as(&lookup, &settings, home, Some(Provider::VertexAi));
        assert!(vertex.problem().unwrap().contains("GOOGLE_CLOUD_PROJECT"));
        let none = ModelConfig::resolve_as(
            &lookup,
            &Value::Null,
            home,
            Some(Provider::OpenAiCompatible),
        );
        assert!(none.problem().unwrap().contains("openaiCompatible"));
    }

    #[test]
    fn no_key_is_a_problem_that_says_how_to_fix_it() {
        let c = resolve(&env(&[]), None, &Value::Null);
        assert_eq!(c.model, DEFAULT_GEMINI_MODEL);
        let problem = c.problem().unwrap();
        assert!(
            problem.contains("~/.gemini/.env") && problem.contains("openaiCompatible"),
            "{problem}"
        );
    }

    #[test]
    fn openai_compatible_from_settings() {
        let settings = json!({"geminid": {"openaiCompatible": {"baseUrl": "http://127.0.0.1:11434/v1", "model": "qwen", "apiKeyEnv": "MY_KEY"}}});
        let c = resolve(
            &env(&[("MY_KEY", "x"), ("GEMINI_API_KEY", "g")]),
            None,
            &settings,
        );
        assert_eq!(c.provider, Provider::OpenAiCompatible);
        assert_eq!(
            (
                c.model.as_str(),
                c.api_key.as_deref(),
                c.key_source.as_str()
            ),
            ("qwen", Some("x"), "MY_KEY")
        );
        assert!(c.problem().is_none());
        let half = json!({"geminid": {"openaiCompatible": {"model": "qwen"}}});
        assert!(resolve(&env(&[]), None, &half).problem().is_some());
    }
}
