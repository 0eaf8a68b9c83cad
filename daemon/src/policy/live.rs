//! The policy in force: loaded from its sources, reloaded when a source
//! changes (notify), and swapped atomically so every decision sees one
//! consistent rule set. This is the IO edge of the policy; the evaluator
//! (`engine`, `matcher`, `shell`, `wrappers`) stays pure.
//!
//! A file that fails to load keeps the rules it had before (when it had
//! any); its problems are logged and reported to clients.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use super::dir::{admin_dir_refusal, policy_files};
use crate::problems::ConfigProblem;
use crate::watch::WatchSet;

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
    /// settings.json files whose `tools.core` / `tools.exclude` /
    /// `tools.allowed` become rules (user tier).
    pub settings_files: Vec<PathBuf>,
    /// Installed extensions (`~/.gemini/extensions`): each one's
    /// `policies/*.toml` is the Extension tier (no allow, no yolo rules).
    pub extensions_dir: Option<PathBuf>,
}

impl PolicySources {
    /// The file "always allow and save" answers are written to: ours, never
    /// one the user wrote.
    pub fn saved_file(&self) -> PathBuf {
        self.user_dir.join("geminid-always-allow.toml")
    }

    /// The `policies` directory of every extension enabled for the user
    /// (a linked install's at its source).
    fn extension_policy_dirs(&self) -> Vec<PathBuf> {
        let Some(root) = &self.extensions_dir else {
            return Vec::new();
        };
        let home = root.parent().and_then(Path::parent).unwrap_or(root);
        let (found, _) = crate::extensions::load_all(root);
        let mut dirs: Vec<PathBuf> = found
            .into_iter()
            .filter(|e| e.enabled_for(home))
            .filter_map(|e| e.policy_dir)
            .collect();
        dirs.sort();
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
    /// The last readable `tools.exclude`/`tools.core` rules of its
    /// settings.json, kept while the file is not JSON.
    settings_rules: Vec<PolicyRule>,
    /// What could not be read in its files.
    problems: Vec<ConfigProblem>,
}

/// The live policy, shared by every session.
pub struct LivePolicy {
    sources: PolicySources,
    engine: RwLock<Arc<PolicyEngine>>,
    /// What each source file held when last read, and its last good rules.
    by_file: Mutex<BTreeMap<PathBuf, FileState>>,
    problems: RwLock<Vec<ConfigProblem>>,
    /// Bumped by every reload that changed the rules, so workspace engines
    /// are rebuilt on it.
    generation: std::sync::atomic::AtomicU64,
    workspaces: Mutex<BTreeMap<PathBuf, WorkspaceEngine>>,
    /// Every readable extension's `excludeTools` rules with its enablement
    /// overrides: a workspace where one is enabled otherwise than at home
    /// gets (or loses) its rules (`engine_for`).
    extension_excludes: RwLock<Vec<ExtensionExcludes>>,
}

/// One extension's `excludeTools` as deny rules, and where it is enabled.
#[derive(Debug, Clone)]
struct ExtensionExcludes {
    manifest: PathBuf,
    overrides: Vec<String>,
    entries: Vec<String>,
    rules: Vec<PolicyRule>,
}

impl ExtensionExcludes {
    /// What decides its rules: the same key is the same rules.
    fn key(&self) -> (&Path, &[String], &[String]) {
        (&self.manifest, &self.overrides, &self.entries)
    }

