//! `google_web_search`: asks the Gemini API to answer a query with Google
//! Search grounding, and returns the answer with numbered citation markers
//! and the list of sources.
//!
//! The request is `POST {base}/v1beta/models/{model}:generateContent` with
//! the `googleSearch` tool enabled. The answer's grounding metadata names
//! the web pages used (`groundingChunks`) and which part of the text each
//! supports (`groundingSupports`, with UTF-8 byte offsets); a marker such as
//! `[1]` is inserted at the end of every supported segment.

use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::contract::{
    ConfirmationDetails, OutputSink, Tool, ToolContext, ToolError, ToolErrorKind, ToolInvocation,
    ToolKind, ToolLocation, ToolResult,
};
use super::params::parse;

/// How long one search may take, connecting and answering together.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Answers are read up to this size (a grounded answer is a few KB).
const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// Where and how to reach the Gemini API.
#[derive(Clone)]
pub struct WebSearchConfig {
    pub api_key: String,
    /// `https://generativelanguage.googleapis.com` or a compatible endpoint.
    pub base_url: String,
    /// `gemini-2.5-flash`; a `models/` prefix is accepted.
    pub model: String,
    pub timeout: Duration,
    /// Honour HTTP(S)_PROXY / NO_PROXY from the environment.
    pub use_env_proxy: bool,
}

impl std::fmt::Debug for WebSearchConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("WebSearchConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl WebSearchConfig {
    /// The daemon's Gemini settings, when an API key is configured.
    pub fn from_gemini(gemini: &crate::config::GeminiApiConfig) -> Option<Self> {
        Some(WebSearchConfig {
            api_key: gemini.api_key.clone()?,
            base_url: gemini.base_url.clone(),
            model: gemini.model.clone(),
            timeout: DEFAULT_TIMEOUT,
            use_env_proxy: true,
        })
    }

    /// `{base}/v1beta/models/{model}:generateContent`
    pub fn endpoint(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        let model = self.model.trim().trim_start_matches("models/");
        format!("{base}/v1beta/models/{model}:generateContent")
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WebSearchParams {
    query: String,
}

pub struct WebSearchTool {
    schema: Value,
    config: WebSearchConfig,
    client: reqwest::Client,
}

impl WebSearchTool {
    pub fn new(config: WebSearchConfig) -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "The search query to find information on the web."
                }
            },
            "required": ["query"]
        });
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("geminid-web-search/", env!("CARGO_PKG_VERSION")))
            .timeout(config.timeout);
        if !config.use_env_proxy {
            builder = builder.no_proxy();
        }
        // A client that cannot be built (no TLS backend) is reported by
        // each call rather than by registration.
        let client = builder.build().unwrap_or_default();
        WebSearchTool {
            schema,
            config,
            client,
        }
    }
}

impl Tool for WebSearchTool {
    fn name(&self) -> &str {
        "google_web_search"
    }
    fn display_name(&self) -> &str {
        "GoogleSearch"
    }
    fn description(&self) -> &str {
        "Performs a web search using Google Search (via the Gemini API) and returns \
         the results: a summary of the findings with numbered citations, followed by \
         the list of sources. Useful for information that is recent or not in the \
         workspace."
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }

    fn build(
        &self,
        _ctx: &ToolContext,
        args: &Value,
    ) -> Result<Box<dyn ToolInvocation>, ToolError> {
        let params: WebSearchParams = parse(&self.schema, args)?;
        let query = params.query.trim();
        if query.is_empty() {
            return Err(ToolError::invalid("`query` must not be empty"));
        }
        Ok(Box::new(WebSearchInvocation {
            query: query.to_owned(),
            config: self.config.clone(),
            client: self.client.clone(),
        }))
    }
}

struct WebSearchInvocation {
    query: String,
    config: WebSearchConfig,
    client: reqwest::Client,
}

#[async_trait]
impl ToolInvocation for WebSearchInvocation {
    fn description(&self) -> String {
        format!("Searching the web for: \"{}\"", self.query)
    }

    fn locations(&self) -> Vec<ToolLocation> {
        Vec::new()
    }

    async fn confirmation(&self) -> Result<ConfirmationDetails, ToolError> {
        Ok(ConfirmationDetails::Info {
            title: "Confirm Web Search".to_owned(),
            prompt: self.description(),
            urls: Vec::new(),
        })
    }

