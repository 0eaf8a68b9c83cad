//! Which hooks each workspace's sessions run (IO edge): the `hooks` of the
//! system defaults, the user's settings, the workspace's
//! `.gemini/settings.json` (only when the folder is trusted), the system
//! overrides and the extensions enabled for the workspace (their
//! `hooks/hooks.json`, `{"hooks": {...}}` with `${extensionPath}`,
//! `${workspacePath}` and `${/}` substituted, as 0.61 reads it), read once
//! per workspace and kept until a
//! configuration file changes (`invalidate`, from the daemon's watcher),
//! so a tool call costs a map lookup, not a file read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::config::{FileHooks, HookSource, read};
use super::plan::HookSet;

/// Whether a folder is trusted now.
pub type TrustCheck = Arc<dyn Fn(&Path) -> bool + Send + Sync>;

pub struct HookBook {
    system_settings: PathBuf,
    user_gemini_dir: PathBuf,
    trust: Mutex<Option<TrustCheck>>,
    cache: Mutex<HashMap<PathBuf, Arc<HookSet>>>,
}

impl HookBook {
    pub fn new(system_settings: &Path, user_gemini_dir: &Path) -> HookBook {
        HookBook {
            system_settings: system_settings.to_path_buf(),
            user_gemini_dir: user_gemini_dir.to_path_buf(),
            trust: Mutex::new(None),
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// Sets how trust is decided (the daemon's, once it exists). Until
    /// then no workspace is trusted.
    pub fn set_trust(&self, trust: TrustCheck) {
        *self.trust.lock().unwrap_or_else(|e| e.into_inner()) = Some(trust);
        self.invalidate();
    }

    /// A configuration file changed: every workspace is read again at its
    /// next use.
    pub fn invalidate(&self) {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// The hooks of sessions rooted at `root`.
    pub fn for_root(&self, root: &Path) -> Arc<HookSet> {
        if let Some(set) = self
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(root)
        {
            return set.clone();
        }
        let set = Arc::new(self.load(root));
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(root.to_path_buf(), set.clone());
        set
    }

    fn load(&self, root: &Path) -> HookSet {
        let trust = self.trust.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let trusted = trust.is_some_and(|t| t(root));
        let files = crate::settings_merge::layer_files(
            &self.system_settings,
            &self.user_gemini_dir,
            trusted.then_some(root),
        );
        let user = self.user_gemini_dir.join("settings.json");
        let workspace = root.join(".gemini/settings.json");
        let layers = files
            .iter()
            .map(|path| {
                let layer = if *path == user {
                    "user"
                } else if trusted && *path == workspace {
                    "workspace"
                } else if *path == self.system_settings {
                    "system"
                } else {
                    "system-defaults"
                };
                read_file(path, layer)
            })
            .collect();
        let mut layers: Vec<FileHooks> = layers;
        layers.extend(self.extension_layers(root, trusted));
        let mut set = HookSet::from_layers(layers);
        set.workspace_trusted = trusted;
        // Logged once per change (the set is kept until the next one);
        // `hooks.list` lists them while they last.
        for problem in &set.problems {
            tracing::warn!(workspace = %root.display(), "hooks: {problem}");
        }
        set
    }
}

impl HookBook {
    /// The hooks of the extensions enabled for `root`, one layer each.
    /// Each hook gets its extension's settings as sessions in `root` see
    /// them (the workspace's values over the user's when `trusted`).
    fn extension_layers(&self, root: &Path, trusted: bool) -> Vec<FileHooks> {
        let (found, _) =
            crate::extension_settings::load_installed(&self.system_settings, &self.user_gemini_dir);
        let mut keychain = crate::keychain::Keychain::new(
            &self.user_gemini_dir,
            crate::keychain::backend_from_env(),
        );
        let mut layers = Vec::new();
        for ext in found.iter().filter(|e| e.loaded && e.enabled_for(root)) {
            let Some(mut layer) = read_extension(&ext.path, root) else {
                continue;
            };
            let (env, problems) =
                crate::extension_settings::values_for(ext, trusted.then_some(root), &mut keychain);
            layer
                .problems
                .extend(problems.iter().map(ToString::to_string));
            for entry in &mut layer.entries {
                entry.env = env.clone();
            }
            layers.push(layer);
        }
        layers
    }
}

/// An extension's `hooks/hooks.json`, when it has one. Its own switches
/// (`enabled`, `disabled`) are not read: those are the user's.
fn read_extension(dir: &Path, root: &Path) -> Option<FileHooks> {
    let path = dir.join("hooks").join("hooks.json");
    let file = path.display().to_string();
    let problem = |message: String| FileHooks {
        problems: vec![format!("{file}: {message} (no hook of it runs)")],
        ..FileHooks::default()
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return Some(problem(format!("cannot read: {e}"))),
    };
    let value = match crate::jsonc::parse(&text) {
        Ok(value) => value,
        Err(e) => {
            return Some(problem(format!(
                "{}: not valid JSON: {}",
                e.line, e.message
            )));
        }
    };
    let Some(hooks) = value.get("hooks").filter(|h| h.is_object()) else {
        return Some(problem("\"hooks\" must be an object".to_owned()));
    };
    let mut hooks = hydrate(hooks.clone(), dir, root);
    if let Some(map) = hooks.as_object_mut() {
        map.remove("enabled");
        map.remove("disabled");
    }
    let source = HookSource {
        layer: "extension",
        file: file.clone(),
    };
    let mut read = read(&serde_json::json!({ "hooks": hooks }), &source);
    for problem in &mut read.problems {
        *problem = format!("{file}: {problem}");
    }
    Some(read)
}

/// 0.61's variables in an extension's hooks: `${extensionPath}`,
/// `${workspacePath}`, `${/}` and `${pathSeparator}`.
fn hydrate(value: serde_json::Value, dir: &Path, root: &Path) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) => Value::String(
            s.replace("${extensionPath}", &dir.display().to_string())
                .replace("${workspacePath}", &root.display().to_string())
                .replace("${pathSeparator}", "/")
                .replace("${/}", "/"),
        ),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| hydrate(v, dir, root)).collect())
        }
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, hydrate(v, dir, root)))
                .collect(),
        ),
        other => other,
    }
}

fn read_file(path: &Path, layer: &'static str) -> FileHooks {
    let file = path.display().to_string();
    let source = HookSource {
        layer,
        file: file.clone(),
    };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return FileHooks::default(),
        Err(e) => {
            return FileHooks {
                problems: vec![format!("{file}: cannot read: {e} (no hook of it runs)")],
                ..FileHooks::default()
            };
        }
    };
    match crate::jsonc::parse(&text) {
        Ok(value) => {
            let mut hooks = read(&value, &source);
            for problem in &mut hooks.problems {
                *problem = format!("{file}: {problem}");
            }
            hooks
        }
        Err(e) => FileHooks {
            problems: vec![format!(
                "{file}:{}: not valid JSON: {} (no hook of it runs)",
                e.line, e.message
            )],
            ..FileHooks::default()
        },
    }
}
