//! How much a model can read: its context window (a table of known
//! models, a default for the others) and the share of it at which the
//! conversation is compressed. Pure; the environment and settings are
//! handed in.

use serde_json::Value;

/// The window of models we know nothing about (the reference's default).
pub const DEFAULT_WINDOW: u64 = 1_048_576;
/// Compress once what is sent passes this share of the window
/// (the reference's default for `model.compressionThreshold`).
pub const DEFAULT_THRESHOLD: f64 = 0.5;

/// Known windows, by model-name prefix (the longest match wins).
const WINDOWS: &[(&str, u64)] = &[
    ("gemini-3", 1_048_576),
    ("gemini-2.5", 1_048_576),
    ("gemini-2.0", 1_048_576),
    ("gemini-1.5-pro", 2_097_152),
    ("gemini-1.5-flash", 1_048_576),
    ("gemma-4", 256_000),
    ("gemma-3", 131_072),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-5", 400_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("claude", 200_000),
];

/// The window and compression threshold a session's requests use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContextPolicy {
    /// Tokens the model accepts per request.
    pub window: u64,
    /// Share of `window` at which the history is compressed.
    pub threshold: f64,
}

impl ContextPolicy {
    /// For `model`: `GEMINID_CONTEXT_WINDOW` (tokens) overrides the table,
    /// `geminid.contextWindows.<model>` in settings overrides both;
    /// `model.compressionThreshold` in settings (0 < t < 1) sets the
    /// threshold. A value that cannot be read is reported and the stricter
    /// default kept.
    pub fn resolve(
        model: &str,
        env: &dyn Fn(&str) -> Option<String>,
        settings: &Value,
    ) -> (ContextPolicy, Vec<String>) {
        let mut problems = Vec::new();
        let mut window = window_of(model);
        if let Some(raw) = env("GEMINID_CONTEXT_WINDOW") {
            match raw.trim().parse::<u64>() {
                Ok(n) if n > 0 => window = n,
                _ => problems.push(format!(
                    "GEMINID_CONTEXT_WINDOW `{raw}` is not a positive number of tokens; using {window}"
                )),
            }
        }
        let name = model.strip_prefix("models/").unwrap_or(model);
        if let Some(raw) = settings["geminid"]["contextWindows"].get(name) {
            match raw.as_u64() {
                Some(n) if n > 0 => window = n,
                _ => problems.push(format!(
                    "settings geminid.contextWindows.{name}: `{raw}` is not a positive number of tokens; using {window}"
                )),
            }
        }
        let mut threshold = DEFAULT_THRESHOLD;
        let raw = &settings["model"]["compressionThreshold"];
        if !raw.is_null() {
            match raw.as_f64() {
                Some(t) if t > 0.0 && t < 1.0 => threshold = t,
                _ => problems.push(format!(
                    "settings model.compressionThreshold: `{raw}` is not between 0 and 1; using {DEFAULT_THRESHOLD}"
                )),
            }
        }
        (ContextPolicy { window, threshold }, problems)
    }

    /// Tokens at which the history is compressed.
    pub fn compress_at(&self) -> u64 {
        (self.window as f64 * self.threshold) as u64
    }
}

/// The table's window for `model`, or the default.
pub fn window_of(model: &str) -> u64 {
    let name = model.strip_prefix("models/").unwrap_or(model);
    WINDOWS
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map_or(DEFAULT_WINDOW, |(_, window)| *window)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn known_models_use_the_table_and_others_the_default() {
        assert_eq!(window_of("gemini-2.5-pro"), 1_048_576);
        assert_eq!(window_of("models/gemma-4-31b-it"), 256_000);
        assert_eq!(window_of("gemini-1.5-pro-002"), 2_097_152);
        assert_eq!(window_of("some-local-model"), DEFAULT_WINDOW);
    }

    #[test]
    fn overrides_apply_and_bad_values_are_reported_not_used() {
        let env = |k: &str| (k == "GEMINID_CONTEXT_WINDOW").then(|| "20000".to_owned());
        let (policy, problems) = ContextPolicy::resolve("gemini-2.5-flash", &env, &Value::Null);
        assert_eq!(policy.window, 20_000);
        assert_eq!(policy.compress_at(), 10_000);
        assert!(problems.is_empty());

        let settings = json!({"geminid": {"contextWindows": {"m": 5000}}, "model": {"compressionThreshold": 0.7}});
        let (policy, _) = ContextPolicy::resolve("m", &env, &settings);
        assert_eq!((policy.window, policy.threshold), (5000, 0.7));

        let bad = json!({"model": {"compressionThreshold": 3}});
        let none = |_: &str| Some("lots".to_owned());
        let (policy, problems) = ContextPolicy::resolve("gemini-2.5-pro", &none, &bad);
        assert_eq!(policy.window, 1_048_576);
        assert_eq!(policy.threshold, DEFAULT_THRESHOLD);
        assert_eq!(problems.len(), 2, "{problems:?}");
    }
}
