//! The policy in force: loaded from its sources, reloaded when a source
//! changes (notify), and swapped atomically so every decision sees one
//! consistent rule set. This is the IO edge of the policy; the evaluator
//! (`engine`, `matcher`, `shell`, `wrappers`) stays pure.
//!
//! A file that fails to load keeps the rules it had before (when it had
//! any); its problems are logged and reported to clients.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use serde_json::Value;

use super::dir::{admin_dir_refusal, policy_files};
use super::{
    PolicyEngine, PolicyRule, SavedRule, Tier, default_rules, parse_policy, save_always_allow,
    settings_rules,
};

/// Where policy comes from.
#[derive(Debug, Clone)]
pub struct PolicySources {
    /// User-tier `*.toml` files (`~/.gemini/policies`).
    pub user_dir: PathBuf,
    /// Admin-tier `*.toml` files; ignored unless owned by root and not
    /// writable by others.
    pub admin_dir: PathBuf,
    /// Installed extensions (`~/.gemini/extensions`): each one's
    /// `policies/*.toml` is the Extension tier (no allow, no yolo rules).
    pub extensions_dir: Option<PathBuf>,
    /// settings.json files whose `tools.core` / `tools.exclude` /
    /// `tools.allowed` become rules (user tier).
    pub settings_files: Vec<PathBuf>,
}

impl PolicySources {
    /// The file "always allow and save" answers are written to: ours, never
    /// one the user wrote.
    pub fn saved_file(&self) -> PathBuf {
        self.user_dir.join("geminid-always-allow.toml")
    }

    /// The `policies` directory of every installed extension.
    fn extension_policy_dirs(&self) -> Vec<PathBuf> {
        let Some(root) = &self.extensions_dir else {
            return Vec::new();
        };
        let Ok(entries) = std::fs::read_dir(root) else {
            return Vec::new();
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path().join("policies"))
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        dirs
    }

    fn watched_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = vec![self.user_dir.clone(), self.admin_dir.clone()];
        dirs.extend(self.extensions_dir.iter().cloned());
        dirs.extend(self.extension_policy_dirs());
        for file in &self.settings_files {
            if let Some(parent) = file.parent() {
                dirs.push(parent.to_path_buf());
            }
        }
        if let Some(parent) = self.user_dir.parent() {
            dirs.push(parent.to_path_buf());
        }
        dirs.sort();
        dirs.dedup();
        dirs
    }
}

/// A workspace's policy files as last seen: name, length and mtime.
type Stamp = Vec<(PathBuf, u64, Option<std::time::SystemTime>)>;

/// The engine of one workspace: the shared rules plus its own.
struct WorkspaceEngine {
    generation: u64,
    stamp: Stamp,
    engine: Arc<PolicyEngine>,
}

/// The live policy, shared by every session.
pub struct LivePolicy {
    sources: PolicySources,
    engine: RwLock<Arc<PolicyEngine>>,
    /// Bumped by every reload, so workspace engines are rebuilt on it.
    generation: std::sync::atomic::AtomicU64,
    workspaces: Mutex<BTreeMap<PathBuf, WorkspaceEngine>>,
    /// The last good rules of each source file.
    by_file: Mutex<BTreeMap<PathBuf, Vec<PolicyRule>>>,
    problems: RwLock<Vec<String>>,
}

impl LivePolicy {
    /// Loads every source. Problems are returned (and kept for `problems`).
    pub fn load(sources: PolicySources) -> Arc<LivePolicy> {
        let live = Arc::new(LivePolicy {
            sources,
            engine: RwLock::new(Arc::new(PolicyEngine::new(default_rules()))),
            by_file: Mutex::new(BTreeMap::new()),
            problems: RwLock::new(Vec::new()),
            generation: std::sync::atomic::AtomicU64::new(0),
            workspaces: Mutex::new(BTreeMap::new()),
        });
        live.reload();
        live
    }