    async fn execute(
        self: Box<Self>,
        cancel: CancellationToken,
        _output: OutputSink,
    ) -> Result<ToolResult, ToolError> {
        let timeout = self.config.timeout;
        let request = tokio::time::timeout(timeout, self.request());
        let body = tokio::select! {
            r = request => r.map_err(|_| timed_out(timeout))??,
            _ = cancel.cancelled() => {
                return Err(ToolError::new(ToolErrorKind::Cancelled, "web search was cancelled"));
            }
        };
        let answer = parse_answer(&body)?;
        Ok(render(&self.query, &answer))
    }
}

fn timed_out(limit: Duration) -> ToolError {
    ToolError::new(
        ToolErrorKind::Timeout,
        format!(
            "web search timed out after {} s without an answer from the Gemini API",
            limit.as_secs_f64()
        ),
    )
}

impl WebSearchInvocation {
    /// Sends the request; the answer's JSON on HTTP success.
    async fn request(&self) -> Result<Value, ToolError> {
        let body = json!({
            "contents": [{"role": "user", "parts": [{"text": self.query}]}],
            "tools": [{"googleSearch": {}}],
        });
        let mut resp = self
            .client
            .post(self.config.endpoint())
            .header("x-goog-api-key", &self.config.api_key)
            .json(&body)
            .send()
            .await
            .map_err(|e| transport_error(&self.config, &e))?;
        let status = resp.status();
        let mut bytes = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| transport_error(&self.config, &e))?
        {
            bytes.extend_from_slice(&chunk);
            if bytes.len() > MAX_BODY_BYTES {
                return Err(ToolError::execution(format!(
                    "the Gemini API answer is larger than {MAX_BODY_BYTES} bytes"
                )));
            }
        }
        if !status.is_success() {
            return Err(http_error(&self.config, status.as_u16(), &bytes));
        }
        serde_json::from_slice(&bytes).map_err(|e| {
            ToolError::execution(format!("the Gemini API answered with invalid JSON: {e}"))
        })
    }
}

fn transport_error(config: &WebSearchConfig, e: &reqwest::Error) -> ToolError {
    if e.is_timeout() {
        return timed_out(config.timeout);
    }
    // The innermost cause says most (connection refused, DNS); the key is
    // never part of a message, it travels in a header.
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(e);
    let mut detail = String::new();
    while let Some(s) = source {
        detail = s.to_string();
        source = s.source();
    }
    let what = if e.is_connect() {
        "cannot connect to"
    } else {
        "request failed to"
    };
    let detail = if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    };
    ToolError::new(
        ToolErrorKind::Unavailable,
        format!(
            "web search {what} the Gemini API at {}{detail}",
            config.base_url
        ),
    )
}

/// A clear message for an HTTP error, with the API's own explanation.
pub fn http_error(config: &WebSearchConfig, status: u16, body: &[u8]) -> ToolError {
    let api: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let api_message = api["error"]["message"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| {
            let text = String::from_utf8_lossy(body);
            text.trim().chars().take(300).collect()
        });
    let api_status = api["error"]["status"].as_str().unwrap_or("");
    let reason = api["error"]["details"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|d| d["reason"].as_str())
        .unwrap_or("");
    let model = config.model.trim_start_matches("models/");
    let key_problem =
        reason.starts_with("API_KEY") || api_message.to_ascii_lowercase().contains("api key");
    let (kind, meaning) = match status {
        400 if key_problem => (
            ToolErrorKind::Unavailable,
            "the API key was rejected (check GEMINI_API_KEY)".to_owned(),
        ),
        400 => (
            ToolErrorKind::Execution,
            "the Gemini API refused the request as invalid".to_owned(),
        ),
        401 => (
            ToolErrorKind::Unavailable,
            "the API key is missing or invalid (check GEMINI_API_KEY)".to_owned(),
        ),
        403 => (
            ToolErrorKind::Unavailable,
            "the API key is not allowed to use this API or model (check GEMINI_API_KEY \
             and the project's permissions)"
                .to_owned(),
        ),
        404 => (
            ToolErrorKind::Unavailable,
            format!(
                "unknown model `{model}` or endpoint (check GEMINI_MODEL and GOOGLE_GEMINI_BASE_URL)"
            ),
        ),
        429 => (
            ToolErrorKind::Unavailable,
            "rate limit or quota exceeded; try again later".to_owned(),
        ),
        500..=599 => (
            ToolErrorKind::Unavailable,
            "the Gemini API failed or is unavailable; try again later".to_owned(),
        ),
        _ => (
            ToolErrorKind::Execution,
            "the Gemini API answered with an unexpected status".to_owned(),
        ),
    };
    let mut message = format!("web search failed: HTTP {status}: {meaning}");
    if !api_message.is_empty() {
        message.push_str(" (API says: ");
        if !api_status.is_empty() {
            message.push_str(api_status);
            message.push_str(": ");
        }
        message.push_str(&api_message);
        message.push(')');
    }
    ToolError::new(kind, message)
}

