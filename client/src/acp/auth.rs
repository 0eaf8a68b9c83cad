//! What the ACP agent tells an editor about logging in. geminid reads
//! its credentials itself (environment, `~/.gemini/.env`, settings), so
//! each method says what the user must set, and `authenticate` answers
//! whether the daemon can reach a model now.

use geminid_protocol::turn::ModelStatus;
use serde_json::{Value, json};

use super::Refusal;
use super::rpc::code;

/// The methods offered, with what each needs.
const METHODS: [(&str, &str, &str); 3] = [
    (
        "gemini-api-key",
        "Gemini API key",
        "Put GEMINI_API_KEY=<your key> in ~/.gemini/.env (or the daemon's environment); \
         geminid reads it at the next prompt, no restart needed.",
    ),
    (
        "vertex-ai",
        "Vertex AI",
        "Put GOOGLE_GENAI_USE_VERTEXAI=true, GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION in \
         ~/.gemini/.env, and either set GOOGLE_APPLICATION_CREDENTIALS to a service-account key \
         or run `gcloud auth application-default login` (GOOGLE_API_KEY for express mode).",
    ),
    (
        "openai-compatible",
        "OpenAI-compatible server",
        "Set `geminid.openaiCompatible` {baseUrl, model} in ~/.gemini/settings.json.",
    ),
];

pub const METHOD_IDS: [&str; 3] = [METHODS[0].0, METHODS[1].0, METHODS[2].0];

/// `authMethods` for `initialize`.
pub fn methods() -> Value {
    METHODS
        .iter()
        .map(|(id, name, description)| json!({"id": id, "name": name, "description": description}))
        .collect()
}

/// The daemon's provider label for a method id.
pub fn provider_of(method: &str) -> Option<&'static str> {
    METHODS
        .iter()
        .find(|(id, ..)| *id == method)
        .map(|(id, ..)| *id)
}

/// Whether prompts can run now; if not, `auth_required` saying what to
/// set for the method the editor chose and what the daemon found.
pub fn check(method: &str, model: Option<&ModelStatus>) -> Result<(), Refusal> {
    let how = METHODS
        .iter()
        .find(|(id, ..)| *id == method)
        .map(|(.., description)| *description)
        .unwrap_or_default();
    match model {
        Some(status) if status.problem.is_none() => Ok(()),
        Some(status) => Err((
            code::AUTH_REQUIRED,
            format!(
                "{how} geminid found: {}",
                status.problem.as_deref().unwrap_or_default()
            ),
        )),
        None => Err((
            code::AUTH_REQUIRED,
            format!("{how} (the daemon reported no model configuration)"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(problem: Option<&str>) -> ModelStatus {
        ModelStatus {
            provider: "gemini".into(),
            model: "m".into(),
            base_url: "u".into(),
            key_present: problem.is_none(),
            key_source: "GEMINI_API_KEY".into(),
            problem: problem.map(str::to_owned),
            notes: Vec::new(),
            available: Vec::new(),
            fallback: None,
        }
    }

    #[test]
    fn every_method_says_what_to_set_and_a_usable_daemon_passes() {
        let listed = methods();
        assert_eq!(listed.as_array().map(Vec::len), Some(METHODS.len()));
        for (id, ..) in METHODS {
            assert_eq!(provider_of(id), Some(id));
        }
        assert!(check("vertex-ai", Some(&status(None))).is_ok());
        let (code, message) = check("gemini-api-key", Some(&status(Some("no key")))).unwrap_err();
        assert_eq!(code, code::AUTH_REQUIRED);
        assert!(
            message.contains("~/.gemini/.env") && message.contains("no key"),
            "{message}"
        );
        assert_eq!(provider_of("oauth-personal"), None);
    }
}
