//! Which model to talk to, from the environment and the user's
//! `settings.json`, and the client built for it.
//!
//! * Gemini API (the default): `GEMINI_API_KEY` (else
//!   `geminid.gemini.apiKey`), `GOOGLE_GEMINI_BASE_URL` (else
//!   `geminid.gemini.baseUrl`, else the public endpoint), `GEMINI_MODEL`
//!   (else `model.name`, else [`DEFAULT_GEMINI_MODEL`]).
//! * An OpenAI-compatible server when settings have
//!   `geminid.openaiCompatible {baseUrl, model, apiKey?, apiKeyEnv?}`;
//!   the key is optional (local servers need none).
//!
//! The settings file is read again when it changes, so a new model or key
//! needs no restart.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde_json::Value;

use super::gemini::GeminiModel;
use super::openai::OpenAiModel;
use super::{Model, ModelError, ModelErrorKind};

pub const DEFAULT_GEMINI_MODEL: &str = "gemini-2.5-flash";
pub const DEFAULT_GEMINI_BASE_URL: &str = "https://generativelanguage.googleapis.com";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    Gemini,
    OpenAiCompatible,
}

impl Provider {
    pub fn label(self) -> &'static str {
        match self {
            Provider::Gemini => "gemini",
            Provider::OpenAiCompatible => "openai-compatible",
        }
    }
}

/// A resolved model configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelConfig {
    pub provider: Provider,
    pub model: String,
    pub base_url: String,
    pub api_key: Option<String>,
    /// Where the key comes from (or would), for people.
    pub key_source: String,
}

impl ModelConfig {
    /// Resolves the configuration from `env` and a settings document.
    pub fn resolve(env: &dyn Fn(&str) -> Option<String>, settings: &Value) -> ModelConfig {
        let ours = &settings["geminid"];
        let compat = &ours["openaiCompatible"];
        if compat.is_object() {
            let key_env = compat["apiKeyEnv"].as_str().unwrap_or("OPENAI_API_KEY");
            let (api_key, key_source) = match compat["apiKey"].as_str() {
                Some(key) => (
                    Some(key.to_owned()),
                    "settings geminid.openaiCompatible.apiKey".to_owned(),
                ),
                None => (env(key_env), key_env.to_owned()),
            };
            return ModelConfig {
                provider: Provider::OpenAiCompatible,
                model: compat["model"].as_str().unwrap_or_default().to_owned(),
                base_url: compat["baseUrl"].as_str().unwrap_or_default().to_owned(),
                api_key,
                key_source,
            };
        }
        let (api_key, key_source) = match env("GEMINI_API_KEY") {
            Some(key) => (Some(key), "GEMINI_API_KEY".to_owned()),
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
            model: env("GEMINI_MODEL")
                .or_else(|| settings["model"]["name"].as_str().map(str::to_owned))
                .unwrap_or_else(|| DEFAULT_GEMINI_MODEL.to_owned()),
            base_url: env("GOOGLE_GEMINI_BASE_URL")
                .or_else(|| ours["gemini"]["baseUrl"].as_str().map(str::to_owned))
                .unwrap_or_else(|| DEFAULT_GEMINI_BASE_URL.to_owned()),
            api_key,
            key_source,
        }
    }

    /// Why a prompt cannot be sent with this configuration, if it cannot.
    pub fn problem(&self) -> Option<String> {
        match self.provider {
            Provider::Gemini if self.api_key.is_none() => Some(
                "no model is configured: set GEMINI_API_KEY in the daemon's environment \
                 (or `geminid.gemini.apiKey` in ~/.gemini/settings.json), or point \
                 `geminid.openaiCompatible` {baseUrl, model} at a local server; \
                 tools and direct calls work without one"
                    .to_owned(),
            ),
            Provider::OpenAiCompatible if self.base_url.is_empty() || self.model.is_empty() => {
                Some(
                    "settings `geminid.openaiCompatible` needs both `baseUrl` and `model`"
                        .to_owned(),
                )
            }
            Provider::Gemini | Provider::OpenAiCompatible => None,
        }
    }

