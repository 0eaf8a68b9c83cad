//! `web_fetch`: fetches the http(s) URLs named in a prompt and returns their
//! text together with the user's instructions.
//!
//! The reference runs a model over the fetched pages inside the tool; our
//! tools contain no model, so the calling model gets the prompt and the
//! content and applies the instructions itself.

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
use super::web_fetch_guard::{RateLimits, Refusal, system_lookup, vet};
use super::web_fetch_http::{FetchConfig, Fetched, HopCheck, fetch_all, hop_check};

/// The reference's limits.
pub const MAX_URLS: usize = 20;
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
pub const DEFAULT_MAX_CHARS: usize = 100_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WebFetchParams {
    prompt: String,
}

pub struct WebFetchTool {
    schema: Value,
    config: FetchConfig,
    /// Fetches per host, across every session of the daemon.
    limits: RateLimits,
}

impl WebFetchTool {
    pub fn new(config: FetchConfig) -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "prompt": {
                    "type": "string",
                    "description": "A request containing up to 20 http:// or https:// URLs and instructions for what to do with their content."
                }
            },
            "required": ["prompt"]
        });
        WebFetchTool {
            schema,
            config,
            limits: RateLimits::default(),
        }
    }
}

impl Default for WebFetchTool {
    fn default() -> Self {
        Self::new(FetchConfig {
            timeout: DEFAULT_TIMEOUT,
            max_chars: DEFAULT_MAX_CHARS,
            use_env_proxy: true,
            allow_private: false,
        })
    }
}

impl Tool for WebFetchTool {
    fn name(&self) -> &str {
        "web_fetch"
    }
    fn display_name(&self) -> &str {
        "WebFetch"
    }
    fn description(&self) -> &str {
        "Fetches the content of up to 20 http(s) URLs found in the prompt and returns it \
         as text, with the prompt, so the instructions in it can be applied. GitHub blob \
         URLs are fetched raw. HTML is converted to readable text. Localhost, private \
         and link-local addresses are refused, and each host is fetched at most 10 \
         times a minute."
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Fetch
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }

    fn build(&self, ctx: &ToolContext, args: &Value) -> Result<Box<dyn ToolInvocation>, ToolError> {
        let params: WebFetchParams = parse(&self.schema, args)?;
        if params.prompt.trim().is_empty() {
            return Err(ToolError::invalid("`prompt` must not be empty"));
        }
        let urls = extract_urls(&params.prompt);
        if urls.is_empty() {
            return Err(ToolError::invalid(
                "`prompt` must contain at least one URL starting with http:// or https://",
            ));
        }
        if urls.len() > MAX_URLS {
            return Err(ToolError::invalid(format!(
                "`prompt` contains {} URLs; at most {MAX_URLS} can be fetched at once",
                urls.len()
            )));
        }
        let config = FetchConfig {
            allow_private: self.config.allow_private || ctx.settings.web_fetch_allow_private,
            ..self.config.clone()
        };
        Ok(Box::new(WebFetchInvocation {
            prompt: params.prompt,
            urls,
            check: hop_check(&config),
            config,
            limits: self.limits.clone(),
        }))
    }
}

/// The distinct http(s) URLs in `text`, in order. Surrounding brackets,
/// quotes and sentence punctuation are not part of a URL.
pub fn extract_urls(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for token in text.split_whitespace() {
        let Some(start) = token.find("http://").or_else(|| token.find("https://")) else {
            continue;
        };
        let candidate = token[start..].trim_end_matches([
            '.', ',', ';', ':', '!', '?', ')', ']', '}', '>', '"', '\'', '`',
        ]);
        let Ok(url) = reqwest::Url::parse(candidate) else {
            continue;
        };
        if url.host_str().is_none_or(str::is_empty) {
            continue;
        }
        let url = url.to_string();
        if !out.contains(&url) {
            out.push(url);
        }
    }
    out
}

/// `https://github.com/o/r/blob/ref/path` is an HTML page around a file;
/// the file itself is at `https://raw.githubusercontent.com/o/r/ref/path`.
pub fn github_raw(url: &str) -> String {
    let Some(rest) = url.strip_prefix("https://github.com/") else {
        return url.to_owned();
    };
    let parts: Vec<&str> = rest.splitn(4, '/').collect();
    match parts.as_slice() {
        [owner, repo, "blob", tail] if !tail.is_empty() => {
            format!("https://raw.githubusercontent.com/{owner}/{repo}/{tail}")
        }
        _ => url.to_owned(),
    }
}