    fn source_file(manifest: &Path) -> String {
        format!("{} (excludeTools)", manifest.display())
    }
}

/// One source file as last read.
struct FileState {
    /// The text read last (good or not): the same text is not parsed again.
    text: String,
    /// The rules in force from this file (the last good ones).
    rules: Vec<PolicyRule>,
    /// What is wrong with `text`, and what was kept instead.
    problems: Vec<ConfigProblem>,
}

impl LivePolicy {
    /// Loads every source. Problems are kept for `problems`.
    pub fn load(sources: PolicySources) -> Arc<LivePolicy> {
        let live = Arc::new(LivePolicy {
            sources,
            engine: RwLock::new(Arc::new(PolicyEngine::new(default_rules()))),
            by_file: Mutex::new(BTreeMap::new()),
            problems: RwLock::new(Vec::new()),
            generation: std::sync::atomic::AtomicU64::new(0),
            workspaces: Mutex::new(BTreeMap::new()),
            extension_excludes: RwLock::new(Vec::new()),
        });
        live.reload_all();
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
    /// (deny and ask_user rules only), and the deny rules of the
    /// workspace's own `.gemini/settings.json` (`tools.exclude`,
    /// `tools.core`: `workspace_settings.rs`). Re-read when those files
    /// change (a stat of each per call).
    pub fn engine_for(&self, workspace: &Path) -> Arc<PolicyEngine> {
        let dir = workspace.join(".gemini").join("policies");
        let settings = workspace.join(".gemini").join("settings.json");
        let mut files = policy_files(&dir).unwrap_or_default();
        let settings_meta = std::fs::metadata(&settings).ok();
        // Extensions enabled here otherwise than at home (0.61's
        // enablement is per directory): their excludeTools follow it.
        let differing: Vec<(ExtensionExcludes, bool)> = match &self.sources.extensions_dir {
            None => Vec::new(),
            Some(dir) => {
                let home = dir.parent().and_then(Path::parent).unwrap_or(dir);
                self.extension_excludes
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .filter_map(|e| {
                        let here = crate::extensions::enabled_by(&e.overrides, workspace);
                        (here != crate::extensions::enabled_by(&e.overrides, home))
                            .then(|| (e.clone(), here))
                    })
                    .collect()
            }
        };
        if files.is_empty() && settings_meta.is_none() && differing.is_empty() {
            let mut cache = self.workspaces.lock().unwrap_or_else(|e| e.into_inner());
            cache.remove(workspace);
            return self.engine();
        }
        if settings_meta.is_some() {
            files.push(settings.clone());
        }
        let mut stamp: Stamp = files
            .iter()
            .map(|p| {
                let meta = std::fs::metadata(p).ok();
                let len = meta.as_ref().map_or(0, std::fs::Metadata::len);
                (p.clone(), len, meta.and_then(|m| m.modified().ok()))
            })
            .collect();
        stamp.extend(
            differing
                .iter()
                .map(|(e, here)| (e.manifest.join("#enabled"), u64::from(*here), None)),
        );
        let generation = self.generation.load(std::sync::atomic::Ordering::Acquire);
        let mut cache = self.workspaces.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(kept) = cache.get(workspace)
            && kept.generation == generation
            && kept.stamp == stamp
        {
            return Arc::clone(&kept.engine);
        }
        let dropped: Vec<String> = differing
            .iter()
            .filter(|(_, here)| !here)
            .map(|(e, _)| ExtensionExcludes::source_file(&e.manifest))
            .collect();
        let mut rules: Vec<PolicyRule> = self
            .engine()
            .rules()
            .iter()
            .filter(|r| !dropped.contains(&r.source.file))
            .cloned()
            .collect();
        for (ext, _) in differing.iter().filter(|(_, here)| *here) {
            rules.extend(ext.rules.iter().cloned());
        }
        let mut problems = Vec::new();
        let mut good_settings = cache
            .get(workspace)
            .map(|w| w.settings_rules.clone())
            .unwrap_or_default();
        for path in &files {
            let text = match std::fs::read_to_string(path) {
                Ok(text) => text,
                Err(e) => {
                    problems.push(
                        ConfigProblem::new(path.display().to_string(), format!("cannot read: {e}"))
                            .kept(super::workspace_settings::FLOOR_KEPT),
                    );
                    rules.push(unreadable_floor(path));
                    continue;
                }
            };
            if *path == settings {
                let read = super::workspace_settings::workspace_tool_rules(
                    &path.display().to_string(),
                    &text,
                );
                problems.extend(read.problems);
                if read.unreadable {
                    rules.extend(good_settings.iter().cloned());
                } else {
                    good_settings = read.rules.iter().filter(|r| !r.floor).cloned().collect();
                }
                rules.extend(read.rules);
                continue;
            }
            let (found, errors) = parse_policy(&text, &path.display().to_string(), Tier::Workspace);
            problems.extend(
                errors
                    .iter()
                    .map(|e| ConfigProblem::new(path.display().to_string(), e.to_string())),
            );
            rules.extend(found);
        }
        let engine = Arc::new(PolicyEngine::new(rules));
        cache.insert(
            workspace.to_path_buf(),
            WorkspaceEngine {
                generation,
                stamp,
                engine: Arc::clone(&engine),
                settings_rules: good_settings,
                problems,
            },
        );
        engine
    }

    /// What is wrong with `workspace`'s own policy files and tool
    /// settings now (read again when they changed).
    pub fn workspace_problems(&self, workspace: &Path) -> Vec<ConfigProblem> {
        let _ = self.engine_for(workspace);
        self.workspaces
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(workspace)
            .map(|w| w.problems.clone())
            .unwrap_or_default()
    }

    /// Every problem of the sources as they are now, for people.
    pub fn problems(&self) -> Vec<String> {
        self.config_problems()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// Every problem of the sources as they are now.
    pub fn config_problems(&self) -> Vec<ConfigProblem> {
        self.problems
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Reads every source again, parses only files whose text changed, and
    /// swaps the rule set when anything did. Returns whether it did.
    pub fn reload(&self) -> bool {
        self.reload_all()
    }

    fn reload_all(&self) -> bool {
        let mut problems = Vec::new();
        let mut by_file = self.by_file.lock().unwrap_or_else(|e| e.into_inner());
        let mut seen = Vec::new();
        let mut changed = false;
        for (path, tier) in self.policy_files(&mut problems) {
            seen.push(path.clone());
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    changed |= refresh(&mut by_file, &path, text, |text| {
                        let (rules, errors) = parse_policy(text, &path.display().to_string(), tier);
                        let file = path.display().to_string();
                        // Warnings (an unknown field) load the rule; only
                        // a real error keeps the file's last good rules.
                        let fatal = !errors.iter().all(super::PolicyLoadError::is_warning);
                        let mut problems: Vec<ConfigProblem> = errors
                            .iter()
                            .map(|e| ConfigProblem::new(file.clone(), e.to_string()))
                            .collect();
                        if rules.iter().any(|r| r.floor) {
                            problems.push(ConfigProblem::new(
                                file.clone(),
                                "the tools a rule that could not be read names ask (deny when \
                                 non-interactive) until it is fixed"
                                    .to_owned(),
                            ));
                        }
                        (rules, problems, fatal)
                    });
                }
                Err(e) => {
                    problems.push(cannot_read(&path, &e, by_file.contains_key(&path)));
                    if by_file.contains_key(&path) {
                        seen.push(path.clone());
                    }
                }
            }
        }
        for path in &self.sources.settings_files {
            match std::fs::read_to_string(path) {
                Ok(text) => {
                    seen.push(path.clone());
                    changed |=
                        refresh(&mut by_file, path, text, |text| {
                            match settings_file_rules(path, text) {
                                Ok(rules) => (rules, Vec::new(), false),
                                Err(problem) => (Vec::new(), vec![problem], true),
                            }
                        });
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    problems.push(cannot_read(path, &e, by_file.contains_key(path)));
                    if by_file.contains_key(path) {
                        seen.push(path.clone());
                    }
                }
            }
        }
        self.extension_rules(&mut by_file, &mut seen, &mut changed);
        // Files that are gone take their rules with them.
        let before = by_file.len();
        by_file.retain(|path, _| seen.contains(path));
        changed |= by_file.len() != before;
        for state in by_file.values() {
            problems.extend(state.problems.iter().cloned());
        }
        if changed {
            let mut rules = default_rules();
            for state in by_file.values() {
                rules.extend(state.rules.iter().cloned());
            }
            *self.engine.write().unwrap_or_else(|e| e.into_inner()) =
                Arc::new(PolicyEngine::new(rules));
            self.generation
                .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        }
        drop(by_file);
        *self.problems.write().unwrap_or_else(|e| e.into_inner()) = problems;
        changed
    }

    /// The `excludeTools` of every extension enabled for the user (0.61
    /// adds them to its excluded tools): deny rules at the user settings'
    /// place. A manifest that is not JSON keeps the rules it had and, like
    /// an entry that is not a tool name, adds a floor (every tool asks).
    fn extension_rules(
        &self,
        by_file: &mut BTreeMap<PathBuf, FileState>,
        seen: &mut Vec<PathBuf>,
        changed: &mut bool,
    ) {
        let Some(dir) = &self.sources.extensions_dir else {
            return;
        };
        let home = dir.parent().and_then(Path::parent).unwrap_or(dir);
        let (found, _) = crate::extensions::load_all(dir);
        let every: Vec<ExtensionExcludes> = found
            .iter()
            .filter(|e| e.loaded)
            .map(|e| ExtensionExcludes {
                manifest: e.manifest(),
                overrides: e.overrides.clone(),
                entries: e.exclude_tools.clone(),
                rules: extension_exclude_rules(&e.manifest(), &e.exclude_tools),
            })
            .collect();
        {
            let mut kept = self
                .extension_excludes
                .write()
                .unwrap_or_else(|e| e.into_inner());
            let keys = |l: &[ExtensionExcludes]| -> Vec<(PathBuf, Vec<String>, Vec<String>)> {
                l.iter()
                    .map(|e| {
                        let (m, o, x) = e.key();
                        (m.to_path_buf(), o.to_vec(), x.to_vec())
                    })
                    .collect()
            };
            if keys(&kept) != keys(&every) {
                *kept = every;
                // Workspace engines are built again.
                *changed = true;
            }
        }
        for ext in found.iter().filter(|e| e.enabled_for(home)) {
            let path = ext.manifest();
            let floor_key = PathBuf::from(format!("{}#unreadable", path.display()));
            if ext.broken {
                seen.push(floor_key.clone());
                *changed |= refresh(by_file, &floor_key, "floor".to_owned(), |_| {
                    (vec![unreadable_floor(&path)], Vec::new(), false)
                });
            }
            if !ext.loaded {
                // Not JSON: what it excluded before stays.
                if ext.broken && by_file.contains_key(&path) {
                    seen.push(path);
                }
                continue;
            }
            seen.push(path.clone());
            let key = format!("{:?}", ext.exclude_tools);
            *changed |= refresh(by_file, &path, key, |_| {
                (
                    extension_exclude_rules(&path, &ext.exclude_tools),
                    Vec::new(),
                    false,
                )
            });
        }
    }

    /// `(path, tier)` of every policy file, admin tier only when the
    /// directory is trustworthy.
    fn policy_files(&self, problems: &mut Vec<ConfigProblem>) -> Vec<(PathBuf, Tier)> {
        let mut files = Vec::new();
        let mut add = |dir: &Path, tier: Tier| match policy_files(dir) {
            Ok(found) => files.extend(found.into_iter().map(|p| (p, tier))),
            Err(e) => problems.push(
                ConfigProblem::new(dir.display().to_string(), e.to_string())
                    .kept("none of its files are read"),
            ),
        };
        add(&self.sources.user_dir, Tier::User);
        for dir in self.sources.extension_policy_dirs() {
            add(&dir, Tier::Extension);
        }
        match admin_dir_refusal(&self.sources.admin_dir) {
            Some(refusal) => problems.push(
                ConfigProblem::new(
                    self.sources.admin_dir.display().to_string(),
                    refusal.to_string(),
                )
                .kept("admin policies ignored"),
            ),
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

    /// What to watch: the policy directories (also before they exist) and
    /// the settings files.
    pub fn watch_set(&self) -> WatchSet {
        let mut set = WatchSet::default()
            .dir(&self.sources.user_dir)
            .dir(&self.sources.admin_dir);
        if let Some(extensions) = &self.sources.extensions_dir {
            set = set.dir(extensions);
        }
        for dir in self.sources.extension_policy_dirs() {
            set = set.dir(&dir);
        }
        for file in &self.sources.settings_files {
            set = set.file(file);
        }
        set
    }
}

/// A workspace file that exists but cannot be read: every tool asks.
fn unreadable_floor(path: &Path) -> PolicyRule {
    let mut rule = PolicyRule::new(
        super::Decision::AskUser,
        0,
        super::RuleSource {
            file: path.display().to_string(),
            index: 0,
            tier: Tier::User,
        },
    );
    rule.floor = true;
    rule
}

/// Takes `text` as the file's content: parsed only when it differs from
/// the text read last. A text with problems keeps the rules the file had
/// before (when it had any). Returns whether the content changed.
fn refresh(
    by_file: &mut BTreeMap<PathBuf, FileState>,
    path: &Path,
    text: String,
    parse: impl FnOnce(&str) -> (Vec<PolicyRule>, Vec<ConfigProblem>, bool),
) -> bool {
    if by_file.get(path).is_some_and(|s| s.text == text) {
        return false;
    }
    let (rules, problems, fatal) = parse(&text);
    let (rules, kept) = match by_file.get(path) {
        Some(old) if fatal => {
            let kept = format!(
                "kept the {} rule(s) the file had before this change",
                old.rules.len()
            );
            (old.rules.clone(), kept)
        }
        _ => {
            let kept = format!("loaded the {} rule(s) that could be read", rules.len());
            (rules, kept)
        }
    };
    let problems = problems.into_iter().map(|p| p.kept(kept.clone())).collect();
    by_file.insert(
        path.to_path_buf(),
        FileState {
            text,
            rules,
            problems,
        },
    );
    true
}

fn cannot_read(path: &Path, e: &std::io::Error, had_rules: bool) -> ConfigProblem {
    let problem = ConfigProblem::new(path.display().to_string(), format!("cannot read: {e}"));
    if had_rules {
        problem.kept("kept the rules it had")
    } else {
        problem.kept("no rules from it")
    }
}

/// Rules from one settings.json: `tools.core`, `tools.exclude`,
/// `tools.allowed` (and the older top-level `coreTools`, `excludeTools`,
/// `allowedTools`).
fn settings_file_rules(path: &Path, text: &str) -> Result<Vec<PolicyRule>, ConfigProblem> {
    let value: Value = crate::jsonc::parse(text).map_err(|e| {
        ConfigProblem::new(
            path.display().to_string(),
            format!("not valid JSON: {}", e.message),
        )
        .at_line(Some(e.line))
    })?;
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
    for rule in &mut rules {
        rule.source.file = format!("{} ({})", path.display(), rule.source.file);
    }
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
    // `mcpServers.NAME.trust` allows that server's tools without asking.
    rules.extend(crate::discovery::trust_rules(
        &value,
        &path.display().to_string(),
    ));
    Ok(rules)
}

/// An extension's `excludeTools` as deny rules at the user settings' place.
fn extension_exclude_rules(manifest: &Path, entries: &[String]) -> Vec<PolicyRule> {
    entries
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let (name, prefix) = super::settings::parse_tool_entry(entry);
            let mut rule = PolicyRule::new(
                super::Decision::Deny,
                super::settings::EXCLUDE_PRIORITY,
                super::RuleSource {
                    file: ExtensionExcludes::source_file(manifest),
                    index: i + 1,
                    tier: Tier::User,
                },
            );
            rule.tool_names = vec![name];
            rule.command_prefix = prefix.into_iter().collect();
            rule
        })
        .collect()
}
