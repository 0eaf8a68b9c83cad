//! Where an extension's settings get their values, as 0.61 resolves them
//! (`extensionSettings.ts`): per scope, non-sensitive values from an
//! `.env` file (user scope: the extension's install directory; workspace
//! scope: the workspace root's `.env`), sensitive ones (`sensitive: true`)
//! from the keychain (`keychain.rs`) under the service
//! `Gemini CLI Extensions <name> <id>` (` <workspace>` appended for the
//! workspace scope), account `__secret__<envVar>`. A workspace's values
//! override the user's, and are read only for a trusted workspace. Only
//! the variables the manifest declares (`settings[].envVar`) are given.
//! The extension's id (`Extension::id`) is `extension_id.rs`'s.
//! `experimental.extensionConfig: false` (system or user settings; 0.61's
//! default is true) turns the values off: none are read ([`settings_on`]).

use std::path::{Path, PathBuf};

use crate::extensions::Extension;
use crate::keychain::{Keychain, Lookup};
use crate::problems::ConfigProblem;

/// The account prefix 0.61's `KeychainTokenStorage.setSecret` adds.
pub const SECRET_PREFIX: &str = "__secret__";

/// One scope of an extension's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope<'a> {
    User,
    Workspace(&'a Path),
}

/// The keychain service of `ext`'s secrets in `scope`.
pub fn keychain_service(name: &str, id: &str, scope: &Scope<'_>) -> String {
    match scope {
        Scope::User => format!("Gemini CLI Extensions {name} {id}"),
        Scope::Workspace(root) => {
            format!("Gemini CLI Extensions {name} {id} {}", root.display())
        }
    }
}

/// The `.env` file of `ext`'s values in `scope`.
pub fn env_file(ext: &Extension, scope: &Scope<'_>) -> PathBuf {
    match scope {
        Scope::User => ext.env_file(),
        Scope::Workspace(root) => root.join(".env"),
    }
}

/// The values of `ext`'s declared settings in one scope: the `.env`
/// file's, then the keychain's for sensitive ones (a value there wins).
/// Problems: sensitive values kept where the daemon cannot read.
pub fn scope_values(
    ext: &Extension,
    scope: &Scope<'_>,
    keychain: &mut Keychain,
) -> (Vec<(String, String)>, Vec<ConfigProblem>) {
    let mut problems = Vec::new();
    if ext.setting_vars.is_empty() || ext.settings_off {
        return (Vec::new(), problems);
    }
    let file_values = std::fs::read_to_string(env_file(ext, scope))
        .map(|text| crate::model::dotenv::parse(&text))
        .unwrap_or_default();
    let service = keychain_service(&ext.name, &ext.id, scope);
    let mut values = Vec::new();
    for var in &ext.setting_vars {
        let from_file = file_values
            .iter()
            .rev()
            .find(|(k, _)| k == var)
            .map(|(_, v)| v.clone());
        let value = if ext.sensitive_vars.contains(var) {
            match keychain.lookup(&service, &format!("{SECRET_PREFIX}{var}")) {
                Lookup::Found(secret) => Some(secret),
                Lookup::Missing => from_file,
                // 0.61 does not load the extension then: never a value
                // from elsewhere.
                Lookup::Unreadable => None,
                Lookup::Unreachable => {
                    if from_file.is_none() {
                        problems.push(
                            ConfigProblem::new(
                                ext.manifest().display().to_string(),
                                format!(
                                    "setting {var} is sensitive: kept in the system keychain \
                                     ({service}), which is not reachable (no secret-tool)"
                                ),
                            )
                            .kept("it is unset"),
                        );
                    }
                    from_file
                }
            }
        } else {
            from_file
        };
        if let Some(value) = value {
            values.push((var.clone(), value));
        }
    }
    (values, problems)
}

/// Whether extensions' settings get values: `experimental.extensionConfig`
/// of the merged system and user settings (default true, as 0.61). A file
/// that cannot be read leaves the default (its problem is reported by the
/// settings loader).
pub fn settings_on(system_settings: &Path, user_gemini_dir: &Path) -> bool {
    let mut merged = serde_json::Value::Null;
    for path in crate::settings_merge::layer_files(system_settings, user_gemini_dir, None) {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if let Ok(value) = crate::jsonc::parse(&text) {
            crate::settings_merge::merge_into(&mut merged, value);
        }
    }
    merged
        .pointer("/experimental/extensionConfig")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(true)
}

/// The installed extensions (`<user_gemini_dir>/extensions`, read by
/// `extensions::load_all`), each told whether `experimental.extensionConfig`
/// leaves its settings on: what the servers' planner and the hook book
/// both start from.
pub fn load_installed(
    system_settings: &Path,
    user_gemini_dir: &Path,
) -> (Vec<Extension>, Vec<ConfigProblem>) {
    let (mut found, problems) = crate::extensions::load_all(&user_gemini_dir.join("extensions"));
    let settings_off = !settings_on(system_settings, user_gemini_dir);
    for ext in &mut found {
        ext.settings_off = settings_off;
    }
    (found, problems)
}