    /// The rule set in force now.
    pub fn engine(&self) -> Arc<PolicyEngine> {
        self.engine
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The rule set in force for a session in `workspace`: the shared
    /// rules plus the Workspace tier, `<workspace>/.gemini/policies/*.toml`
    /// (deny and ask_user rules only). Re-read when those files change.
    pub fn engine_for(&self, workspace: &Path) -> Arc<PolicyEngine> {
        let dir = workspace.join(".gemini").join("policies");
        let files = policy_files(&dir).unwrap_or_default();
        if files.is_empty() {
            return self.engine();
        }
        let stamp: Stamp = files
            .iter()
            .map(|p| {
                let meta = std::fs::metadata(p).ok();
                let len = meta.as_ref().map_or(0, std::fs::Metadata::len);
                (p.clone(), len, meta.and_then(|m| m.modified().ok()))
            })
            .collect();
        let generation = self.generation.load(std::sync::atomic::Ordering::Acquire);
        let mut cache = self.workspaces.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(kept) = cache.get(workspace)
            && kept.generation == generation
            && kept.stamp == stamp
        {
            return Arc::clone(&kept.engine);
        }
        let mut rules: Vec<PolicyRule> = self.engine().rules().to_vec();
        for path in &files {
            match std::fs::read_to_string(path) {
                Ok(text) => {
                    let (found, errors) =
                        parse_policy(&text, &path.display().to_string(), Tier::Workspace);
                    for error in &errors {
                        tracing::warn!(problem = %error, "workspace policy");
                    }
                    rules.extend(found);
                }
                Err(e) => {
                    tracing::warn!(problem = %format!("{}: cannot read: {e}", path.display()), "workspace policy");
                }
            }
        }
        let engine = Arc::new(PolicyEngine::new(rules));
        cache.insert(
            workspace.to_path_buf(),
            WorkspaceEngine {
                generation,
                stamp,
                engine: Arc::clone(&engine),
            },
        );
        engine
    }

    /// Problems found by the last load.
    pub fn problems(&self) -> Vec<String> {
        self.problems
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Reads every source again and swaps the rule set. Returns the problems.
    pub fn reload(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let mut by_file = self.by_file.lock().unwrap_or_else(|e| e.into_inner());
        let mut seen = Vec::new();
        for (path, tier) in self.policy_files(&mut problems) {
            seen.push(path.clone());
            let loaded = match std::fs::read_to_string(&path) {
                Ok(text) => parse_policy(&text, &path.display().to_string(), tier),
                Err(e) => {
                    problems.push(format!("{}: cannot read: {e}", path.display()));
                    continue;
                }
            };
            keep_or_replace(&mut by_file, path, loaded, &mut problems);
        }
        for path in &self.sources.settings_files {
            match settings_file_rules(path) {
                Ok(Some(rules)) => {
                    by_file.insert(path.clone(), rules);
                    seen.push(path.clone());
                }
                Ok(None) => {}
                Err(problem) => {
                    problems.push(problem);
                    if by_file.contains_key(path) {
                        seen.push(path.clone());
                    }
                }
            }
        }
        // Files that are gone take their rules with them.
        by_file.retain(|path, _| seen.contains(path));
        let mut rules = default_rules();
        for file_rules in by_file.values() {
            rules.extend(file_rules.iter().cloned());
        }
        drop(by_file);
        *self.engine.write().unwrap_or_else(|e| e.into_inner()) =
            Arc::new(PolicyEngine::new(rules));
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        for problem in &problems {
            tracing::warn!(problem = %problem, "policy");
        }
        *self.problems.write().unwrap_or_else(|e| e.into_inner()) = problems.clone();
        problems
    }

    /// `(path, tier)` of every policy file, admin tier only when the
    /// directory is trustworthy.
    fn policy_files(&self, problems: &mut Vec<String>) -> Vec<(PathBuf, Tier)> {
        let mut files = Vec::new();
        let mut add = |dir: &Path, tier: Tier| match policy_files(dir) {
            Ok(found) => files.extend(found.into_iter().map(|p| (p, tier))),
            Err(e) => problems.push(e.to_string()),
        };
        add(&self.sources.user_dir, Tier::User);
        for dir in self.sources.extension_policy_dirs() {
            add(&dir, Tier::Extension);
        }
        match admin_dir_refusal(&self.sources.admin_dir) {
            Some(refusal) => problems.push(refusal.to_string()),
            None => add(&self.sources.admin_dir, Tier::Admin),
        }
        files
    }

    /// Writes an "always allow" rule to our own policy file, atomically,
    /// then reloads.
    pub fn save_always_allow(&self, rule: &SavedRule) -> Result<(), String> {
        let path = self.sources.saved_file();
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        save_always_allow(&path, rule).map_err(|e| e.to_string())?;
        self.reload();
        Ok(())
    }

    /// Watches the sources and reloads on change, calling `report` with
    /// the problems of each reload that has any. The watcher lives as long
    /// as the returned value.
    pub fn watch(
        self: &Arc<Self>,
        report: impl Fn(Vec<String>) + Send + 'static,
    ) -> notify::Result<PolicyWatcher> {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                if event.is_ok() {
                    let _ = tx.send(());
                }
            })?;
        for dir in self.sources.watched_dirs() {
            if dir.is_dir() {
                watcher.watch(&dir, RecursiveMode::NonRecursive)?;
            }
        }
        let live = Arc::clone(self);
        std::thread::Builder::new()
            .name("policy-reload".into())
            .spawn(move || {
                while rx.recv().is_ok() {
                    // Editors write in several steps: settle first.
                    std::thread::sleep(Duration::from_millis(50));
                    while rx.try_recv().is_ok() {}
                    let problems = live.reload();
                    if !problems.is_empty() {
                        report(problems);
                    }
                }
            })
            .map_err(|e| notify::Error::generic(&e.to_string()))?;
        Ok(PolicyWatcher { _watcher: watcher })
    }
}

