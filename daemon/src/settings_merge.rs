//! Settings layers as Gemini CLI 0.61 stacks them — system defaults, user,
//! workspace, system overrides, each later one winning — merged object by
//! object; and which keys of a settings file geminid does not read (shown
//! by `daemon status`, so a typo is visible instead of silently ignored).

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The layer files, lowest precedence first. `system_settings` is the
/// override file (`GEMINID_SYSTEM_SETTINGS`, else
/// `/etc/gemini-cli/settings.json`); the defaults file sits next to it
/// (`GEMINI_CLI_SYSTEM_DEFAULTS_PATH`, else `system-defaults.json`).
pub fn layer_files(
    system_settings: &Path,
    user_gemini_dir: &Path,
    workspace: Option<&Path>,
) -> Vec<PathBuf> {
    let defaults = std::env::var_os("GEMINI_CLI_SYSTEM_DEFAULTS_PATH")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            system_settings
                .parent()
                .unwrap_or(Path::new("/"))
                .join("system-defaults.json")
        });
    let mut files = vec![defaults, user_gemini_dir.join("settings.json")];
    if let Some(root) = workspace {
        let ws = root.join(".gemini/settings.json");
        if ws != files[1] {
            files.push(ws);
        }
    }
    files.push(system_settings.to_path_buf());
    files
}

/// Merges `over` into `base`: objects key by key (recursively), anything
/// else replaced.
pub fn merge_into(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(&key) {
                    Some(slot) => merge_into(slot, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, over) => *base = over,
    }
}

/// Key paths geminid reads; a path ending in `.*` takes its whole subtree.
const READ_KEYS: &[&str] = &[
    "$schema",
    "model.name",
    "general.defaultApprovalMode",
    "general.plan.directory",
    "mcp.allowed",
    "mcp.excluded",
    "mcpServers.*",
    "tools.core",
    "tools.exclude",
    "tools.allowed",
    "tools.discoveryCommand",
    "tools.callCommand",
    "tools.discoveryTimeout",
    "coreTools",
    "excludeTools",
    "allowedTools",
    "toolDiscoveryCommand",
    "toolCallCommand",
    "context.fileName",
    "context.fileFiltering.respectGitIgnore",
    "context.fileFiltering.respectGeminiIgnore",
    "context.fileFiltering.customIgnoreFilePaths",
    "security.folderTrust.enabled",
    "security.environmentVariableRedaction.allowed",
    "security.environmentVariableRedaction.blocked",
    "security.environmentVariableRedaction.enabled",
    "geminid.*",
    "experimental.extensionConfig",
];

/// The leaf key paths of `settings` that geminid does not read, dotted.
pub fn unused_keys(settings: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(settings, &mut String::new(), &mut out);
    out
}

fn walk(value: &Value, path: &mut String, out: &mut Vec<String>) {
    let read = |p: &str| {
        READ_KEYS.iter().any(|k| match k.strip_suffix(".*") {
            Some(prefix) => p == prefix || p.starts_with(&format!("{prefix}.")),
            None => p == *k,
        })
    };
    let under_read = |p: &str| READ_KEYS.iter().any(|k| k.starts_with(&format!("{p}.")));
    match value {
        Value::Object(map) if path.is_empty() || (!read(path) && under_read(path)) => {
            for (key, child) in map {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                walk(child, path, out);
                path.truncate(len);
            }
        }
        _ if read(path) => {}
        _ => out.push(path.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn later_layers_win_key_by_key() {
        let mut merged =
            json!({"model": {"name": "a"}, "tools": {"exclude": ["x"], "core": ["y"]}});
        merge_into(
            &mut merged,
            json!({"model": {"name": "b"}, "tools": {"exclude": ["z"]}}),
        );
        assert_eq!(
            merged,
            json!({"model": {"name": "b"}, "tools": {"exclude": ["z"], "core": ["y"]}})
        );
    }

    #[test]
    fn typos_and_other_keys_are_listed() {
        let unused = unused_keys(&json!({
            "model": {"name": "m", "nmae": "typo"},
            "mcpServers": {"a": {"command": "x", "anything": 1}},
            "tool": {"exclude": []},
            "ui": {"theme": "dark"},
            "geminid": {"whatever": true},
            "security": {"folderTrust": {"enabled": true}}
        }));
        assert_eq!(unused, vec!["model.nmae", "tool", "ui"]);
    }

    #[test]
    fn layers_in_0_61_order() {
        let files = layer_files(
            Path::new("/etc/gemini-cli/settings.json"),
            Path::new("/h/.gemini"),
            Some(Path::new("/w")),
        );
        assert_eq!(
            files,
            vec![
                PathBuf::from("/etc/gemini-cli/system-defaults.json"),
                PathBuf::from("/h/.gemini/settings.json"),
                PathBuf::from("/w/.gemini/settings.json"),
                PathBuf::from("/etc/gemini-cli/settings.json"),
            ]
        );
    }
}
