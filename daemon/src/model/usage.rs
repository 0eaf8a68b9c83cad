//! What model requests cost: the token counts a provider reports for one
//! response ([`Usage`]) and a session's running account of them
//! ([`TokenLedger`]), which the session record keeps.

use serde::{Deserialize, Serialize};

/// Token counts the provider reported for one response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// The whole request: system instruction, history and tools.
    pub input_tokens: u64,
    /// The answer, thoughts excluded.
    pub output_tokens: u64,
    /// Input tokens the provider served from its cache.
    #[serde(default)]
    pub cached_tokens: u64,
    #[serde(default)]
    pub thought_tokens: u64,
}

impl Usage {
    /// Field-by-field sum.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_tokens += other.cached_tokens;
        self.thought_tokens += other.thought_tokens;
    }
}

/// A session's account: every request summed, and how full the context
/// window was at the last one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenLedger {
    pub total: Usage,
    pub requests: u64,
    #[serde(default)]
    pub model: Option<String>,
    /// Input tokens of the last request.
    pub context_tokens: u64,
    pub context_window: u64,
}

impl TokenLedger {
    /// Books one request to `model`, whose window is `window`.
    pub fn book(&mut self, model: &str, window: u64, request: Usage) {
        self.total.add(request);
        self.requests += 1;
        self.model = Some(model.to_owned());
        self.context_tokens = request.input_tokens;
        self.context_window = window;
    }

    /// The share of the window the last request filled, 0 to 1 (more
    /// when a provider accepted a request over the window we assumed).
    pub fn share(&self) -> f64 {
        if self.context_window == 0 {
            return 0.0;
        }
        self.context_tokens as f64 / self.context_window as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ledger_sums_requests_and_keeps_the_last_context() {
        let mut ledger = TokenLedger::default();
        let request = |input, output| Usage {
            input_tokens: input,
            output_tokens: output,
            cached_tokens: input / 2,
            thought_tokens: 1,
        };
        ledger.book("m", 1000, request(100, 10));
        ledger.book("m", 1000, request(250, 20));
        assert_eq!(ledger.requests, 2);
        assert_eq!(ledger.total.input_tokens, 350);
        assert_eq!(ledger.total.cached_tokens, 175);
        assert_eq!(ledger.total.thought_tokens, 2);
        assert_eq!(ledger.context_tokens, 250);
        assert!((ledger.share() - 0.25).abs() < 1e-9);
    }
}