/// Keeps the file watcher alive.
pub struct PolicyWatcher {
    _watcher: notify::RecommendedWatcher,
}

/// A file with load errors keeps its previous rules if it had any.
fn keep_or_replace(
    by_file: &mut BTreeMap<PathBuf, Vec<PolicyRule>>,
    path: PathBuf,
    (rules, errors): (Vec<PolicyRule>, Vec<super::PolicyLoadError>),
    problems: &mut Vec<String>,
) {
    problems.extend(errors.iter().map(|e| e.to_string()));
    if errors.iter().all(super::PolicyLoadError::is_warning) {
        by_file.insert(path, rules);
        return;
    }
    if rules.iter().any(|r| r.floor) {
        problems.push(format!(
            "{}: the tools a rule that could not be read names ask (deny when non-interactive) until it is fixed",
            path.display()
        ));
    }
    match by_file.entry(path) {
        std::collections::btree_map::Entry::Occupied(kept) => problems.push(format!(
            "{}: keeping the rules it had before this change",
            kept.key().display()
        )),
        std::collections::btree_map::Entry::Vacant(slot) => {
            slot.insert(rules);
        }
    }
}

/// Rules from one settings.json: `tools.core`, `tools.exclude`,
/// `tools.allowed` (and the older top-level `coreTools`, `excludeTools`,
/// `allowedTools`). `Ok(None)` when the file does not exist.
fn settings_file_rules(path: &Path) -> Result<Option<Vec<PolicyRule>>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: cannot read: {e}", path.display())),
    };
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not valid JSON: {e}", path.display()))?;
    let list = |nested: &str, legacy: &str| -> Vec<String> {
        value
            .pointer(&format!("/tools/{nested}"))
            .or_else(|| value.get(legacy))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut rules = settings_rules(
        &list("core", "coreTools"),
        &list("exclude", "excludeTools"),
        &list("allowed", "allowedTools"),
    );
    let strings = |pointer: &str| -> Vec<String> {
        value
            .pointer(pointer)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    rules.extend(super::settings::stricter_settings_rules(
        &strings("/mcp/excluded"),
        &strings("/tools/confirmationRequired"),
    ));
    for rule in &mut rules {
        rule.source.file = format!("{} ({})", path.display(), rule.source.file);
    }
    // `mcpServers.NAME.trust` allows that server's tools without asking.
    rules.extend(crate::discovery::trust_rules(
        &value,
        &path.display().to_string(),
    ));
    Ok(Some(rules))
}
