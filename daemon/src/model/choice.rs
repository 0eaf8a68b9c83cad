//! Which models a session may use besides its own: the fallback taken
//! when the chosen one is over quota or overloaded, and the list offered
//! to clients (ACP's model selector, `/model`). Pure: the environment and
//! settings are handed in.

use serde_json::Value;

/// The fallback model: `GEMINID_FALLBACK_MODEL`, else settings
/// `geminid.fallbackModel`; none when neither is set.
pub fn fallback_model(env: &dyn Fn(&str) -> Option<String>, settings: &Value) -> Option<String> {
    env("GEMINID_FALLBACK_MODEL")
        .or_else(|| {
            settings["geminid"]["fallbackModel"]
                .as_str()
                .map(str::to_owned)
        })
        .map(|m| m.trim().to_owned())
        .filter(|m| !m.is_empty())
}

/// The models offered to clients: `current` first, then settings
/// `geminid.models` (strings), then the fallback, each once.
pub fn listed_models(current: &str, fallback: Option<&str>, settings: &Value) -> Vec<String> {
    let mut out = vec![current.to_owned()];
    let listed = settings["geminid"]["models"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    for model in listed.chain(fallback) {
        if !out.iter().any(|m| m == model) {
            out.push(model.to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_environment_beats_settings_and_lists_have_no_repeats() {
        let settings = json!({"geminid": {"fallbackModel": "b", "models": ["a", "c", 3]}});
        let none = |_: &str| None;
        assert_eq!(fallback_model(&none, &settings).as_deref(), Some("b"));
        let env = |k: &str| (k == "GEMINID_FALLBACK_MODEL").then(|| "e".to_owned());
        assert_eq!(fallback_model(&env, &settings).as_deref(), Some("e"));
        assert_eq!(fallback_model(&none, &Value::Null), None);
        assert_eq!(listed_models("a", Some("b"), &settings), ["a", "c", "b"]);
    }
}