/// One web page the answer is grounded on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub title: String,
    pub uri: String,
}

/// Text plus where to cite which sources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub text: String,
    pub sources: Vec<Source>,
    /// (UTF-8 byte offset into `text`, 0-based source indices)
    pub supports: Vec<(usize, Vec<usize>)>,
}

/// Reads the first candidate of a `generateContent` answer.
pub fn parse_answer(body: &Value) -> Result<Answer, ToolError> {
    let candidate = &body["candidates"][0];
    if candidate.is_null()
        && let Some(reason) = body["promptFeedback"]["blockReason"].as_str()
    {
        return Err(ToolError::execution(format!(
            "the Gemini API blocked the query ({reason})"
        )));
    }
    let text: String = candidate["content"]["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["thought"] != Value::Bool(true))
        .filter_map(|p| p["text"].as_str())
        .collect();
    let meta = &candidate["groundingMetadata"];
    let sources = meta["groundingChunks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| Source {
            title: c["web"]["title"]
                .as_str()
                .filter(|s| !s.is_empty())
                .unwrap_or("Untitled")
                .to_owned(),
            uri: c["web"]["uri"]
                .as_str()
                .filter(|s| !s.is_empty())
                .unwrap_or("No URI")
                .to_owned(),
        })
        .collect();
    let supports = meta["groundingSupports"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| {
            let segment = s.get("segment")?;
            // proto3 JSON leaves out zero values; a missing end is 0.
            let end = segment["endIndex"].as_u64().unwrap_or(0);
            let indices: Vec<usize> = s["groundingChunkIndices"]
                .as_array()?
                .iter()
                .filter_map(|i| i.as_u64().map(|i| i as usize))
                .collect();
            Some((end as usize, indices))
        })
        .collect();
    Ok(Answer {
        text,
        sources,
        supports,
    })
}

/// Inserts `[n]` markers (1-based) at the support offsets. Offsets are UTF-8
/// byte positions; one inside a character moves to the character's end, one
/// past the text to its end. Markers naming no known source are left out.
pub fn insert_citations(text: &str, sources: usize, supports: &[(usize, Vec<usize>)]) -> String {
    let mut inserts: Vec<(usize, String)> = Vec::new();
    for (end, indices) in supports {
        let mut at = (*end).min(text.len());
        while !text.is_char_boundary(at) {
            at += 1;
        }
        let mut marker = String::new();
        let mut seen = Vec::new();
        for &i in indices {
            if i < sources && !seen.contains(&i) {
                seen.push(i);
                marker.push_str(&format!("[{}]", i + 1));
            }
        }
        if marker.is_empty() {
            continue;
        }
        // Supports ending at the same place share one run of markers.
        match inserts.iter_mut().find(|(pos, _)| *pos == at) {
            Some((_, m)) => {
                for part in marker.split_inclusive(']') {
                    if !m.contains(part) {
                        m.push_str(part);
                    }
                }
            }
            None => inserts.push((at, marker)),
        }
    }
    inserts.sort_by_key(|(pos, _)| *pos);
    let mut out = String::with_capacity(text.len() + inserts.len() * 4);
    let mut last = 0;
    for (pos, marker) in inserts {
        out.push_str(&text[last..pos]);
        out.push_str(&marker);
        last = pos;
    }
    out.push_str(&text[last..]);
    out
}

/// The tool result: the cited answer and the numbered sources.
pub fn render(query: &str, answer: &Answer) -> ToolResult {
    if answer.text.trim().is_empty() {
        let mut r = ToolResult::text(format!(
            "No search results or information found for query: \"{query}\""
        ));
        r.summary = Some("No information found.".to_owned());
        return r;
    }
    let mut text = insert_citations(&answer.text, answer.sources.len(), &answer.supports);
    if !answer.sources.is_empty() {
        text.push_str("\n\nSources:\n");
        let list: Vec<String> = answer
            .sources
            .iter()
            .enumerate()
            .map(|(i, s)| format!("[{}] {} ({})", i + 1, s.title, s.uri))
            .collect();
        text.push_str(&list.join("\n"));
    }
    let mut r = ToolResult::text(format!("Web search results for \"{query}\":\n\n{text}"));
    r.summary = Some(format!(
        "Search results for \"{query}\" returned ({} source{}).",
        answer.sources.len(),
        if answer.sources.len() == 1 { "" } else { "s" }
    ));
    r
}

#[cfg(test)]
#[path = "web_search_tests.rs"]
mod tests;
