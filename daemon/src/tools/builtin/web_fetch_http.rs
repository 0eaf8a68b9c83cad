//! The HTTP side of `web_fetch`: concurrent fetches with a per-URL time
//! limit, a bounded body, and HTML turned into readable text.

use std::time::Duration;

use tokio::task::JoinSet;

use super::contract::ToolError;
use super::web_fetch_guard::{self, Refusal};

/// An error with its causes ("error sending request" alone says little).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        out.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    out
}

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
    /// Let loopback, private and link-local addresses through
    /// (`geminid.webFetch.allowPrivateNetwork`).
    pub allow_private: bool,
}

/// Redirects followed at most per URL, as the reference's client does.
const MAX_REDIRECTS: usize = 10;

/// The proxy variables reqwest honours: with one set, connections go to
/// the proxy, which resolves the target itself.
fn env_proxy_set() -> bool {
    ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some() || std::env::var_os(v.to_lowercase()).is_some())
}

/// Checks one hop (the URL as given, or a redirect's target).
pub type HopCheck = std::sync::Arc<
    dyn Fn(reqwest::Url) -> futures::future::BoxFuture<'static, Result<(), String>> + Send + Sync,
>;

/// The hop check of `config`: [`web_fetch_guard::vet`] with the system
/// resolver.
pub fn hop_check(config: &FetchConfig) -> HopCheck {
    let allow_private = config.allow_private;
    std::sync::Arc::new(move |url: reqwest::Url| {
        Box::pin(async move {
            web_fetch_guard::vet(&url, allow_private, web_fetch_guard::system_lookup)
                .await
                .map(|_| ())
                .map_err(|r| match r {
                    Refusal::BlockedHost(why) => why,
                    Refusal::RateLimited => "rate limited".to_owned(),
                })
        })
    })
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
/// Every hop is checked with `check` (redirects are followed here, not by
/// the client, so that each target is vetted before it is requested).
/// Without a proxy and without `allow_private`, the client's own resolver
/// refuses private addresses too, so a name cannot resolve to a public
/// address for the check and a private one for the connection.
pub async fn fetch_all(
    config: &FetchConfig,
    targets: &[(String, String)],
    check: HopCheck,
) -> Result<Vec<Fetched>, ToolError> {
    let mut builder = reqwest::Client::builder()
        .user_agent(concat!("geminid-web-fetch/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::none());
    if !config.use_env_proxy {
        builder = builder.no_proxy();
    }
    let via_proxy = config.use_env_proxy && env_proxy_set();
    if !(config.allow_private || via_proxy) {
        builder = builder.dns_resolver(std::sync::Arc::new(web_fetch_guard::PublicOnlyResolver));
    }
    let client = builder
        .build()
        .map_err(|e| ToolError::execution(format!("cannot create HTTP client: {e}")))?;
    let mut set = JoinSet::new();
    for (i, (url, fetched_url)) in targets.iter().enumerate() {
        let (client, config, check) = (client.clone(), config.clone(), check.clone());
        let (url, fetched_url) = (url.clone(), fetched_url.clone());
        set.spawn(async move {
            let outcome = tokio::time::timeout(config.timeout, get(&client, &fetched_url, &check))
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

/// One GET (following redirects, each hop checked), returning the body
/// as text.
async fn get(client: &reqwest::Client, url: &str, check: &HopCheck) -> Result<String, String> {
    let mut next = reqwest::Url::parse(url).map_err(|e| format!("bad URL: {e}"))?;
    let mut hops = 0;
    let mut resp = loop {
        check(next.clone()).await?;
        let resp = client
            .get(next.clone())
            .send()
            .await
            .map_err(|e| format!("request failed: {}", error_chain(&e)))?;
        if !resp.status().is_redirection() {
            break resp;
        }
        let Some(location) = resp
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
        else {
            break resp;
        };
        hops += 1;
        if hops > MAX_REDIRECTS {
            return Err(format!("more than {MAX_REDIRECTS} redirects"));
        }
        next = next
            .join(location)
            .map_err(|e| format!("bad redirect to {location}: {e}"))?;
        if !matches!(next.scheme(), "http" | "https") {
            return Err(format!(
                "redirect to {next}: only http and https are fetched"
            ));
        }
    };
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
