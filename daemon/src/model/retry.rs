//! Retrying a model request on 429 and 5xx: exponential backoff with
//! jitter, or the server's own `Retry-After` (header, or the Gemini API's
//! `RetryInfo.retryDelay` in the error body) when it gives one.

use std::time::Duration;

use super::{ModelError, ModelErrorKind, RetryNotice};

/// How hard to try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// The first backoff; it doubles per attempt.
    pub base: Duration,
    /// No backoff is longer than this.
    pub max_delay: Duration,
    /// A server-asked delay longer than this is not waited for.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 5,
            base: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempt + 1` (after `attempt` failures),
    /// `None` when no attempt is left or the server asks for too long.
    /// `jitter` in [0, 1) spreads backoffs by up to +25 %.
    pub fn delay(
        &self,
        attempt: u32,
        retry_after: Option<Duration>,
        jitter: f64,
    ) -> Option<Duration> {
        if attempt >= self.attempts {
            return None;
        }
        if let Some(asked) = retry_after {
            return (asked <= self.max_retry_after).then_some(asked);
        }
        let exp = self
            .base
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        let capped = exp.min(self.max_delay);
        Some(capped.mul_f64(1.0 + jitter.clamp(0.0, 1.0) / 4.0))
    }
}

/// Whether an HTTP status is worth another try.
pub fn is_retryable(status: u16) -> bool {
    status == 429 || status == 408 || (500..=599).contains(&status) && status != 501
}

/// `Retry-After` as delta-seconds (the HTTP-date form is not used by the
/// model APIs), or the Gemini API's `retryDelay` ("12s", "1.5s").
pub fn retry_after(header: Option<&str>, body: &[u8]) -> Option<Duration> {
    if let Some(seconds) = header.and_then(|h| h.trim().parse::<f64>().ok()) {
        return seconds_to_duration(seconds);
    }
    let body: serde_json::Value = serde_json::from_slice(body).ok()?;
    body["error"]["details"]
        .as_array()?
        .iter()
        .filter_map(|d| d["retryDelay"].as_str())
        .find_map(|d| d.strip_suffix('s')?.parse::<f64>().ok())
        .and_then(seconds_to_duration)
}

fn seconds_to_duration(seconds: f64) -> Option<Duration> {
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(86_400.0)))
}

/// Sends the request `make` builds until it succeeds, fails for good, or
/// the retries run out. A non-success answer that is not retried becomes
/// the error `refuse` makes of its status and body.
pub async fn send(
    policy: RetryPolicy,
    make: &(dyn Fn() -> reqwest::RequestBuilder + Send + Sync),
    refuse: &(dyn Fn(u16, &[u8]) -> ModelError + Send + Sync),
    on_retry: RetryNotice<'_>,
) -> Result<reqwest::Response, ModelError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let (error, asked) = match make().send().await {
            Ok(response) if response.status().is_success() => return Ok(response),
            Ok(response) => {
                let status = response.status().as_u16();
                let header = response
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let body = response.bytes().await.unwrap_or_default();
                let error = refuse(status, &body);
                if !is_retryable(status) {
                    return Err(error);
                }
                (error, retry_after(header.as_deref(), &body))
            }
            Err(e) => (transport_error(&e), None),
        };
        let Some(wait) = policy.delay(attempt, asked, jitter()) else {
            return Err(error);
        };
        on_retry(&error.message, wait);
        tracing::warn!(attempt, wait_ms = wait.as_millis() as u64, error = %error, "model request failed; retrying");
        tokio::time::sleep(wait).await;
    }
}

/// A request that never got an answer.
pub fn transport_error(e: &reqwest::Error) -> ModelError {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "failed"
    };
    let mut message = format!("the model request {what}: {e}");
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        message.push_str(&format!(": {inner}"));
        source = inner.source();
    }
    ModelError::new(ModelErrorKind::Transport, message)
}

fn jitter() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    f64::from(nanos % 1000) / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_caps_and_stops() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(1, None, 0.0), Some(Duration::from_millis(500)));
        assert_eq!(p.delay(2, None, 0.0), Some(Duration::from_secs(1)));
        assert_eq!(p.delay(4, None, 0.0), Some(Duration::from_secs(4)));
        assert_eq!(p.delay(5, None, 0.0), None);
        let long = RetryPolicy { attempts: 40, ..p };
        assert_eq!(long.delay(30, None, 0.0), Some(Duration::from_secs(30)));
        assert_eq!(p.delay(1, None, 0.999).map(|d| d.as_millis()), Some(624));
    }

    #[test]
    fn the_server_asked_delay_wins_unless_absurd() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(7)), 0.5),
            Some(Duration::from_secs(7))
        );
        assert_eq!(p.delay(1, Some(Duration::from_secs(3600)), 0.0), None);
    }

    #[test]
    fn retry_after_from_header_or_gemini_body() {
        assert_eq!(retry_after(Some("3"), b""), Some(Duration::from_secs(3)));
        assert_eq!(retry_after(Some("-1"), b""), None);
        let body = br#"{"error":{"code":429,"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1.5s"}]}}"#;
        assert_eq!(retry_after(None, body), Some(Duration::from_millis(1500)));
        assert_eq!(retry_after(None, b"not json"), None);
    }

    #[test]
    fn which_statuses_are_retried() {
        for s in [429, 500, 502, 503, 504, 408] {
            assert!(is_retryable(s), "{s}");
        }
        for s in [400, 401, 403, 404, 501] {
            assert!(!is_retryable(s), "{s}");
        }
    }
}
