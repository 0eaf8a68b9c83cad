//! The HTTP side of `web_fetch`: concurrent fetches with a per-URL time
//! limit, a bounded body, and HTML turned into readable text.

use std::time::Duration;

use tokio::task::JoinSet;

use super::contract::ToolError;

/// Bodies are read up to this size; more is never needed to produce
/// `max_chars` of text, and it bounds memory per URL.
const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;
/// Column width of text rendered from HTML.
const HTML_WIDTH: usize = 120;

#[derive(Debug, Clone)]
pub struct FetchConfig {
    /// Limit for one URL: connecting, headers and body together.
    pub timeout: Duration,
    /// Characters of text kept per URL.
    pub max_chars: usize,
    /// Honour HTTP(S)_PROXY / NO_PROXY from the environment.
    pub use_env_proxy: bool,
}

/// The outcome for one URL.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The URL as given in the prompt.
    pub url: String,
    /// The URL actually requested (GitHub blob URLs are rewritten).
    pub fetched_url: String,
    pub text: String,
    /// Character count before cutting, when the text was cut.
    pub truncated_from: Option<usize>,
    pub error: Option<String>,
}

/// Fetches each `(url, fetched_url)` concurrently; results keep the order.
pub async fn fetch_all(
    config: &FetchConfig,
    targets: &[(String, String)],
) -> Result<Vec<Fetched>, ToolError> {
    let mut builder = reqwest::Client::builder()
        .user_agent(concat!("geminid-web-fetch/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::limited(10));
    if !config.use_env_proxy {
        builder = builder.no_proxy();
    }
    let client = builder
        .build()
        .map_err(|e| ToolError::execution(format!("cannot create HTTP client: {e}")))?;
    let mut set = JoinSet::new();
    for (i, (url, fetched_url)) in targets.iter().enumerate() {
        let (client, config) = (client.clone(), config.clone());
        let (url, fetched_url) = (url.clone(), fetched_url.clone());
        set.spawn(async move {
            let outcome = tokio::time::timeout(config.timeout, get(&client, &fetched_url))
                .await
                .unwrap_or_else(|_| {
                    Err(format!(
                        "timed out after {} s",
                        config.timeout.as_secs_f64()
                    ))
                });
            let mut f = Fetched {
                url,
                fetched_url,
                text: String::new(),
                truncated_from: None,
                error: None,
            };
            match outcome {
                Ok(text) => {
                    let total = text.chars().count();
                    f.text = text;
                    if total > config.max_chars {
                        let cut = f
                            .text
                            .char_indices()
                            .nth(config.max_chars)
                            .map_or(f.text.len(), |(i, _)| i);
                        f.text.truncate(cut);
                        f.truncated_from = Some(total);
                    }
                }
                Err(e) => f.error = Some(e),
            }
            (i, f)
        });
    }
    let mut out: Vec<Option<Fetched>> = vec![None; targets.len()];
    while let Some(joined) = set.join_next().await {
        let (i, f) = joined.map_err(|e| ToolError::execution(format!("fetch task failed: {e}")))?;
        out[i] = Some(f);
    }
    Ok(out.into_iter().flatten().collect())
}

/// One GET, returning the body as text.
async fn get(client: &reqwest::Client, url: &str) -> Result<String, String> {
    let mut resp = client
        .get(url)
        .send()
        .await
        .map_err(|e| format!("request failed: {e}"))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(format!("HTTP {status}"));
    }
    let content_type = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut body = Vec::new();
    let mut cut = false;
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| format!("reading the body failed: {e}"))?
    {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_BODY_BYTES {
            body.truncate(MAX_BODY_BYTES);
            cut = true;
            break;
        }
    }
    let mut text = to_text(&content_type, body).await?;
    if cut {
        text.push_str(&format!("\n[Body cut at {MAX_BODY_BYTES} bytes]\n"));
    }
    Ok(text)
}

/// HTML becomes rendered text, text-like types are decoded as UTF-8 (lossy),
/// anything else is described rather than shown.
async fn to_text(content_type: &str, body: Vec<u8>) -> Result<String, String> {
    if is_html(content_type, &body) {
        // Rendering is CPU work proportional to the page; keep it off the
        // async workers.
        return tokio::task::spawn_blocking(move || html2text::from_read(&body[..], HTML_WIDTH))
            .await
            .map_err(|e| format!("HTML conversion failed: {e}"))?
            .map_err(|e| format!("HTML conversion failed: {e}"));
    }
    let textual = content_type.is_empty()
        || content_type.starts_with("text/")
        || ["json", "xml", "javascript", "yaml", "toml", "csv"]
            .iter()
            .any(|t| content_type.contains(t));
    if textual && !body.contains(&0) {
        return Ok(String::from_utf8_lossy(&body).into_owned());
    }
    Ok(format!(
        "[Binary content ({}), {} bytes, not shown]",
        if content_type.is_empty() {
            "unknown type"
        } else {
            content_type
        },
        body.len()
    ))
}

fn is_html(content_type: &str, body: &[u8]) -> bool {
    if content_type.contains("html") {
        return true;
    }
    if !content_type.is_empty() {
        return false;
    }
    // Servers that send no type for pages: sniff the start.
    let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    let head = head.trim_start();
    head.starts_with("<!doctype html") || head.starts_with("<html")
}