struct WebFetchInvocation {
    prompt: String,
    urls: Vec<String>,
    config: FetchConfig,
    /// Vets every hop of a fetch.
    check: HopCheck,
    limits: RateLimits,
}

impl WebFetchInvocation {
    /// The URLs that may be fetched now, each with the URL to request,
    /// and the ones skipped, each with why (the reference's wording): a
    /// host that is (or resolves to) a private address, or one fetched 10
    /// times in the last minute.
    async fn admit(&self) -> (Vec<(String, String)>, Vec<String>) {
        let mut targets = Vec::new();
        let mut skipped = Vec::new();
        for url in &self.urls {
            let fetched = github_raw(url);
            let Ok(parsed) = reqwest::Url::parse(&fetched) else {
                skipped.push(format!("[Malformed URL] {url}"));
                continue;
            };
            if let Err(Refusal::BlockedHost(why)) =
                vet(&parsed, self.config.allow_private, system_lookup).await
            {
                skipped.push(format!("[Blocked Host] {url} ({why})"));
                continue;
            }
            let host = parsed.host_str().unwrap_or_default().to_owned();
            if self.limits.take(&host, std::time::Instant::now()).is_err() {
                skipped.push(format!("[Rate limit exceeded] {url}"));
                continue;
            }
            targets.push((url.clone(), fetched));
        }
        (targets, skipped)
    }
}

#[async_trait]
impl ToolInvocation for WebFetchInvocation {
    fn description(&self) -> String {
        let mut d = self.prompt.replace('\n', " ");
        if d.chars().count() > 100 {
            d = d.chars().take(97).collect::<String>() + "...";
        }
        format!("Processing URLs and instructions from prompt: \"{d}\"")
    }

    fn locations(&self) -> Vec<ToolLocation> {
        Vec::new()
    }

    async fn confirmation(&self) -> Result<ConfirmationDetails, ToolError> {
        Ok(ConfirmationDetails::Info {
            title: "Confirm Web Fetch".to_owned(),
            prompt: self.prompt.clone(),
            urls: self.urls.clone(),
        })
    }

    async fn execute(
        self: Box<Self>,
        cancel: CancellationToken,
        _output: OutputSink,
    ) -> Result<ToolResult, ToolError> {
        let (targets, skipped) = tokio::select! {
            admitted = self.admit() => admitted,
            _ = cancel.cancelled() => {
                return Err(ToolError::new(ToolErrorKind::Cancelled, "web fetch was cancelled"));
            }
        };
        if targets.is_empty() {
            return Err(ToolError::execution(format!(
                "All requested URLs were skipped: {}",
                skipped.join(", ")
            )));
        }
        let fetched = tokio::select! {
            r = fetch_all(&self.config, &targets, self.check.clone()) => r?,
            _ = cancel.cancelled() => {
                return Err(ToolError::new(ToolErrorKind::Cancelled, "web fetch was cancelled"));
            }
        };
        if fetched.iter().all(|f| f.error.is_some()) {
            let errors: Vec<String> = fetched
                .iter()
                .filter_map(|f| f.error.as_ref().map(|e| format!("{}: {e}", f.url)))
                .collect();
            return Err(ToolError::execution(format!(
                "Error fetching {}",
                errors.join("; ")
            )));
        }
        let mut text = String::new();
        if !skipped.is_empty() {
            text.push_str("[Warning] The following URLs were skipped:\n");
            for s in &skipped {
                text.push_str(&format!("- {s}\n"));
            }
            text.push('\n');
        }
        text.push_str(&format!("The user asked: {}\n", self.prompt));
        for f in &fetched {
            text.push_str(&render(f));
        }
        let ok = fetched.iter().filter(|f| f.error.is_none()).count();
        let mut result = ToolResult::text(text);
        result.summary = Some(format!("Fetched {ok} of {} URL(s)", fetched.len()));
        Ok(result)
    }
}

fn render(f: &Fetched) -> String {
    let mut s = format!("\nContent of {}", f.url);
    if f.fetched_url != f.url {
        s.push_str(&format!(" (fetched from {})", f.fetched_url));
    }
    match &f.error {
        Some(e) => s.push_str(&format!(":\n[Error: {e}]\n")),
        None => {
            s.push_str(":\n");
            s.push_str(&f.text);
            if !f.text.ends_with('\n') {
                s.push('\n');
            }
            if let Some(total) = f.truncated_from {
                s.push_str(&format!(
                    "[Content truncated: showing the first {} of {total} characters]\n",
                    f.text.chars().count()
                ));
            }
        }
    }
    s
}

#[cfg(test)]
#[path = "web_fetch_tests.rs"]
mod tests;
