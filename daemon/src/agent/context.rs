//! What is sent to the model, and how big it is: the history as sent (the
//! stored entries, with a compressed prefix replaced by its summary) and
//! the token estimate of a request, calibrated by what the provider
//! reported for earlier ones. Pure.

use crate::model::{CompressedPrefix, Content, ModelRequest, Part, Role};

/// Tokens per character of ASCII text, and per character of other text
/// (the reference's heuristic).
const ASCII_TOKENS_PER_CHAR: f64 = 0.25;
const OTHER_TOKENS_PER_CHAR: f64 = 1.5;
/// Per entry and per part: the JSON around the text.
const ENTRY_OVERHEAD: f64 = 8.0;
const PART_OVERHEAD: f64 = 4.0;
const IMAGE_TOKENS: f64 = 3000.0;
const PDF_TOKENS: f64 = 25_800.0;

/// What the model answers after a summary, so the roles alternate.
pub const SUMMARY_ACK: &str = "Understood. I will continue from this summary of our work so far.";

/// The history as sent: `prefix` (when it fits the entries) stands for
/// the entries before `prefix.upto`.
pub fn sent_history(entries: &[Content], prefix: Option<&CompressedPrefix>) -> Vec<Content> {
    match prefix {
        Some(prefix) if (prefix.upto as usize) <= entries.len() => {
            let rest = &entries[prefix.upto as usize..];
            let mut out = Vec::with_capacity(rest.len() + 2);
            out.push(Content::user_text(prefix.summary.clone()));
            out.push(Content {
                role: Role::Model,
                parts: vec![Part::text(SUMMARY_ACK)],
            });
            out.extend_from_slice(rest);
            out
        }
        _ => entries.to_vec(),
    }
}

/// The estimated tokens of `text`.
pub fn text_tokens(text: &str) -> f64 {
    text.chars()
        .map(|c| {
            if c.is_ascii() {
                ASCII_TOKENS_PER_CHAR
            } else {
                OTHER_TOKENS_PER_CHAR
            }
        })
        .sum()
}

fn part_tokens(part: &Part) -> f64 {
    let json_len = |v: &serde_json::Value| json_len(v) as f64 * ASCII_TOKENS_PER_CHAR;
    PART_OVERHEAD
        + if let Some(text) = &part.text {
            text_tokens(text)
        } else if let Some(call) = &part.function_call {
            text_tokens(&call.name) + json_len(&call.args)
        } else if let Some(response) = &part.function_response {
            text_tokens(&response.name) + json_len(&response.response)
        } else if let Some(data) = &part.inline_data {
            if data.mime_type.starts_with("image/") {
                IMAGE_TOKENS
            } else if data.mime_type == "application/pdf" {
                PDF_TOKENS
            } else {
                data.data.len() as f64 * ASCII_TOKENS_PER_CHAR
            }
        } else {
            0.0
        }
}

/// The length of a JSON value's text.
fn json_len(value: &serde_json::Value) -> usize {
    serde_json::to_string(value).map_or(0, |s| s.len())
}

/// The estimated tokens of `contents`.
pub fn contents_tokens(contents: &[Content]) -> f64 {
    contents
        .iter()
        .map(|c| ENTRY_OVERHEAD + c.parts.iter().map(part_tokens).sum::<f64>())
        .sum()
}

/// The estimated tokens of a whole request, before calibration.
pub fn request_tokens(request: &ModelRequest) -> u64 {
    let tools: f64 = request
        .tools
        .iter()
        .map(|t| json_len(t) as f64 * ASCII_TOKENS_PER_CHAR)
        .sum();
    (text_tokens(&request.system) + tools + contents_tokens(&request.contents)).ceil() as u64
}

/// How much the provider's counts exceed our estimates: never below 1, so
/// an estimate is only ever made bigger (compress earlier, never later).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration(f64);

impl Default for Calibration {
    fn default() -> Self {
        Calibration(1.0)
    }
}

impl Calibration {
    /// Learns from a request estimated at `estimated` that the provider
    /// counted as `reported`.
    pub fn learn(&mut self, estimated: u64, reported: u64) {
        if estimated > 0 && reported > 0 {
            self.0 = (reported as f64 / estimated as f64).clamp(1.0, 4.0);
        }
    }

    /// `estimated`, scaled.
    pub fn apply(&self, estimated: u64) -> u64 {
        (estimated as f64 * self.0).ceil() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_replaces_the_entries_it_stands_for() {
        let entries: Vec<Content> = (0..5).map(|i| Content::user_text(format!("{i}"))).collect();
        let prefix = CompressedPrefix {
            upto: 3,
            summary: "sum".into(),
        };
        let sent = sent_history(&entries, Some(&prefix));
        assert_eq!(sent.len(), 4);
        assert_eq!(sent[0].text(), "sum");
        assert_eq!(sent[1].role, Role::Model);
        assert_eq!(sent[2].text(), "3");
        // A prefix past the end is not applied: everything is sent.
        let bad = CompressedPrefix {
            upto: 9,
            summary: "x".into(),
        };
        assert_eq!(sent_history(&entries, Some(&bad)).len(), 5);
    }

    #[test]
    fn estimates_grow_with_text_and_calibration_only_raises_them() {
        let small = contents_tokens(&[Content::user_text("abcd")]);
        let big = contents_tokens(&[Content::user_text("abcd".repeat(100))]);
        assert!(big > small + 90.0);
        assert!(text_tokens("ééé") > text_tokens("eee"));
        let mut c = Calibration::default();
        c.learn(100, 50);
        assert_eq!(c.apply(100), 100);
        c.learn(100, 130);
        assert_eq!(c.apply(100), 130);
    }
}