/// The values `ext`'s servers and hooks get in sessions rooted at
/// `trusted_root` (the workspace's over the user's; `None`: an untrusted
/// folder or no workspace, the user's only, as 0.61 reads them).
pub fn values_for(
    ext: &Extension,
    trusted_root: Option<&Path>,
    keychain: &mut Keychain,
) -> (Vec<(String, String)>, Vec<ConfigProblem>) {
    let (user, mut problems) = scope_values(ext, &Scope::User, keychain);
    let Some(root) = trusted_root else {
        return (merged(user, Vec::new()), problems);
    };
    let (here, more) = scope_values(ext, &Scope::Workspace(root), keychain);
    problems.extend(more);
    (merged(user, here), problems)
}

/// One declared setting and where its value comes from
/// (`extensions.list`, 0.61's `resolvedSettings`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub name: String,
    pub env_var: String,
    pub sensitive: bool,
    /// `user` or `workspace`, when it has a value.
    pub scope: Option<&'static str>,
    /// The `.env` file, or `keychain`.
    pub source: Option<String>,
    pub value: Option<String>,
}

/// `ext`'s declared settings as sessions in `trusted_root` resolve them.
pub fn resolved(
    ext: &Extension,
    trusted_root: Option<&Path>,
    keychain: &mut Keychain,
) -> Vec<Resolved> {
    let (user, _) = scope_values(ext, &Scope::User, keychain);
    let here = match trusted_root {
        Some(root) => scope_values(ext, &Scope::Workspace(root), keychain).0,
        None => Vec::new(),
    };
    let dotenv_has = |scope: &Scope<'_>, var: &str| {
        std::fs::read_to_string(env_file(ext, scope))
            .map(|t| {
                crate::model::dotenv::parse(&t)
                    .iter()
                    .any(|(k, _)| k == var)
            })
            .unwrap_or(false)
    };
    ext.setting_vars
        .iter()
        .map(|var| {
            let sensitive = ext.sensitive_vars.contains(var);
            let name = ext
                .setting_names
                .iter()
                .find(|(v, _)| v == var)
                .map(|(_, n)| n.clone())
                .unwrap_or_else(|| var.clone());
            let found = |values: &[(String, String)]| {
                values
                    .iter()
                    .find(|(k, _)| k == var)
                    .map(|(_, v)| v.clone())
            };
            let (scope, value) = match (trusted_root, found(&here), found(&user)) {
                (Some(root), Some(v), _) => (Some(Scope::Workspace(root)), Some(v)),
                (_, _, Some(v)) => (Some(Scope::User), Some(v)),
                _ => (None, None),
            };
            let source = scope.as_ref().map(|scope| {
                if sensitive && !dotenv_has(scope, var) {
                    "keychain".to_owned()
                } else {
                    env_file(ext, scope).display().to_string()
                }
            });
            Resolved {
                name,
                env_var: var.clone(),
                sensitive,
                scope: scope.map(|s| match s {
                    Scope::User => "user",
                    Scope::Workspace(_) => "workspace",
                }),
                source,
                value: value.filter(|_| !sensitive),
            }
        })
        .collect()
}

/// 0.61's `resolveEnvVarsInObject(config, customEnv)` for the manifest's
/// `mcpServers` (pure): `$VAR` and `${VAR}` naming one of `values` are
/// replaced in every string; any other reference is left for the server
/// entry's own expansion (`discovery/settings.rs`).
pub fn substitute(value: serde_json::Value, values: &[(String, String)]) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) if s.contains('$') && !values.is_empty() => {
            let Ok(re) = regex::Regex::new(r"\$(?:\{([^}]+)\}|(\w+))") else {
                return Value::String(s);
            };
            let out = re.replace_all(&s, |caps: &regex::Captures<'_>| {
                let name = caps
                    .get(1)
                    .or_else(|| caps.get(2))
                    .map_or("", |m| m.as_str());
                values
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_else(|| caps[0].to_owned())
            });
            Value::String(out.into_owned())
        }
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| substitute(v, values)).collect())
        }
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, substitute(v, values)))
                .collect(),
        ),
        other => other,
    }
}

/// The user's values overridden by the workspace's (pure).
pub fn merged(
    user: Vec<(String, String)>,
    workspace: Vec<(String, String)>,
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = user
        .into_iter()
        .filter(|(k, _)| !workspace.iter().any(|(w, _)| w == k))
        .collect();
    out.extend(workspace);
    out.sort();
    out
}

/// Whether `ext`'s servers need an instance of their own for a workspace
/// (pure): its settings resolve to other values there than at user scope.
pub fn needs_workspace_instance(user: &[(String, String)], here: &[(String, String)]) -> bool {
    let mut user = user.to_vec();
    let mut here = here.to_vec();
    user.sort();
    here.sort();
    user != here
}

#[cfg(test)]
#[path = "extension_settings_tests.rs"]
mod tests;
