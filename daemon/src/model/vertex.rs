//! Vertex AI's endpoint for Gemini models: where requests go and what its
//! refusals mean. The request and response shapes are the Gemini API's
//! (`gemini.rs`).
//!
//! * With a project and location (Application Default Credentials):
//!   `{base}/v1beta1/projects/{p}/locations/{l}/publishers/google/models/{m}:streamGenerateContent?alt=sse`,
//!   base `https://{l}-aiplatform.googleapis.com` (`aiplatform.googleapis.com`
//!   for `global`, the multi-region hosts for `us` and `eu`).
//! * Express mode (`GOOGLE_API_KEY`, no project needed):
//!   `{base}/v1beta1/publishers/google/models/{m}:streamGenerateContent?alt=sse`.
//!
//! `GOOGLE_VERTEX_BASE_URL` replaces the base in both.

use super::gemini::http_error;
use super::{ModelError, ModelErrorKind};

/// Where Vertex AI requests for one model go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VertexTarget {
    pub base_url: String,
    /// `None` in express mode.
    pub project: Option<String>,
    pub location: String,
}

impl VertexTarget {
    /// The default host for `location`, unless `base_url` overrides it.
    pub fn new(base_url: Option<String>, project: Option<String>, location: &str) -> Self {
        let base_url = base_url.unwrap_or_else(|| match location {
            "" | "global" => "https://aiplatform.googleapis.com".to_owned(),
            "us" => "https://aiplatform.us.rep.googleapis.com".to_owned(),
            "eu" => "https://aiplatform.eu.rep.googleapis.com".to_owned(),
            region => format!("https://{region}-aiplatform.googleapis.com"),
        });
        VertexTarget {
            base_url: base_url.trim_end_matches('/').to_owned(),
            project,
            location: if location.is_empty() {
                "global".to_owned()
            } else {
                location.to_owned()
            },
        }
    }

    /// The streaming URL for `model`.
    pub fn stream_url(&self, model: &str) -> String {
        let model = model.strip_prefix("models/").unwrap_or(model);
        match &self.project {
            Some(project) => format!(
                "{}/v1beta1/projects/{project}/locations/{}/publishers/google/models/{model}:streamGenerateContent?alt=sse",
                self.base_url, self.location
            ),
            None => format!(
                "{}/v1beta1/publishers/google/models/{model}:streamGenerateContent?alt=sse",
                self.base_url
            ),
        }
    }
}

/// A Vertex AI error answer, said for people: which project, which
/// permission, which credential.
pub fn refusal(model: &str, base_url: &str, status: u16, body: &[u8]) -> ModelError {
    let api: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let message = api["error"]["message"].as_str().unwrap_or("").trim();
    let meaning = match status {
        401 => Some((
            ModelErrorKind::Auth,
            "the credentials were refused; check GOOGLE_APPLICATION_CREDENTIALS (or run \
             `gcloud auth application-default login`), or GOOGLE_API_KEY in express mode"
                .to_owned(),
        )),
        403 if message.contains("has not been used") || message.contains("is disabled") => Some((
            ModelErrorKind::Auth,
            "the Vertex AI API is not enabled for this project (GOOGLE_CLOUD_PROJECT); enable \
             aiplatform.googleapis.com"
                .to_owned(),
        )),
        403 => Some((
            ModelErrorKind::Auth,
            "missing permission: the account needs the Vertex AI User role \
             (roles/aiplatform.user) on GOOGLE_CLOUD_PROJECT"
                .to_owned(),
        )),
        404 if !message.contains("Publisher Model") && message.contains("roject") => Some((
            ModelErrorKind::Auth,
            "the project was not found: check GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION"
                .to_owned(),
        )),
        404 => Some((
            ModelErrorKind::UnknownModel,
            format!(
                "model `{model}` was not found in this location; check GEMINI_MODEL, \
                 `model.name` and GOOGLE_CLOUD_LOCATION"
            ),
        )),
        _ => None,
    };
    match meaning {
        Some((kind, meaning)) => {
            let mut text = format!("Vertex AI: HTTP {status}: {meaning}");
            if !message.is_empty() {
                text.push_str(&format!(" ({message})"));
            }
            ModelError::new(kind, text)
        }
        None => {
            let mut error = http_error(model, base_url, status, body);
            error.message = error.message.replacen("Gemini API", "Vertex AI", 1);
            error
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_for_regions_global_express_and_an_override() {
        let t = VertexTarget::new(None, Some("p".into()), "us-central1");
        assert_eq!(
            t.stream_url("gemini-2.5-pro"),
            "https://us-central1-aiplatform.googleapis.com/v1beta1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
        );
        let g = VertexTarget::new(None, Some("p".into()), "global");
        assert!(
            g.stream_url("m").starts_with(
                "https://aiplatform.googleapis.com/v1beta1/projects/p/locations/global/"
            )
        );
        let express = VertexTarget::new(None, None, "");
        assert_eq!(
            express.stream_url("models/m"),
            "https://aiplatform.googleapis.com/v1beta1/publishers/google/models/m:streamGenerateContent?alt=sse"
        );
        let local = VertexTarget::new(Some("http://127.0.0.1:9/".into()), Some("p".into()), "l");
        assert!(
            local
                .stream_url("m")
                .starts_with("http://127.0.0.1:9/v1beta1/projects/p/locations/l/")
        );
    }

    #[test]
    fn refusals_name_the_project_permission_or_credential() {
        let denied = refusal("m", "", 403, br#"{"error":{"code":403,"message":"Permission 'aiplatform.endpoints.predict' denied","status":"PERMISSION_DENIED"}}"#);
        assert_eq!(denied.kind, ModelErrorKind::Auth);
        assert!(
            denied.message.contains("roles/aiplatform.user"),
            "{}",
            denied.message
        );
        let project = refusal(
            "m",
            "",
            404,
            br#"{"error":{"code":404,"message":"Project 'nope' not found","status":"NOT_FOUND"}}"#,
        );
        assert!(
            project.message.contains("GOOGLE_CLOUD_PROJECT"),
            "{}",
            project.message
        );
        let model = refusal("gemini-x", "", 404, br#"{"error":{"code":404,"message":"Publisher Model `projects/p/locations/l/publishers/google/models/gemini-x` was not found or your project does not have access to it.","status":"NOT_FOUND"}}"#);
        assert_eq!(model.kind, ModelErrorKind::UnknownModel);
        let busy = refusal("m", "", 429, b"{}");
        assert_eq!(busy.kind, ModelErrorKind::RateLimited);
        assert!(busy.message.starts_with("Vertex AI"), "{}", busy.message);
    }
}