    fn build(&self, client: reqwest::Client) -> Arc<dyn Model> {
        match self.provider {
            Provider::Gemini => Arc::new(GeminiModel::new(
                client,
                &self.base_url,
                &self.model,
                self.api_key.as_deref().unwrap_or_default(),
            )),
            Provider::OpenAiCompatible => Arc::new(OpenAiModel::new(
                client,
                &self.base_url,
                &self.model,
                self.api_key.as_deref(),
            )),
        }
    }
}

/// The daemon's current model: the configuration is resolved again when
/// the settings file changes; the client is rebuilt only when it changed.
pub struct ModelSlot {
    settings_file: PathBuf,
    http: reqwest::Client,
    current: Mutex<Option<Cached>>,
}

/// The model built for the settings file as it was at `stamp`.
struct Cached {
    stamp: Option<SystemTime>,
    config: ModelConfig,
    model: Arc<dyn Model>,
}

impl ModelSlot {
    /// A slot reading `settings_file` and the process environment.
    pub fn new(settings_file: &Path) -> Self {
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
            http,
            current: Mutex::new(None),
        }
    }

    /// The configuration now (settings re-read if they changed).
    pub fn config(&self) -> ModelConfig {
        self.refresh().0
    }

    /// The model to use now, or why there is none.
    pub fn model(&self) -> Result<(ModelConfig, Arc<dyn Model>), ModelError> {
        let (config, model) = self.refresh();
        if let Some(problem) = config.problem() {
            return Err(ModelError::new(ModelErrorKind::NotConfigured, problem));
        }
        Ok((config, model))
    }

    fn refresh(&self) -> (ModelConfig, Arc<dyn Model>) {
        let stamp = std::fs::metadata(&self.settings_file)
            .and_then(|m| m.modified())
            .ok();
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let cached = match current.take() {
            Some(cached) if cached.stamp == stamp => cached,
            old => {
                let settings = read_settings(&self.settings_file);
                let config = ModelConfig::resolve(&process_env, &settings);
                let model = match old {
                    Some(old) if old.config == config => old.model,
                    _ => config.build(self.http.clone()),
                };
                Cached {
                    stamp,
                    config,
                    model,
                }
            }
        };
        let now = (cached.config.clone(), cached.model.clone());
        *current = Some(cached);
        now
    }
}

fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn read_settings(path: &Path) -> Value {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).unwrap_or_else(|e| {
            tracing::warn!(path = %path.display(), error = %e, "settings are not valid JSON; model settings ignored");
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

    #[test]
    fn gemini_from_env_beats_settings() {
        let settings = json!({"model": {"name": "gemini-2.5-pro"}, "geminid": {"gemini": {"apiKey": "s", "baseUrl": "http://b"}}});
        let c = ModelConfig::resolve(
            &env(&[("GEMINI_API_KEY", "k"), ("GEMINI_MODEL", "m")]),
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
        let c = ModelConfig::resolve(&env(&[]), &settings);
        assert_eq!(
            (c.model.as_str(), c.api_key.as_deref()),
            ("gemini-2.5-pro", Some("s"))
        );
        assert!(c.problem().is_none());
    }

    #[test]
    fn no_key_is_a_problem_that_says_how_to_fix_it() {
        let c = ModelConfig::resolve(&env(&[]), &Value::Null);
        assert_eq!(c.model, DEFAULT_GEMINI_MODEL);
        let problem = c.problem().unwrap();
        assert!(
            problem.contains("GEMINI_API_KEY") && problem.contains("openaiCompatible"),
            "{problem}"
        );
    }

    #[test]
    fn openai_compatible_from_settings() {
        let settings = json!({"geminid": {"openaiCompatible": {"baseUrl": "http://127.0.0.1:11434/v1", "model": "qwen", "apiKeyEnv": "MY_KEY"}}});
        let c = ModelConfig::resolve(&env(&[("MY_KEY", "x"), ("GEMINI_API_KEY", "g")]), &settings);
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
        assert!(ModelConfig::resolve(&env(&[]), &half).problem().is_some());
    }
}
